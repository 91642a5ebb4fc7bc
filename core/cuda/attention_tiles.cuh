// The shared-memory tiles of the tiled attention kernels (attention_kernels.cuh): their loads,
// products and stores, each thread's share given by attention_geometry.cuh (the position term's
// band is attention_band.cuh).
// Storage S is f32, f64 or bf16; a kernel computes in Compute<S> (f32 for bf16). f32 and f64 tiles
// multiply with FMAs into each thread's registers; bf16 tiles on the tensor cores (mma.sync
// m16n8k16, f32 sums, tensor_core.cuh), each warp 16 rows of a product, and each thread's share of
// a score tile is the one the instruction's result fragments give it, so a bf16 kernel's weights
// P̃ and dS go from one product into the next without shared memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/bf16.h"
#include "core/cuda/attention_geometry.cuh"
#include "core/cuda/tensor_core.cuh"

namespace relpos::cuda::attention_tiles {

// Four consecutive values of shared memory, 16-byte aligned, in vector loads and stores.
__device__ __forceinline__ void load4(const float* p, float (&x)[4]) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
}
__device__ __forceinline__ void load4(const double* p, double (&x)[4]) {
  const double2 a = *reinterpret_cast<const double2*>(p),
                b = *reinterpret_cast<const double2*>(p + 2);
  x[0] = a.x, x[1] = a.y, x[2] = b.x, x[3] = b.y;
}
__device__ __forceinline__ void store4(float* p, float x0, float x1, float x2, float x3) {
  *reinterpret_cast<float4*>(p) = make_float4(x0, x1, x2, x3);
}
__device__ __forceinline__ void store4(double* p, double x0, double x1, double x2, double x3) {
  *reinterpret_cast<double2*>(p) = make_double2(x0, x1);
  *reinterpret_cast<double2*>(p + 2) = make_double2(x2, x3);
}
__device__ __forceinline__ void load4(const bf16* p, float (&x)[4]) {
  for (int i = 0; i < 4; ++i) x[i] = p[i];
}
__device__ __forceinline__ void store4(bf16* p, float x0, float x1, float x2, float x3) {
  p[0] = bf16(x0), p[1] = bf16(x1), p[2] = bf16(x2), p[3] = bf16(x3);
}

// 16 bytes from `from` to `to` (or zeros), 16-byte aligned, as one vector (as host C++ in
// tests/cuda_emulation, memcpy and memset: the host compiler's aliasing rules forbid the cast).
__device__ __forceinline__ void copy16(void* to, const void* from) {
#if defined(__CUDACC__)
  *static_cast<uint4*>(to) = *static_cast<const uint4*>(from);
#else
  std::memcpy(to, from, 16);
#endif
}
__device__ __forceinline__ void zero16(void* to) {
#if defined(__CUDACC__)
  *static_cast<uint4*>(to) = uint4{};
#else
  std::memset(to, 0, 16);
#endif
}

// Shared tiles: rows [kTile][kDim + kPad] (a row per query or key) and columns
// [kDim][kTile + kPad] (transposed).
template <typename S, int kDim>
using RowTile = S[kTile][kDim + kPad<S>];
template <typename S, int kDim>
using ColTile = S[kDim][kTile + kPad<S>];
template <typename S>
using ScoreTile = S[kTile][kTile + kPad<S>];
// A score tile that only the FMA kernels keep in shared memory: bf16 kernels keep their weights in
// the tensor cores' fragments.
struct NoTile {};
template <typename S>
using FmaScoreTile = std::conditional_t<kTensorCores<S>, NoTile, ScoreTile<S>>;

// A thread's share of a score tile, and of kDim output columns, in the compute type.
template <typename S>
using Scores = Compute<S>[kRowsPer<S>][kColsPer<S>];
template <typename S, int kDim>
using RowShare = Compute<S>[kRowsPer<S>][kDim / kLanes<S>];

