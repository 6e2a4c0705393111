// ONNX elementwise ops read as the engine's elementwise primitives. ONNX broadcasts
// right-aligned (NumPy), as the engine broadcasts static shapes.
#include "onnx/import.h"

namespace cntk::onnx_io {

namespace {

ImportFn unary(const std::string& op) {
  return [op](ImportContext& c) { return std::vector<Variable>{c.primitive(op, {c.input(0)})->output()}; };
}
ImportFn binary(const std::string& op) {
  return [op](ImportContext& c) { return std::vector<Variable>{c.primitive(op, {c.input(0), c.input(1)})->output()}; };
}

}  // namespace

void register_import_elementwise() {
  for (auto [onnx, op] : {std::pair{"Abs", "Abs"},
                          {"Neg", "Negate"},
                          {"Relu", "ReLU"},
                          {"Tanh", "Tanh"},
                          {"Sigmoid", "StableSigmoid"},
                          {"Exp", "Exp"},
                          {"Log", "Log"},
                          {"Sqrt", "Sqrt"},
                          {"Reciprocal", "Reciprocal"},
                          {"Floor", "Floor"},
                          {"Sin", "Sin"},
                          {"Cos", "Cos"}})
    register_onnx_import(onnx, unary(op));
  for (auto [onnx, op] :
       {std::pair{"Add", "Plus"}, {"Sub", "Minus"}, {"Mul", "ElementTimes"}, {"Div", "ElementDivide"}})
    register_onnx_import(onnx, binary(op));
  register_onnx_import("Identity", [](ImportContext& c) { return std::vector<Variable>{c.input(0)}; });
  register_onnx_import("Constant", [](ImportContext& c) {
    if (!c.has_attr("value")) c.fail("only the 'value' form of Constant is read");
    const auto& t = c.attr_tensor("value");
    if (t.data_type() != ::onnx::TensorProto::FLOAT && t.data_type() != ::onnx::TensorProto::DOUBLE &&
        t.data_type() != ::onnx::TensorProto::FLOAT16)
      c.set_output_elem_type(0, t.data_type());
    return std::vector<Variable>{Variable::constant(c.tensor_value(t), c.name())};
  });
}

}  // namespace cntk::onnx_io
