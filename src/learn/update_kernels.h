// The parameter-update loops of the standard learners over contiguous arrays,
// written after CNTK's CPU matrix routines (Source/Math/CPUMatrixImpl.h:
// Adagrad, FSAdagrad, Adam, RmsProp, AdaDelta; Matrix.cpp: SGD, momentum and
// Nesterov updates) so that results match CNTK's in each element type.
//
// Each learner's rule is one pass over its arrays: the gradient is read once, scaled
// on the fly by `gs` (the mean over the minibatch in compatible mode, 1 otherwise),
// and the parameter written in the same loop. The bodies are range functions over
// __restrict pointers, called once per OpenMP thread on a contiguous range
// (`for_ranges`), so that the compiler vectorizes them; a loop inside an OpenMP
// construct reads its pointers through the outlined function's data block, which
// kept it scalar.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "cntk/tensor.h"

namespace cntk::learn {

// Below this many elements a loop runs on one thread (thread start-up costs more).
constexpr int64_t kParallelMin = 1 << 15;

// This OpenMP thread's share [begin, end) of [0, n): contiguous, the team's shares in
// thread order, each a multiple of `align` elements but the last (it may be empty).
inline std::pair<int64_t, int64_t> thread_range(int64_t n, int64_t align) {
  const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
  const int64_t chunk = ((n + threads - 1) / threads + align - 1) / align * align;
  const int64_t b = std::min(n, t * chunk);
  return {b, std::min(n, b + chunk)};
}

// Calls body(begin, end) over [0, n): on this thread below kParallelMin elements,
// else once per OpenMP thread on contiguous ranges (multiples of 16 elements, so
// that the vector loops start aligned alike).
template <class F>
void for_ranges(int64_t n, F&& body) {
  if (n < kParallelMin) {
    if (n > 0) body(int64_t(0), n);
    return;
  }
#pragma omp parallel
  {
    const auto [b, e] = thread_range(n, 16);
    if (b < e) body(b, e);
  }
}

// The sum over [0, n) of body(begin, end), each range's partial sum in double.
template <class F>
double sum_ranges(int64_t n, F&& body) {
  double total = 0;
  if (n < kParallelMin) return n > 0 ? body(int64_t(0), n) : 0.0;
#pragma omp parallel reduction(+ : total)
  {
    const auto [b, e] = thread_range(n, 16);
    if (b < e) total += body(b, e);
  }
  return total;
}

namespace range {

template <class T>
void scale(T* __restrict g, int64_t n, T s) {
  for (int64_t i = 0; i < n; ++i) g[i] *= s;
}

template <class T>
void axpy(T* __restrict y, const T* __restrict x, int64_t n, T a) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <class T>
void sgd(T* __restrict w, const T* __restrict g, int64_t n, T gs, T a) {
  for (int64_t i = 0; i < n; ++i) w[i] += a * (g[i] * gs);
}

template <class T>
void momentum_sgd(T* __restrict w, const T* __restrict g, T* __restrict sg, int64_t n, T gs, T a, T momentum) {
  for (int64_t i = 0; i < n; ++i) {
    const T s = a * (g[i] * gs) + momentum * sg[i];
    sg[i] = s;
    w[i] -= s;
  }
}

template <class T>
void nesterov(T* __restrict w, const T* __restrict g, T* __restrict sg, int64_t n, T gs, T a, T momentum) {
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * gs;
    const T s = a * gi + momentum * sg[i];
    sg[i] = s;
    T wi = w[i];
    wi += -momentum * s;
    wi += -a * gi;
    w[i] = wi;
  }
}

template <class T>
void adagrad_step(T* __restrict w, const T* __restrict g, T* __restrict acc, int64_t n, T gs, T lr) {
  const T floor = T(1e-16f);
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * gs;
    const T a = acc[i] + gi * gi;
    acc[i] = a;
    w[i] += -lr * (gi / std::sqrt(a + floor));
  }
}

template <class T>
double adagrad_normalize(T* __restrict g, T* __restrict acc, int64_t n, T gs) {
  const T floor = T(1e-16f);
  double ave = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * gs;
    const T a = acc[i] + gi * gi;
    acc[i] = a;
    const T r = std::sqrt(a + floor);
    g[i] = gi / r;
    ave += double(T(1) / r);
  }
  return ave;
}

template <class T>
void adadelta(T* __restrict w, const T* __restrict g, T* __restrict acc_g2, T* __restrict acc_dx2, int64_t n, T gs,
              T lr, T rho, T epsilon) {
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * gs;
    const T ada_sqr = rho * acc_g2[i] + (1 - rho) * gi * gi;
    acc_g2[i] = ada_sqr;
    const T dx = -std::sqrt(acc_dx2[i] + epsilon) / std::sqrt(ada_sqr + epsilon) * gi;
    acc_dx2[i] = rho * acc_dx2[i] + (1 - rho) * dx * dx;
    w[i] += lr * dx;
  }
}

