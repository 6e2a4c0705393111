// The ONNX reader's op rules: one per ONNX op type (ONNX's catalogue, not the engine's),
// each turning a node into engine functions. Rules register themselves in the files
// src/onnx/import_*.cpp by family; the reader (import.cpp) owns the graph around them.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cntk/function.h"
#include "cntk/variable.h"
#include "onnx.pb.h"

namespace cntk::onnx_io {

class ImportContext {
 public:
  virtual ~ImportContext() = default;
  virtual const ::onnx::NodeProto& node() const = 0;
  // The version of the node's domain's opset the model imports.
  virtual int opset() const = 0;
  // The name for the functions this node becomes (its name, else its first output's).
  virtual std::string name() const = 0;

  // Inputs: an absent optional input (empty name, or beyond the node's inputs) is undefined.
  size_t num_inputs() const { return size_t(node().input_size()); }
  bool has_input(size_t i) const { return i < num_inputs() && !node().input(int(i)).empty(); }
  virtual Variable input(size_t i) = 0;
  // The ONNX element type of input i (TensorProto.DataType) as the model declares or the
  // reader inferred it.
  virtual int32_t input_elem_type(size_t i) = 0;
  // Input i's value where it is known while reading (an initializer, a Constant node, or
  // computed from them): shape, axes, indices and pads inputs.
  virtual std::optional<NDArrayView> constant_input(size_t i) = 0;
  virtual std::optional<std::vector<int64_t>> constant_input_i64(size_t i) = 0;

  // Attributes; the default where absent. ValueError naming the node for a wrong type.
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, std::optional<int64_t> def = {}) const;
  float attr_float(const std::string& name, std::optional<float> def = {}) const;
  std::string attr_string(const std::string& name, std::optional<std::string> def = {}) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::optional<std::vector<int64_t>> def = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::optional<std::vector<float>> def = {}) const;
  const ::onnx::TensorProto& attr_tensor(const std::string& name) const;
  const ::onnx::GraphProto& attr_graph(const std::string& name) const;
  virtual NDArrayView tensor_value(const ::onnx::TensorProto& t) = 0;

  // A primitive of the engine's catalogue over `inputs`, named after the node.
  FunctionPtr primitive(const std::string& op, std::vector<Variable> inputs, Dictionary attrs = {});
  // The output's element type where the rule produces integers/booleans (declared for the
  // graph's typing; the engine computes them as float32).
  virtual void set_output_elem_type(size_t k, int32_t t) = 0;

  // How many leading dimensions of input i are dynamic axes (sequence, batch): those of a model
  // OpenCNTK wrote; ONNX axes count them, the engine's static axes do not.
  int input_dyn(size_t i) { return int(input(i).dynamic_axes().size()); }

  // ValueError naming the node (and its op type) and what is wrong.
  [[noreturn]] void fail(const std::string& what) const;

  // Reads `g` (a subgraph attribute of the node: a Scan's or Loop's body) with its inputs
  // bound to `inputs`; the enclosing graph's values stay visible. Returns its outputs.
  virtual std::vector<Variable> read_subgraph(const ::onnx::GraphProto& g, const std::vector<Variable>& inputs) = 0;

  // Free dimensions while reading. The reader binds each free dimension of the graph's inputs
  // to two different probe sizes (worlds a and b) and folds the values computed from shapes
  // (Shape -> Gather -> Concat -> Reshape, as exporters with dynamic axes write them) in both:
  // an entry equal in both worlds is a known size, one that differs depends on free dimensions.
  struct Probed {
    std::vector<int64_t> a, b;
    bool depends(size_t k) const { return a[k] != b[k]; }
    bool any_depends() const { return a != b; }
  };
  // Input i's dims in both worlds; a free dim that does not follow from the graph's inputs
  // (made by an op, as a recurrence's sequence length) is negative in both.
  // (Contexts other than the reader's see no free dims traced: the defaults below.)
  virtual Probed input_probe_dims(size_t i);
  // The same for any value the node's rule sees or builds.
  virtual Probed probe_dims(const Variable& v);
  // Input i's known integer values in both worlds, entries depending on free dims included
  // (constant_input_i64 refuses those).
  virtual std::optional<Probed> probed_input_i64(size_t i);
  // Output k's value in world b, for a rule that returns a constant of world a's value.
  virtual void set_output_probe(size_t, const NDArrayView&) {}
  // A tensor of the given shape filled with `value`, its entries that depend on free dims
  // taken at run time from the graph inputs that have those dims (ConstantOfShape, Expand).
  virtual Variable probed_fill(const Probed& shape, DataType dt, double value);
};

// A rule returns the node's outputs in order (fewer where trailing optional outputs are unused).
using ImportFn = std::function<std::vector<Variable>(ImportContext&)>;

// Registers the rule for an ONNX op type (default domain unless `domain` is given) from
// opset `since` on: a later registration for a higher `since` takes over from there.
void register_onnx_import(const std::string& op_type, ImportFn fn, int since = 1, const std::string& domain = "");
const ImportFn* find_onnx_import(const std::string& op_type, int opset, const std::string& domain = "");

// The families of rules (import_*.cpp), each registering its op types; called once, when
// the reader first looks a rule up.
void register_onnx_import_rules();

}  // namespace cntk::onnx_io
