#include "kernels/cpu/reduce.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <omp.h>

#include "kernels/cpu/elementwise.h"

namespace cntk::kernels {

NDShape broadcast_runtime(const std::vector<NDShape>& shapes) {
  size_t r = 0;
  for (auto& s : shapes) r = std::max(r, s.rank());
  std::vector<int64_t> out(r, 1);
  for (auto& s : shapes) {
    size_t pad = r - s.rank();
    for (size_t i = 0; i < s.rank(); ++i) {
      int64_t d = s[i], &o = out[pad + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string msg = "operands of shapes";
      for (auto& t : shapes) msg += " " + t.str();
      throw ShapeError(msg + " cannot be broadcast together");
    }
  }
  return NDShape(out);
}

namespace {

template <class T>
void reduce_block(const T* x, T* out, int64_t P, int64_t R, int64_t Q, ReduceOp op) {
  // x viewed as [P, R, Q]; reduce the middle axis into out[P, Q].
  const bool is_arg = op == ReduceOp::Argmax || op == ReduceOp::Argmin;
  auto body = [&](int64_t p) {
    const T* xp = x + p * R * Q;
    T* op_ = out + p * Q;
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Mean: {
        for (int64_t q = 0; q < Q; ++q) op_[q] = 0;
        for (int64_t r = 0; r < R; ++r) {
          const T* row = xp + r * Q;
#pragma omp simd
          for (int64_t q = 0; q < Q; ++q) op_[q] += row[q];
        }
        if (op == ReduceOp::Mean)
          for (int64_t q = 0; q < Q; ++q) op_[q] /= T(R);
        break;
      }
      case ReduceOp::Prod:
        for (int64_t q = 0; q < Q; ++q) op_[q] = 1;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t q = 0; q < Q; ++q) op_[q] *= xp[r * Q + q];
        break;
      case ReduceOp::Max:
      case ReduceOp::Min: {
        bool mx = op == ReduceOp::Max;
        for (int64_t q = 0; q < Q; ++q) op_[q] = xp[q];
        for (int64_t r = 1; r < R; ++r)
          for (int64_t q = 0; q < Q; ++q) {
            T v = xp[r * Q + q];
            if (mx ? v > op_[q] : v < op_[q]) op_[q] = v;
          }
        break;
      }
      case ReduceOp::LogSum: {
        for (int64_t q = 0; q < Q; ++q) {
          T m = -std::numeric_limits<T>::infinity();
          for (int64_t r = 0; r < R; ++r) m = std::max(m, xp[r * Q + q]);
          if (std::isinf(m)) {
            op_[q] = m;
            continue;
          }
          T s = 0;
          for (int64_t r = 0; r < R; ++r) s += std::exp(xp[r * Q + q] - m);
          op_[q] = m + std::log(s);
        }
        break;
      }
      default: {
        (void)is_arg;
        bool mx = op == ReduceOp::Argmax;
        for (int64_t q = 0; q < Q; ++q) {
          int64_t best = 0;
          T bv = xp[q];
          for (int64_t r = 1; r < R; ++r) {
            T v = xp[r * Q + q];
            if (mx ? v > bv : v < bv) {
              bv = v;
              best = r;
            }
          }
          op_[q] = T(best);
        }
      }
    }
  };
  if (P > 1 && P * R * Q >= kParallelGrain) {
#pragma omp parallel for
    for (int64_t p = 0; p < P; ++p) body(p);
  } else if (P == 1 && Q >= 64 && R * Q >= kParallelGrain && (op == ReduceOp::Sum || op == ReduceOp::Mean)) {
    // Reducing leading rows of a wide matrix (bias gradients): split the columns.
    int nt = omp_get_max_threads();
#pragma omp parallel num_threads(nt)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      int64_t b = Q * t / n, e = Q * (t + 1) / n;
      for (int64_t q = b; q < e; ++q) out[q] = 0;
      for (int64_t r = 0; r < R; ++r) {
        const T* row = x + r * Q;
#pragma omp simd
        for (int64_t q = b; q < e; ++q) out[q] += row[q];
      }
      if (op == ReduceOp::Mean)
        for (int64_t q = b; q < e; ++q) out[q] /= T(R);
    }
  } else {
    for (int64_t p = 0; p < P; ++p) body(p);
  }
}

}  // namespace

NDArrayView reduce(const NDArrayView& xin, const std::vector<bool>& axes, ReduceOp op) {
  size_t r = xin.rank();
  if (axes.size() != r) throw Error("reduce: axes mask rank mismatch");
  std::vector<int64_t> out_dims(xin.shape().dims());
  for (size_t i = 0; i < r; ++i)
    if (axes[i]) out_dims[i] = 1;
  NDShape out_shape(out_dims);
  if (xin.numel() == 0) {
    double init = op == ReduceOp::Prod ? 1.0 : 0.0;
    if (op == ReduceOp::Max || op == ReduceOp::LogSum) init = -std::numeric_limits<double>::infinity();
    if (op == ReduceOp::Min) init = std::numeric_limits<double>::infinity();
    return NDArrayView::full(xin.dtype(), out_shape, init);
  }
  // Find whether the reduced axes (ignoring size-1 axes) form one contiguous block.
  int first = -1, last = -1;
  for (size_t i = 0; i < r; ++i)
    if (axes[i] && xin.shape()[i] != 1) {
      if (first < 0) first = int(i);
      last = int(i);
    }
  if (first < 0) {
    NDArrayView c = xin.to_dense().copy();
    if (op == ReduceOp::Argmax || op == ReduceOp::Argmin) c.fill(0);
    return c.reshape(out_shape);
  }
  bool block = true;
  for (int i = first; i <= last; ++i)
    if (!axes[i] && xin.shape()[i] != 1) block = false;
  NDArrayView x = xin.to_dense();
  int64_t P = 1, R = 1, Q = 1;
  if (block) {
    x = x.contiguous();
    for (int i = 0; i < first; ++i) P *= x.shape()[i];
    for (int i = first; i <= last; ++i) R *= x.shape()[i];
    for (size_t i = last + 1; i < r; ++i) Q *= x.shape()[i];
  } else {
    std::vector<int> perm;
    for (size_t i = 0; i < r; ++i)
      if (!axes[i]) perm.push_back(int(i));
    for (size_t i = 0; i < r; ++i)
      if (axes[i]) perm.push_back(int(i));
    x = x.permute(perm).contiguous();
    for (size_t i = 0; i < r; ++i) (axes[i] ? R : P) *= xin.shape()[i];
  }
  NDArrayView out(xin.dtype(), out_shape);
  CNTK_DISPATCH_FLOAT(xin.dtype(), T, [&] { reduce_block<T>(x.data<T>(), out.data<T>(), P, R, Q, op); });
  return out;
}

NDArrayView sum_to(const NDArrayView& x, const NDShape& shape) {
  if (x.shape() == shape) return x;
  if (shape.rank() != x.rank()) throw Error("sum_to: rank mismatch " + x.shape().str() + " -> " + shape.str());
  std::vector<bool> axes(x.rank());
  for (size_t i = 0; i < x.rank(); ++i) {
    axes[i] = shape[i] == 1 && x.shape()[i] != 1;
    if (!axes[i] && shape[i] != x.shape()[i])
      throw ShapeError("sum_to: cannot reduce " + x.shape().str() + " to " + shape.str());
  }
  return reduce(x, axes, ReduceOp::Sum);
}

}  // namespace cntk::kernels