// The dynamic shared memory of every kernel.
extern __shared__ __align__(128) unsigned char smem[];

// rows[r][d] = x[row0 + r][d] * factor; zero past `len` rows or `dim`. bf16 rows of whole 16-byte
// runs (dim a multiple of 8, x aligned) are copied as 16-byte vectors.
template <typename S, int kDim>
__device__ void load_rows(RowTile<S, kDim>& rows, const S* x, int64_t row0, int64_t len, int dim,
                          Compute<S> factor) {
  if constexpr (kTensorCores<S>) {
    constexpr int kRuns = kDim / 8;  // 16-byte runs of a tile row
    if (factor == 1 && dim % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0) {
      for (int e = threadIdx.x; e < kTile * kRuns; e += kThreads) {
        const int r = e / kRuns, d = e % kRuns * 8;
        const int64_t row = row0 + r;
        if (row < len && d < dim)
          copy16(&rows[r][d], x + row * dim + d);
        else
          zero16(&rows[r][d]);
      }
      return;
    }
  }
  for (int e = threadIdx.x; e < kTile * kDim; e += kThreads) {
    const int r = e / kDim, d = e % kDim;
    const int64_t row = row0 + r;
    rows[r][d] = row < len && d < dim ? S(Compute<S>(x[row * dim + d]) * factor) : S(0);
  }
}

// cols[d][c] = x[col0 + c][d]; zero past `len` or `dim`.
template <typename S, int kDim>
__device__ void load_cols(ColTile<S, kDim>& cols, const S* x, int64_t col0, int64_t len, int dim) {
  for (int e = threadIdx.x; e < kTile * kDim; e += kThreads) {
    const int c = e / kDim, d = e % kDim;
    const int64_t col = col0 + c;
    cols[d][c] = col < len && d < dim ? x[col * dim + d] : S(0);
  }
}

// The second operand of a kernel's products (keys, values, queries or output gradients of the
// block's other side, the position term's band) as the products read it: transposed (ColTile) for
// the FMA tiles, whose products read kTile values of a column as vectors; as rows (RowTile) for
// bf16, which ldmatrix reads either way round, and which then loads as 16-byte vectors.
template <typename S, int kDim>
using OperandTile = std::conditional_t<kTensorCores<S>, RowTile<S, kDim>, ColTile<S, kDim>>;
template <typename S, int kDim>
__device__ void load_operand(OperandTile<S, kDim>& t, const S* x, int64_t row0, int64_t len,
                             int dim) {
  if constexpr (kTensorCores<S>)
    load_rows<S, kDim>(t, x, row0, len, dim, Compute<S>(1));
  else
    load_cols<S, kDim>(t, x, row0, len, dim);
}
// Element (row, d) of an operand tile.
template <typename S, int kDim>
__device__ __forceinline__ S& operand_at(OperandTile<S, kDim>& t, int row, int d) {
  if constexpr (kTensorCores<S>)
    return t[row][d];
  else
    return t[d][row];
}

// The tensor cores' products (bf16). A warp forms rows [kWarpRows w, kWarpRows (w + 1)) of
// A·B into acc, whose element [r][2 n + h] is the result fragment's d[2 r + h] of 8-column block n
// (row_of, col_of and dim_of of bf16 are those fragments' places). A(m, k) is read from a[m][k]
// (row-major, lda elements a row; from a[k][m] with kAColumns); load_b(b, k0, n0) gives the B
// fragments of rows k0 .. k0 + 15 and the two 8-column blocks from n0 (b[0], b[1], then b[2], b[3]:
// tensor_core.cuh's b[0], b[1] of each). Operands come from shared memory by ldmatrix, each lane
// giving one row of one of the four 8 x 8 matrices: lanes 8 i + x address row x of matrix i. With
// the matrices of a 16 x 16 block in the order (rows 0-7, columns 0-7), (8-15, 0-7), (0-7, 8-15),
// (8-15, 8-15), lane 8 i + x addresses row ldmatrix_row() = x + 8 (i % 2) from column
// ldmatrix_col() = 8 (i / 2).
__device__ __forceinline__ int ldmatrix_row() {
  const int lane = static_cast<int>(threadIdx.x % 32);
  return lane % 8 + 8 * (lane / 8 % 2);
}
__device__ __forceinline__ int ldmatrix_col() {
  return 8 * (static_cast<int>(threadIdx.x % 32) / 16);
}

