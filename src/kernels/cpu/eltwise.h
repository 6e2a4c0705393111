// oneDNN eltwise primitives for float32: JIT-vectorized transcendental functions
// (tanh, exp, logistic, ...) that the plain loops cannot match. The plain loops in
// elementwise.cpp remain the reference and serve float64.
#pragma once
#include <memory>

#include "cntk/tensor.h"

namespace cntk {
struct DnnlValue;  // kernels/cpu/dnnl_value.h
}

namespace cntk::kernels {

// oneDNN algorithm kinds (dnnl_alg_kind_t values) used by the catalogue; 0 = none.
struct DnnlEltwise {
  int forward = 0;   // algorithm for y = f(x)
  int backward = 0;  // algorithm for dx = f'(.) * dy, computed from x, or from y for *_use_dst_for_bwd
  bool backward_from_output = false;
  // dx = dy where x == 0 (CNTK's leaky ReLU: the identity branch at 0), where oneDNN's relu
  // backward gives alpha * dy; only the layout path corrects it, plain data uses the loops.
  bool unit_slope_at_zero = false;
};

// y = f(x) on contiguous float32 data. Returns an undefined view when oneDNN cannot do it.
NDArrayView dnnl_eltwise_forward(int alg, float alpha, float beta, const NDArrayView& x);
// dx from dy and x (or y when the algorithm uses the output).
NDArrayView dnnl_eltwise_backward(int alg, float alpha, float beta, const NDArrayView& x_or_y, const NDArrayView& dy);

// y = f(x) over a value in a oneDNN layout; y has x's layout. Null when oneDNN cannot do it.
std::shared_ptr<DnnlValue> dnnl_eltwise_forward_layout(int alg, float alpha, float beta, const DnnlValue& x);

// dx from x (or y) in a oneDNN layout and dy in a oneDNN layout (dyb) or plain (dy); dx has
// xy's layout. Null when oneDNN cannot do it.
// With `unit_slope_at_zero`, dx = dy where x == 0 (see DnnlEltwise).
std::shared_ptr<DnnlValue> dnnl_eltwise_backward_layout(int alg, float alpha, float beta, const DnnlValue& xy,
                                                        const DnnlValue* dyb, const NDArrayView& dy,
                                                        bool unit_slope_at_zero = false);

}  // namespace cntk::kernels
