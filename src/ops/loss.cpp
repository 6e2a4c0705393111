// Op family: loss (see docs/architecture.md for how to add an op).
#include "ops/op.h"

namespace cntk {

void register_loss_ops() {}

}  // namespace cntk
