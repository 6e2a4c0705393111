// Plan-time fusion. After the steps are ordered, chains that one oneDNN primitive can
// compute become one step:
//   Convolution -> Plus(per-channel bias) -> ReLU / Sigmoid / Tanh / ELU
// (either of the last two may be absent) runs as one convolution with the bias and
// the activation as post-ops. A chain fuses only where its intermediate results
// have no other reader and are not requested outputs, outside recurrent loops, and
// in float32. The fused step's gradient equals the gradients of the steps it
// replaces (see ops/conv_fused.h), its skipped intermediates' included.
#pragma once
#include <cstddef>

#include "exec/plan.h"

namespace cntk {

// Fusion is on unless the environment variable CNTK_NO_FUSION is set to a value
// other than "" or "0" (read each time a plan is looked up: cached plans built the
// other way are rebuilt).
bool plan_fusion_enabled();

// Replaces the fusable chains of p by fused steps.
void fuse_steps(Plan& p);

// Layouts between oneDNN steps: on unless the environment variable CNTK_DNNL_BLOCKED is
// "0" (read each time a plan is looked up, like CNTK_NO_FUSION).
bool plan_dnnl_layouts_enabled();

// Marks the slots that stay in their producer's oneDNN layout (Plan::dnnl_blocked): a
// float32 value whose producer and every reader are steps with OpDef::dnnl_layouts,
// outside recurrent loops, computing in float32, and which is not a requested output.
// Any other use (a gradient rule of another op, a requested gradient) makes it plain
// on demand, once per pass.
void mark_dnnl_layouts(Plan& p);

}  // namespace cntk