// acc's 8-column blocks n and n + 1 += A times B's fragments of each (fb[0..1], fb[2..3]).
template <int kN>
__device__ __forceinline__ void mma_blocks(const uint32_t (&fa)[4], const uint32_t (&fb)[4], int n,
                                           float (&acc)[2][kN / 4]) {
  const uint32_t low[2] = {fb[0], fb[1]}, high[2] = {fb[2], fb[3]};
  tensor_core::mma_bf16(acc[0][2 * n], acc[0][2 * n + 1], acc[1][2 * n], acc[1][2 * n + 1], fa,
                        low);
  tensor_core::mma_bf16(acc[0][2 * n + 2], acc[0][2 * n + 3], acc[1][2 * n + 2], acc[1][2 * n + 3],
                        fa, high);
}

template <int kN, int kK, bool kAColumns = false, typename LoadB>
__device__ __forceinline__ void mma_rows(const bf16* a, int lda, LoadB load_b,
                                         float (&acc)[2][kN / 4]) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int m0 = kWarpRows * static_cast<int>(threadIdx.x / 32);
  // kAColumns: A(m, k) = a[k][m], its matrices transposed by ldmatrix, and the rows and columns
  // the lanes address swapped.
  const bf16* row = kAColumns ? a + (lane % 8 + ldmatrix_col()) * lda + m0 + 8 * (lane / 8 % 2)
                              : a + (m0 + ldmatrix_row()) * lda + ldmatrix_col();
#pragma unroll
  for (int k0 = 0; k0 < kK; k0 += kMma) {
    uint32_t fa[4];
    tensor_core::load_matrices<kAColumns>(fa, row + (kAColumns ? k0 * lda : k0));
#pragma unroll
    for (int n = 0; n < kN / 8; n += 2) {
      uint32_t fb[4];
      load_b(fb, k0, 8 * n);
      mma_blocks<kN>(fa, fb, n, acc);
    }
  }
}

// ... with A from a thread's weights w (a score tile's share, rounded to bf16 as operands): the
// fragments of 16 columns are w's columns 4 k .. 4 k + 3.
template <int kN, typename LoadB>
__device__ __forceinline__ void mma_weights(const float (&w)[2][kTile / 4], LoadB load_b,
                                            float (&acc)[2][kN / 4]) {
#pragma unroll
  for (int k = 0; k < kTile / kMma; ++k) {
    const uint32_t fa[4] = {
        tensor_core::pack(w[0][4 * k], w[0][4 * k + 1]),
        tensor_core::pack(w[1][4 * k], w[1][4 * k + 1]),
        tensor_core::pack(w[0][4 * k + 2], w[0][4 * k + 3]),
        tensor_core::pack(w[1][4 * k + 2], w[1][4 * k + 3]),
    };
#pragma unroll
    for (int n = 0; n < kN / 8; n += 2) {
      uint32_t fb[4];
      load_b(fb, kMma * k, 8 * n);
      mma_blocks<kN>(fa, fb, n, acc);
    }
  }
}

