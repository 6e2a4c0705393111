// Plan-time fusion. After the steps are ordered, chains that one backend primitive can
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

// Replaces the fusable chains of p by fused steps (when the backend fuses convolutions,
// kernels/backend.h; a cached plan built the other way is rebuilt).
void fuse_steps(Plan& p);

// The layout protocol's plan side (kernels/backend.h): marks the slots that stay in
// their producer's backend layout (Plan::layout_kept): a float32 value whose producer
// and every reader are steps with OpDef::backend_layouts, outside recurrent loops,
// computing in float32, and which is not a requested output (when the backend keeps
// layouts). Any other use (a gradient rule of another op, a requested gradient) makes
// it plain on demand, once per pass.
void mark_kept_layouts(Plan& p);

}  // namespace cntk
