// Basic layers: Linear, LayerNorm, Embedding, Dropout, FeedForward and the absolute positional
// embeddings, against their formulas written with plain loops or core ops; gradchecks (f64) of
// each layer end to end w.r.t. its input and parameters; initializer statistics.
#include <cmath>
#include <string>
#include <vector>

#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/feed_forward.h"
#include "layers/layer_norm.h"
#include "layers/linear.h"
#include "layers/positional/absolute.h"
#include "tests/autograd/grad_checks.h"

using namespace relpos;
using test::check_grad;

namespace {
constexpr DType f64 = DType::f64;
Tensor rnd(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return test::random_tensor(s, f64, seed, lo, hi);
}
}  // namespace

// Forward checks compare f64 results with f64 loops: only summation order differs (1e-12).

TEST_CASE("linear: y = x W^T + b over any leading dims, with and without bias") {
  Generator gen(1);
  for (bool bias : {true, false}) {
    INFO("bias " << bias);
    Linear lin(5, 3, bias, f64, gen);
    const Tensor x = rnd({2, 3, 5}, 2);
    const Tensor y = lin.forward(Var(x)).value();
    REQUIRE(y.shape() == Shape{2, 3, 3});
    const auto xv = x.to_vector<double>(), wv = lin.weight().value().to_vector<double>();
    const auto bv = bias ? lin.bias().value().to_vector<double>() : std::vector<double>(3, 0.0);
    std::vector<double> want(18);
    for (int n = 0; n < 6; ++n)
      for (int o = 0; o < 3; ++o) {
        double acc = bv[o];
        for (int i = 0; i < 5; ++i) acc += xv[n * 5 + i] * wv[o * 5 + i];
        want[n * 3 + o] = acc;
      }
    CHECK_CLOSE(y, Tensor::from_vector(want, {2, 3, 3}), 1e-12, 1e-12);
    CHECK(lin.forward(Var(x.select(0, 0).select(0, 1))).shape() == Shape{3});  // 1-D input
    CHECK(lin.named_parameters().size() == (bias ? 2u : 1u));
  }
  Linear lin(5, 3);
  CHECK_THROWS_WITH_AS(lin.forward(Var(zeros({2, 4}))),
                       "[Linear] input's last dim must be in_features = 5, got f32[2, 4] cpu",
                       Error);
}

TEST_CASE("layer_norm: forward equals the formula, biased variance, eps inside the sqrt") {
  const double eps = 1e-5;
  LayerNorm ln(7, eps, true, f64);
  ln.weight() = Var(rnd({7}, 3, 0.5, 1.5), true);
  ln.bias() = Var(rnd({7}, 4), true);
  const Tensor x = rnd({3, 5, 7}, 5, -2, 2);
  const auto xv = x.to_vector<double>(), wv = ln.weight().value().to_vector<double>(),
             bv = ln.bias().value().to_vector<double>();
  std::vector<double> want(xv.size());
  for (int r = 0; r < 15; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < 7; ++j) mean += xv[r * 7 + j] / 7;
    for (int j = 0; j < 7; ++j) var += (xv[r * 7 + j] - mean) * (xv[r * 7 + j] - mean) / 7;
    for (int j = 0; j < 7; ++j)
      want[r * 7 + j] = (xv[r * 7 + j] - mean) / std::sqrt(var + eps) * wv[j] + bv[j];
  }
  CHECK_CLOSE(ln.forward(Var(x)).value(), Tensor::from_vector(want, {3, 5, 7}), 1e-12, 1e-12);
  // Init as torch: weight 1, bias 0; no parameters without affine.
  LayerNorm fresh(4);
  CHECK(fresh.weight().value().to_vector<float>() == std::vector<float>(4, 1.0f));
  CHECK(fresh.bias().value().to_vector<float>() == std::vector<float>(4, 0.0f));
  CHECK(LayerNorm(4, 1e-5, false).named_parameters().empty());
  CHECK_THROWS_AS(fresh.forward(Var(zeros({2, 5}))), Error);
}

TEST_CASE("embedding: rows of the weight for each id, any id shape") {
  Generator gen(6);
  Embedding emb(11, 4, f64, gen);
  const Tensor ids = Tensor::from_vector<int64_t>({3, 0, 10, 3, 7, 1}, {2, 3});
  const Tensor y = emb.forward(ids).value();
  REQUIRE(y.shape() == Shape{2, 3, 4});
  const auto id = ids.to_vector<int64_t>();
  for (int k = 0; k < 6; ++k)
    CHECK(y.select(0, k / 3).select(0, k % 3).to_vector<double>() ==
          emb.weight().value().select(0, id[k]).to_vector<double>());
}

