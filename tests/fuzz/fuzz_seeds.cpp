// Writes the binary seed inputs of the fuzz targets into DIR/<target>/ with relpos's own writers
// (or the format's definition), so every seed is a valid file of today's format and mutations
// start deep inside it: IDX images raw and gzip, a CIFAR-10 batch and a checkpoint. Text seeds
// live in tests/fuzz/corpus/.
//   fuzz_seeds DIR
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/ops.h"
#include "tests/fuzz/fuzz_input.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;
using namespace relpos;

namespace {

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out.good()) throw std::runtime_error("cannot write " + path.string());
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& raw) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::vector<uint8_t> out(deflateBound(&z, raw.size()));
  z.next_in = const_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// IDX u8 images [n, rows, cols]: magic 0x00000803, dims big-endian, then the pixels.
std::vector<uint8_t> idx_images(uint32_t n, uint32_t rows, uint32_t cols) {
  std::vector<uint8_t> out{0, 0, 8, 3};
  for (const uint32_t d : {n, rows, cols})
    for (const int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(d >> shift));
  for (uint32_t i = 0; i < n * rows * cols; ++i) out.push_back(static_cast<uint8_t>(i * 37));
  return out;
}

// CIFAR-10 binary records: a label byte and 3 x 32 x 32 channel-major pixels.
std::vector<uint8_t> cifar_batch(int records) {
  std::vector<uint8_t> out;
  for (int r = 0; r < records; ++r) {
    out.push_back(static_cast<uint8_t>(r % 10));
    for (int i = 0; i < 3072; ++i) out.push_back(static_cast<uint8_t>(i * 13 + r));
  }
  return out;
}

void checkpoint(const fs::path& dir) {
  Generator gen(7);
  CheckpointData c;
  c.params = {{"encoder.layers.0.attn.q_proj.weight", randn({4, 4}, gen)},
              {"encoder.norm.bias", zeros({4}, DType::f32)},
              {"scale", full({}, 2.0, DType::f64)}};
  c.buffers = {{"positional.projection", randn({2, 3}, gen)}};
  c.optimizer = {{"encoder.norm.bias",
                  {{"exp_avg", zeros({4}, DType::f32)}, {"step", full({}, 3.0, DType::i64)}}},
                 {"scale", {}}};
  c.generators = {{"dropout", Generator(11)}};
  c.counters = {{"performer.draws", 2}};
  c.state = {{"memory.0", randn({2, 3, 4}, gen)}};
  c.ints = {{"step", 3}, {"epoch", 0}};
  c.floats = {{"best_metric", 0.5}};
  c.texts = {{"config", "model: {type: sequence_classifier}\n"}, {"relpos_version", "0"}};
  fs::create_directories(dir / "checkpoint");
  write_checkpoint((dir / "checkpoint" / "checkpoint.h5").string(), c);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    const std::vector<uint8_t> images = idx_images(2, 28, 28);
    write_bytes(dir / "idx" / "images", images);
    write_bytes(dir / "idx" / "images.gz", gzip(images));
    write_bytes(dir / "idx" / "small", idx_images(3, 2, 5));
    write_bytes(dir / "cifar" / "data_batch_1.bin", cifar_batch(2));
    checkpoint(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
