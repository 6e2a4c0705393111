// Op family: random (see docs/architecture.md for how to add an op).
#include "ops/op.h"

namespace cntk {

void register_random_ops() {}

}  // namespace cntk
