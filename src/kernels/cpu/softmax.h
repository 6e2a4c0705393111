// Softmax, log-softmax and hardmax along the middle axis of a [P, R, Q] view,
// and their gradients. Any single axis or run of adjacent axes of a contiguous
// tensor is such a view, so ops only have to compute P, R and Q.
#pragma once
#include "cntk/tensor.h"

namespace cntk::kernels {

struct SoftmaxDims {
  int64_t P = 1, R = 1, Q = 1;
};

// Splits `shape` around the axes [begin, end): P = product before, R = product
// inside, Q = product after.
SoftmaxDims softmax_dims(const NDShape& shape, size_t begin, size_t end);

// y = exp(x - max) / sum(exp(x - max)) along R (log: x - max - log(sum)).
NDArrayView softmax(const NDArrayView& x, SoftmaxDims d, bool log);
// dx from y = softmax(x) (or log-softmax) and dy.
NDArrayView softmax_backward(const NDArrayView& y, const NDArrayView& dy, SoftmaxDims d, bool log);
// 1 at the first maximum along R, 0 elsewhere.
NDArrayView hardmax(const NDArrayView& x, SoftmaxDims d);

}  // namespace cntk::kernels
