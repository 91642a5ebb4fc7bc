// Optimizers against hand-written f64 updates (the torch.optim formulas, element by element) and
// against constants generated once with torch 1.13's torch.optim (same params, grads and options),
// plus skipping, dtype, state, clip_grad_norm, and refusals by name.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/ops.h"
#include "core/transfers.h"
#include "train/clip.h"
#include "train/optimizer.h"

using namespace relpos;

namespace {

using Vec = std::vector<double>;
using Named = std::vector<std::pair<std::string, Var>>;
const Vec kStart = {1.0, -2.0, 0.5};
const std::vector<Vec> kGrads = {{0.1, -0.2, 0.3}, {0.4, 0.0, -0.5}, {-0.3, 0.6, 0.2}};

// Runs the optimizer built from `options` over kGrads from kStart (f64) and returns the params.
Vec run(const Options& options) {
  Var p(Tensor::from_vector(kStart, {3}), true);
  auto opt = make_optimizer({p}, options);
  for (const Vec& g : kGrads) {
    p.set_grad(Tensor::from_vector(g, {3}));
    opt->step();
  }
  return p.value().to_vector<double>();
}

// Scalar Adam (torch.optim.Adam / AdamW) over kGrads for element i.
double adam_ref(size_t i, double lr, double b1, double b2, double eps, double wd, bool decoupled) {
  double p = kStart[i], m = 0, v = 0;
  for (size_t t = 1; t <= kGrads.size(); ++t) {
    double g = kGrads[t - 1][i];
    if (decoupled)
      p -= lr * wd * p;
    else
      g += wd * p;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    double mhat = m / (1 - std::pow(b1, t)), vhat = v / (1 - std::pow(b2, t));
    p -= lr * mhat / (std::sqrt(vhat) + eps);
  }
  return p;
}

void check_close(const Vec& got, const Vec& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol));
}

}  // namespace

TEST_CASE("sgd: momentum with weight decay equals the torch.optim.SGD recurrence") {
  Vec want(3);
  for (size_t i = 0; i < 3; ++i) {
    double p = kStart[i], buf = 0;
    for (size_t t = 0; t < kGrads.size(); ++t) {
      double g = kGrads[t][i] + 0.01 * p;  // L2 weight decay
      buf = t == 0 ? g : 0.9 * buf + g;    // first step: buf = g
      p -= 0.1 * buf;
    }
    want[i] = p;
  }
  Vec got = run(Options("optimizer")
                    .set("type", "sgd")
                    .set("lr", 0.1)
                    .set("momentum", 0.9)
                    .set("weight_decay", 0.01));
  // f64 throughout: only rounding differs, 1e-12 relative.
  check_close(got, want, 1e-12);
  check_close(got, {0.92137278899999997, -1.994665578, 0.49096136949999997}, 1e-12);  // torch
}

TEST_CASE("sgd: nesterov and dampening") {
  // Element 0 by hand, nesterov (lr 0.1, momentum 0.9): bufs 0.1, 0.49, 0.141;
  // steps g + 0.9·buf = 0.19, 0.841, -0.1731 -> 1 - 0.1·(0.19 + 0.841 - 0.1731) = 0.91421.
  Vec nest = run(Options("optimizer")
                     .set("type", "sgd")
                     .set("lr", 0.1)
                     .set("momentum", 0.9)
                     .set("nesterov", true));
  CHECK(nest[0] == doctest::Approx(1 - 0.1 * (0.19 + 0.841 - 0.1731)).epsilon(1e-12));
  check_close(nest, {0.91420999999999997, -2.04522, 0.49433000000000005}, 1e-12);  // torch
  // Element 0, momentum 0.5, dampening 0.3: bufs 0.1, 0.05 + 0.28 = 0.33, 0.165 - 0.21 = -0.045
  // -> 1 - 0.1·(0.1 + 0.33 - 0.045) = 0.9615.
  Vec damp = run(Options("optimizer")
                     .set("type", "sgd")
                     .set("lr", 0.1)
                     .set("momentum", 0.5)
                     .set("dampening", 0.3));
  CHECK(damp[0] == doctest::Approx(0.9615).epsilon(1e-12));
  check_close(damp, {0.96149999999999991, -2.0070000000000001, 0.48599999999999999}, 1e-12);
}

