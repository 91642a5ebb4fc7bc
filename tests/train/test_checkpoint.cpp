// HDF5 checkpoints: exact round trips of every dtype and attribute kind, a bit-exact resume of a
// small model with Adam, refusals of damaged or mismatched checkpoints by message, atomic writes
// (no temporary left behind, a killed writer leaves the old checkpoint whole) and h5py reading.
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
#include "train/adam.h"
#include "train/checkpoint.h"
#include "train/training_state.h"

using namespace relpos;
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

// The bytes of a tensor, row-major, for bit-exact comparison.
std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = t.to(Device::cpu()).contiguous();
  const auto* begin = static_cast<const uint8_t*>(c.raw_data());
  return std::vector<uint8_t>(begin,
                              begin + c.numel() * static_cast<int64_t>(dtype_size(c.dtype())));
}

void check_same(const Tensor& got, const Tensor& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.defined());
  CHECK(got.dtype() == want.dtype());
  CHECK(got.shape() == want.shape());
  CHECK(bytes_of(got) == bytes_of(want));
}

void check_same(const std::vector<std::pair<std::string, Tensor>>& got,
                const std::vector<std::pair<std::string, Tensor>>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].first == want[i].first);  // written order is kept
    check_same(got[i].second, want[i].second, want[i].first);
  }
}

// Two Linear layers around a Dropout, with a buffer and a counter of its own: every kind of slot.
class TinyNet : public Module {
 public:
  explicit TinyNet(Generator& gen)
      : fc1_(register_module("fc1", std::make_shared<Linear>(4, 8, true, DType::f32, gen))),
        drop_(register_module("drop", std::make_shared<Dropout>(0.5, gen))),
        fc2_(register_module("fc2", std::make_shared<Linear>(8, 3, true, DType::f32, gen))) {
    scale_ = Tensor::from_vector<float>({1.0f, 0.5f, 2.0f}, {3});
    register_buffer("scale", scale_);
    register_counter("calls", calls_);
  }

  // x: [B, 4] -> [B, 3]
  Var forward(const Var& x) {
    ++calls_;
    return mul(fc2_->forward(drop_->forward(relu(fc1_->forward(x)))), Var(scale_));
  }
  int64_t calls() const { return calls_; }

 private:
  std::shared_ptr<Linear> fc1_;
  std::shared_ptr<Dropout> drop_;
  std::shared_ptr<Linear> fc2_;
  Tensor scale_;
  int64_t calls_ = 0;
};

std::shared_ptr<Adam> make_adam(const Module& net) {
  AdamConfig config;
  config.lr = 0.01;
  config.weight_decay = 0.01;
  return std::make_shared<Adam>(net.parameters(), config);
}

// One training step on batch k (inputs and targets from fixed seeds).
void train_step(TinyNet& net, Optimizer& opt, int k) {
  const Var x(test::random_tensor({6, 4}, DType::f32, 100 + k));
  const Var target(test::random_tensor({6, 3}, DType::f32, 200 + k));
  const Var diff = sub(net.forward(x), target);
  mean(mul(diff, diff)).backward();
  opt.step();
  opt.zero_grad();
}

// A checkpoint of a TinyNet after one Adam step, with attributes.
CheckpointData small_checkpoint(uint64_t seed = 7) {
  Generator gen(seed);
  TinyNet net(gen);
  auto opt = make_adam(net);
  train_step(net, *opt, 0);
  CheckpointData data = capture_state(net, opt.get());
  data.ints["step"] = 1;
  data.texts["config"] = "model:\n  dim: 4\n";
  return data;
}

std::string read_error_of(const std::string& path) {
  return test::error_of([&] { read_checkpoint(path); });
}

