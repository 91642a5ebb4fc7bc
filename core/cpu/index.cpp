// CPU index kernels: gather and scatter_add on strided operands; index_select and index_add are
// the same loops with the 1-D index broadcast (stride 0) over the other dims. Ids are checked
// before any parallel region; each output element is accumulated in a fixed order.
#include <algorithm>

#include "core/backend.h"

namespace relpos::cpu {

namespace {

constexpr int64_t kParallelWork = 32768;  // positions below which loops stay serial
constexpr int64_t kGatherTask = 4096;     // positions per gather task (at least one line)
constexpr int64_t kScatterChunk = 64;     // last-dim positions per scatter task

template <typename F>
void dispatch_index(DType t, F&& f) {
  if (t == DType::i32)
    f(TypeTag<int32_t>{});
  else
    f(TypeTag<int64_t>{});
}

// Throws "[op] index v is out of range [0, bound) for dim d of x" naming the first bad id.
void check_ids(const char* op, const Tensor& index, int64_t bound, int dim, const Tensor& x) {
  const Tensor ids = index.contiguous();  // ids: [numel]
  dispatch_index(ids.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* p = ids.data<I>();
    const int64_t n = ids.numel();
    int64_t bad = 0;
#pragma omp parallel for reduction(+ : bad) if (n > kParallelWork)
    for (int64_t i = 0; i < n; ++i) bad += (p[i] < 0 || p[i] >= bound) ? 1 : 0;
    if (bad == 0) return;
    for (int64_t i = 0; i < n; ++i)
      RELPOS_CHECK(p[i] >= 0 && p[i] < bound, op,
                   "index {} is out of range [0, {}) for dim {} of {} ({} of {} ids out of range)",
                   static_cast<int64_t>(p[i]), bound, dim, x.str(), bad, n);
  });
}

// The positions of an index tensor grouped into lines. A line fixes every coordinate except
// `dim` and the last dim; inside it k runs along `dim` and j along the last dim (j_len = 1 when
// the last dim is `dim`). Positions that may write one output element share a line and a j.
struct Lines {
  std::vector<int> outer_dims;  // the fixed dims, outermost first
  Shape outer_sizes;
  int64_t count = 1;  // number of lines
  int64_t k_len = 1, j_len = 1;

  // Element offset of the line's first position in a tensor with `strides`.
  int64_t offset(int64_t line, const Shape& strides) const {
    int64_t off = 0;
    for (size_t i = outer_dims.size(); i-- > 0;) {
      off += (line % outer_sizes[i]) * strides[outer_dims[i]];
      line /= outer_sizes[i];
    }
    return off;
  }
};

Lines make_lines(const Shape& shape, int dim) {
  Lines L;
  const int last = static_cast<int>(shape.size()) - 1;
  for (int d = 0; d < last; ++d) {
    if (d == dim) continue;
    L.outer_dims.push_back(d);
    L.outer_sizes.push_back(shape[d]);
    L.count *= shape[d];
  }
  L.k_len = shape[dim];
  L.j_len = last == dim ? 1 : shape[last];
  return L;
}

// A 1-D index seen as a tensor of `shape` whose dim `dim` walks the index (stride 0 elsewhere).
Tensor broadcast_index(const Tensor& index, const Shape& shape, int dim) {
  Shape strides(shape.size(), 0);
  strides[dim] = index.stride(0);
  return index.as_strided(shape, strides, index.offset());
}

// out[p] = x[p with coordinate dim replaced by index[p]]; out and index share a shape.
template <typename T, typename I>
void gather_typed(const Tensor& x, int dim, const Tensor& index, const Tensor& out) {
  const Lines L = make_lines(index.shape(), dim);
  const int last = index.dim() - 1;
  const T* xp = x.data<T>();
  const I* ip = index.data<I>();
  T* op = out.data<T>();
  const int64_t xk = x.stride(dim), xj = x.stride(last);
  const int64_t ik = index.stride(dim), ij = index.stride(last);
  const int64_t ok = out.stride(dim), oj = out.stride(last);
  // Tasks are blocks of k inside one line; no two positions write the same output element.
  const int64_t k_block = std::max<int64_t>(1, kGatherTask / std::max<int64_t>(1, L.j_len));
  const int64_t blocks = (L.k_len + k_block - 1) / k_block;
  const int64_t tasks = L.count * blocks;
#pragma omp parallel for schedule(static) if (index.numel() > kParallelWork)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t line = t / blocks, k0 = (t % blocks) * k_block;
    const T* xl = xp + L.offset(line, x.strides());
    const I* il = ip + L.offset(line, index.strides());
    T* ol = op + L.offset(line, out.strides());
    for (int64_t k = k0; k < std::min(L.k_len, k0 + k_block); ++k) {
      const I* ir = il + k * ik;
      T* orow = ol + k * ok;
      if (ij == 0) {  // one id for the whole run (index_select): copy a row of x
        const T* xr = xl + static_cast<int64_t>(ir[0]) * xk;
        if (oj == 1 && xj == 1)
          std::copy_n(xr, L.j_len, orow);
        else
          for (int64_t j = 0; j < L.j_len; ++j) orow[j * oj] = xr[j * xj];
      } else {
        for (int64_t j = 0; j < L.j_len; ++j)
          orow[j * oj] = xl[static_cast<int64_t>(ir[j * ij]) * xk + j * xj];
      }
    }
  }
}