TEST_CASE("adam: L2 weight decay and bias correction match torch.optim.Adam") {
  Vec want(3);
  for (size_t i = 0; i < 3; ++i) want[i] = adam_ref(i, 0.01, 0.9, 0.999, 1e-8, 0.1, false);
  Vec got = run(Options("optimizer").set("type", "adam").set("lr", 0.01).set("weight_decay", 0.1));
  check_close(got, want, 1e-12);
  check_close(got, {0.97604676602736307, -1.9796095967653629, 0.49047215211563527}, 1e-12);
  // Step 1 alone is lr·sign(g) up to eps: m̂ = g, v̂ = g², so p = 1 - 0.01·g/(|g| + 1e-8).
  Var p(Tensor::from_vector(Vec{1.0}, {1}), true);
  auto opt = make_optimizer({p}, Options("optimizer").set("type", "adam").set("lr", 0.01));
  p.set_grad(Tensor::from_vector(Vec{0.25}, {1}));
  opt->step();
  CHECK(p.value().item() == doctest::Approx(1 - 0.01 * 0.25 / (0.25 + 1e-8)).epsilon(1e-14));
}

TEST_CASE("adamw: decoupled weight decay matches torch.optim.AdamW") {
  Vec want(3);
  for (size_t i = 0; i < 3; ++i) want[i] = adam_ref(i, 0.01, 0.9, 0.999, 1e-8, 0.1, true);
  Vec got = run(Options("optimizer").set("type", "adamw").set("lr", 0.01).set("weight_decay", 0.1));
  check_close(got, want, 1e-12);
  check_close(got, {0.9764209861415688, -1.9817565812247284, 0.49152674773898031}, 1e-12);
}

TEST_CASE("lra_adam: betas (0.9, 0.98), eps 1e-9, decay lr·wd·p by default") {
  Vec want(3);
  for (size_t i = 0; i < 3; ++i) want[i] = adam_ref(i, 0.01, 0.9, 0.98, 1e-9, 0.1, true);
  Vec got = run(Options("optimizer").set("type", "lra_adam").set("lr", 0.01));
  check_close(got, want, 1e-12);
  // torch.optim.AdamW(lr=0.01, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.1)
  check_close(got, {0.97646329901976447, -1.9816904828032169, 0.49152024077488127}, 1e-12);
}

TEST_CASE("optimizer: skips params without grad, keeps dtype, exposes named state") {
  Var a(Tensor::from_vector(std::vector<float>{1.f, 2.f}, {2}), true);
  Var b(Tensor::from_vector(std::vector<float>{3.f}, {1}), true);
  auto opt = make_optimizer({a, b}, Options("optimizer").set("type", "adam").set("lr", 0.1));
  a.set_grad(Tensor::from_vector(std::vector<float>{1.f, -1.f}, {2}));
  opt->step();
  CHECK(a.dtype() == DType::f32);
  auto av = a.value().to_vector<float>();
  // First Adam step moves each element by lr against the sign of its grad (eps aside).
  CHECK(av[0] == doctest::Approx(0.9).epsilon(1e-6));
  CHECK(av[1] == doctest::Approx(2.1).epsilon(1e-6));
  CHECK(b.value().item() == 3.0);  // no grad: untouched, no state
  REQUIRE(opt->state().size() == 2);
  CHECK(opt->state()[0].count("exp_avg") == 1);
  CHECK(opt->state()[0].count("exp_avg_sq") == 1);
  CHECK(opt->state()[0].at("step").item() == 1.0);
  CHECK(opt->state()[0].at("exp_avg").dtype() == DType::f32);
  CHECK(opt->state()[1].empty());
  opt->zero_grad();
  CHECK(!a.grad().defined());
  opt->set_lr(0.5);
  CHECK(opt->lr() == 0.5);
}

