// Op family: nn (see docs/architecture.md for how to add an op).
#include "ops/op.h"

namespace cntk {

void register_nn_ops() {}

}  // namespace cntk