// B fragments from shared memory: B(k, n) = b[k][n] (matrices transposed by ldmatrix: rows k0..,
// k0 + 8.. of columns n0.., then of n0 + 8..), or B(k, n) = b[n][k] (rows n0.. of columns k0..,
// k0 + 8.., then rows n0 + 8..).
template <int kLd>
struct RowsOfB {
  const bf16 (*b)[kLd];
  __device__ __forceinline__ void operator()(uint32_t (&f)[4], int k0, int n0) const {
    tensor_core::load_matrices<true>(f, &b[k0 + ldmatrix_row()][n0 + ldmatrix_col()]);
  }
};
template <int kLd>
struct ColumnsOfB {
  const bf16 (*b)[kLd];
  __device__ __forceinline__ void operator()(uint32_t (&f)[4], int k0, int n0) const {
    // The B fragments' order is (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), ...: rows and
    // columns of ldmatrix_row and ldmatrix_col swapped.
    const int lane = static_cast<int>(threadIdx.x % 32);
    tensor_core::load_matrices<false>(f,
                                      &b[n0 + lane % 8 + ldmatrix_col()][k0 + 8 * (lane / 8 % 2)]);
  }
};

// acc[r][c] = Σ_d rows[row_of(r)][d] cols[d][col_of(c)] with FMAs (f32, f64).
template <typename T, int kDim>
__device__ __forceinline__ void fma_tile_product(const RowTile<T, kDim>& rows,
                                                 const ColTile<T, kDim>& cols, Scores<T>& acc) {
  const int lane = threadIdx.x % kLanes<T>;
#pragma unroll
  for (int r = 0; r < kRowsPer<T>; ++r)
#pragma unroll
    for (int c = 0; c < kColsPer<T>; ++c) acc[r][c] = 0;
#pragma unroll 2
  for (int d0 = 0; d0 < kDim; d0 += 4) {
    T x[kRowsPer<T>][4];
#pragma unroll
    for (int r = 0; r < kRowsPer<T>; ++r) load4(&rows[row_of<T>(r)][d0], x[r]);
#pragma unroll
    for (int dd = 0; dd < 4; ++dd) {
      T y[2][4];
      load4(&cols[d0 + dd][4 * lane], y[0]);
      load4(&cols[d0 + dd][32 + 4 * lane], y[1]);
#pragma unroll
      for (int r = 0; r < kRowsPer<T>; ++r)
#pragma unroll
        for (int c = 0; c < kColsPer<T>; ++c) acc[r][c] = fma(x[r][dd], y[c / 4][c % 4], acc[r][c]);
    }
  }
}

// acc[r][c] = Σ_d rows[row_of(r)][d] cols(col_of(c), d): this thread's part of rows · colsᵀ.
template <typename S, int kDim>
__device__ __forceinline__ void tile_product(const RowTile<S, kDim>& rows,
                                             const OperandTile<S, kDim>& cols, Scores<S>& acc) {
  if constexpr (kTensorCores<S>) {
#pragma unroll
    for (int r = 0; r < kRowsPer<S>; ++r)
#pragma unroll
      for (int c = 0; c < kColsPer<S>; ++c) acc[r][c] = 0;
    mma_rows<kTile, kDim>(&rows[0][0], kDim + kPad<S>, ColumnsOfB<kDim + kPad<S>>{cols}, acc);
  } else {
    fma_tile_product<S, kDim>(rows, cols, acc);
  }
}

// acc[r][e] += Σ_i w[r][i] values[dim_of(e)][c0 + i] over four columns, with FMAs.
template <typename S, int kDim>
__device__ __forceinline__ void add_weighted_columns(const Compute<S> (&w)[kRowsPer<S>][4],
                                                     const ColTile<S, kDim>& values, int c0,
                                                     RowShare<S, kDim>& acc) {
#pragma unroll
  for (int e = 0; e < kDim / kLanes<S>; ++e) {
    Compute<S> x[4];
    load4(&values[dim_of<S>(e)][c0], x);
#pragma unroll
    for (int r = 0; r < kRowsPer<S>; ++r)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][e] = fma(w[r][i], x[i], acc[r][e]);
  }
}

