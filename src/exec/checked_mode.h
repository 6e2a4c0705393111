// Checked mode (cntk/switches.h): the executor's run-time verification, as CNTK's
// checked mode did it.
//  - Every value's padding (the steps of a [T, B, ...] sequence tensor at or past a
//    sequence's length) is set to NaN once it is computed (and on the inputs fed in), so
//    an op that lets padding reach a valid frame produces NaN there.
//  - After a step's forward its outputs must hold no NaN in their valid frames; after a
//    step's backward the gradient it hands to an input must hold no NaN in that input's
//    valid frames. A violation raises an Error naming the op, its function and the input.
//  - Gradient rules legitimately read padding only to multiply it by the zero gradient
//    that padding carries (a weight gradient sums over every frame): they see values and
//    gradients with padding set to zero, as CNTK's nodes masked theirs before backprop.
#pragma once
#include <cstddef>

#include "exec/run_state.h"

namespace cntk::checked {

// Verifies the values of step st's output slots, then sets their padding to NaN.
void after_forward(const PlanStep& st, BackPropState& s);
// The same for the outputs of a recurrent loop (its slots hold every time step).
void after_loop(const PlanLoop& loop, const Plan& p, BackPropState& s);
// Sets the padding of the value in `slot` to NaN (on a copy: the value may be the caller's).
void invalidate_padding(int slot, BackPropState& s);
// Before a step's gradient rule runs: its inputs, outputs and output gradients with
// their padding set to zero.
void mask_padding(ComputeContext& ctx);
// Verifies g, the gradient step st hands to its input i.
void check_gradient(const PlanStep& st, size_t i, const NDArrayView& g, const BackPropState& s);

}  // namespace cntk::checked
