#include "kernels/cpu/softmax.h"
#include "kernels/backend.h"
#include "kernels/cpu/dnnl_context.h"
#include "kernels/cpu/primitive_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>
#include <tuple>

#include "kernels/cpu/elementwise.h"

namespace cntk::kernels {

SoftmaxDims softmax_dims(const NDShape& shape, size_t begin, size_t end) {
  SoftmaxDims d;
  for (size_t i = 0; i < shape.rank(); ++i) {
    int64_t n = shape[i];
    if (i < begin)
      d.P *= n;
    else if (i < end)
      d.R *= n;
    else
      d.Q *= n;
  }
  return d;
}

namespace {

// The [P, R, Q] view is cut into tasks of one p and a block of up to kBlock
// adjacent q: each task reads rows of contiguous q (vectorizable) and tasks run
// in parallel when the work is large.
constexpr int64_t kBlock = 256;

template <class F>
void for_blocks(const SoftmaxDims& d, F body) {
  int64_t nq = (d.Q + kBlock - 1) / kBlock, tasks = d.P * nq;
  auto run = [&](int64_t t) {
    int64_t p = t / nq, q0 = (t % nq) * kBlock;
    body(p, q0, std::min(d.Q, q0 + kBlock));
  };
  if (tasks > 1 && d.P * d.R * d.Q >= kParallelGrain) {
#pragma omp parallel for
    for (int64_t t = 0; t < tasks; ++t) run(t);
  } else {
    for (int64_t t = 0; t < tasks; ++t) run(t);
  }
}

template <class T>
void softmax_impl(const T* x, T* y, const SoftmaxDims& d, bool log) {
  const int64_t R = d.R, Q = d.Q;
  for_blocks(d, [&](int64_t p, int64_t q0, int64_t q1) {
    const T* xb = x + p * R * Q;
    T* yb = y + p * R * Q;
    T m[kBlock], s[kBlock];
    for (int64_t q = q0; q < q1; ++q) m[q - q0] = -std::numeric_limits<T>::infinity(), s[q - q0] = 0;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t q = q0; q < q1; ++q) m[q - q0] = std::max(m[q - q0], xb[r * Q + q]);
    for (int64_t q = q0; q < q1; ++q)
      if (std::isinf(m[q - q0]) && m[q - q0] < 0) m[q - q0] = 0;  // all -inf: keep exp(x - m) defined
    for (int64_t r = 0; r < R; ++r)
      for (int64_t q = q0; q < q1; ++q) {
        T e = std::exp(xb[r * Q + q] - m[q - q0]);
        if (!log) yb[r * Q + q] = e;
        s[q - q0] += e;
      }
    if (log) {
      // (x - m) - log(s), not x - (m + log(s)): x - m is exact near the maximum, where
      // m + log(s) would round to m's precision (large inputs lose the log term).
      for (int64_t q = q0; q < q1; ++q) s[q - q0] = std::log(s[q - q0]);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t q = q0; q < q1; ++q) yb[r * Q + q] = (xb[r * Q + q] - m[q - q0]) - s[q - q0];
    } else {
      for (int64_t q = q0; q < q1; ++q) s[q - q0] = T(1) / s[q - q0];
      for (int64_t r = 0; r < R; ++r)
        for (int64_t q = q0; q < q1; ++q) yb[r * Q + q] *= s[q - q0];
    }
  });
}

template <class T>
void softmax_backward_impl(const T* y, const T* dy, T* dx, const SoftmaxDims& d, bool log) {
  const int64_t R = d.R, Q = d.Q;
  for_blocks(d, [&](int64_t p, int64_t q0, int64_t q1) {
    int64_t base = p * R * Q;
    const T *yb = y + base, *gb = dy + base;
    T* ob = dx + base;
    T s[kBlock];
    for (int64_t q = q0; q < q1; ++q) s[q - q0] = 0;
    if (log) {
      // y = x - logsumexp(x): dx = dy - softmax(x) * sum(dy)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t q = q0; q < q1; ++q) s[q - q0] += gb[r * Q + q];
      for (int64_t r = 0; r < R; ++r)
        for (int64_t q = q0; q < q1; ++q) ob[r * Q + q] = gb[r * Q + q] - std::exp(yb[r * Q + q]) * s[q - q0];
    } else {
      // dx = y * (dy - sum(dy * y))
      for (int64_t r = 0; r < R; ++r)
        for (int64_t q = q0; q < q1; ++q) s[q - q0] += gb[r * Q + q] * yb[r * Q + q];
      for (int64_t r = 0; r < R; ++r)
        for (int64_t q = q0; q < q1; ++q) ob[r * Q + q] = yb[r * Q + q] * (gb[r * Q + q] - s[q - q0]);
    }
  });
}