TEST_CASE("feed_forward: fc2(act(fc1 x)) with core ops, gelu and relu; names fc1, fc2") {
  Generator gen(7);
  for (Activation act : {Activation::gelu, Activation::relu}) {
    FeedForward ffn(6, 10, act, 0.0, f64, gen);
    const Tensor x = rnd({2, 3, 6}, 8, -2, 2);
    const Tensor w1 = ffn.fc1().weight().value(), b1 = ffn.fc1().bias().value();
    const Tensor w2 = ffn.fc2().weight().value(), b2 = ffn.fc2().bias().value();
    const Tensor x2 = x.reshape({6, 6});
    const Tensor h1 = add(matmul(x2, w1, false, true), b1);
    const Tensor h = act == Activation::gelu ? gelu(h1) : relu(h1);
    const Tensor want = add(matmul(h, w2, false, true), b2).reshape({2, 3, 6});
    CHECK_CLOSE(ffn.forward(Var(x)).value(), want, 1e-12, 1e-12);
    std::vector<std::string> names;
    for (const auto& [n, p] : ffn.named_parameters()) names.push_back(n);
    CHECK(names == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  }
  CHECK(activation_from_name("relu") == Activation::relu);
  CHECK_THROWS_WITH_AS(activation_from_name("gleu"),
                       "[FeedForward] unknown activation 'gleu'; known: gelu, relu", Error);
}

// Gradchecks use the defaults (eps 1e-6, atol 1e-6, rtol 1e-4): every layer is smooth with O(1)
// derivatives on inputs in [-2, 2] (relu's kink at 0 is met with probability 0 by random inputs).
// The inputs are the layer input, then the parameters, which f installs into the layer.

TEST_CASE("linear, layer_norm, embedding: gradcheck w.r.t. input and every parameter") {
  Generator gen(9);
  Linear lin(5, 4, true, f64, gen);
  check_grad(
      [&](const std::vector<Var>& v) {
        lin.weight() = v[1];
        lin.bias() = v[2];
        return lin.forward(v[0]);
      },
      {rnd({2, 3, 5}, 10), lin.weight().value(), lin.bias().value()});

  LayerNorm ln(7, 1e-5, true, f64);
  check_grad(
      [&](const std::vector<Var>& v) {
        ln.weight() = v[1];
        ln.bias() = v[2];
        return ln.forward(v[0]);
      },
      {rnd({3, 7}, 11, -2, 2), rnd({7}, 12, 0.5, 1.5), rnd({7}, 13)});

  Embedding emb(6, 3, f64, gen);
  const Tensor ids = Tensor::from_vector<int64_t>({5, 1, 1, 0}, {2, 2});  // id 1 twice
  check_grad(
      [&](const std::vector<Var>& v) {
        emb.weight() = v[0];
        return emb.forward(ids);
      },
      {emb.weight().value()});
}

TEST_CASE("feed_forward and positional embeddings: gradcheck end to end") {
  Generator gen(14);
  for (Activation act : {Activation::gelu, Activation::relu}) {
    FeedForward ffn(4, 6, act, 0.0, f64, gen);
    check_grad(
        [&](const std::vector<Var>& v) {
          ffn.fc1().weight() = v[1];
          ffn.fc1().bias() = v[2];
          ffn.fc2().weight() = v[3];
          ffn.fc2().bias() = v[4];
          return ffn.forward(v[0]);
        },
        {rnd({2, 3, 4}, 15, -2, 2), ffn.fc1().weight().value(), ffn.fc1().bias().value(),
         ffn.fc2().weight().value(), ffn.fc2().bias().value()});
  }
  LearnedPositionalEmbedding lpe(9, 5, f64, gen);
  check_grad(
      [&](const std::vector<Var>& v) {
        lpe.weight() = v[1];
        return lpe.forward(v[0]);
      },
      {rnd({2, 4, 5}, 16), lpe.weight().value()});
  SinusoidalPositionalEmbedding spe(9, 5, f64);
  check_grad([&](const std::vector<Var>& v) { return spe.forward(v[0]); }, {rnd({2, 9, 5}, 17)});
  // A 3 x 2 grid between one front and one back special: every table gets its gradient.
  LearnedGridPositionalEmbedding grid(1, 3, 2, 1, 5, f64, gen);
  check_grad(
      [&](const std::vector<Var>& v) {
        grid.special() = v[1];
        grid.row() = v[2];
        grid.col() = v[3];
        return grid.forward(v[0]);
      },
      {rnd({2, 8, 5}, 22), grid.special().value(), grid.row().value(), grid.col().value()});
}

TEST_CASE("dropout: identity in eval; in training zeros about p and scales the rest") {
  Generator parent(18);
  Dropout drop(0.25, parent);
  const Tensor x = ones({64, 64});
  drop.eval();
  CHECK(drop.forward(Var(x)).value().to_vector<float>() == x.to_vector<float>());
  drop.train();
  const auto y = drop.forward(Var(x)).value().to_vector<float>();
  int zeros_seen = 0, other_values = 0;
  for (float v : y) {
    zeros_seen += v == 0.0f;
    other_values += v != 0.0f && std::abs(v - 1.0f / 0.75f) > 1e-6f;  // kept values are 1/(1-p)
  }
  CHECK(other_values == 0);
  // Binomial(4096, 0.25): mean 1024, std 27.7; 5 std is a false-failure rate below 1e-6.
  CHECK(std::abs(zeros_seen - 1024) < 5 * 27.7);
  // Two dropouts forked from one parent draw different masks.
  Dropout other(0.25, parent);
  Dropout again(0.25, parent);
  CHECK(other.forward(Var(x)).value().to_vector<float>() !=
        again.forward(Var(x)).value().to_vector<float>());
  CHECK_THROWS_AS(Dropout(1.0), Error);
}

TEST_CASE("init: Linear weight is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), 256 x 256") {
  Generator gen(19);
  Linear lin(256, 256, true, f64, gen);
  const double b = 1.0 / 16.0, n = 65536;
  const auto w = lin.weight().value().to_vector<double>();
  double mean = 0, var = 0, max_abs = 0;
  std::vector<int> bins(8, 0);
  for (double v : w) {
    mean += v / n;
    var += v * v / n;
    max_abs = std::max(max_abs, std::abs(v));
    bins[std::min(7, static_cast<int>((v + b) / (2 * b) * 8))]++;
  }
  CHECK(max_abs <= b);
  // For U(-b, b): mean 0 with standard error b / sqrt(3n); E[w^2] = b^2/3 with standard error
  // sqrt(4/45) b^2 / sqrt(n); each of 8 bins holds Binomial(n, 1/8) (std 84.7). 5 standard errors
  // each: false-failure rate below 1e-5 over all checks.
  CHECK(std::abs(mean) < 5 * b / std::sqrt(3 * n));
  CHECK(std::abs(var - b * b / 3) < 5 * std::sqrt(4.0 / 45.0) * b * b / std::sqrt(n));
  for (int c : bins) CHECK(std::abs(c - n / 8) < 5 * 84.7);
  for (double v : lin.bias().value().to_vector<double>()) CHECK(std::abs(v) <= b);
  // The same seed gives the same weights; the next draw differs.
  Generator again(19);
  CHECK(Linear(256, 256, true, f64, again).weight().value().to_vector<double>() == w);
  CHECK(Linear(256, 256, true, f64, again).weight().value().to_vector<double>() != w);
}

TEST_CASE("init: xavier_uniform bound, Embedding and learned positions N(0, 1)") {
  Generator gen(20);
  const Tensor w = zeros({30, 70}, f64);
  xavier_uniform_(w, gen);
  const double bound = std::sqrt(6.0 / 100.0);
  double max_abs = 0;
  for (double v : w.to_vector<double>()) max_abs = std::max(max_abs, std::abs(v));
  CHECK(max_abs <= bound);
  CHECK(max_abs > 0.95 * bound);  // 2100 draws reach the top 5% of the range almost surely
  for (const Tensor& t : {Embedding(200, 100, f64, gen).weight().value(),
                          LearnedPositionalEmbedding(200, 100, f64, gen).weight().value()}) {
    const auto v = t.to_vector<double>();
    double mean = 0, m2 = 0;
    for (double e : v) mean += e / v.size(), m2 += e * e / v.size();
    // n = 20000: mean's standard error 0.0071, E[x^2]'s sqrt(2/n) = 0.01; 5 of each.
    CHECK(std::abs(mean) < 5 * 0.0071);
    CHECK(std::abs(m2 - 1.0) < 5 * 0.01);
  }
}

TEST_CASE("sinusoidal positions: table equals Vaswani's formula at odd dim; x + pe[:L]") {
  const int64_t max_len = 12, d = 7;
  SinusoidalPositionalEmbedding spe(max_len, d, f64);
  const auto pe = spe.table().to_vector<double>();
  for (int64_t pos = 0; pos < max_len; ++pos)
    for (int64_t i = 0; 2 * i < d; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / d);
      CHECK(pe[pos * d + 2 * i] == doctest::Approx(std::sin(angle)).epsilon(1e-12));
      if (2 * i + 1 < d)
        CHECK(pe[pos * d + 2 * i + 1] == doctest::Approx(std::cos(angle)).epsilon(1e-12));
    }
  CHECK(spe.named_parameters().empty());
  CHECK(spe.named_buffers().size() == 1);
  const Tensor x = rnd({2, 5, d}, 21);
  const Tensor want = add(x, spe.table().slice(0, 0, 5));
  CHECK_CLOSE(spe.forward(Var(x)).value(), want, 0, 0);
}

