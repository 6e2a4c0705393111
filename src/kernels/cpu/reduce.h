// Reductions over a set of axes, and the sum-to-shape used by broadcasting gradients.
#pragma once
#include <vector>

#include "cntk/tensor.h"

namespace cntk::kernels {

enum class ReduceOp { Sum, Mean, Max, Min, Prod, LogSum, Argmax, Argmin };

// Reduces `x` over the axes marked true in `axes` (size = x.rank()); the result
// keeps those axes with size 1. Argmax/Argmin give the index along the one reduced axis.
NDArrayView reduce(const NDArrayView& x, const std::vector<bool>& axes, ReduceOp op);
// Sums `x` down to `shape` (same rank; each target dim equal or 1).
NDArrayView sum_to(const NDArrayView& x, const NDShape& shape);

}  // namespace cntk::kernels