// Writes an HDF5 file with the C API, as another tool might: `fill` adds to the root group.
template <typename F>
void write_raw_hdf5(const std::string& path, F fill) {
  H5Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
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

TEST_CASE("checkpoint: a restored model and Adam continue bit-identically") {
  test::ScratchDir dir;
  const std::string path = dir.file("last.h5");
  Generator gen_a(1);
  TinyNet net_a(gen_a);
  auto opt_a = make_adam(net_a);
  for (int k = 0; k < 3; ++k) train_step(net_a, *opt_a, k);
  write_checkpoint(path, capture_state(net_a, opt_a.get()));

  Generator gen_b(2);  // another seed: other weights and other dropout masks
  TinyNet net_b(gen_b);
  auto opt_b = make_adam(net_b);
  CHECK(bytes_of(net_b.parameters()[0].value()) != bytes_of(net_a.parameters()[0].value()));
  const CheckpointData data = read_checkpoint(path);
  restore_module(net_b, data);
  restore_optimizer(*opt_b, net_b, data);
  CHECK(net_b.calls() == 3);
  // The optimizer shares the module's Vars, so it sees the restored values.
  CHECK(bytes_of(opt_b->params()[0].value()) == bytes_of(net_a.parameters()[0].value()));

  for (int k = 3; k < 5; ++k) {
    train_step(net_a, *opt_a, k);
    train_step(net_b, *opt_b, k);
  }
  const auto params_a = net_a.named_parameters(), params_b = net_b.named_parameters();
  REQUIRE(params_a.size() == 4);
  REQUIRE(params_b.size() == 4);
  for (size_t i = 0; i < params_a.size(); ++i)
    check_same(params_b[i].second.value(), params_a[i].second.value(), params_a[i].first);
  CHECK(opt_b->state()[0].at("step").item() == 5);
  check_same(opt_b->state()[0].at("exp_avg_sq"), opt_a->state()[0].at("exp_avg_sq"), "exp_avg_sq");
  CHECK(net_b.generator_slots()[0].second->offset() == net_a.generator_slots()[0].second->offset());
  CHECK(net_b.calls() == 5);
}

TEST_CASE("checkpoint: missing, non-HDF5, truncated and /params-less files are refused") {
  test::ScratchDir dir;
  const std::string missing = dir.file("missing.h5");
  CHECK(read_error_of(missing) == "[checkpoint] '" + missing + "': no such file");

  const std::string text = dir.file("text.h5");
  std::ofstream(text) << "this is not HDF5\n";
  CHECK(read_error_of(text) == "[checkpoint] '" + text + "': not an HDF5 file");

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

TEST_CASE("checkpoint: restoring refuses shape and dtype mismatches, missing and unknown entries") {
  const CheckpointData good = small_checkpoint();
  Generator gen(3);
  TinyNet net(gen);
  const std::vector<uint8_t> before = bytes_of(net.parameters()[0].value());
  const auto restore_error = [&](const CheckpointData& data) {
    return test::error_of([&] { restore_module(net, data); });
  };

  CheckpointData shape = good;
  shape.params[0].second = test::random_tensor({3, 4}, DType::f32, 9);
  CHECK(restore_error(shape) ==
        "[checkpoint] parameter 'fc1.weight' has shape [3, 4] in the checkpoint, the model "
        "expects [8, 4]");

  CheckpointData dtype = good;
  dtype.params[1].second = dtype.params[1].second.to(DType::f64);
  CHECK(restore_error(dtype) ==
        "[checkpoint] parameter 'fc1.bias' is f64 in the checkpoint, the model expects f32");

  CheckpointData unknown = good;
  unknown.params.emplace_back("fc3.weight", test::random_tensor({2, 2}, DType::f32, 9));
  CHECK(restore_error(unknown) ==
        "[checkpoint] the checkpoint has parameter 'fc3.weight', which the model does not have");

  CheckpointData missing = good;
  missing.params.pop_back();
  CHECK(restore_error(missing) ==
        "[checkpoint] parameter 'fc2.bias' is missing from the checkpoint");

  CheckpointData no_rng = good;
  no_rng.generators.clear();
  CHECK(restore_error(no_rng) ==
        "[checkpoint] generator 'drop.generator' is missing from the checkpoint");

  // A refused checkpoint changes nothing, even when the error comes after the parameters.
  CHECK(bytes_of(net.parameters()[0].value()) == before);

  CheckpointData no_optimizer = good;
  no_optimizer.optimizer.clear();
  auto opt = make_adam(net);
  CHECK(test::error_of([&] { restore_optimizer(*opt, net, no_optimizer); }) ==
        "[checkpoint] the checkpoint has no optimizer state");
  Adam partial({net.parameters()[1]}, AdamConfig{});
  CHECK(test::error_of([&] { capture_state(net, &partial); }) ==
        "[checkpoint] the optimizer holds 1 parameters, the module has 4; build the optimizer "
        "from module.parameters()");
}

TEST_CASE("checkpoint: write failures name the file and leave no temporary file") {
  test::ScratchDir dir;
  const std::string nowhere = dir.file("no_such_folder/last.h5");
  CHECK(test::error_of([&] { write_checkpoint(nowhere, CheckpointData{}); }) ==
        "[checkpoint] cannot write '" + nowhere + "': cannot create the temporary file '" +
            nowhere + ".tmp." + std::to_string(::getpid()) + "'");

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
  // short delay. Should it finish first (a very fast disk), a shorter delay is tried.
  for (const int delay_us : {3000, 500, 0}) {
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
    if (!WIFSIGNALED(status)) continue;
    CHECK_MESSAGE(temp_left, "killed before it created its temporary file");
    const CheckpointData back = read_checkpoint(path);
    check_same(back.params, original.params);
    check_same(back.buffers, original.buffers);
    CHECK(back.ints == original.ints);
    CHECK(back.texts == original.texts);
    tested = true;
    break;
  }
  CHECK_MESSAGE(tested, "the child finished writing 50 MB before every kill");
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
