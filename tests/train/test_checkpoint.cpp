// The HDF5 checkpoint file: exact round trips of every dtype and attribute kind, refusals of
// damaged files by message, atomic writes (no temporary left behind, a killed writer leaves the
// old checkpoint whole) and h5py reading. Restoring into modules: test_training_state.cpp.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "datasets/hdf5_handle.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "tests/harness.h"
#include "tests/train/checkpoint_testing.h"
#include "train/adam.h"
#include "train/checkpoint.h"
#include "train/training_state.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

// Names in `dir` that look like a checkpoint's temporary file.
std::vector<std::string> temporaries(const test::ScratchDir& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir.path))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      out.push_back(entry.path().filename().string());
  return out;
}

std::string read_error_of(const std::string& path) {
  return test::error_of([&] { read_checkpoint(path); });
}

// Writes an HDF5 file with the C API, as another tool might: `fill` adds to the root group. The
// format is 1.10's (checksummed metadata) unless `old_format`, HDF5's default (superblock 0).
template <typename F>
void write_raw_hdf5(const std::string& path, F fill, bool old_format = false) {
  const H5Handle access = checksummed_file_access("test");
  H5Handle file(
      H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, old_format ? H5P_DEFAULT : access.get()),
      H5Fclose);
  REQUIRE(file.valid());
  fill(file.get());
  REQUIRE(file.reset());
}

}  // namespace

TEST_CASE("checkpoint: every dtype, 0-d, empty and strided tensors, rng and counters round-trip") {
  test::ScratchDir dir;
  const std::string path = dir.file("all.h5");
  CheckpointData data;
  data.params = {
      {"encoder.w", test::random_tensor({2, 3}, DType::f32, 1)},
      {"encoder.f64", test::random_tensor({4}, DType::f64, 2)},
      {"ids.i32", Tensor::from_vector<int32_t>({-7, 0, 1 << 30, 5, 6, 7, 8, -9}, {2, 2, 2})},
      {"ids.i64",
       Tensor::from_vector<int64_t>(
           {std::numeric_limits<int64_t>::min(), -1, std::numeric_limits<int64_t>::max()}, {3})},
      {"mask.u8", Tensor::from_vector<uint8_t>({0, 1, 127, 128, 255}, {5})},
      {"a.scalar", Tensor::scalar(2.5, DType::f32)},
      {"empty", Tensor::empty({0, 3}, DType::f32)},
      {"strided", test::strided_copy(test::random_tensor({3, 4}, DType::f32, 3))},
  };
  data.buffers = {{"pos.pe", test::random_tensor({5, 2}, DType::f64, 4)},
                  {"proj", test::random_tensor({2, 2}, DType::f32, 5)}};
  data.optimizer = {{"encoder.w",
                     {{"step", Tensor::scalar(3, DType::f64)},
                      {"exp_avg", test::random_tensor({2, 3}, DType::f32, 6)}}},
                    {"encoder.f64", {}}};
  Generator gen(std::numeric_limits<uint64_t>::max());
  gen.reserve(uint64_t{1} << 40);
  data.generators = {{"drop.generator", Generator(42)}, {"big", gen}};
  data.counters = {{"calls_since_draw", -3}, {"big", std::numeric_limits<int64_t>::max()}};

  write_checkpoint(path, data);
  const CheckpointData back = read_checkpoint(path);
  check_same(back.params, data.params);
  CHECK(back.params[5].second.dim() == 0);
  check_same(back.buffers, data.buffers);
  REQUIRE(back.optimizer.size() == 2);
  CHECK(back.optimizer[0].first == "encoder.w");
  REQUIRE(back.optimizer[0].second.size() == 2);
  check_same(back.optimizer[0].second.at("step"), data.optimizer[0].second.at("step"), "step");
  check_same(back.optimizer[0].second.at("exp_avg"), data.optimizer[0].second.at("exp_avg"),
             "exp_avg");
  CHECK(back.optimizer[1].first == "encoder.f64");
  CHECK(back.optimizer[1].second.empty());
  REQUIRE(back.generators.size() == 2);
  CHECK(back.generators[0].first == "drop.generator");
  CHECK(back.generators[0].second.seed() == 42);
  CHECK(back.generators[0].second.offset() == 0);
  CHECK(back.generators[1].first == "big");
  CHECK(back.generators[1].second.seed() == gen.seed());
  CHECK(back.generators[1].second.offset() == gen.offset());
  REQUIRE(back.counters.size() == 2);
  CHECK(back.counters[0] == data.counters[0]);
  CHECK(back.counters[1] == data.counters[1]);
  CHECK(temporaries(dir).empty());
}

