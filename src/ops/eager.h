// Eager tensor arithmetic over runtime tensors, for kernels and gradient rules
// that are short expressions over other ops (ATen's derivatives.yaml style).
#pragma once
#include "cntk/tensor.h"

namespace cntk::eager {

NDArrayView add(const NDArrayView& a, const NDArrayView& b);
NDArrayView sub(const NDArrayView& a, const NDArrayView& b);
NDArrayView mul(const NDArrayView& a, const NDArrayView& b);
NDArrayView div(const NDArrayView& a, const NDArrayView& b);
NDArrayView scale(const NDArrayView& a, double s);
NDArrayView neg(const NDArrayView& a);
NDArrayView exp(const NDArrayView& a);
NDArrayView zeros_like(const NDArrayView& a);
// In-place a += b (b broadcast to a's shape).
void add_to(NDArrayView& a, const NDArrayView& b);

}  // namespace cntk::eager