// The AdaGrad factor of FSAdaGrad, capped at 10; an element whose average is 0
// keeps its gradient (the factor would be infinite).
template <class T>
inline T fsadagrad_scaled(T gi, T& smooth_ada, T ada_weight, T ada_mul) {
  const T ada_sqr = ada_weight * smooth_ada + (T(1) - ada_weight) * gi * gi;
  smooth_ada = ada_sqr;
  const T f = std::min(ada_mul * (T(1) / std::sqrt(ada_sqr)), T(10));
  return ada_sqr != T(0) ? gi * f : gi;
}

template <class T>
void fsadagrad(T* __restrict w, const T* __restrict g, T* __restrict smooth_ada, T* __restrict smooth_mom, int64_t n,
               T gs, T lr, T momentum, T ada_weight, T ada_mul, T unit_gain) {
  if (momentum > T(0)) {
    for (int64_t i = 0; i < n; ++i) {
      const T gi =
          momentum * smooth_mom[i] + unit_gain * fsadagrad_scaled(g[i] * gs, smooth_ada[i], ada_weight, ada_mul);
      smooth_mom[i] = gi;
      w[i] -= gi * lr;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) w[i] -= fsadagrad_scaled(g[i] * gs, smooth_ada[i], ada_weight, ada_mul) * lr;
  }
}

template <class T>
void adam(T* __restrict w, const T* __restrict g, T* __restrict smooth_ada, T* __restrict smooth_mom, int64_t n, T gs,
          T lr, T momentum, T ada_weight, T ada_mul, T epsilon, T unit_gain) {
  for (int64_t i = 0; i < n; ++i) {
    T gi = g[i] * gs;
    const T ada_sqr = ada_weight * smooth_ada[i] + (T(1) - ada_weight) * gi * gi;
    smooth_ada[i] = ada_sqr;
    const T f = ada_mul * T(1.0 / double(std::sqrt(ada_sqr) + epsilon));
    gi = momentum * smooth_mom[i] + unit_gain * gi;
    smooth_mom[i] = gi;
    w[i] -= gi * f * lr;
  }
}

template <class T>
void adamax(T* __restrict w, const T* __restrict g, T* __restrict smooth_ada, T* __restrict smooth_mom, int64_t n, T gs,
            T lr, T momentum, T ada_weight, T ada_mul, T epsilon, T unit_gain) {
  for (int64_t i = 0; i < n; ++i) {
    T gi = g[i] * gs;
    const T ada = std::max(ada_weight * smooth_ada[i], std::abs(gi));
    smooth_ada[i] = ada;
    const T f = ada_mul * T(1.0 / double(ada + epsilon));
    gi = momentum * smooth_mom[i] + unit_gain * gi;
    smooth_mom[i] = gi;
    w[i] -= gi * f * lr;
  }
}

// CNTK's RMSProp state update for one element; returns the factor on its gradient.
template <class T>
inline T rmsprop_factor(T gi, T& avar, T& sign_state, T& step, T gamma, T inc, T max, T dec, T min) {
  const T v = gamma * avar + (T(1) - gamma) * (gi * gi);
  avar = v;
  const T sign = gi > T(0) ? T(1) : (gi < T(0) ? T(-1) : T(0));
  const T grown = std::min(step * inc, max), shrunk = std::max(step * dec, min);
  const T s = sign_state * sign > T(0) ? grown : shrunk;
  step = s;
  sign_state = sign;
  return s / std::sqrt(v + T(1e-6f));
}

template <class T>
void rmsprop_step(T* __restrict w, const T* __restrict g, T* __restrict avars, T* __restrict signs, T* __restrict steps,
                  int64_t n, T gs, T lr, T gamma, T inc, T max, T dec, T min) {
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * gs;
    w[i] += -lr * (gi * rmsprop_factor(gi, avars[i], signs[i], steps[i], gamma, inc, max, dec, min));
  }
}

template <class T>
double rmsprop_normalize(T* __restrict g, T* __restrict avars, T* __restrict signs, T* __restrict steps, int64_t n,
                         T gs, T gamma, T inc, T max, T dec, T min) {
  double ave = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * gs;
    const T a = rmsprop_factor(gi, avars[i], signs[i], steps[i], gamma, inc, max, dec, min);
    g[i] = gi * a;
    ave += double(a);
  }
  return ave;
}

}  // namespace range

// A parameter's gradient as the rules read it: a dense buffer, or the compressed
// rows of a sparse one (SparseCSC over rows of `row_len` elements: an embedding's
// gradient, nonzero only in the rows a minibatch used). Rules read absent rows as 0.
template <class T>
struct Gradient {
  const T* dense = nullptr;
  const SparseCSC* sparse = nullptr;
  int64_t row_len = 0;
};

