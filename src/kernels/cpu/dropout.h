// Inverted dropout in one pass: the mask is drawn from Philox4x32-10 (core/philox.h)
// while the input is multiplied, on every thread, and is never stored; the gradient
// rule draws the same words again from the same counters.
#pragma once
#include <cstdint>

#include "cntk/tensor.h"

namespace cntk::kernels {

// One draw of a mask: element i of the tensor reads word i % 4 of counter block
// `counter + i / 4` of the stream keyed by `seed`, and is dropped (times 0) when that
// word is below rate * 2^32, else scaled by 1 / (1 - rate).
struct DropoutDraw {
  uint64_t seed = 0;
  uint64_t counter = 0;
  double rate = 0;
};

// Counter blocks a draw over n elements uses.
inline uint64_t dropout_blocks(int64_t n) { return uint64_t((n + 3) / 4); }

// x times the draw's mask (float32 and float64; x dense, any layout).
NDArrayView dropout(const NDArrayView& x, const DropoutDraw& draw);

}  // namespace cntk::kernels
