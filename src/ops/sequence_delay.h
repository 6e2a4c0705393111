// The delay ops PastValue and FutureValue, as kernels over a range of time steps,
// so that the executor can run them one step at a time inside a recurrent loop.
// Runtime layout: operand and output [T, B, *shape] (time-major), lengths per sequence.
#pragma once
#include <vector>

#include "cntk/tensor.h"

namespace cntk {

class Function;
struct OpDef;

struct DelaySpec {
  bool past = true;    // PastValue: out[t] = x[t - offset]; FutureValue: out[t] = x[t + offset]
  int64_t offset = 1;  // time steps, >= 0
};

// Whether `op` is PastValue or FutureValue, and then its direction and offset.
bool is_delay_op(const OpDef* op);
DelaySpec delay_spec(const Function& f);

// Writes output steps [t0, t1) of `out` ([T, B, *shape], contiguous): the operand's item
// `offset` steps back (or ahead) within the same sequence, or the initial state where
// that falls outside the sequence; zero past a sequence's end. `init_rows` is the
// initial state broadcast to [B, *shape] (contiguous), of the output's type.
void delay_forward_steps(const DelaySpec& d, const NDArrayView& x, const NDArrayView& init_rows,
                         const std::vector<int64_t>& lengths, int64_t t0, int64_t t1, NDArrayView& out);

// Routes the gradient of output steps [t0, t1) back: into `grad_x` ([T, B, *shape],
// contiguous, accumulated) where the operand was read, and into `grad_init_rows`
// ([B, *shape], contiguous, accumulated) where the initial state was. Either may be null.
void delay_backward_steps(const DelaySpec& d, const NDArrayView& grad_out, const std::vector<int64_t>& lengths,
                          int64_t t0, int64_t t1, NDArrayView* grad_x, NDArrayView* grad_init_rows);

}  // namespace cntk
