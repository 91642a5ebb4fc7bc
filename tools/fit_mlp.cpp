// relpos_fit_mlp: the smallest end-to-end job of the engine. Generates a three-arm spiral
// (2-D points, 3 classes), fits a 2-64-64-3 MLP with cross-entropy and SGD with momentum, and
// prints the loss falling and the final training accuracy. Usage:
//   relpos_fit_mlp [--steps N] [--seed S]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"

using namespace relpos;

namespace {

constexpr int64_t kPointsPerClass = 200;
constexpr int64_t kClasses = 3;

// Spiral arms: class c, point i at radius r = i / n, angle 4 (c + r) + noise.
void make_spiral(Generator& gen, Tensor& points, Tensor& labels) {
  const int64_t n = kPointsPerClass * kClasses;
  const std::vector<double> noise = randn({n}, gen, 0, 0.2, DType::f64).to_vector<double>();
  std::vector<float> xy(2 * n);
  std::vector<int64_t> y(n);
  for (int64_t c = 0; c < kClasses; ++c)
    for (int64_t i = 0; i < kPointsPerClass; ++i) {
      const int64_t k = c * kPointsPerClass + i;
      const double r = static_cast<double>(i) / kPointsPerClass;
      const double t = 4.0 * (static_cast<double>(c) + r) + noise[k];
      xy[2 * k] = static_cast<float>(r * std::sin(t));
      xy[2 * k + 1] = static_cast<float>(r * std::cos(t));
      y[k] = c;
    }
  points = Tensor::from_vector(xy, {n, 2});
  labels = Tensor::from_vector(y, {n});
}

struct Linear {
  Var weight, bias;  // [out, in], [out] as torch.nn.Linear, U(-1/sqrt(in), 1/sqrt(in)) init
  Linear(int64_t in, int64_t out, Generator& gen) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    weight = Var(rand({out, in}, gen, -bound, bound), true);
    bias = Var(rand({out}, gen, -bound, bound), true);
  }
  Var operator()(const Var& x) const { return add(matmul(x, weight, false, true), bias); }
};

int64_t parse_flag(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoll(argv[i + 1], nullptr, 10);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) try {
  const int64_t steps = parse_flag(argc, argv, "--steps", 600);
  Generator gen(static_cast<uint64_t>(parse_flag(argc, argv, "--seed", 0)));
  Tensor points, labels;
  make_spiral(gen, points, labels);

  const Linear l1(2, 64, gen), l2(64, 64, gen), l3(64, kClasses, gen);
  const std::vector<Var> params = {l1.weight, l1.bias, l2.weight, l2.bias, l3.weight, l3.bias};
  std::vector<Tensor> velocity;
  for (const Var& p : params) velocity.push_back(zeros_like(p.value()));
  const double lr = 0.5, momentum = 0.9;

  std::printf("relpos fit-mlp: spiral, %lld points, 3 classes, MLP 2-64-64-3, SGD momentum\n",
              static_cast<long long>(points.size(0)));
  const auto start = std::chrono::steady_clock::now();
  const Var x(points);
  double loss_value = 0;
  for (int64_t step = 0; step <= steps; ++step) {
    const Var logits = l3(relu(l2(relu(l1(x)))));
    const Var loss = cross_entropy(logits, labels);
    loss_value = loss.value().item();
    if (step % 50 == 0) {
      const double acc = mean(cast(eq(argmax(logits.value(), 1), labels), DType::f32)).item();
      std::printf("step %4lld  loss %.4f  accuracy %.3f\n", static_cast<long long>(step),
                  loss_value, acc);
    }
    if (step == steps) break;
    for (Var p : params) p.zero_grad();
    loss.backward();
    NoGradGuard no_grad;  // v = momentum v + g; p -= lr v
    for (size_t i = 0; i < params.size(); ++i) {
      velocity[i] = add(mul_scalar(velocity[i], momentum), params[i].grad());
      Var p = params[i];
      p.set_value(sub(p.value(), mul_scalar(velocity[i], lr)));
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("done: %lld steps in %.2f s, final loss %.4f\n", static_cast<long long>(steps),
              seconds, loss_value);
  return std::isfinite(loss_value) ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "relpos_fit_mlp: %s\n", e.what());
  return 2;
}
