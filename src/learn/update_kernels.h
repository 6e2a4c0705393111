// The parameter-update loops of the standard learners over contiguous arrays,
// written after CNTK's CPU matrix routines (Source/Math/CPUMatrixImpl.h:
// Adagrad, FSAdagrad, Adam, RmsProp, AdaDelta; Matrix.cpp: SGD, momentum and
// Nesterov updates) so that results match CNTK's in each element type.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cntk::learn {

// Below this many elements a loop runs on one thread (thread start-up costs more).
constexpr int64_t kParallelMin = 1 << 15;

// g *= s
template <class T>
void scale(T* g, int64_t n, T s) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) g[i] *= s;
}

// y += a * x
template <class T>
void axpy(T* y, const T* x, int64_t n, T a) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// Clamps every element to [-threshold, threshold].
template <class T>
void truncate(T* g, int64_t n, T threshold) {
  const T hi = std::abs(threshold), lo = -hi;
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    if (g[i] > hi)
      g[i] = hi;
    else if (g[i] < lo)
      g[i] = lo;
  }
}

template <class T>
double frobenius_norm(const T* g, int64_t n) {
  double s = 0;
#pragma omp parallel for reduction(+ : s) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) s += double(g[i]) * double(g[i]);
  return std::sqrt(s);
}

// Proximal step of L1 regularization: shrinks every element towards 0 by threshold.
template <class T>
void soft_threshold(T* w, int64_t n, T threshold) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    if (w[i] > threshold)
      w[i] -= threshold;
    else if (w[i] < -threshold)
      w[i] += threshold;
    else
      w[i] = 0;
  }
}

// sg = momentum * sg + unit_gain * lr * g;  w -= sg
template <class T>
void momentum_sgd(T* w, const T* g, T* sg, int64_t n, T lr, T momentum, T unit_gain) {
  const T a = unit_gain * lr;
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    sg[i] = a * g[i] + momentum * sg[i];
    w[i] -= sg[i];
  }
}

// sg = momentum * sg + unit_gain * lr * g;  w -= momentum * sg + unit_gain * lr * g
template <class T>
void nesterov(T* w, const T* g, T* sg, int64_t n, T lr, T momentum, T unit_gain) {
  const T a = unit_gain * lr;
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    sg[i] = a * g[i] + momentum * sg[i];
    w[i] += -momentum * sg[i];
    w[i] += -a * g[i];
  }
}

// acc += g^2;  g /= sqrt(acc + floor). Returns the mean of 1 / sqrt(acc + floor)
// when asked (the step is then divided by it), else 1.
template <class T>
T adagrad(T* acc, T* g, int64_t n, bool need_ave_multiplier) {
  const T floor = T(1e-16f);
  double ave = 0;
#pragma omp parallel for reduction(+ : ave) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    acc[i] += g[i] * g[i];
    const T a = std::sqrt(acc[i] + floor);
    g[i] /= a;
    if (need_ave_multiplier) ave += double(T(1) / a);
  }
  if (need_ave_multiplier && n > 0) return T(ave / double(n));
  return T(1);
}

// Zeiler's AdaDelta with CNTK's learning rate on the step.
template <class T>
void adadelta(T* w, const T* g, T* acc_g2, T* acc_dx2, int64_t n, T lr, T rho, T epsilon) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i];
    const T ada_sqr = rho * acc_g2[i] + (1 - rho) * gi * gi;
    acc_g2[i] = ada_sqr;
    const T dx = -std::sqrt(acc_dx2[i] + epsilon) / std::sqrt(ada_sqr + epsilon) * gi;
    acc_dx2[i] = rho * acc_dx2[i] + (1 - rho) * dx * dx;
    w[i] += lr * dx;
  }
}

// FSAdaGrad: AdaGrad-normalised gradient (factor capped at 10), then momentum.
template <class T>
void fsadagrad(T* w, const T* g, T* smooth_ada, T* smooth_mom, int64_t n, T lr, T momentum, T ada_weight, T ada_mul,
               T unit_gain) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    T gi = g[i];
    const T ada_sqr = ada_weight * smooth_ada[i] + (T(1) - ada_weight) * gi * gi;
    smooth_ada[i] = ada_sqr;
    if (ada_sqr != T(0)) {
      T f = ada_mul * (T(1) / std::sqrt(ada_sqr));
      if (f > T(10)) f = T(10);
      gi *= f;
    }
    if (momentum > T(0)) {
      gi = momentum * smooth_mom[i] + unit_gain * gi;
      smooth_mom[i] = gi;
    }
    w[i] -= gi * lr;
  }
}

// Adam (or Adamax: infinity-norm second moment); ada_mul carries the bias correction.
template <class T>
void adam(T* w, const T* g, T* smooth_ada, T* smooth_mom, int64_t n, T lr, T momentum, T ada_weight, T ada_mul,
          T epsilon, T unit_gain, bool adamax) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    T gi = g[i];
    T ada;
    if (!adamax) {
      const T ada_sqr = ada_weight * smooth_ada[i] + (T(1) - ada_weight) * gi * gi;
      smooth_ada[i] = ada_sqr;
      ada = std::sqrt(ada_sqr);
    } else {
      ada = smooth_ada[i] = std::max(ada_weight * smooth_ada[i], std::abs(gi));
    }
    const T f = ada_mul * T(1.0 / double(ada + epsilon));
    gi = momentum * smooth_mom[i] + unit_gain * gi;
    smooth_mom[i] = gi;
    w[i] -= gi * f * lr;
  }
}

// CNTK's RMSProp: per-element step sizes that grow while the gradient keeps its
// sign and shrink when it flips, over a running mean of g^2. Scales g in place;
// returns the mean scale factor when asked, else 1. On the first minibatch
// (`initialized` false) the state starts from g^2, sign 0 and step 0.02.
template <class T>
T rmsprop(T* g, T* avars, T* signs, T* steps, int64_t n, T gamma, T inc, T max, T dec, T min, bool need_ave_multiplier,
          bool initialized) {
  const T floor = T(1e-6f);
  if (!initialized) {
    for (int64_t i = 0; i < n; ++i) {
      avars[i] = g[i] * g[i];
      signs[i] = 0;
      steps[i] = T(0.02);
    }
  }
  const T one_minus_gamma = T(1) - gamma;
  double ave = 0;
#pragma omp parallel for reduction(+ : ave) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    avars[i] = gamma * avars[i] + one_minus_gamma * (g[i] * g[i]);
    const int sign = (T(0) < g[i]) - (g[i] < T(0));
    if (signs[i] * sign > 0)
      steps[i] = std::min(steps[i] * inc, max);
    else
      steps[i] = std::max(steps[i] * dec, min);
    const T a = steps[i] / std::sqrt(avars[i] + floor);
    g[i] *= a;
    signs[i] = T(sign);
    if (need_ave_multiplier) ave += double(a);
  }
  if (need_ave_multiplier) return T(ave / double(n));
  return T(1);
}

}  // namespace cntk::learn
