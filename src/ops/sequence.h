// Helpers shared by ops that work over the sequence axis (sequence.cpp, the
// sequence reductions in reduce.cpp). Runtime sequence tensors are time-major:
// [T, B, *shape], with one length per sequence.
#pragma once
#include <vector>

#include "cntk/tensor.h"
#include "cntk/variable.h"

namespace cntk {

// The sequence axis among v's dynamic axes, or nullptr when v has none.
const Axis* sequence_axis_of(const Variable& v);

// A contiguous copy of x [T, B, ...] whose steps at or past each sequence's length hold
// `value` (the padding). `lengths` empty means every sequence fills all T steps.
NDArrayView fill_padding(const NDArrayView& x, const std::vector<int64_t>& lengths, double value);
// The same in place: y's padding steps are set to `value`.
void set_padding(NDArrayView& y, const std::vector<int64_t>& lengths, double value);

}  // namespace cntk
