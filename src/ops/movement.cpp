// Op family: movement (see docs/architecture.md for how to add an op).
#include "ops/op.h"

namespace cntk {

void register_movement_ops() {}

}  // namespace cntk