// Calls body(begin, count, g) over [0, n), where g points at the gradient's elements
// begin .. begin + count - 1: on contiguous ranges per thread (`for_ranges`) for a
// dense gradient; for a sparse one, row by row where rows hold values (scattered
// into a row of zeros) and over runs of empty rows at once (g then points at zeros).
template <class T, class F>
void for_gradient_ranges(const Gradient<T>& g, int64_t n, F&& body) {
  if (!g.sparse) {
    for_ranges(n, [&](int64_t b, int64_t e) { body(b, e - b, g.dense + b); });
    return;
  }
  const SparseCSC& s = *g.sparse;
  const int64_t len = g.row_len, rows = len > 0 ? n / len : 0;
  const T* values = static_cast<const T*>(s.values->data());
  constexpr int64_t kZeros = 1 << 14;  // elements of zeros per call over empty rows
  auto rows_in = [&](int64_t rb, int64_t re) {
    const std::vector<T> zeros(size_t(std::min(kZeros, std::max<int64_t>(n, 1))), T(0));
    std::vector<T> row(static_cast<size_t>(len));
    auto empty_run = [&](int64_t from, int64_t to) {  // rows [from, to)
      for (int64_t b = from * len, e = to * len; b < e; b += kZeros) body(b, std::min(kZeros, e - b), zeros.data());
    };
    int64_t run = rb;  // first row of the current run of empty rows
    for (int64_t r = rb; r < re; ++r) {
      const int64_t k0 = s.starts[size_t(r)], k1 = s.starts[size_t(r) + 1];
      if (k0 == k1) continue;
      empty_run(run, r);
      std::fill(row.begin(), row.end(), T(0));
      for (int64_t k = k0; k < k1; ++k) row[size_t(s.indices[size_t(k)])] += values[k];
      body(r * len, len, row.data());
      run = r + 1;
    }
    empty_run(run, re);
  };
  if (n < kParallelMin) {
    rows_in(0, rows);
    return;
  }
#pragma omp parallel
  {
    const auto [rb, re] = thread_range(rows, 1);
    if (rb < re) rows_in(rb, re);
  }
}

// g *= s
template <class T>
void scale(T* g, int64_t n, T s) {
  for_ranges(n, [&](int64_t b, int64_t e) { range::scale(g + b, e - b, s); });
}

// y += a * x
template <class T>
void axpy(T* y, const T* x, int64_t n, T a) {
  for_ranges(n, [&](int64_t b, int64_t e) { range::axpy(y + b, x + b, e - b, a); });
}

// Clamps every element to [-threshold, threshold].
template <class T>
void truncate(T* g, int64_t n, T threshold) {
  const T hi = std::abs(threshold), lo = -hi;
  for_ranges(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) g[i] = std::min(std::max(g[i], lo), hi);
  });
}

template <class T>
double frobenius_norm(const T* g, int64_t n) {
  return std::sqrt(sum_ranges(n, [&](int64_t b, int64_t e) {
    double s = 0;
    for (int64_t i = b; i < e; ++i) s += double(g[i]) * double(g[i]);
    return s;
  }));
}

// Proximal step of L1 regularization: shrinks every element towards 0 by threshold.
template <class T>
void soft_threshold(T* w, int64_t n, T threshold) {
  for_ranges(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T x = w[i];
      w[i] = x > threshold ? x - threshold : (x < -threshold ? x + threshold : T(0));
    }
  });
}

// The rules below read the gradient as g * gs.

// w -= lr * g
template <class T>
void sgd(T* w, const Gradient<T>& g, int64_t n, T gs, T lr) {
  for_gradient_ranges(g, n, [&](int64_t b, int64_t c, const T* gb) { range::sgd(w + b, gb, c, gs, -lr); });
}

// sg = momentum * sg + unit_gain * lr * g;  w -= sg
template <class T>
void momentum_sgd(T* w, const Gradient<T>& g, T* sg, int64_t n, T gs, T lr, T momentum, T unit_gain) {
  const T a = unit_gain * lr;
  for_gradient_ranges(
      g, n, [&](int64_t b, int64_t c, const T* gb) { range::momentum_sgd(w + b, gb, sg + b, c, gs, a, momentum); });
}

// sg = momentum * sg + unit_gain * lr * g;  w -= momentum * sg + unit_gain * lr * g
template <class T>
void nesterov(T* w, const Gradient<T>& g, T* sg, int64_t n, T gs, T lr, T momentum, T unit_gain) {
  const T a = unit_gain * lr;
  for_gradient_ranges(
      g, n, [&](int64_t b, int64_t c, const T* gb) { range::nesterov(w + b, gb, sg + b, c, gs, a, momentum); });
}

