// Where a kernel's output may go without new storage. The recurrent-loop runner
// offers the current time step's slice of a loop buffer ([1, B, ...] of the
// time-major [T, B, ...] buffer, contiguous) while one step's kernel runs: the
// first tensor that kernel creates with exactly that shape and type is that slice
// instead of a fresh block, so the step's output lands in place and is not copied.
// Kernels need not know: they allocate as always (NDArrayView's constructor asks).
#pragma once
#include <cstddef>

#include "cntk/tensor.h"

namespace cntk::detail {

// Offers `dest` (dense, contiguous, writable) on this thread while in scope.
//
// The second form serves a loop's backward rule for an input broadcast over the step
// (a parameter): such a rule computes the gradient at the step's full shape, then sums
// it to the input's shape with the size-1 axes of broadcasting kept. `dest` is then
// also offered in any shape with the same dimensions apart from 1s (a reshaped view),
// and `scratch` (may be null) to the first tensor of exactly its shape that is not
// `dest` (the full-shape temporary): both stay the loop's, reused at every step, and
// are read by the loop before the next step.
class ScopedOutputHint {
 public:
  explicit ScopedOutputHint(const NDArrayView& dest);
  ScopedOutputHint(const NDArrayView& dest, const NDArrayView* scratch);
  ~ScopedOutputHint();
  ScopedOutputHint(const ScopedOutputHint&) = delete;
  ScopedOutputHint& operator=(const ScopedOutputHint&) = delete;
};

// The offered destination (or scratch) if it fits (dtype, shape) and was not taken
// yet (then it is taken), as a view of `shape`; undefined otherwise. Called by
// NDArrayView's allocating constructor.
NDArrayView take_output_hint(DataType dtype, const NDShape& shape);

// How many storage blocks were asked for, from the free lists or the system (tests
// and benchmarks check that loop steps ask for none).
size_t storage_requests();

// Whether the engine set glibc's malloc thresholds at load (core/allocator.cpp says why).
bool malloc_tuned();

}  // namespace cntk::detail
