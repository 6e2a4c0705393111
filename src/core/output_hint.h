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
class ScopedOutputHint {
 public:
  explicit ScopedOutputHint(const NDArrayView& dest);
  ~ScopedOutputHint();
  ScopedOutputHint(const ScopedOutputHint&) = delete;
  ScopedOutputHint& operator=(const ScopedOutputHint&) = delete;
};

// The offered destination if it fits (dtype, shape) and was not taken yet (then it
// is taken); null otherwise. Called by NDArrayView's allocating constructor.
const NDArrayView* take_output_hint(DataType dtype, const NDShape& shape);

// How many storage blocks were asked for, from the free lists or the system (tests
// and benchmarks check that loop steps ask for none).
size_t storage_requests();

}  // namespace cntk::detail
