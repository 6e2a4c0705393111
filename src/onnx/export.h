// What an op's ONNX rule (OpDef::onnx_export) sees while the writer turns a function into
// ONNX nodes. The rule reads the function (its inputs, attributes through the op's schema)
// and emits nodes; the writer owns names, initializers and the model around them.
// No protobuf type appears here: rules live with their ops (src/ops), which stay free of it
// (the namespace is onnx_io so that it never hides protobuf's ::onnx).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "cntk/function.h"
#include "cntk/tensor.h"

namespace cntk::onnx_io {

// ONNX element types (TensorProto.DataType numbers).
enum class ElemType : int32_t {
  Undefined = 0,
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Uint16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  Uint32 = 12,
  Uint64 = 13,
  BFloat16 = 16,
};
ElemType elem_type_of(DataType t);

// One attribute of an emitted node.
struct Attr {
  using Value = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>, NDArrayView,
                             std::vector<std::string>>;
  std::string name;
  Value value;
  Attr(std::string n, int64_t v) : name(std::move(n)), value(v) {}
  Attr(std::string n, int v) : name(std::move(n)), value(int64_t(v)) {}
  Attr(std::string n, float v) : name(std::move(n)), value(v) {}
  Attr(std::string n, double v) : name(std::move(n)), value(float(v)) {}
  Attr(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
  Attr(std::string n, const char* v) : name(std::move(n)), value(std::string(v)) {}
  Attr(std::string n, std::vector<int64_t> v) : name(std::move(n)), value(std::move(v)) {}
  Attr(std::string n, std::vector<float> v) : name(std::move(n)), value(std::move(v)) {}
  Attr(std::string n, NDArrayView v) : name(std::move(n)), value(std::move(v)) {}
  Attr(std::string n, std::vector<std::string> v) : name(std::move(n)), value(std::move(v)) {}
};

class ExportContext {
 public:
  virtual ~ExportContext() = default;
  // The function being written (a primitive) and the opset chosen.
  virtual const Function& function() const = 0;
  virtual int opset() const = 0;

  // Input i: the name of the ONNX value holding it, its variable, and how many leading
  // dynamic dimensions (sequence, batch) its ONNX tensor has before the static shape.
  virtual size_t num_inputs() const = 0;
  virtual const std::string& input(size_t i) = 0;
  virtual const Variable& input_var(size_t i) const = 0;
  int input_dyn(size_t i) const { return int(input_var(i).dynamic_axes().size()); }
  // Output k: the name its ONNX value must have (the last node of the rule writes it).
  virtual const std::string& output(size_t k = 0) = 0;
  virtual const Variable& output_var(size_t k = 0) const = 0;
  int output_dyn(size_t k = 0) const { return int(output_var(k).dynamic_axes().size()); }
  size_t num_outputs() const { return function().output_impls().size(); }

  // Emits a node of `op_type` (default domain unless `domain` is given). Outputs are named
  // `outputs` where given, else fresh names; returns them.
  virtual std::vector<std::string> node(const std::string& op_type, const std::vector<std::string>& inputs,
                                        const std::vector<Attr>& attrs = {}, std::vector<std::string> outputs = {},
                                        size_t num_outputs = 1, const std::string& domain = "") = 0;
  // One-output form.
  std::string node1(const std::string& op_type, const std::vector<std::string>& inputs,
                    const std::vector<Attr>& attrs = {}, const std::string& out = "") {
    return node(op_type, inputs, attrs, out.empty() ? std::vector<std::string>{} : std::vector<std::string>{out})[0];
  }
  // A constant as an initializer (fresh name unless given); returns its name.
  virtual std::string constant(const NDArrayView& value, const std::string& name = "") = 0;
  virtual std::string constant_i64(const std::vector<int64_t>& values, bool scalar = false) = 0;
  virtual std::string constant_f(double value, DataType dtype) = 0;
  virtual std::string fresh_name(const std::string& hint) = 0;

  // Input i with the output's dynamic dimensions in front (size 1 where the input lacks one)
  // and its static shape left-padded with 1s to `static_rank`: what the engine's elementwise
  // kernels broadcast (ComputeContext::aligned). Emits Unsqueeze/Reshape only where needed.
  virtual std::string aligned(size_t i, size_t static_rank) = 0;

  // x with dimensions of size 1 inserted at `axes` (Unsqueeze, in the form the opset takes).
  std::string unsqueeze(const std::string& x, const std::vector<int64_t>& axes);

  // Attribute reads through the op's schema (its declared default where absent).
  int64_t attr_int(const std::string& key) const;
  double attr_double(const std::string& key) const;
  bool attr_bool(const std::string& key) const;
  std::string attr_string(const std::string& key) const;
  const DictValue& attr_value(const std::string& key) const;

  // ValueError naming the op, the function and what has no ONNX form.
  [[noreturn]] void unsupported(const std::string& what) const;
};

using ExportFn = std::function<void(ExportContext&)>;

// Rules for ops written the same way: one ONNX op over the inputs as they are, or over the
// inputs aligned as the engine broadcasts (elementwise binary ops).
ExportFn export_as(const std::string& op_type, std::vector<Attr> attrs = {});
ExportFn export_broadcast(const std::string& op_type);

}  // namespace cntk::onnx_io
