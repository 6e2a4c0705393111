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

namespace cntk::learn {

// Below this many elements a loop runs on one thread (thread start-up costs more).
constexpr int64_t kParallelMin = 1 << 15;

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
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = ((n + threads - 1) / threads + 15) / 16 * 16;
    const int64_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
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
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = ((n + threads - 1) / threads + 15) / 16 * 16;
    const int64_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    if (b < e) total += body(b, e);
  }
  return total;
}

namespace range {

template <class T>
void scale(T* __restrict g, int64_t b, int64_t e, T s) {
  for (int64_t i = b; i < e; ++i) g[i] *= s;
}

template <class T>
void axpy(T* __restrict y, const T* __restrict x, int64_t b, int64_t e, T a) {
  for (int64_t i = b; i < e; ++i) y[i] += a * x[i];
}

template <class T>
void sgd(T* __restrict w, const T* __restrict g, int64_t b, int64_t e, T gs, T a) {
  for (int64_t i = b; i < e; ++i) w[i] += a * (g[i] * gs);
}

template <class T>
void momentum_sgd(T* __restrict w, const T* __restrict g, T* __restrict sg, int64_t b, int64_t e, T gs, T a,
                  T momentum) {
  for (int64_t i = b; i < e; ++i) {
    const T s = a * (g[i] * gs) + momentum * sg[i];
    sg[i] = s;
    w[i] -= s;
  }
}

template <class T>
void nesterov(T* __restrict w, const T* __restrict g, T* __restrict sg, int64_t b, int64_t e, T gs, T a, T momentum) {
  for (int64_t i = b; i < e; ++i) {
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
void adagrad_step(T* __restrict w, const T* __restrict g, T* __restrict acc, int64_t b, int64_t e, T gs, T lr) {
  const T floor = T(1e-16f);
  for (int64_t i = b; i < e; ++i) {
    const T gi = g[i] * gs;
    const T a = acc[i] + gi * gi;
    acc[i] = a;
    w[i] += -lr * (gi / std::sqrt(a + floor));
  }
}

template <class T>
double adagrad_normalize(T* __restrict g, T* __restrict acc, int64_t b, int64_t e, T gs) {
  const T floor = T(1e-16f);
  double ave = 0;
  for (int64_t i = b; i < e; ++i) {
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
void adadelta(T* __restrict w, const T* __restrict g, T* __restrict acc_g2, T* __restrict acc_dx2, int64_t b, int64_t e,
              T gs, T lr, T rho, T epsilon) {
  for (int64_t i = b; i < e; ++i) {
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
void fsadagrad(T* __restrict w, const T* __restrict g, T* __restrict smooth_ada, T* __restrict smooth_mom, int64_t b,
               int64_t e, T gs, T lr, T momentum, T ada_weight, T ada_mul, T unit_gain) {
  if (momentum > T(0)) {
    for (int64_t i = b; i < e; ++i) {
      const T gi =
          momentum * smooth_mom[i] + unit_gain * fsadagrad_scaled(g[i] * gs, smooth_ada[i], ada_weight, ada_mul);
      smooth_mom[i] = gi;
      w[i] -= gi * lr;
    }
  } else {
    for (int64_t i = b; i < e; ++i) w[i] -= fsadagrad_scaled(g[i] * gs, smooth_ada[i], ada_weight, ada_mul) * lr;
  }
}

template <class T>
void adam(T* __restrict w, const T* __restrict g, T* __restrict smooth_ada, T* __restrict smooth_mom, int64_t b,
          int64_t e, T gs, T lr, T momentum, T ada_weight, T ada_mul, T epsilon, T unit_gain) {
  for (int64_t i = b; i < e; ++i) {
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
void adamax(T* __restrict w, const T* __restrict g, T* __restrict smooth_ada, T* __restrict smooth_mom, int64_t b,
            int64_t e, T gs, T lr, T momentum, T ada_weight, T ada_mul, T epsilon, T unit_gain) {
  for (int64_t i = b; i < e; ++i) {
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
                  int64_t b, int64_t e, T gs, T lr, T gamma, T inc, T max, T dec, T min) {
  for (int64_t i = b; i < e; ++i) {
    const T gi = g[i] * gs;
    w[i] += -lr * (gi * rmsprop_factor(gi, avars[i], signs[i], steps[i], gamma, inc, max, dec, min));
  }
}

template <class T>
double rmsprop_normalize(T* __restrict g, T* __restrict avars, T* __restrict signs, T* __restrict steps, int64_t b,
                         int64_t e, T gs, T gamma, T inc, T max, T dec, T min) {
  double ave = 0;
  for (int64_t i = b; i < e; ++i) {
    const T gi = g[i] * gs;
    const T a = rmsprop_factor(gi, avars[i], signs[i], steps[i], gamma, inc, max, dec, min);
    g[i] = gi * a;
    ave += double(a);
  }
  return ave;
}

}  // namespace range

// g *= s
template <class T>
void scale(T* g, int64_t n, T s) {
  for_ranges(n, [&](int64_t b, int64_t e) { range::scale(g, b, e, s); });
}

// y += a * x
template <class T>
void axpy(T* y, const T* x, int64_t n, T a) {
  for_ranges(n, [&](int64_t b, int64_t e) { range::axpy(y, x, b, e, a); });
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
void sgd(T* w, const T* g, int64_t n, T gs, T lr) {
  for_ranges(n, [&](int64_t b, int64_t e) { range::sgd(w, g, b, e, gs, -lr); });
}

// sg = momentum * sg + unit_gain * lr * g;  w -= sg
template <class T>
void momentum_sgd(T* w, const T* g, T* sg, int64_t n, T gs, T lr, T momentum, T unit_gain) {
  const T a = unit_gain * lr;
  for_ranges(n, [&](int64_t b, int64_t e) { range::momentum_sgd(w, g, sg, b, e, gs, a, momentum); });
}

// sg = momentum * sg + unit_gain * lr * g;  w -= momentum * sg + unit_gain * lr * g
template <class T>
void nesterov(T* w, const T* g, T* sg, int64_t n, T gs, T lr, T momentum, T unit_gain) {
  const T a = unit_gain * lr;
  for_ranges(n, [&](int64_t b, int64_t e) { range::nesterov(w, g, sg, b, e, gs, a, momentum); });
}

// acc += g^2;  w -= lr * g / sqrt(acc + floor) / ave, where ave is the mean of
// 1 / sqrt(acc + floor) when asked for (a second pass, then), else 1.
template <class T>
void adagrad(T* w, T* g, T* acc, int64_t n, T gs, double lr, bool need_ave_multiplier) {
  if (!need_ave_multiplier) {
    for_ranges(n, [&](int64_t b, int64_t e) { range::adagrad_step(w, g, acc, b, e, gs, T(lr)); });
    return;
  }
  const double ave = sum_ranges(n, [&](int64_t b, int64_t e) { return range::adagrad_normalize(g, acc, b, e, gs); });
  const T mean = n > 0 ? T(ave / double(n)) : T(1);
  axpy<T>(w, g, n, T(-lr / double(mean)));
}

// Zeiler's AdaDelta with CNTK's learning rate on the step.
template <class T>
void adadelta(T* w, const T* g, T* acc_g2, T* acc_dx2, int64_t n, T gs, T lr, T rho, T epsilon) {
  for_ranges(n, [&](int64_t b, int64_t e) { range::adadelta(w, g, acc_g2, acc_dx2, b, e, gs, lr, rho, epsilon); });
}

// FSAdaGrad: AdaGrad-normalised gradient (factor capped at 10), then momentum.
template <class T>
void fsadagrad(T* w, const T* g, T* smooth_ada, T* smooth_mom, int64_t n, T gs, T lr, T momentum, T ada_weight,
               T ada_mul, T unit_gain) {
  for_ranges(n, [&](int64_t b, int64_t e) {
    range::fsadagrad(w, g, smooth_ada, smooth_mom, b, e, gs, lr, momentum, ada_weight, ada_mul, unit_gain);
  });
}

// Adam (or Adamax: infinity-norm second moment); ada_mul carries the bias correction.
template <class T>
void adam(T* w, const T* g, T* smooth_ada, T* smooth_mom, int64_t n, T gs, T lr, T momentum, T ada_weight, T ada_mul,
          T epsilon, T unit_gain, bool adamax) {
  for_ranges(n, [&](int64_t b, int64_t e) {
    if (adamax)
      range::adamax(w, g, smooth_ada, smooth_mom, b, e, gs, lr, momentum, ada_weight, ada_mul, epsilon, unit_gain);
    else
      range::adam(w, g, smooth_ada, smooth_mom, b, e, gs, lr, momentum, ada_weight, ada_mul, epsilon, unit_gain);
  });
}

// CNTK's RMSProp: per-element step sizes that grow while the gradient keeps its
// sign and shrink when it flips, over a running mean of g^2; w -= lr * g * factor
// / ave, where ave is the mean factor when asked for (a second pass, then), else 1.
// On the first minibatch (`initialized` false) the state starts from g^2, sign 0
// and step 0.02.
template <class T>
void rmsprop(T* w, T* g, T* avars, T* signs, T* steps, int64_t n, T gs, double lr, T gamma, T inc, T max, T dec, T min,
             bool need_ave_multiplier, bool initialized) {
  if (!initialized) {
    for_ranges(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gi = g[i] * gs;
        avars[i] = gi * gi;
        signs[i] = 0;
        steps[i] = T(0.02);
      }
    });
  }
  if (!need_ave_multiplier) {
    for_ranges(n, [&](int64_t b, int64_t e) {
      range::rmsprop_step(w, g, avars, signs, steps, b, e, gs, T(lr), gamma, inc, max, dec, min);
    });
    return;
  }
  const double ave = sum_ranges(n, [&](int64_t b, int64_t e) {
    return range::rmsprop_normalize(g, avars, signs, steps, b, e, gs, gamma, inc, max, dec, min);
  });
  const T mean = T(ave / double(n));
  axpy<T>(w, g, n, T(-lr / double(mean)));
}

}  // namespace cntk::learn