// acc[r][e] += Σ_c weights[row_of(r)][c] values(c, dim_of(e)) over the tile's kTile columns.
template <typename S, int kDim>
__device__ __forceinline__ void accumulate_rows(const ScoreTile<S>& weights,
                                                const OperandTile<S, kDim>& values,
                                                RowShare<S, kDim>& acc) {
  if constexpr (kTensorCores<S>) {
    mma_rows<kDim, kTile>(&weights[0][0], kTile + kPad<S>, RowsOfB<kDim + kPad<S>>{values}, acc);
  } else {
#pragma unroll 2
    for (int c0 = 0; c0 < kTile; c0 += 4) {
      S w[kRowsPer<S>][4];
#pragma unroll
      for (int r = 0; r < kRowsPer<S>; ++r) load4(&weights[row_of<S>(r)][c0], w[r]);
      add_weighted_columns<S, kDim>(w, values, c0, acc);
    }
  }
}

// acc[r][e] += Σ_c w[r][c] values(col_of(c), dim_of(e)), the weights in this thread's registers
// (bf16: the tensor cores take them there; f32, f64 do not use it).
template <typename S, int kDim>
__device__ __forceinline__ void accumulate_weights(const Scores<S>& w,
                                                   const OperandTile<S, kDim>& values,
                                                   RowShare<S, kDim>& acc) {
  static_assert(kTensorCores<S>, "FMA tiles accumulate from shared memory (accumulate_rows)");
  mma_weights<kDim>(w, RowsOfB<kDim + kPad<S>>{values}, acc);
}

// acc[r][e] += Σ_x weights[x][row_of(r)] values[x][dim_of(e)]: rows of weightsᵀ·values on the
// tensor cores (bf16).
template <typename S, int kDim>
__device__ __forceinline__ void accumulate_columns(const ScoreTile<S>& weights,
                                                   const RowTile<S, kDim>& values,
                                                   RowShare<S, kDim>& acc) {
  static_assert(kTensorCores<S>, "FMA tiles sum along diagonals (accumulate_diagonals)");
  mma_rows<kDim, kTile, true>(&weights[0][0], kTile + kPad<S>, RowsOfB<kDim + kPad<S>>{values},
                              acc);
}

// weights[row_of(r)][col_of(c)] = w[r][c] (FMA tiles: as vector stores).
template <typename S, typename T>
__device__ __forceinline__ void store_scores(ScoreTile<T>& weights, const Scores<S>& w) {
  if constexpr (kTensorCores<S>) {
#pragma unroll
    for (int r = 0; r < kRowsPer<S>; ++r)
#pragma unroll
      for (int c = 0; c < kColsPer<S>; ++c) weights[row_of<S>(r)][col_of<S>(c)] = T(w[r][c]);
  } else {
    const int lane = threadIdx.x % kLanes<S>;
#pragma unroll
    for (int r = 0; r < kRowsPer<S>; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        store4(&weights[row_of<S>(r)][32 * h + 4 * lane], w[r][4 * h], w[r][4 * h + 1],
               w[r][4 * h + 2], w[r][4 * h + 3]);
  }
}

// Writes acc (rows row_of(r), columns dim_of(e)) times `factor` to x [len, dim] from row0,
// skipping rows past len and columns past dim.
template <typename S, int kDim, typename O>
__device__ void store_rows(const RowShare<S, kDim>& acc, O* x, int64_t row0, int64_t len, int dim,
                           Compute<S> factor) {
#pragma unroll
  for (int r = 0; r < kRowsPer<S>; ++r) {
    const int64_t row = row0 + row_of<S>(r);
    if (row >= len) continue;
#pragma unroll
    for (int e = 0; e < kDim / kLanes<S>; ++e)
      if (dim_of<S>(e) < dim) x[row * dim + dim_of<S>(e)] = O(acc[r][e] * factor);
  }
}

}  // namespace relpos::cuda::attention_tiles
