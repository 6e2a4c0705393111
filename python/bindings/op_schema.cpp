// The op catalogue's schema as Python dictionaries (`_cntk.op_schema(name)`, `_cntk.op_schemas()`):
// what tests driven by the catalogue and the Python wrappers read about each op.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "../../src/ops/op.h"
#include "convert.h"

namespace nb = nanobind;
using namespace cntk;

namespace {

const char* gradient_name(Gradient g) {
  switch (g) {
    case Gradient::Rule: return "rule";
    case Gradient::Zero: return "zero";
    case Gradient::None: return "none";
  }
  return "none";
}

const char* type_name(AttrType t) {
  static const char* const names[] = {"int",       "double",   "bool",      "string", "shape", "axis",
                                      "axis_list", "int_list", "bool_list", "list",   "dict"};
  return names[size_t(t)];
}

const char* order_name(AxisOrder o) {
  switch (o) {
    case AxisOrder::None: return "none";
    case AxisOrder::NumPy: return "numpy";
    case AxisOrder::Cntk: return "cntk";
  }
  return "none";
}

nb::dict schema_dict(const OpDef& op) {
  nb::dict d;
  d["name"] = op.name;
  d["op_type"] = op.op_type;
  nb::list inputs;
  // Ops that declare no inputs take any number, each as the op-level gradient says.
  std::vector<InputSpec> specs = op.inputs;
  if (specs.empty()) specs.push_back({"operands", op.gradient, true});
  for (auto& in : specs) {
    nb::dict i;
    i["name"] = in.name;
    i["gradient"] = gradient_name(in.gradient);
    i["variadic"] = in.variadic;
    inputs.append(i);
  }
  d["inputs"] = inputs;
  nb::dict attrs;
  for (auto& a : op.attrs) {
    nb::dict e;
    e["type"] = type_name(a.type);
    e["default"] = a.def.empty() ? nb::none() : bindings::from_dict_value(a.def);
    e["axis_order"] = order_name(a.order);
    e["cntk_key"] = a.cntk_key.empty() ? a.key : a.cntk_key;
    attrs[a.key.c_str()] = e;
  }
  d["attributes"] = attrs;
  nb::list classes;
  for (auto [bit, name] :
       {std::pair{kElementwiseUnary, "elementwise_unary"}, std::pair{kElementwiseBinary, "elementwise_binary"},
        std::pair{kDelay, "delay"}, std::pair{kSameShape, "same_shape"}})
    if (op.is(bit)) classes.append(name);
  d["classes"] = classes;
  d["cntk_block"] = bool(op.cntk_block);
  d["cntk_swaps_operands"] = op.cntk_swaps_operands;
  d["random"] = op.stateful_random;
  return d;
}

}  // namespace

void bind_op_schema(nb::module_& m) {
  m.def(
      "op_schema",
      [](const std::string& name) {
        const OpDef* op = find_op(name);
        if (!op) throw ValueError("no op named '" + name + "' in the catalogue");
        return schema_dict(*op);
      },
      nb::arg("name"),
      "The schema of op `name`: its CNTK op number, inputs (name, gradient 'rule'/'zero'/'none', variadic), "
      "attributes (type, default, axis order, CNTK key), op classes and whether CNTK writes it as a block.");
  m.def(
      "op_schemas",
      [] {
        nb::dict all;
        for (auto& name : registered_ops()) all[name.c_str()] = schema_dict(*find_op(name));
        return all;
      },
      "Every registered op's schema (see op_schema), by name.");
}
