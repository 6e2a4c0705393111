// Checked mode (cntk/switches.h): the executor's run-time verification, as CNTK's
// checked mode did it (its networks' "gap NaN tracking"):
//  - after a step's forward, its outputs must hold no NaN in their valid frames; then the
//    padding frames of its sequence outputs are filled with NaN, so that a later kernel
//    that reads padding shows it as NaN in a valid frame of its own output;
//  - after a step's backward, the gradient it hands to an input must hold no NaN in that
//    input's valid frames.
// A violation raises an Error naming the op, its function and the input.
#pragma once
#include <cstddef>

#include "exec/run_state.h"

namespace cntk::checked {

// Verifies the values of step st's output slots and invalidates their padding.
void after_forward(const PlanStep& st, BackPropState& s);
// Verifies the outputs of a recurrent loop (its slots hold every time step).
void after_loop(const PlanLoop& loop, const Plan& p, BackPropState& s);
// Verifies g, the gradient step st hands to its input i.
void check_gradient(const PlanStep& st, size_t i, const NDArrayView& g, const BackPropState& s);

}  // namespace cntk::checked
