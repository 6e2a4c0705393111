// The registry and the helpers every shape rule and kernel shares.
#include "ops/op.h"

#include <map>
#include <memory>
#include <sstream>

#include "kernels/backend.h"
#include "kernels/cpu/reduce.h"

namespace cntk {

void register_all_op_families();  // registry.cpp

namespace {
std::map<std::string, OpDef>& table() {
  static std::map<std::string, OpDef> t;
  return t;
}
void ensure_registered() {
  static bool done = [] {
    register_all_op_families();
    return true;
  }();
  (void)done;
}
}  // namespace

namespace {

bool holds(const DictValue& v, AttrType t) {
  switch (t) {
    case AttrType::Int: return v.is<int64_t>();
    case AttrType::Double: return v.is<double>() || v.is<int64_t>();
    case AttrType::Bool: return v.is<bool>() || v.is<int64_t>();
    case AttrType::String: return v.is<std::string>();
    case AttrType::Shape: return v.is<NDShape>() || v.is<std::shared_ptr<DictValue::List>>() || v.is<int64_t>();
    case AttrType::Axis: return v.is<Axis>() || v.is<int64_t>();
    case AttrType::AxisList: return v.is<Axis>() || v.is<int64_t>() || v.is<std::shared_ptr<DictValue::List>>();
    case AttrType::IntList: return v.is<std::shared_ptr<DictValue::List>>() || v.is<NDShape>() || v.is<int64_t>();
    case AttrType::BoolList: return v.is<std::shared_ptr<DictValue::List>>() || v.is<bool>();
    case AttrType::List: return v.is<std::shared_ptr<DictValue::List>>();
    case AttrType::Dict: return v.is<std::shared_ptr<Dictionary>>();
  }
  return false;
}

const char* type_name(AttrType t) {
  static const char* const names[] = {"int",       "double",   "bool",      "string", "shape",     "axis",
                                      "axis list", "int list", "bool list", "list",   "dictionary"};
  return names[size_t(t)];
}

// CNTK's op numbers of the ops the engine has no entry for (it loads them as other ops or
// as blocks, or reports them unsupported); the others' numbers live in their OpDef.
const std::map<int64_t, std::string>& cntk_only_ops() {
  static const std::map<int64_t, std::string> m = {
      {1, "Sigmoid"},      {18, "SumAll"}, {28, "PackedIndex"}, {32, "TransposeTimes"}, {34, "SquaredError"},
      {53, "CosDistance"}, {57, "Block"},  {79, "UnpackBatch"}, {80, "ToBatch"},        {93, "CustomProxyOp"}};
  return m;
}

}  // namespace

void register_op(OpDef def) {
  auto name = def.name;
  auto fail = [&](const std::string& what) { throw Error("register_op '" + name + "': " + what); };
  for (size_t i = 0; i < def.attrs.size(); ++i) {
    const AttrSpec& a = def.attrs[i];
    if (a.key.empty()) fail("an attribute without a key");
    for (size_t j = 0; j < i; ++j)
      if (def.attrs[j].key == a.key) fail("attribute '" + a.key + "' declared twice");
    if (!a.def.empty() && !holds(a.def, a.type))
      fail("the default of attribute '" + a.key + "' is not a " + type_name(a.type));
    bool axes = a.type == AttrType::Axis || a.type == AttrType::AxisList;
    if (axes && a.order == AxisOrder::None) fail("attribute '" + a.key + "' holds axes but names no axis order");
  }
  for (size_t i = 0; i < def.inputs.size(); ++i) {
    const InputSpec& in = def.inputs[i];
    if (in.variadic && i + 1 != def.inputs.size()) fail("only the last input may be variadic");
    if (in.gradient == Gradient::Rule && !def.backward)
      fail("input '" + in.name + "' is differentiable but the op has no gradient rule");
  }
  if (def.stateful_random && (!def.attr_spec("rngSeed") || !def.attr_spec("rngOffset")))
    fail("a random op must declare rngSeed and rngOffset");
  if (def.inputs.empty() && def.gradient == Gradient::Rule && !def.backward)
    fail("differentiable inputs but no gradient rule");
  if (def.op_type >= 0 && cntk_only_ops().count(def.op_type)) fail("op number taken");
  if (!table().emplace(name, std::move(def)).second) throw Error("op '" + name + "' registered twice");
}

const AttrSpec* OpDef::attr_spec(const std::string& key) const {
  for (auto& a : attrs)
    if (a.key == key) return &a;
  return nullptr;
}

Gradient OpDef::input_gradient(size_t i) const {
  if (inputs.empty()) return gradient;
  if (i < inputs.size()) return inputs[i].gradient;
  return inputs.back().variadic ? inputs.back().gradient : Gradient::None;
}

const DictValue& schema_attr(const OpDef* op, const std::string& op_name, const Dictionary& attrs,
                             const std::string& key) {
  const AttrSpec* spec = op ? op->attr_spec(key) : nullptr;
  if (!spec) throw Error("op '" + op_name + "' reads attribute '" + key + "', which its schema does not declare");
  auto it = attrs.find(key);
  if (it != attrs.end() && !it->second.empty()) return it->second;
  if (spec->def.empty()) throw ValueError(op_name + ": the attribute '" + key + "' is required");
  return spec->def;
}

namespace {
const DictValue& fn_attr(const Function& f, const std::string& key) {
  return schema_attr(f.op(), f.op_name(), f.attributes(), key);
}
}  // namespace

int64_t op_attr_int(const std::string& op, const Dictionary& attrs, const std::string& key) {
  return schema_attr(find_op(op), op, attrs, key).as_int();
}
double op_attr_double(const std::string& op, const Dictionary& attrs, const std::string& key) {
  return schema_attr(find_op(op), op, attrs, key).as_double();
}
bool op_attr_bool(const std::string& op, const Dictionary& attrs, const std::string& key) {
  return schema_attr(find_op(op), op, attrs, key).as_bool();
}
std::string op_attr_string(const std::string& op, const Dictionary& attrs, const std::string& key) {
  return schema_attr(find_op(op), op, attrs, key).as_string();
}

int64_t schema_attr_int(const Function& f, const std::string& key) { return fn_attr(f, key).as_int(); }
double schema_attr_double(const Function& f, const std::string& key) { return fn_attr(f, key).as_double(); }
bool schema_attr_bool(const Function& f, const std::string& key) { return fn_attr(f, key).as_bool(); }

void check_attributes(const OpDef& op, const Dictionary& attrs) {
  for (auto& [key, value] : attrs) {
    const AttrSpec* spec = op.attr_spec(key);
    if (!spec) throw ValueError(op.name + ": unknown attribute '" + key + "'");
    if (!value.empty() && !holds(value, spec->type))
      throw TypeError(op.name + ": attribute '" + key + "' must be a " + type_name(spec->type));
  }
}

const std::string& cntk_op_name(int64_t type) {
  static const std::map<int64_t, std::string> by_number = [] {
    std::map<int64_t, std::string> m = cntk_only_ops();
    for (auto& name : registered_ops())
      if (const OpDef* d = find_op(name); d->op_type >= 0) m[d->op_type] = d->name;
    return m;
  }();
  static const std::string none;
  auto it = by_number.find(type);
  return it == by_number.end() ? none : it->second;
}

int64_t cntk_op_number(const std::string& name) {
  if (const OpDef* d = find_op(name)) return d->op_type;
  for (auto& [n, op] : cntk_only_ops())
    if (op == name) return n;
  return -1;
}

int64_t InferContext::attr_int(const std::string& key) const { return attr_value(key).as_int(); }
double InferContext::attr_double(const std::string& key) const { return attr_value(key).as_double(); }
bool InferContext::attr_bool(const std::string& key) const { return attr_value(key).as_bool(); }
std::string InferContext::attr_string(const std::string& key) const { return attr_value(key).as_string(); }
const DictValue& InferContext::attr_value(const std::string& key) const {
  return schema_attr(find_op(op_), op_, attrs_, key);
}

int64_t ComputeContext::attr_int(const std::string& key) const { return attr_value(key).as_int(); }
double ComputeContext::attr_double(const std::string& key) const { return attr_value(key).as_double(); }
bool ComputeContext::attr_bool(const std::string& key) const { return attr_value(key).as_bool(); }
std::string ComputeContext::attr_string(const std::string& key) const { return attr_value(key).as_string(); }
const DictValue& ComputeContext::attr_value(const std::string& key) const {
  return schema_attr(fn ? fn->op() : nullptr, fn ? fn->op_name() : std::string("?"), *attrs, key);
}

void set_onnx_export(const std::string& op, OnnxExportFn fn, const std::string& onnx_op) {
  auto it = table().find(op);  // called while the catalogue registers: no ensure_registered()
  if (it == table().end()) throw Error("set_onnx_export: unknown op '" + op + "'");
  if (it->second.onnx_export) throw Error("set_onnx_export: op '" + op + "' has its ONNX form already");
  it->second.onnx_export = std::move(fn);
  it->second.onnx_op = onnx_op;
}

const OpDef* find_op(const std::string& name) {
  ensure_registered();
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_ops() {
  ensure_registered();
  std::vector<std::string> out;
  for (auto& kv : table()) out.push_back(kv.first);
  return out;
}

void InferContext::fail(const std::string& what) const {
  std::ostringstream os;
  os << op_ << ": " << what << " (input shapes:";
  for (size_t i = 0; i < inputs_.size(); ++i) os << (i ? ", " : " ") << inputs_[i].shape().str();
  os << ")";
  throw ShapeError(os.str());
}

void InferContext::fail_type(const std::string& what) const {
  std::ostringstream os;
  os << op_ << ": " << what << " (input types:";
  for (size_t i = 0; i < inputs_.size(); ++i) os << (i ? ", " : " ") << to_string(inputs_[i].dtype());
  os << ")";
  throw TypeError(os.str());
}

void InferContext::expect_inputs(size_t n) const {
  if (inputs_.size() != n) fail("expects " + std::to_string(n) + " inputs, got " + std::to_string(inputs_.size()));
}

bool& inferring_from_guessed_state() {
  thread_local bool guessed = false;
  return guessed;
}

void InferContext::fill_inferred(size_t i, const NDShape& shape) {
  Variable& v = inputs_[i];
  if (v.shape() == shape) return;
  if (inferring_from_guessed_state() && v.is_parameter())
    fail("cannot infer the shape of parameter " + v.str() +
         " from the state of a recurrent loop, which is not "
         "known yet");
  if (v.shape().rank() == shape.rank()) {
    for (size_t k = 0; k < shape.rank(); ++k)
      if (v.shape()[k] != NDShape::kInferredDimension && v.shape()[k] != shape[k])
        fail("input " + std::to_string(i) + " of shape " + v.shape().str() + " cannot take shape " + shape.str());
  } else if (!v.shape().has_inferred()) {
    fail("cannot infer the shape of input " + std::to_string(i));
  }
  // Otherwise an inferred dimension stands for several axes (Dense over a whole input).
  // As in CNTK, only parameters, constants (and placeholders) take on an inferred shape;
  // an input keeps its inferred dimensions, which its data then fills in as free ones.
  if (!(v.is_parameter() || v.is_constant() || v.is_placeholder())) return;
  v.impl()->shape = shape;
  if (v.is_parameter() && !v.impl()->value.defined() && shape.is_known() && v.impl()->init)
    v.impl()->value = initialize_parameter(*v.impl()->init, shape, v.dtype());
}

std::vector<Axis> InferContext::unified_dynamic_axes() const {
  std::vector<Axis> best;
  for (auto& v : inputs_)
    if (v.dynamic_axes().size() > best.size()) best = v.dynamic_axes();
  for (auto& v : inputs_)
    for (auto& a : v.dynamic_axes()) {
      bool found = false;
      for (auto& b : best) found = found || a == b;
      if (!found) {
        std::ostringstream os;
        os << "inputs have incompatible dynamic axes (";
        for (size_t i = 0; i < inputs_.size(); ++i) {
          os << (i ? "; " : "");
          for (auto& ax : inputs_[i].dynamic_axes()) os << ax.name() << " ";
        }
        os << ")";
        fail(os.str());
      }
    }
  return best;
}

DataType InferContext::common_dtype() const {
  DataType t = DataType::Unknown;
  for (auto& v : inputs_) {
    DataType d = v.dtype();
    if (t == DataType::Unknown || (t == DataType::Float && d == DataType::Double))
      t = d;
    else if (d != t && !(t == DataType::Double && d == DataType::Float))
      fail_type("inputs have incompatible data types");
  }
  return t == DataType::Unknown ? DataType::Float : t;
}

std::vector<OutputInfo> infer_same_shape(InferContext& ctx) {
  ctx.expect_inputs(1);
  return ctx.one(ctx.shape(0));
}

NDShape broadcast_shapes(const InferContext& ctx, const std::vector<NDShape>& shapes) {
  size_t r = 0;
  for (auto& s : shapes) r = std::max(r, s.rank());
  std::vector<int64_t> out(r, 1);
  for (auto& s : shapes) {
    size_t pad = r - s.rank();
    for (size_t i = 0; i < s.rank(); ++i) {
      int64_t d = s[i], &o = out[pad + i];
      if (d == 1) continue;
      if (o == 1 || o == NDShape::kInferredDimension)
        o = d;
      else if (d == NDShape::kInferredDimension)
        continue;
      else if (d == NDShape::kFreeDimension)
        continue;  // a known dimension (other than 1) wins over a free one, as in CNTK
      else if (o == NDShape::kFreeDimension)
        o = d;
      else if (d != o)
        ctx.fail("operands cannot be broadcast together");
    }
  }
  return NDShape(out);
}

NDShape broadcast_inputs(InferContext& ctx) {
  std::vector<NDShape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.shape(i));
  NDShape out = broadcast_shapes(ctx, shapes);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const NDShape& s = shapes[i];
    if (!s.has_inferred()) continue;
    const Variable& v = ctx.input(i);
    if (!(v.is_parameter() || v.is_constant() || v.is_placeholder())) continue;
    NDShape filled = s;
    size_t pad = out.rank() - s.rank();
    for (size_t k = 0; k < s.rank(); ++k)
      if (s[k] == NDShape::kInferredDimension && out[pad + k] >= 0) filled[k] = out[pad + k];
    if (filled.has_inferred()) continue;  // nothing to learn it from yet
    ctx.fill_inferred(i, filled);
  }
  return out;
}

