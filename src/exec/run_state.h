// The state of one forward pass, which backward reads, and what the executor and
// the recurrent-loop runner (loops.cpp) share.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "cntk/evaluation.h"
#include "exec/plan.h"
#include "ops/op.h"

namespace cntk {

struct BackPropState {
  FunctionPtr function;
  std::shared_ptr<const Plan> plan;
  std::vector<NDArrayView> values;
  // Per slot the plan keeps in a backend layout (Plan::layout_kept): the value in that
  // layout; values[slot] stays undefined until a reader needs it plain (plain_value).
  std::vector<std::shared_ptr<const LayoutValue>> layout_values;
  std::vector<std::vector<int64_t>> seq_lengths;   // per slot; empty when it has no sequence axis
  std::vector<std::vector<NDArrayView>> saved;     // per step: what its forward kept for backward
  std::vector<std::shared_ptr<void>> saved_state;  // per step: its forward's opaque state
  // Steps inside recurrent loops keep what their forward saved per time step.
  std::vector<std::vector<std::vector<NDArrayView>>> loop_saved;     // [step][t]
  std::vector<std::vector<std::shared_ptr<void>>> loop_saved_state;  // [step][t]
  std::vector<std::function<void()>> deferred;                       // run when the pass is over
  // Per sequence of the batch: it continues a sequence of the previous call
  // (truncated BPTT); empty when none does.
  std::vector<char> continues;
  bool training = false;
};

// The value of a slot as a plain tensor: made plain (and kept) where it is in a backend layout.
const NDArrayView& plain_value(BackPropState& s, int slot);
// The runtime shape and type of a slot's value, whatever its layout.
NDShape slot_shape(const BackPropState& s, int slot);
DataType slot_dtype(const BackPropState& s, int slot);

// The context in which step `st` runs over the pass's current values.
ComputeContext make_context(const PlanStep& st, BackPropState& s);

// The gradient of step st's input i from its op's rule (undefined for Gradient::Zero);
// ValueError for an input the op is not differentiable in.
NDArrayView input_gradient(const PlanStep& st, ComputeContext& ctx, size_t i);

// Records step st's per-node profiler event (and node timing) for a run that began at t0.
void node_event(const PlanStep& st, bool backward, uint64_t t0);

// Runs a recurrent loop's steps for every time step (forward), and backward through
// time, accumulating into `grads` (per slot) for the slots in `depends`.
void loop_forward(const PlanLoop& loop, BackPropState& s);
void loop_backward(const PlanLoop& loop, BackPropState& s, std::vector<NDArrayView>& grads,
                   const std::vector<bool>& depends);

}  // namespace cntk
