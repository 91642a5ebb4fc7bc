// The CPU iteration engine for elementwise kernels: walks N operands of one shape, each with its
// own element strides (0 for broadcast dims), in row-major order. Dims that are contiguous for
// every operand are merged first, so a dense tensor becomes one flat loop. Work is split across
// OpenMP threads by rows and, for long rows, by blocks inside a row.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "core/layout.h"
#include "core/tensor.h"

namespace relpos::cpu {

// The flat loop of a dense kernel: fn(begin, end) for each block of kDenseBlock elements of
// [0, n), on the OpenMP threads once n passes two blocks.
constexpr int64_t kDenseBlock = 16384;
template <typename Fn>
void for_each_dense_block(int64_t n, Fn&& fn) {
  const int64_t blocks = (n + kDenseBlock - 1) / kDenseBlock;
#pragma omp parallel for schedule(static) if (n > 2 * kDenseBlock)
  for (int64_t b = 0; b < blocks; ++b) fn(b * kDenseBlock, std::min(n, (b + 1) * kDenseBlock));
}

// Calls inner(ptrs, n, steps) for runs of the innermost merged dim, where ptrs[k] points at the
// run's first element of operand k and steps[k] is its stride in elements. Runs never overlap
// in the output, so inner may write without synchronisation. Threads are used once the work,
// elements x cost_per_element (e.g. the scan length when each element starts a scan), is large.
template <size_t N, typename Inner>
void for_each_run(const StridedLayout<N>& L, Inner&& inner, int64_t cost_per_element = 1) {
  const int nd = static_cast<int>(L.shape.size());
  const int64_t row_len = L.shape.back();
  int64_t rows = 1;
  for (int d = 0; d + 1 < nd; ++d) rows *= L.shape[d];
  if (rows == 0 || row_len == 0) return;

  constexpr int64_t kBlock = 8192;  // elements per task when a row is long
  const int64_t blocks_per_row = (row_len + kBlock - 1) / kBlock;
  const int64_t tasks = rows * blocks_per_row;
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = L.strides[k].back();
  // The odometer's common step, to the next row along dim nd-2, in bytes per operand: taken
  // without reading the layout's vectors, which costs as much as a short row.
  const int64_t inner_rows = nd >= 2 ? L.shape[nd - 2] : 1;
  std::array<int64_t, N> next_row{};
  if (nd >= 2)
    for (size_t k = 0; k < N; ++k) next_row[k] = L.strides[k][nd - 2] * L.elem_size[k];

  // Tasks [begin, end) in order: the first task's row is found by division, each next row by an
  // odometer step (rows are often short, e.g. 8 elements, so a division chain per row would cost
  // more than the row itself).
  auto run_tasks = [&](int64_t begin, int64_t end) {
    if (begin >= end) return;
    std::vector<int64_t> index(std::max(nd - 1, 1), 0);  // the row's index over dims 0..nd-2
    std::array<char*, N> row_ptrs = L.base;
    int64_t row = begin / blocks_per_row, block = begin % blocks_per_row;
    for (int d = nd - 2; d >= 0; --d) {
      index[d] = row % L.shape[d];
      row /= L.shape[d];
      for (size_t k = 0; k < N; ++k) row_ptrs[k] += index[d] * L.strides[k][d] * L.elem_size[k];
    }
    for (int64_t t = begin; t < end; ++t) {
      std::array<char*, N> ptrs = row_ptrs;
      int64_t n = row_len;
      if (blocks_per_row > 1) {  // a block of a long row
        const int64_t start = block * kBlock;
        for (size_t k = 0; k < N; ++k) ptrs[k] += start * steps[k] * L.elem_size[k];
        n = std::min(kBlock, row_len - start);
      }
      inner(ptrs, n, steps);
      if (blocks_per_row > 1) {
        if (++block < blocks_per_row) continue;
        block = 0;
      }
      if (nd < 2) continue;
      for (size_t k = 0; k < N; ++k) row_ptrs[k] += next_row[k];  // the next row
      if (++index[nd - 2] < inner_rows) continue;
      for (size_t k = 0; k < N; ++k) row_ptrs[k] -= inner_rows * next_row[k];
      index[nd - 2] = 0;
      for (int d = nd - 3; d >= 0; --d) {  // carried into the outer dims
        for (size_t k = 0; k < N; ++k) row_ptrs[k] += L.strides[k][d] * L.elem_size[k];
        if (++index[d] < L.shape[d]) break;
        for (size_t k = 0; k < N; ++k) row_ptrs[k] -= L.shape[d] * L.strides[k][d] * L.elem_size[k];
        index[d] = 0;
      }
    }
  };

  const int64_t work = rows * row_len * cost_per_element;
  if (work < 32768 || omp_get_max_threads() == 1 || omp_in_parallel()) {
    run_tasks(0, tasks);
  } else {
#pragma omp parallel
    {  // contiguous chunks of tasks, as schedule(static) would split them
      const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
      const int64_t chunk = (tasks + threads - 1) / threads;
      run_tasks(std::min(tasks, me * chunk), std::min(tasks, (me + 1) * chunk));
    }
  }
}

// Input I of an elementwise loop at element i, where input J is one value held for the run.
template <size_t I, size_t J, typename Ins, typename V>
inline auto input_at(const Ins& ins, const V& held, int64_t i) {
  if constexpr (I == J)
    return held;
  else
    return std::get<I>(ins)[i];
}

// Elementwise map over same-shape operands: out = f(in...). Typed pointers per operand.
//   map_elementwise<float, float, float>(out, {&a, &b}, [](float x, float y) { return x + y; });
// Runs with unit strides, and runs where one input is broadcast (stride 0) and the rest have
// unit strides (a bias, a per-row scale), are loops the compiler vectorizes; others are strided.
// Every run has the same strides, so its kind is decided once, not per run.
template <typename TOut, typename... TIn, typename F>
void map_elementwise(const Tensor& out, const std::array<const Tensor*, sizeof...(TIn)>& in, F f) {
  constexpr size_t N = sizeof...(TIn) + 1;
  std::array<const Tensor*, N> ops;
  ops[0] = &out;
  for (size_t k = 0; k + 1 < N; ++k) ops[k + 1] = in[k];
  const StridedLayout<N> L = make_layout<N>(out.shape(), ops);
  std::array<int64_t, N> s;  // element strides along a run: the same for every run
  for (size_t k = 0; k < N; ++k) s[k] = L.strides[k].back();
  int units = 0, held = -1;  // inputs with stride 1; the one input with stride 0
  for (size_t k = 1; k < N; ++k) {
    units += s[k] == 1;
    if (s[k] == 0) held = held == -1 ? static_cast<int>(k - 1) : -2;
  }
  const bool dense = s[0] == 1 && units == static_cast<int>(N) - 1;
  const bool one_held = s[0] == 1 && held >= 0 && units == static_cast<int>(N) - 2;
  for_each_run<N>(L, [&](const std::array<char*, N>& p, int64_t n, const std::array<int64_t, N>&) {
    TOut* o = reinterpret_cast<TOut*>(p[0]);
    [&]<size_t... I>(std::index_sequence<I...>) {
      std::tuple<TIn*...> ins{reinterpret_cast<TIn*>(p[I + 1])...};
      if (dense) {  // a loop the compiler vectorizes
        for (int64_t i = 0; i < n; ++i) o[i] = f(std::get<I>(ins)[i]...);
        return;
      }
      if constexpr (N >= 2) {  // one input broadcast along the run, the others unit
        if (one_held) {
          const auto with_held = [&]<size_t J>(std::integral_constant<size_t, J>) {
            if (held != static_cast<int>(J)) return;
            const auto value = std::get<J>(ins)[0];
            for (int64_t i = 0; i < n; ++i) o[i] = f(input_at<I, J>(ins, value, i)...);
          };
          (with_held(std::integral_constant<size_t, I>{}), ...);
          return;
        }
      }
      for (int64_t i = 0; i < n; ++i) o[i * s[0]] = f(std::get<I>(ins)[i * s[I + 1]]...);
    }
    (std::index_sequence_for<TIn...>{});
  });
}

}  // namespace relpos::cpu