TEST_CASE("grid positions: pixel (r, c) gets row[r] + col[c], specials their own rows; odd grid") {
  Generator gen(23);
  const int64_t front = 1, rows = 3, cols = 5, back = 2, d = 4;
  LearnedGridPositionalEmbedding grid(front, rows, cols, back, d, f64, gen);
  CHECK(grid.named_parameters().size() == 3);
  const auto special = grid.special().value().to_vector<double>();  // [front + back, d]
  const auto row = grid.row().value().to_vector<double>();          // [rows, d]
  const auto col = grid.col().value().to_vector<double>();          // [cols, d]
  const int64_t len = front + rows * cols + back;
  std::vector<double> want(static_cast<size_t>(len * d));
  for (int64_t p = 0; p < len; ++p)
    for (int64_t j = 0; j < d; ++j) {
      const int64_t pixel = p - front, r = pixel / cols, c = pixel % cols;
      double& w = want[static_cast<size_t>(p * d + j)];
      if (p < front)
        w = special[static_cast<size_t>(p * d + j)];
      else if (pixel >= rows * cols)
        w = special[static_cast<size_t>((front + pixel - rows * cols) * d + j)];
      else
        w = row[static_cast<size_t>(r * d + j)] + col[static_cast<size_t>(c * d + j)];
    }
  const Tensor x = rnd({2, len, d}, 24);
  const Tensor table = Tensor::from_vector(want, {len, d});
  CHECK_CLOSE(grid.table().value(), table, 0, 0);
  CHECK_CLOSE(grid.forward(Var(x)).value(), add(x, table), 0, 1e-15);
  // A shorter input takes the first positions; no specials: the grid alone.
  CHECK_CLOSE(grid.forward(Var(x.slice(1, 0, 7))).value(),
              add(x.slice(1, 0, 7), table.slice(0, 0, 7)), 0, 1e-15);
  LearnedGridPositionalEmbedding bare(0, rows, cols, 0, d, f64, gen);
  CHECK(!bare.special().defined());
  CHECK(bare.named_parameters().size() == 2);
  CHECK(bare.table().shape() == Shape{rows * cols, d});
  CHECK_THROWS_WITH_AS(grid.forward(Var(zeros({1, len + 1, d}, f64))),
                       "[LearnedGridPositionalEmbedding] sequence length 19 exceeds max_len 18",
                       Error);
  CHECK_THROWS_AS(LearnedGridPositionalEmbedding(0, 0, 3, 0, d), Error);
}

TEST_CASE("positional: L > max_len fails naming both; wrong dim fails") {
  SinusoidalPositionalEmbedding spe(4, 6);
  LearnedPositionalEmbedding lpe(4, 6);
  CHECK_THROWS_WITH_AS(spe.forward(Var(zeros({1, 5, 6}))),
                       "[SinusoidalPositionalEmbedding] sequence length 5 exceeds max_len 4",
                       Error);
  CHECK_THROWS_WITH_AS(lpe.forward(Var(zeros({1, 5, 6}))),
                       "[LearnedPositionalEmbedding] sequence length 5 exceeds max_len 4", Error);
  CHECK_THROWS_AS(lpe.forward(Var(zeros({1, 4, 5}))), Error);
  CHECK(lpe.forward(Var(zeros({1, 4, 6}))).shape() == Shape{1, 4, 6});
}
