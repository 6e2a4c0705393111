// The one elementwise iterator: N inputs broadcast against each other (same rank,
// each dim equal to the output's or 1), dims coalesced, the innermost loop run
// with fixed strides, the outer index range split across OpenMP threads.
// A kernel is then only a scalar functor: map<T>(out, {a, b}, [](T x, T y) { ... }).
#pragma once
#include <array>
#include <omp.h>

#include "cntk/tensor.h"

namespace cntk::kernels {

// Work below this many elements runs on one thread.
constexpr int64_t kParallelGrain = 1 << 15;

NDShape broadcast_runtime(const std::vector<NDShape>& shapes);  // throws ShapeError

template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;                    // coalesced output dims
  std::array<std::vector<int64_t>, N> strides;  // per input, in elements (0 = broadcast)
  int64_t total = 1;
};

template <size_t N>
BroadcastPlan<N> plan_broadcast(const NDShape& out, const std::array<const NDArrayView*, N>& ins) {
  BroadcastPlan<N> p;
  size_t r = out.rank();
  std::vector<int64_t> dims(out.dims());
  std::array<std::vector<int64_t>, N> st;
  for (size_t k = 0; k < N; ++k) {
    const NDArrayView& x = *ins[k];
    st[k].assign(r, 0);
    size_t pad = r - x.rank();
    for (size_t i = 0; i < x.rank(); ++i)
      st[k][pad + i] = (x.shape()[i] == 1 && out[pad + i] != 1) ? 0 : x.strides()[i];
  }
  // Drop size-1 dims, then merge neighbours whose strides line up for every input.
  std::vector<int64_t> cd;
  std::array<std::vector<int64_t>, N> cs;
  for (size_t i = 0; i < r; ++i) {
    if (dims[i] == 1) continue;
    bool merge = !cd.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = cs[k].back() == st[k][i] * dims[i];
    if (merge) {
      cd.back() *= dims[i];
      for (size_t k = 0; k < N; ++k) cs[k].back() = st[k][i];
    } else {
      cd.push_back(dims[i]);
      for (size_t k = 0; k < N; ++k) cs[k].push_back(st[k][i]);
    }
  }
  if (cd.empty()) {
    cd.push_back(1);
    for (size_t k = 0; k < N; ++k) cs[k].push_back(0);
  }
  p.dims = cd;
  p.strides = cs;
  for (auto d : cd) p.total *= d;
  return p;
}

// out[i] = f(in0[i], in1[i], ...) with broadcasting; `out` must be contiguous with the output shape.
template <class T, size_t N, class F>
void map(NDArrayView& out, const std::array<const NDArrayView*, N>& ins, F f) {
  auto p = plan_broadcast<N>(out.shape(), ins);
  if (p.total == 0) return;  // nothing to compute (an empty batch)
  std::array<const T*, N> base;
  for (size_t k = 0; k < N; ++k) base[k] = static_cast<const T*>(ins[k]->storage()->data()) + ins[k]->offset();
  T* o = out.data<T>();
  size_t r = p.dims.size();
  int64_t inner = p.dims[r - 1];
  int64_t outer = p.total / inner;
  std::array<int64_t, N> is;
  for (size_t k = 0; k < N; ++k) is[k] = p.strides[k][r - 1];
  auto run_rows = [&](int64_t row_begin, int64_t row_end) {
    // Multi-index of row_begin over the outer dims.
    std::vector<int64_t> idx(r, 0);
    std::array<int64_t, N> off{};
    int64_t rem = row_begin;
    for (size_t a = r - 1; a-- > 0;) {
      idx[a] = rem % p.dims[a];
      rem /= p.dims[a];
      for (size_t k = 0; k < N; ++k) off[k] += idx[a] * p.strides[k][a];
    }
    for (int64_t row = row_begin; row < row_end; ++row) {
      T* dst = o + row * inner;
      bool unit = true;
      for (size_t k = 0; k < N; ++k) unit = unit && is[k] == 1;
      if (unit) {
        std::array<const T*, N> src;
        for (size_t k = 0; k < N; ++k) src[k] = base[k] + off[k];
        if constexpr (N == 1) {
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) dst[i] = f(src[0][i]);
        } else if constexpr (N == 2) {
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) dst[i] = f(src[0][i], src[1][i]);
        } else {
          for (int64_t i = 0; i < inner; ++i) dst[i] = f(src[0][i], src[1][i], src[2][i]);
        }
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          if constexpr (N == 1)
            dst[i] = f(base[0][off[0] + i * is[0]]);
          else if constexpr (N == 2)
            dst[i] = f(base[0][off[0] + i * is[0]], base[1][off[1] + i * is[1]]);
          else
            dst[i] = f(base[0][off[0] + i * is[0]], base[1][off[1] + i * is[1]], base[2][off[2] + i * is[2]]);
        }
      }
      for (size_t a = r - 1; a-- > 0;) {
        ++idx[a];
        for (size_t k = 0; k < N; ++k) off[k] += p.strides[k][a];
        if (idx[a] < p.dims[a]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= p.strides[k][a] * p.dims[a];
        idx[a] = 0;
      }
    }
  };
  int threads = p.total >= kParallelGrain ? omp_get_max_threads() : 1;
  if (threads <= 1 || outer == 1) {
    if (outer == 1 && threads > 1 && inner >= kParallelGrain) {
      // One long row: split it.
      std::array<const T*, N> src;
      for (size_t k = 0; k < N; ++k) src[k] = base[k];
#pragma omp parallel for
      for (int64_t i = 0; i < inner; ++i) {
        if constexpr (N == 1)
          o[i] = f(src[0][i * is[0]]);
        else if constexpr (N == 2)
          o[i] = f(src[0][i * is[0]], src[1][i * is[1]]);
        else
          o[i] = f(src[0][i * is[0]], src[1][i * is[1]], src[2][i * is[2]]);
      }
      return;
    }
    run_rows(0, outer);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t b = outer * t / nt, e = outer * (t + 1) / nt;
    if (b < e) run_rows(b, e);
  }
}

// Allocates the broadcast output and applies f.
template <class T, size_t N, class F>
NDArrayView apply(DataType dtype, const std::array<const NDArrayView*, N>& ins, F f) {
  std::vector<NDShape> shapes;
  for (auto* x : ins) shapes.push_back(x->shape());
  NDArrayView out(dtype, broadcast_runtime(shapes));
  map<T, N>(out, ins, f);
  return out;
}

}  // namespace cntk::kernels