NDArrayView ComputeContext::aligned(size_t i, size_t static_rank) const {
  const NDArrayView& x = inputs[i];
  size_t srank = x.rank() - in_dyn[i];
  if (srank > static_rank) throw Error("aligned: static rank larger than requested");
  std::vector<int64_t> dims;
  for (auto& a : out_axes) {
    int64_t d = 1;
    for (int k = 0; k < in_dyn[i]; ++k)
      if (in_axes[i][k] == a) d = x.shape()[k];
    dims.push_back(d);
  }
  for (size_t k = srank; k < static_rank; ++k) dims.push_back(1);
  for (size_t k = 0; k < srank; ++k) dims.push_back(x.shape()[in_dyn[i] + k]);
  return x.reshape(NDShape(dims));
}

NDArrayView ComputeContext::reduce_to_input(size_t i, const NDArrayView& grad) const {
  const NDShape& target = inputs[i].shape();
  NDArrayView g = grad;
  size_t srank = grad.rank() - out_dyn;
  NDShape aligned_shape = aligned(i, srank).shape();
  if (g.shape() != aligned_shape) g = kernels::sum_to(g, aligned_shape);
  return g.reshape(target);
}

NDShape ComputeContext::input_shape(size_t i) const {
  if (inputs[i].defined()) return inputs[i].shape();
  if (const LayoutValue* v = layout_input(i)) return v->shape;
  return inputs[i].shape();
}

