// Activations (logistic, tanh, relu, exp, elu) on the backend's primitives, float32:
// oneDNN's JIT-vectorized transcendental functions that the plain loops cannot match.
// The plain loops in ops/elementwise.cpp remain the reference and serve float64 and the
// reference backend (these then return undefined views / null).
#pragma once
#include <memory>

#include "cntk/tensor.h"

namespace cntk {
struct LayoutValue;  // kernels/backend.h
}

namespace cntk::kernels {

enum class Eltwise { None, Logistic, Tanh, Relu, Exp, Elu };

// How an op's activation runs on the primitives.
struct EltwiseKernel {
  Eltwise f = Eltwise::None;
  // The derivative is computed from the output y (logistic, tanh, exp), else from x.
  bool backward_from_output = false;
  // dx = dy where x == 0 (CNTK's leaky ReLU: the identity branch at 0), where oneDNN's relu
  // backward gives alpha * dy; only the layout path corrects it, plain data uses the loops.
  bool unit_slope_at_zero = false;
};

// y = f(x) on contiguous float32 data (alpha: ELU's and leaky ReLU's parameter).
// Returns an undefined view when the primitives cannot do it.
NDArrayView eltwise_forward(Eltwise f, float alpha, const NDArrayView& x);
// dx from dy and x (or y with from_output).
NDArrayView eltwise_backward(Eltwise f, bool from_output, float alpha, const NDArrayView& x_or_y,
                             const NDArrayView& dy);

// y = f(x) over a value in a backend layout; y has x's layout. Null when it cannot be done.
std::shared_ptr<LayoutValue> eltwise_forward_layout(Eltwise f, float alpha, const LayoutValue& x);
// dx from x (or y) in a backend layout and dy in one (dyb) or plain (dy); dx has xy's
// layout. Null when it cannot be done. With `unit_slope_at_zero`, dx = dy where x == 0.
std::shared_ptr<LayoutValue> eltwise_backward_layout(Eltwise f, bool from_output, float alpha, const LayoutValue& xy,
                                                     const LayoutValue* dyb, const NDArrayView& dy,
                                                     bool unit_slope_at_zero = false);

// oneDNN's algorithm kind (dnnl_alg_kind_t) of f, for the backward pass from the output
// where asked (the oneDNN kernels' post-ops use it); 0 for None.
int dnnl_eltwise_alg(Eltwise f, bool backward_from_output = false);

}  // namespace cntk::kernels