template <class T>
void hardmax_impl(const T* x, T* y, const SoftmaxDims& d) {
  const int64_t R = d.R, Q = d.Q;
  for_blocks(d, [&](int64_t p, int64_t q0, int64_t q1) {
    const T* xb = x + p * R * Q;
    T* yb = y + p * R * Q;
    int64_t best[kBlock];
    for (int64_t q = q0; q < q1; ++q) best[q - q0] = 0;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t q = q0; q < q1; ++q) {
        yb[r * Q + q] = 0;
        if (xb[r * Q + q] > xb[best[q - q0] * Q + q]) best[q - q0] = r;
      }
    if (R > 0)
      for (int64_t q = q0; q < q1; ++q) yb[best[q - q0] * Q + q] = 1;
  });
}

// ---- float32 through oneDNN's softmax/logsoftmax primitives (JIT-vectorized exp);
// the loops above are the reference and serve float64.

using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool>;  // P, R, Q, log, backward

dnnl::memory::desc prq_desc(const SoftmaxDims& d) {
  return dnnl::memory::desc({d.P, d.R, d.Q}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::abc);
}

dnnl::primitive dnnl_softmax(const SoftmaxDims& d, bool log, bool backward) {
  static auto* cache = new PrimitiveCache<Key, dnnl::primitive>(4096);
  return cache->get(Key{d.P, d.R, d.Q, log, backward}, [&] {
    auto md = prq_desc(d);
    auto& e = dnnl_engine();
    dnnl::primitive p;
    if (log) {
      dnnl::logsoftmax_forward::primitive_desc fpd({dnnl::prop_kind::forward_training, md, 1}, e);
      if (backward)
        p = dnnl::logsoftmax_backward(dnnl::logsoftmax_backward::primitive_desc({md, md, 1}, e, fpd));
      else
        p = dnnl::logsoftmax_forward(fpd);
    } else {
      dnnl::softmax_forward::primitive_desc fpd({dnnl::prop_kind::forward_training, md, 1}, e);
      if (backward)
        p = dnnl::softmax_backward(dnnl::softmax_backward::primitive_desc({md, md, 1}, e, fpd));
      else
        p = dnnl::softmax_forward(fpd);
    }
    return p;
  });
}

bool dnnl_forward(const NDArrayView& x, NDArrayView& y, const SoftmaxDims& d, bool log) {
  // (d.Q != 1: oneDNN's strided path is slow)
  if (x.dtype() != DataType::Float || x.numel() == 0 || d.Q != 1 || !primitives_enabled()) return false;
  try {
    auto md = prq_desc(d);
    dnnl::memory src(md, dnnl_engine(), const_cast<void*>(x.raw_data())), dst(md, dnnl_engine(), y.raw_data());
    dnnl_softmax(d, log, false).execute(dnnl_stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    dnnl_stream().wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

bool dnnl_backward(const NDArrayView& y, const NDArrayView& dy, NDArrayView& dx, const SoftmaxDims& d, bool log) {
  if (y.dtype() != DataType::Float || y.numel() == 0 || d.Q != 1 || !primitives_enabled()) return false;
  try {
    auto md = prq_desc(d);
    auto& e = dnnl_engine();
    dnnl::memory dst(md, e, const_cast<void*>(y.raw_data())), diff_dst(md, e, const_cast<void*>(dy.raw_data())),
        diff_src(md, e, dx.raw_data());
    dnnl_softmax(d, log, true)
        .execute(dnnl_stream(), {{DNNL_ARG_DST, dst}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}});
    dnnl_stream().wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

NDArrayView softmax(const NDArrayView& xin, SoftmaxDims d, bool log) {
  NDArrayView x = xin.to_dense().contiguous();
  NDArrayView y(x.dtype(), x.shape());
  if (dnnl_forward(x, y, d, log)) return y;
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { softmax_impl<T>(x.data<T>(), y.data<T>(), d, log); });
  return y;
}

NDArrayView softmax_backward(const NDArrayView& yin, const NDArrayView& dyin, SoftmaxDims d, bool log) {
  NDArrayView y = yin.to_dense().contiguous(), dy = dyin.to_dense().contiguous();
  NDArrayView dx(y.dtype(), y.shape());
  if (dnnl_backward(y, dy, dx, d, log)) return dx;
  CNTK_DISPATCH_FLOAT(y.dtype(), T, [&] { softmax_backward_impl<T>(y.data<T>(), dy.data<T>(), dx.data<T>(), d, log); });
  return dx;
}

NDArrayView hardmax(const NDArrayView& xin, SoftmaxDims d) {
  NDArrayView x = xin.to_dense().contiguous();
  NDArrayView y(x.dtype(), x.shape());
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { hardmax_impl<T>(x.data<T>(), y.data<T>(), d); });
  return y;
}

}  // namespace cntk::kernels