TEST_CASE("optimizer: unknown type and unknown option are refused by name") {
  Var p(zeros({2}), true);
  auto message = [&](const Options& o) {
    try {
      make_optimizer({p}, o);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string unknown = message(Options("optimizer").set("type", "adamm"));
  CHECK(unknown.find("unknown optimizer 'adamm'") != std::string::npos);
  CHECK(unknown.find("adamw") != std::string::npos);  // lists the known ones
  std::string option =
      message(Options("optimizer").set("type", "sgd").set("lr", 0.1).set("momentun", 0.9));
  CHECK(option.find("momentun") != std::string::npos);
  CHECK(!message(Options("optimizer").set("type", "sgd")).empty());  // lr is required
}

TEST_CASE("lr_groups: a matched parameter learns at its group's rate, scheduled as lr") {
  // Two parameters with the same gradients: "pos.w" in a group at 4x lr, "mlp.w" outside.
  Var pos(Tensor::from_vector(kStart, {3}), true), mlp(Tensor::from_vector(kStart, {3}), true);
  const Options o = Options("optimizer")
                        .set("type", "adamw")
                        .set("lr", 0.01)
                        .set("weight_decay", 0.1)
                        .set_list("lr_groups", {"pos.*=0.04"});
  auto opt = make_optimizer(Named{{"mlp.w", mlp}, {"pos.w", pos}}, o);
  CHECK(opt->lr_of(0) == 0.01);
  CHECK(opt->lr_of(1) == doctest::Approx(0.04).epsilon(1e-15));
  for (const Vec& g : kGrads) {
    pos.set_grad(Tensor::from_vector(g, {3}));
    mlp.set_grad(Tensor::from_vector(g, {3}));
    opt->step();
  }
  Vec want_pos(3), want_mlp(3);
  for (size_t i = 0; i < 3; ++i) {
    want_pos[i] = adam_ref(i, 0.04, 0.9, 0.999, 1e-8, 0.1, true);
    want_mlp[i] = adam_ref(i, 0.01, 0.9, 0.999, 1e-8, 0.1, true);
  }
  check_close(pos.value().to_vector<double>(), want_pos, 1e-12);
  check_close(mlp.value().to_vector<double>(), want_mlp, 1e-12);
  opt->set_lr(0.005);  // a schedule's move: the group keeps its 4x
  CHECK(opt->lr_of(1) == doctest::Approx(0.02).epsilon(1e-15));
  CHECK(opt->lr_of(0) == 0.005);
}

TEST_CASE("lr_groups: bad entries, unmatched patterns and doubly matched parameters are refused") {
  Var a(zeros({2}), true), b(zeros({2}), true);
  auto message = [&](std::vector<std::string> groups, double lr = 0.1) {
    try {
      make_optimizer(
          Named{{"encoder.layers.0.attn.positional.weight", a}, {"head.weight", b}},
          Options("optimizer").set("type", "adam").set("lr", lr).set_list("lr_groups", groups));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message({"*.positional.*=0.3"}).empty());
  CHECK(message({"*.positional.*=0.3", "head.*=0.01"}).empty());
  for (const char* bad : {"*.positional.*", "=0.1", "head.*=", "head.*=fast", "head.*=0",
                          "head.*=-1", "head.*=inf", "head.*=1e-2x", "head.*=0x1p-4"}) {
    CAPTURE(bad);
    const std::string m = message({bad});
    CHECK(m.find("optimizer.lr_groups") != std::string::npos);
    CHECK(m.find(bad) != std::string::npos);
  }
  const std::string none = message({"*.fastrpb.*=0.1"});
  CHECK(none.find("'*.fastrpb.*' matches no parameter") != std::string::npos);
  CHECK(none.find("encoder.layers.0.attn.positional.weight") != std::string::npos);
  const std::string both = message({"*.weight=0.2", "head.*=0.3"});
  CHECK(both.find("'head.weight' matches both '*.weight' and 'head.*'") != std::string::npos);
  CHECK(message({"head.*=0.3"}, 0.0).find("lr must be > 0") != std::string::npos);
  // Without names (a bare list of parameters) groups cannot be matched: refused, not ignored.
  Var p(zeros({2}), true);
  CHECK_THROWS_WITH_AS(
      make_optimizer(
          std::vector<Var>{p},
          Options("optimizer").set("type", "adam").set("lr", 0.1).set_list("lr_groups", {"p=1"})),
      doctest::Contains("named parameters"), std::exception);
  // A config's check at load (no parameters) reads the entries and refuses bad ones.
  CHECK_NOTHROW(make_optimizer(
      std::vector<Var>{},
      Options("optimizer").set("type", "adam").set("lr", 0.1).set_list("lr_groups", {"p=1"})));
  CHECK_THROWS(make_optimizer(
      std::vector<Var>{},
      Options("optimizer").set("type", "adam").set("lr", 0.1).set_list("lr_groups", {"p=x"})));
}

TEST_CASE("clip_grad_norm: total L2 norm, scaled by max_norm/(norm + 1e-6) when above") {
  Var a(Tensor::from_vector(Vec{0, 0}, {2}), true);
  Var b(Tensor::from_vector(Vec{0}, {1}), true);
  Var c(Tensor::from_vector(Vec{0}, {1}), true);  // no grad: skipped
  a.set_grad(Tensor::from_vector(Vec{3, 4}, {2}));
  b.set_grad(Tensor::from_vector(Vec{12}, {1}));
  // √(9 + 16 + 144) = 13; coefficient 6.5 / (13 + 1e-6).
  CHECK(clip_grad_norm({a, b, c}, 6.5).item() == doctest::Approx(13.0).epsilon(1e-15));
  double coef = 6.5 / (13 + 1e-6);
  auto ag = a.grad().to_vector<double>();
  CHECK(ag[0] == doctest::Approx(3 * coef).epsilon(1e-15));
  CHECK(ag[1] == doctest::Approx(4 * coef).epsilon(1e-15));
  CHECK(b.grad().item() == doctest::Approx(12 * coef).epsilon(1e-15));
  CHECK(!c.grad().defined());
  // Below the threshold nothing changes.
  CHECK(clip_grad_norm({a, b}, 100.0).item() == doctest::Approx(6.5).epsilon(1e-6));
  CHECK(b.grad().item() == doctest::Approx(12 * coef).epsilon(1e-15));
}

TEST_CASE("clip_grad_norm: on the gradients' device, nothing read back; bits kept below max_norm") {
  Generator gen(3);
  Var w(randn({7, 5}, gen), true);  // f32
  w.set_grad(randn({7, 5}, gen));
  const std::vector<float> before = w.grad().to_vector<float>();
  const int64_t reads = host_reads();
  const Tensor norm = clip_grad_norm({w}, 1e6);
  CHECK(host_reads() == reads);  // the step can go on without waiting for the norm
  CHECK(norm.dim() == 0);
  CHECK(norm.dtype() == DType::f64);
  CHECK(w.grad().to_vector<float>() == before);  // a factor of exactly 1
  // Clipping off (max_norm infinite): the norm only, the gradient object untouched.
  const Tensor grad = w.grad();
  clip_grad_norm({w}, std::numeric_limits<double>::infinity());
  CHECK(w.grad().raw_data() == grad.raw_data());
  // No gradients at all: a zero norm.
  Var none(zeros({3}), true);
  CHECK(clip_grad_norm({none}, 1.0).item() == 0.0);
}