// acc += g^2;  w -= lr * g / sqrt(acc + floor)
template <class T>
void adagrad(T* w, const Gradient<T>& g, T* acc, int64_t n, T gs, T lr) {
  for_gradient_ranges(g, n,
                      [&](int64_t b, int64_t c, const T* gb) { range::adagrad_step(w + b, gb, acc + b, c, gs, lr); });
}

// The same divided by the mean of 1 / sqrt(acc + floor): two passes, the first
// writing the normalized gradient into g (dense).
template <class T>
void adagrad_averaged(T* w, T* g, T* acc, int64_t n, T gs, double lr) {
  const double ave =
      sum_ranges(n, [&](int64_t b, int64_t e) { return range::adagrad_normalize(g + b, acc + b, e - b, gs); });
  const T mean = n > 0 ? T(ave / double(n)) : T(1);
  axpy<T>(w, g, n, T(-lr / double(mean)));
}

// Zeiler's AdaDelta with CNTK's learning rate on the step.
template <class T>
void adadelta(T* w, const Gradient<T>& g, T* acc_g2, T* acc_dx2, int64_t n, T gs, T lr, T rho, T epsilon) {
  for_gradient_ranges(g, n, [&](int64_t b, int64_t c, const T* gb) {
    range::adadelta(w + b, gb, acc_g2 + b, acc_dx2 + b, c, gs, lr, rho, epsilon);
  });
}

// FSAdaGrad: AdaGrad-normalised gradient (factor capped at 10), then momentum.
template <class T>
void fsadagrad(T* w, const Gradient<T>& g, T* smooth_ada, T* smooth_mom, int64_t n, T gs, T lr, T momentum,
               T ada_weight, T ada_mul, T unit_gain) {
  for_gradient_ranges(g, n, [&](int64_t b, int64_t c, const T* gb) {
    range::fsadagrad(w + b, gb, smooth_ada + b, smooth_mom + b, c, gs, lr, momentum, ada_weight, ada_mul, unit_gain);
  });
}

// Adam (or Adamax: infinity-norm second moment); ada_mul carries the bias correction.
template <class T>
void adam(T* w, const Gradient<T>& g, T* smooth_ada, T* smooth_mom, int64_t n, T gs, T lr, T momentum, T ada_weight,
          T ada_mul, T epsilon, T unit_gain, bool adamax) {
  for_gradient_ranges(g, n, [&](int64_t b, int64_t c, const T* gb) {
    if (adamax)
      range::adamax(w + b, gb, smooth_ada + b, smooth_mom + b, c, gs, lr, momentum, ada_weight, ada_mul, epsilon,
                    unit_gain);
    else
      range::adam(w + b, gb, smooth_ada + b, smooth_mom + b, c, gs, lr, momentum, ada_weight, ada_mul, epsilon,
                  unit_gain);
  });
}

// CNTK's RMSProp: per-element step sizes that grow while the gradient keeps its
// sign and shrink when it flips, over a running mean of g^2; w -= lr * g * factor.
// On the first minibatch (`initialized` false) the state starts from g^2, sign 0
// and step 0.02.
template <class T>
void rmsprop_start(const Gradient<T>& g, T* avars, T* signs, T* steps, int64_t n, T gs) {
  for_gradient_ranges(g, n, [&](int64_t b, int64_t c, const T* gb) {
    for (int64_t i = 0; i < c; ++i) {
      const T gi = gb[i] * gs;
      avars[b + i] = gi * gi;
      signs[b + i] = 0;
      steps[b + i] = T(0.02);
    }
  });
}

template <class T>
void rmsprop(T* w, const Gradient<T>& g, T* avars, T* signs, T* steps, int64_t n, T gs, T lr, T gamma, T inc, T max,
             T dec, T min) {
  for_gradient_ranges(g, n, [&](int64_t b, int64_t c, const T* gb) {
    range::rmsprop_step(w + b, gb, avars + b, signs + b, steps + b, c, gs, lr, gamma, inc, max, dec, min);
  });
}

// The same divided by the mean factor: two passes, the first writing the scaled
// gradient into g (dense).
template <class T>
void rmsprop_averaged(T* w, T* g, T* avars, T* signs, T* steps, int64_t n, T gs, double lr, T gamma, T inc, T max,
                      T dec, T min) {
  const double ave = sum_ranges(n, [&](int64_t b, int64_t e) {
    return range::rmsprop_normalize(g + b, avars + b, signs + b, steps + b, e - b, gs, gamma, inc, max, dec, min);
  });
  const T mean = T(ave / double(n));
  axpy<T>(w, g, n, T(-lr / double(mean)));
}

}  // namespace cntk::learn