TEST_CASE("checkpoint: integer, float and text attributes round-trip exactly") {
  test::ScratchDir dir;
  const std::string path = dir.file("attrs.h5");
  CheckpointData data;
  data.ints = {{"step", 123456789012345}, {"epoch", -2}};
  data.floats = {{"best_metric", 0.1}, {"tiny", 5e-324}, {"lr", -1.5e300}};
  data.texts = {{"config", "model:\n  dim: 64\n  name: \"μ-test\"\n"},
                {"relpos_version", "0.1.0"},
                {"empty", ""}};
  write_checkpoint(path, data);
  const CheckpointData back = read_checkpoint(path);
  CHECK(back.ints == data.ints);
  CHECK(back.floats == data.floats);  // f64 attributes: bit-exact
  CHECK(back.texts == data.texts);
  CHECK(back.params.empty());
}

TEST_CASE("checkpoint: missing, non-HDF5, truncated and /params-less files are refused") {
  test::ScratchDir dir;
  const std::string missing = dir.file("missing.h5");
  CHECK(read_error_of(missing) == "[checkpoint] '" + missing + "': no such file");

  const std::string text = dir.file("text.h5");
  std::ofstream(text) << "this is not HDF5\n";
  CHECK(read_error_of(text) ==
        "[checkpoint] '" + text + "': not an HDF5 file (no HDF5 signature at byte 0)");

  // HDF5's default format has no metadata checksums, and its parser crashes on some damaged
  // files of it (found by tests/fuzz/fuzz_checkpoint): refused before HDF5 reads it.
  const std::string old = dir.file("old.h5");
  write_raw_hdf5(
      old,
      [](hid_t file) {
        H5Handle(H5Gcreate2(file, "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      },
      true);
  CHECK(read_error_of(old) ==
        "[checkpoint] '" + old +
            "': an HDF5 file in the format of before HDF5 1.10 (superblock version 0), whose "
            "metadata has no checksums; relpos reads the checksummed format it writes (from "
            "h5py: h5py.File(path, 'w', libver='latest'))");

  // A variable-length string lives in the unchecksummed global heap, whose reader crashed on a
  // damaged byte (tests/fuzz/fuzz_checkpoint): refused unread, naming the attribute.
  const std::string vlen = dir.file("vlen.h5");
  write_raw_hdf5(vlen, [](hid_t file) {
    H5Handle(H5Gcreate2(file, "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    const H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    REQUIRE(H5Tset_size(type.get(), H5T_VARIABLE) >= 0);
    const H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    const H5Handle attribute(
        H5Acreate2(file, "config", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const char* text = "model: {}";
    REQUIRE(H5Awrite(attribute.get(), type.get(), &text) >= 0);
  });
  CHECK(read_error_of(vlen).rfind(
            "[checkpoint] '" + vlen + "': attribute 'config' is a variable-length string", 0) == 0);

  const std::string truncated = dir.file("truncated.h5");
  write_checkpoint(truncated, small_checkpoint());
  fs::resize_file(truncated, fs::file_size(truncated) / 2);
  const std::string cut = read_error_of(truncated);
  CHECK(cut.rfind("[checkpoint] '" + truncated + "': ", 0) == 0);
  CHECK_MESSAGE(cut.find("(truncated or damaged file)") != std::string::npos, cut);

  const std::string no_params = dir.file("no_params.h5");
  write_raw_hdf5(no_params, [](hid_t file) {
    const H5Handle group(H5Gcreate2(file, "buffers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                         H5Gclose);
    REQUIRE(group.valid());
  });
  CHECK(read_error_of(no_params) ==
        "[checkpoint] '" + no_params + "': no /params group (not a relpos checkpoint)");
}

TEST_CASE("checkpoint: bytes damaged inside a dataset are reported as damage, naming it") {
  // A parameter of a recognizable pattern; its bytes are found in the file and one is flipped.
  test::ScratchDir dir;
  CheckpointData data = small_checkpoint();
  std::vector<float> marker(64);
  for (size_t i = 0; i < marker.size(); ++i) marker[i] = 1000.0f + static_cast<float>(i);
  data.params.emplace_back("marker", Tensor::from_vector(marker, {8, 8}));
  const std::string path = dir.file("damaged.h5");
  write_checkpoint(path, data);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string pattern(reinterpret_cast<const char*>(marker.data()) + 40, 16);
  const size_t at = bytes.find(pattern);
  REQUIRE(at != std::string::npos);
  bytes[at + 3] = static_cast<char>(bytes[at + 3] ^ 0x10);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  CHECK(read_error_of(path) == "[checkpoint] '" + path +
                                   "': dataset '/params/marker' cannot be read (truncated or "
                                   "damaged file)");
}

TEST_CASE("checkpoint: damaged metadata (a link name, the superblock) is refused, not parsed") {
  // Every piece of metadata carries a checksum in the format relpos writes: a flipped byte in a
  // link name (the /params group's object header) or in the superblock is damage HDF5 reports.
  test::ScratchDir dir;
  CheckpointData data = small_checkpoint();
  data.params.emplace_back("a_recognizable_link_name", Tensor::scalar(1.0));
  const std::string path = dir.file("damaged.h5");
  write_checkpoint(path, data);
  std::string whole;
  {
    std::ifstream in(path, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t name_at = whole.find("a_recognizable_link_name");
  REQUIRE(name_at != std::string::npos);
  for (const size_t at : {name_at + 5, size_t{20}}) {
    RELPOS_INFO("byte {}", at);
    std::string bytes = whole;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x04);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    const std::string e = read_error_of(path);
    CHECK_MESSAGE(e.rfind("[checkpoint] '" + path + "': ", 0) == 0, e);
    CHECK_MESSAGE(e.find("(truncated or damaged file)") != std::string::npos, e);
  }
}

TEST_CASE("checkpoint: a dataset of a type relpos lacks is refused by name") {
  test::ScratchDir dir;
  const std::string path = dir.file("u16.h5");
  write_raw_hdf5(path, [](hid_t file) {
    const H5Handle group(H5Gcreate2(file, "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                         H5Gclose);
    const hsize_t n = 3;
    const uint16_t values[3] = {1, 2, 3};
    const H5Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    const H5Handle data(H5Dcreate2(group.get(), "w", H5T_STD_U16LE, space.get(), H5P_DEFAULT,
                                   H5P_DEFAULT, H5P_DEFAULT),
                        H5Dclose);
    REQUIRE(H5Dwrite(data.get(), H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0);
  });
  CHECK(read_error_of(path) ==
        "[checkpoint] '" + path +
            "': dataset '/params/w' has an unsupported type (16-bit unsigned integer); expected "
            "f32, f64, i32, i64 or u8");
}

TEST_CASE("checkpoint: write failures name the file and leave no temporary file") {
  test::ScratchDir dir;
  const std::string nowhere = dir.file("no_such_folder/last.h5");
  CHECK(test::error_of([&] { write_checkpoint(nowhere, CheckpointData{}); }) ==
        "[checkpoint] cannot write '" + nowhere + "': cannot create the temporary file '" +
            nowhere + ".tmp." + std::to_string(::getpid()) + "': No such file or directory");

  const std::string path = dir.file("bad_name.h5");
  CheckpointData bad = small_checkpoint();
  bad.buffers.emplace_back("a/b", Tensor::scalar(1));
  CHECK(test::error_of([&] { write_checkpoint(path, bad); }) ==
        "[checkpoint] cannot write '" + path +
            "': 'a/b' in /buffers is not a valid name (non-empty, no '/', not '.')");
  CHECK(!fs::exists(path));
  CHECK(temporaries(dir).empty());

  // Writing over an existing checkpoint replaces it and leaves nothing else behind.
  write_checkpoint(path, small_checkpoint(7));
  const CheckpointData second = small_checkpoint(8);
  write_checkpoint(path, second);
  check_same(read_checkpoint(path).params, second.params);
  CHECK(temporaries(dir).empty());
}

TEST_CASE("checkpoint: a writer killed midway leaves the previous checkpoint whole") {
  test::ScratchDir dir;
  const std::string path = dir.file("last.h5");
  const CheckpointData original = small_checkpoint();
  CheckpointData large;  // 50 MB: the child is still writing when it is killed
  large.params = {{"big", Tensor::from_vector(std::vector<float>(12'500'000, 1.5f), {12'500'000})}};
  bool tested = false;
  // The child signals through a pipe that it is about to write; the parent kills it after a
  // delay. Should it finish first (a very fast disk), a shorter delay is tried; should it die
  // before it began writing (a busy machine that had not run it yet), a longer one.
  int delay_us = 3000;
  for (int attempt = 0; attempt < 10 && !tested; ++attempt) {
    write_checkpoint(path, original);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      const char ready = 'r';
      if (::write(fds[1], &ready, 1) != 1) ::_exit(2);
      try {
        write_checkpoint(path, large);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    ::close(fds[1]);
    char ready = 0;
    REQUIRE(::read(fds[0], &ready, 1) == 1);
    ::close(fds[0]);
    ::usleep(delay_us);
    ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    const std::string temp = path + ".tmp." + std::to_string(pid);
    const bool temp_left = fs::exists(temp);
    fs::remove(temp);
    if (!WIFSIGNALED(status)) {
      delay_us /= 4;
      continue;
    }
    // Whenever the writer died, the previous checkpoint is whole.
    const CheckpointData back = read_checkpoint(path);
    check_same(back.params, original.params);
    check_same(back.buffers, original.buffers);
    CHECK(back.ints == original.ints);
    CHECK(back.texts == original.texts);
    tested = temp_left;  // killed while it was writing
    delay_us = delay_us * 4 + 1000;
  }
  CHECK_MESSAGE(tested, "no kill landed while the child was writing its 50 MB");
}

TEST_CASE("checkpoint: h5py reads parameters, optimizer state and the config without relpos") {
  if (std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") != 0) {
    MESSAGE("SKIPPED (h5py is not importable by /usr/bin/python3)");
    return;
  }
  test::ScratchDir dir;
  const std::string path = dir.file("last.h5");
  CheckpointData data;
  const Tensor weight = test::random_tensor({3, 4}, DType::f32, 11);
  data.params = {{"encoder.norm.weight", weight}, {"head.scale", Tensor::scalar(0.5)}};
  data.optimizer = {
      {"encoder.norm.weight", {{"step", Tensor::scalar(2, DType::f64)}, {"exp_avg", weight}}},
      {"head.scale", {}}};
  data.generators = {{"drop.generator", Generator(42)}};
  data.ints["step"] = 7;
  data.texts["config"] = "model:\n  dim: 4\n";
  write_checkpoint(path, data);

  const std::string script = dir.file("read.py");
  std::ofstream(script) << "import sys, h5py\n"
                           "with h5py.File(sys.argv[1], 'r') as f:\n"
                           "    w = f['params']['encoder.norm.weight']\n"
                           "    print('shape', tuple(w.shape), w.dtype)\n"
                           "    print('bytes', w[()].tobytes().hex())\n"
                           "    print('scalar', f['params']['head.scale'].shape, "
                           "float(f['params']['head.scale'][()]))\n"
                           "    print('step', int(f.attrs['step']))\n"
                           "    c = f.attrs['config']\n"
                           "    print('config', repr(c if isinstance(c, str) else c.decode()))\n"
                           "    s = f['optimizer']['encoder.norm.weight']\n"
                           "    print('optimizer', sorted(s.keys()), float(s['step'][()]))\n"
                           "    print('rng', [int(v) for v in f['rng']['drop.generator'][()]])\n";
  std::string output;
  {
    const std::string command = "/usr/bin/python3 '" + script + "' '" + path + "' 2>&1";
    const std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
    REQUIRE(pipe != nullptr);
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) output += buffer;
  }
  std::string hex;
  for (const uint8_t b : bytes_of(weight)) hex += fmt::format("{:02x}", b);
  CHECK(output ==
        "shape (3, 4) float32\n"
        "bytes " +
            hex +
            "\n"
            "scalar () 0.5\n"
            "step 7\n"
            "config 'model:\\n  dim: 4\\n'\n"
            "optimizer ['exp_avg', 'step'] 2.0\n"
            "rng [42, 0]\n");
}
