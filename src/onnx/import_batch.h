// ONNX's image ops (Conv, pooling, normalization) take [N, C, spatial...]. In a file OpenCNTK
// wrote, N is the batch axis already (a dynamic axis before the static (C, spatial...));
// other exporters (PyTorch) give N as a static leading dimension, which the engine's
// convolution would read as one more spatial axis. Such an operand becomes a batch axis for
// the op and a leading static (free) dimension again after it.
#pragma once
#include "onnx/import.h"

namespace cntk::onnx_io {

// Applies `op` to input `i` with N as the batch axis; `op` gets the operand and returns the result.
template <class Op>
Variable over_batch(ImportContext& c, size_t i, Op op) {
  Variable x = c.input(i);
  if (!x.dynamic_axes().empty()) return op(x);
  if (x.shape().rank() < 2) c.fail("the operand " + x.shape().str() + " needs a batch and a channel axis");
  Variable y = op(c.primitive("ToBatchAxis", {x})->output());
  return c.primitive("UnpackBatchAxis", {y})->output();
}

}  // namespace cntk::onnx_io
