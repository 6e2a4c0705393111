// Checked mode (cntk/switches.h): the executor's run-time verification, CNTK's NaN checks:
//  - after a step's forward, its outputs must hold no NaN in their valid frames;
//  - after a step's backward, the gradient it hands to an input must hold no NaN in that
//    input's valid frames.
// A violation raises an Error naming the op, its function and the input.
// CNTK also filled the padding frames of every value with NaN, so that a kernel reading
// padding showed up as NaN. Here kernels that reduce across frames (a weight gradient of
// Times sums over every frame) read padding multiplied by zero gradients, which is exact
// for finite padding and NaN for NaN padding; the engine does not mask each such read, so
// padding is not invalidated.
#pragma once
#include <cstddef>

#include "exec/run_state.h"

namespace cntk::checked {

// Verifies the values of step st's output slots.
void after_forward(const PlanStep& st, const BackPropState& s);
// Verifies the outputs of a recurrent loop (its slots hold every time step).
void after_loop(const PlanLoop& loop, const Plan& p, const BackPropState& s);
// Verifies g, the gradient step st hands to its input i.
void check_gradient(const PlanStep& st, size_t i, const NDArrayView& g, const BackPropState& s);

}  // namespace cntk::checked