const NDArrayView& ComputeContext::input(size_t i) {
  if (!inputs[i].defined() && layout_input(i)) {
    if (!make_plain)
      throw Error("'" + (fn ? fn->op_name() : std::string("?")) +
                  "': an input in a backend layout and no way to make it plain");
    inputs[i] = make_plain(false, i);
  }
  return inputs[i];
}

const NDArrayView& ComputeContext::output(size_t k) {
  if (!outputs[k].defined() && layout_output(k)) {
    if (!make_plain)
      throw Error("'" + (fn ? fn->op_name() : std::string("?")) +
                  "': an output in a backend layout and no way to make it plain");
    outputs[k] = make_plain(true, k);
  }
  return outputs[k];
}

const NDArrayView& ComputeContext::grad_output(size_t k) {
  if (!grad_outputs[k].defined() && layout_grad_output(k)) grad_outputs[k] = kernels::to_plain(*layout_grad_outputs[k]);
  return grad_outputs[k];
}

std::shared_ptr<RandomState> initial_random_state(const Function& f) {
  auto rs = std::make_shared<RandomState>();
  rs->seed = uint64_t(schema_attr_int(f, "rngSeed"));
  rs->counter = uint64_t(schema_attr_int(f, "rngOffset"));
  rs->engine = rng::make_engine(rs->seed, rs->counter);
  return rs;
}

RandomStream ComputeContext::random() {
  return RandomStream(fn->op_state_or<RandomState>([this] { return initial_random_state(*fn); }));
}

}  // namespace cntk
