// ONNX MatMul and Gemm read as the engine's Times (NumPy order: x [.., k] times W [k, n]).
#include "onnx/import.h"

namespace cntk::onnx_io {

void register_import_linalg() {
  register_onnx_import("MatMul", [](ImportContext& c) {
    Variable a = c.input(0), b = c.input(1);
    if (b.shape().rank() != 2) c.fail("MatMul by an operand of rank other than 2 is not read yet");
    return std::vector<Variable>{c.primitive("Times", {a, b})->output()};
  });
}

}  // namespace cntk::onnx_io