// out[p with coordinate dim replaced by index[p]] += src[p] for every position p of index.
template <typename T, typename I>
void scatter_add_typed(int dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  const Lines L = make_lines(index.shape(), dim);
  const int last = index.dim() - 1;
  const I* ip = index.data<I>();
  const T* sp = src.data<T>();
  T* op = out.data<T>();
  const int64_t ik = index.stride(dim), ij = index.stride(last);
  const int64_t sk = src.stride(dim), sj = src.stride(last);
  const int64_t ok = out.stride(dim), oj = out.stride(last);
  // Tasks are (line, chunk of j): writes of different tasks never collide, and inside a task
  // each output element receives its terms in increasing k, so the result is deterministic.
  const int64_t chunks = (L.j_len + kScatterChunk - 1) / kScatterChunk;
  const int64_t tasks = L.count * chunks;
#pragma omp parallel for schedule(static) if (index.numel() > kParallelWork && tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t line = t / chunks, j0 = (t % chunks) * kScatterChunk;
    const int64_t j1 = std::min(L.j_len, j0 + kScatterChunk);
    const I* il = ip + L.offset(line, index.strides());
    const T* sl = sp + L.offset(line, src.strides());
    T* ol = op + L.offset(line, out.strides());
    for (int64_t k = 0; k < L.k_len; ++k) {
      const I* ir = il + k * ik;
      const T* sr = sl + k * sk;
      if (ij == 0) {  // one id for the whole run (index_add): add into a row of out
        T* orow = ol + static_cast<int64_t>(ir[0]) * ok;
        for (int64_t j = j0; j < j1; ++j) orow[j * oj] += sr[j * sj];
      } else {
        for (int64_t j = j0; j < j1; ++j)
          ol[static_cast<int64_t>(ir[j * ij]) * ok + j * oj] += sr[j * sj];
      }
    }
  }
}

void gather_any(const Tensor& x, int dim, const Tensor& index, const Tensor& out) {
  dispatch_dtype(x.dtype(), [&](auto x_tag) {
    dispatch_index(index.dtype(), [&](auto i_tag) {
      gather_typed<typename decltype(x_tag)::type, typename decltype(i_tag)::type>(x, dim, index,
                                                                                   out);
    });
  });
}

void scatter_add_any(int dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  dispatch_dtype(out.dtype(), [&](auto x_tag) {
    dispatch_index(index.dtype(), [&](auto i_tag) {
      scatter_add_typed<typename decltype(x_tag)::type, typename decltype(i_tag)::type>(dim, index,
                                                                                        src, out);
    });
  });
}

}  // namespace

void index_select(const Tensor& x, int dim, const Tensor& index, const Tensor& out) {
  check_ids("index_select", index, x.size(dim), dim, x);
  gather_any(x, dim, broadcast_index(index, out.shape(), dim), out);
}

void gather(const Tensor& x, int dim, const Tensor& index, const Tensor& out) {
  check_ids("gather", index, x.size(dim), dim, x);
  gather_any(x, dim, index, out);
}

void scatter_add(int dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  check_ids("scatter_add", index, out.size(dim), dim, out);
  scatter_add_any(dim, index, src, out);
}

void index_add(int dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  check_ids("index_add", index, out.size(dim), dim, out);
  scatter_add_any(dim, broadcast_index(index, src.shape(), dim), src, out);
}

}  // namespace relpos::cpu
