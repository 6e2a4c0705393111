// The ONNX reader: parses the model, makes its initializers parameters (constants where
// the writer marked them so, or where they are not floating point), its other graph inputs
// input variables, and runs each node's rule (import_*.cpp) in the graph's order. Values a
// node computes from constants alone are evaluated at once, so that shape, axes and
// index inputs computed in the graph (Shape -> Gather -> Concat -> Reshape, as exporters
// write them) are known to the rules that need them.
#include "onnx/import.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "cntk/evaluation.h"
#include "cntk/onnx.h"
#include "onnx/tensor.h"
#include "ops/op.h"

namespace cntk::onnx_io {

using ::onnx::AttributeProto;
using ::onnx::TensorProto;

// ------------------------------------------------------------------ the rule registry

namespace {
struct Entry {
  int since;
  ImportFn fn;
};
std::map<std::string, std::vector<Entry>>& rules() {
  static std::map<std::string, std::vector<Entry>> r;
  return r;
}
std::string rule_key(const std::string& domain, const std::string& op_type) {
  return (domain == "ai.onnx" ? "" : domain) + "::" + op_type;
}
void ensure_registered();
}  // namespace

void register_onnx_import(const std::string& op_type, ImportFn fn, int since, const std::string& domain) {
  auto& v = rules()[rule_key(domain, op_type)];
  // Two families claiming one op type from one opset would leave the winner to chance.
  for (const Entry& e : v)
    if (e.since == since)
      throw Error("register_onnx_import: " + (domain.empty() ? "" : domain + "::") + op_type + " from opset " +
                  std::to_string(since) + " has a rule already");
  v.push_back({since, std::move(fn)});
  std::sort(v.begin(), v.end(), [](const Entry& a, const Entry& b) { return a.since < b.since; });
}

const ImportFn* find_onnx_import(const std::string& op_type, int opset, const std::string& domain) {
  ensure_registered();
  auto it = rules().find(rule_key(domain, op_type));
  if (it == rules().end()) return nullptr;
  const ImportFn* best = nullptr;
  for (const Entry& e : it->second)
    if (e.since <= opset) best = &e.fn;
  return best;
}

}  // namespace cntk::onnx_io

namespace cntk {
std::vector<std::string> onnx_import_op_types() {
  using namespace onnx_io;
  ensure_registered();
  std::vector<std::string> out;
  for (auto& [k, v] : rules()) out.push_back(k.substr(0, 2) == "::" ? k.substr(2) : k);
  return out;
}
}  // namespace cntk

namespace cntk::onnx_io {

// ------------------------------------------------------------------ ImportContext

namespace {
const AttributeProto* find_attr(const ::onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
}  // namespace

void ImportContext::fail(const std::string& what) const {
  const auto& n = node();
  throw ValueError("ONNX import: node '" + (n.name().empty() ? (n.output_size() ? n.output(0) : "") : n.name()) +
                   "' (" + n.op_type() + "): " + what);
}

bool ImportContext::has_attr(const std::string& name) const { return find_attr(node(), name) != nullptr; }

namespace {
template <class T>
T attr_or(const ImportContext& c, const std::string& name, const std::optional<T>& def,
          AttributeProto::AttributeType type, const std::function<T(const AttributeProto&)>& get) {
  const AttributeProto* a = find_attr(c.node(), name);
  if (!a) {
    if (!def) c.fail("the attribute '" + name + "' is required");
    return *def;
  }
  if (a->type() != type && !(a->type() == AttributeProto::UNDEFINED))
    c.fail("the attribute '" + name + "' must be of type " + AttributeProto::AttributeType_Name(type) + ", not " +
           AttributeProto::AttributeType_Name(a->type()));
  return get(*a);
}
}  // namespace

int64_t ImportContext::attr_int(const std::string& name, std::optional<int64_t> def) const {
  return attr_or<int64_t>(*this, name, def, AttributeProto::INT, [](const AttributeProto& a) { return a.i(); });
}
float ImportContext::attr_float(const std::string& name, std::optional<float> def) const {
  return attr_or<float>(*this, name, def, AttributeProto::FLOAT, [](const AttributeProto& a) { return a.f(); });
}
std::string ImportContext::attr_string(const std::string& name, std::optional<std::string> def) const {
  return attr_or<std::string>(*this, name, def, AttributeProto::STRING, [](const AttributeProto& a) { return a.s(); });
}
std::vector<int64_t> ImportContext::attr_ints(const std::string& name, std::optional<std::vector<int64_t>> def) const {
  return attr_or<std::vector<int64_t>>(*this, name, def, AttributeProto::INTS, [](const AttributeProto& a) {
    return std::vector<int64_t>(a.ints().begin(), a.ints().end());
  });
}
std::vector<float> ImportContext::attr_floats(const std::string& name, std::optional<std::vector<float>> def) const {
  return attr_or<std::vector<float>>(*this, name, def, AttributeProto::FLOATS, [](const AttributeProto& a) {
    return std::vector<float>(a.floats().begin(), a.floats().end());
  });
}
const TensorProto& ImportContext::attr_tensor(const std::string& name) const {
  const AttributeProto* a = find_attr(node(), name);
  if (!a) fail("the attribute '" + name + "' is required");
  if (a->type() != AttributeProto::TENSOR) fail("the attribute '" + name + "' must be a tensor");
  return a->t();
}
const ::onnx::GraphProto& ImportContext::attr_graph(const std::string& name) const {
  const AttributeProto* a = find_attr(node(), name);
  if (!a) fail("the attribute '" + name + "' is required");
  if (a->type() != AttributeProto::GRAPH) fail("the attribute '" + name + "' must be a graph");
  return a->g();
}

FunctionPtr ImportContext::primitive(const std::string& op, std::vector<Variable> inputs, Dictionary attrs) {
  try {
    return Function::composite(Function::primitive(op, std::move(inputs), std::move(attrs), name()), name());
  } catch (const ShapeError& e) {
    fail(e.what());
  } catch (const TypeError& e) {
    fail(e.what());
  }
}

ImportContext::Probed ImportContext::input_probe_dims(size_t i) {
  const Variable x = input(i);
  if (!x.dynamic_axes().empty())
    fail("input " + std::to_string(i) + " has dynamic axes: its shape is not known while reading");
  return probe_dims(x);
}

ImportContext::Probed ImportContext::probe_dims(const Variable& x) {
  if (!x.shape().is_known()) fail("a value with a free dimension: its shape is not known while reading");
  return {x.shape().dims(), x.shape().dims()};
}

std::optional<ImportContext::Probed> ImportContext::probed_input_i64(size_t i) {
  auto v = constant_input_i64(i);
  if (!v) return std::nullopt;
  return Probed{*v, *v};
}

Variable ImportContext::probed_fill(const Probed& shape, DataType dt, double value) {
  if (shape.any_depends()) fail("a shape that depends on a free dimension of the graph's inputs");
  return Variable::constant(NDArrayView::full(dt, NDShape(shape.a), value), name());
}

// ------------------------------------------------------------------ the reader

namespace {

struct KnownValue {
  NDArrayView value;
  std::optional<std::vector<int64_t>> ints;  // exact integers where the tensor held them
  // The value in probe world b where it was computed from the free dimensions' probe sizes
  // (ImportContext::Probed); `value` is then world a's.
  std::optional<NDArrayView> probe_b;
  bool depends() const;
};

std::vector<int64_t> rounded_ints(const NDArrayView& v) {
  const NDArrayView d = v.cast(DataType::Double).contiguous();
  std::vector<int64_t> out(size_t(d.numel()));
  for (int64_t j = 0; j < d.numel(); ++j) out[size_t(j)] = float_to_i64(std::round(d.data<double>()[j]));
  return out;
}

bool KnownValue::depends() const {
  if (!probe_b) return false;
  const NDArrayView a = value.cast(DataType::Double).contiguous(), b = probe_b->cast(DataType::Double).contiguous();
  for (int64_t j = 0; j < a.numel(); ++j)
    if (a.data<double>()[j] != b.data<double>()[j]) return true;
  return false;
}

// The probe sizes of free dimensions: primes far from the sizes models use, small enough that
// products of two or three of them stay exact in float32, in which the engine folds integers.
constexpr int64_t kProbeA[] = {1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049};
constexpr int64_t kProbeB[] = {1051, 1061, 1063, 1069, 1087, 1091, 1093, 1097};

class Reader final : public ImportContext {
 public:
  Reader(const ::onnx::ModelProto& m, std::string source, std::string base_dir)
      : m_(m), source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  FunctionPtr read() {
    bool has_default = false;
    for (const auto& o : m_.opset_import()) {
      const std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
      opsets_[d] = int(o.version());
      if (d.empty()) has_default = true;
    }
    // A model naming no default-domain opset is read as opset 7.
    if (!has_default) opsets_[""] = 7;
    if (opsets_[""] < kOnnxMinImportOpset)
      throw ValueError("ONNX import: " + source_ + " uses opset " + std::to_string(opsets_[""]) + "; opsets from " +
                       std::to_string(kOnnxMinImportOpset) + " on are read");
    own_file_ = m_.producer_name() == "OpenCNTK";
    const auto& g = m_.graph();
    if (g.node_size() == 0 && g.output_size() == 0) throw IOError("ONNX import: " + source_ + " holds no graph");

    for (const auto& t : g.initializer()) add_initializer(t);
    for (const auto& vi : g.input())
      if (!values_.count(vi.name())) add_input(vi);
    for (const auto& n : g.node()) read_node(n);

    std::vector<Variable> outs;
    for (const auto& o : g.output()) {
      auto it = values_.find(o.name());
      if (it == values_.end())
        throw ValueError("ONNX import: the graph output '" + o.name() + "' is computed by no node");
      outs.push_back(it->second);
    }
    if (outs.empty()) throw ValueError("ONNX import: " + source_ + " has no graph outputs");
    // Graph inputs no output reads (Shape, Size, CastLike's target: their values fold away)
    // stay arguments, so the function takes the inputs the graph lists.
    std::vector<Variable> read_by_outputs = Function::combine(outs)->arguments(), unread;
    for (const auto& vi : g.input())
      if (auto it = values_.find(vi.name());
          it != values_.end() && it->second.is_input() &&
          std::find(read_by_outputs.begin(), read_by_outputs.end(), it->second) == read_by_outputs.end() &&
          std::find(unread.begin(), unread.end(), it->second) == unread.end())
        unread.push_back(it->second);
    if (!unread.empty()) {
      unread.insert(unread.begin(), outs[0]);
      outs[0] = Function::primitive("DependsOn", unread, {}, g.output(0).name())->output();
    }
    // (One output of a function with several, e.g. an LSTM's Y_h alone, is a combine of it.)
    FunctionPtr f = outs.size() == 1 && outs[0].is_output() && outs[0].owner()->outputs().size() == 1
                        ? Function::composite(outs[0].owner(), g.name())
                        : Function::combine(outs, g.name());
    // The function's arguments keep the order of the graph's inputs (callers index them).
    DictValue::List order;
    for (const auto& vi : g.input())
      if (auto it = values_.find(vi.name()); it != values_.end() && it->second.is_input())
        order.push_back(DictValue(it->second.uid()));
    f->mutable_attributes()["argumentOrder"] = std::move(order);
    return f;
  }

  // ImportContext
  const ::onnx::NodeProto& node() const override { return *node_; }
  int opset() const override {
    auto it = opsets_.find(node_->domain() == "ai.onnx" ? "" : node_->domain());
    return it == opsets_.end() ? 1 : it->second;
  }
  std::string name() const override {
    if (!node_->name().empty()) return node_->name();
    return node_->output_size() ? node_->output(0) : node_->op_type();
  }
  Variable input(size_t i) override {
    if (!has_input(i)) fail("input " + std::to_string(i) + " is required");
    return values_.at(node_->input(int(i)));
  }
  int32_t input_elem_type(size_t i) override {
    if (!has_input(i)) return TensorProto::UNDEFINED;
    auto it = elem_types_.find(node_->input(int(i)));
    return it == elem_types_.end() ? TensorProto::FLOAT : it->second;
  }
  std::optional<NDArrayView> constant_input(size_t i) override {
    if (!has_input(i)) return std::nullopt;
    auto it = known_.find(node_->input(int(i)));
    if (it == known_.end() || it->second.depends()) return std::nullopt;
    return it->second.value;
  }
  std::optional<std::vector<int64_t>> constant_input_i64(size_t i) override {
    if (!has_input(i)) return std::nullopt;
    auto it = known_.find(node_->input(int(i)));
    if (it == known_.end()) return std::nullopt;
    if (it->second.depends())
      fail("input " + std::to_string(i) + " depends on a free dimension of the graph's inputs, which this op " +
           "needs known while reading");
    if (it->second.ints) return it->second.ints;
    const NDArrayView v = it->second.value.cast(DataType::Double).contiguous();
    std::vector<int64_t> out(size_t(v.numel()));
    for (int64_t k = 0; k < v.numel(); ++k) {
      const double x = v.data<double>()[k];
      if (double(float_to_i64(x)) != x) fail("input " + std::to_string(i) + " must hold integers");
      out[size_t(k)] = float_to_i64(x);
    }
    return out;
  }
  Probed probe_dims(const Variable& x) override {
    if (x.shape().is_known()) return {x.shape().dims(), x.shape().dims()};
    auto it = probe_dims_.find(x.get());
    if (it != probe_dims_.end()) return it->second.second;
    Probed p{probe_shape(x, false), probe_shape(x, true)};
    probe_dims_.emplace(x.get(), std::pair{x, p});
    return p;
  }
  std::optional<Probed> probed_input_i64(size_t i) override {
    if (!has_input(i)) return std::nullopt;
    auto it = known_.find(node_->input(int(i)));
    if (it == known_.end()) return std::nullopt;
    probed_inputs_.push_back(i);
    if (!it->second.depends()) {
      auto v = constant_input_i64(i);
      return Probed{*v, *v};
    }
    return Probed{rounded_ints(it->second.value), rounded_ints(*it->second.probe_b)};
  }
  void set_output_probe(size_t k, const NDArrayView& b) override { output_probes_[k] = b; }
  Variable probed_fill(const Probed& s, DataType dt, double value) override {
    if (!s.any_depends()) return ImportContext::probed_fill(s, dt, value);
    // The constant part, with unit dims where an entry depends on free dims; each of those
    // dims comes from a graph input that has it: that input's zeros, sliced to the one axis
    // and moved to the entry's position, broadcast in by a sum.
    std::vector<int64_t> base = s.a;
    for (size_t k = 0; k < base.size(); ++k)
      if (s.depends(k)) base[k] = 1;
    Variable y = Variable::constant(NDArrayView::full(dt, NDShape(base), value), name() + "/fill");
    for (size_t k = 0; k < base.size(); ++k) {
      if (!s.depends(k)) continue;
      const ProbeInput* src = nullptr;
      size_t axis = 0;
      for (const ProbeInput& p : probe_order_)
        for (size_t j = 0; j < p.a.size() && !src; ++j)
          if (p.a[j] == s.a[k] && p.b[j] == s.b[k]) src = &p, axis = j;
      if (!src)
        fail("shape entry " + std::to_string(k) + " is no dimension of a graph input (a product or sum of them)");
      Variable r = primitive("ConstantOp", {src->input}, {{"fillValue", 0.0}})->output();
      for (size_t j = 0; j < src->a.size(); ++j)
        if (j != axis)
          r = primitive("Slice", {r}, {{"axis", Axis(int(j))}, {"beginIndex", int64_t(0)}, {"endIndex", int64_t(1)}})
                  ->output();
      std::vector<int64_t> at(base.size(), 1);
      at[k] = NDShape::kInferredDimension;
      r = primitive("Reshape", {r}, {{"newShape", NDShape(at)}})->output();
      if (r.dtype() != dt) r = primitive("Cast", {r}, {{"newDataType", int64_t(dt)}})->output();
      y = primitive("Plus", {y, r})->output();
    }
    return y;
  }

  NDArrayView tensor_value(const TensorProto& t) override { return tensor_to_view(t, base_dir_, where()); }
  void set_output_elem_type(size_t k, int32_t t) override {
    if (int(k) < node_->output_size()) elem_types_[node_->output(int(k))] = t;
  }

  std::vector<Variable> read_subgraph(const ::onnx::GraphProto& g, const std::vector<Variable>& inputs) override {
    if (int(inputs.size()) != g.input_size())
      fail("its subgraph '" + g.name() + "' takes " + std::to_string(g.input_size()) + " inputs, not " +
           std::to_string(inputs.size()));
    // The subgraph's names are scoped to it: the enclosing graph's tables are restored after.
    auto values = values_;
    auto known = known_;
    auto types = elem_types_;
    const ::onnx::NodeProto* outer = node_;
    for (int k = 0; k < g.input_size(); ++k) {
      values_[g.input(k).name()] = inputs[size_t(k)];
      known_.erase(g.input(k).name());
      if (g.input(k).type().tensor_type().elem_type())
        elem_types_[g.input(k).name()] = g.input(k).type().tensor_type().elem_type();
    }
    for (const auto& t : g.initializer()) add_initializer(t);
    for (const auto& n : g.node()) read_node(n);
    node_ = outer;
    std::vector<Variable> outs;
    for (const auto& o : g.output()) {
      auto it = values_.find(o.name());
      if (it == values_.end()) fail("its subgraph's output '" + o.name() + "' is computed by no node");
      outs.push_back(it->second);
    }
    values_ = std::move(values);
    known_ = std::move(known);
    elem_types_ = std::move(types);
    return outs;
  }

 private:
  std::string where() const {
    return node_ ? "ONNX import: node '" + name() + "' (" + node_->op_type() + ")" : "ONNX import: " + source_;
  }

  void add_initializer(const TensorProto& t) {
    const std::string what = "ONNX import: initializer '" + t.name() + "'";
    NDArrayView v = tensor_to_view(t, base_dir_, what);
    KnownValue k{v, std::nullopt, std::nullopt};
    if (!is_float_type(t.data_type())) k.ints = tensor_to_i64(t, base_dir_, what);
    const bool constant = !is_float_type(t.data_type()) || (own_file_ && t.doc_string() == "CNTK Constant");
    Variable var =
        constant ? Variable::constant(v, t.name()) : Variable::parameter(v.shape(), v.dtype(), v, nullptr, t.name());
    values_[t.name()] = var;
    known_[t.name()] = std::move(k);
    elem_types_[t.name()] = t.data_type();
  }

  // A graph input: a static tensor as ONNX has it, with no dynamic axes (CNTK 2.7's reader
  // did the same, and CNTK's tests feed loaded models [sequence, batch, ...] arrays). Symbolic
  // and unknown dimensions are free dimensions, except a batch dimension for which the model's
  // metadata records a size (OpenCNTK's writer records CNTK 2.7's 1): docs/onnx.md.
  void add_input(const ::onnx::ValueInfoProto& vi) {
    const std::string what = "ONNX import: graph input '" + vi.name() + "'";
    // An optional tensor is read as the tensor: the function takes it present (an absent
    // optional has no value to feed).
    const ::onnx::TypeProto& type =
        vi.type().has_optional_type() && vi.type().optional_type().elem_type().has_tensor_type()
            ? vi.type().optional_type().elem_type()
            : vi.type();
    if (!type.has_tensor_type())
      throw ValueError(what + " is not a tensor or an optional tensor (sequences and maps are not read)");
    const auto& tt = type.tensor_type();
    const DataType dt = engine_type_of(tt.elem_type(), what);
    std::optional<int64_t> batch;
    for (const auto& p : m_.metadata_props())
      if (p.key() == kOnnxStaticBatchKey + vi.name()) {
        char* end = nullptr;
        const long long n = std::strtoll(p.value().c_str(), &end, 10);
        if (p.value().empty() || *end || n <= 0)
          throw ValueError(what + ": the metadata '" + p.key() + "' must be a positive size, not '" + p.value() + "'");
        batch = n;
      }
    std::vector<int64_t> dims;
    const int rank = tt.has_shape() ? tt.shape().dim_size() : 0;
    for (int k = 0; k < rank; ++k) {
      const auto& d = tt.shape().dim(k);
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) throw ValueError(what + ": dimension " + std::to_string(k) + " is negative");
        dims.push_back(d.dim_value());
      } else if (batch && d.denotation() == "DATA_BATCH") {
        dims.push_back(*batch);
      } else {
        dims.push_back(NDShape::kFreeDimension);
      }
    }
    Variable v = Variable::input(NDShape(dims), dt, false, false, {}, vi.name());
    // Each free dimension's probe sizes; one symbolic name is one dimension in every input.
    if (!NDShape(dims).is_known()) {
      std::vector<int64_t> a = dims, b = dims;
      for (int k = 0; k < rank; ++k) {
        if (dims[size_t(k)] != NDShape::kFreeDimension) continue;
        const std::string& param = tt.shape().dim(k).dim_param();
        size_t sym = param.empty() ? probe_symbols_.size() : 0;
        if (param.empty()) {
          probe_symbols_.push_back("");
        } else {
          auto f = std::find(probe_symbols_.begin(), probe_symbols_.end(), param);
          sym = size_t(f - probe_symbols_.begin());
          if (f == probe_symbols_.end()) probe_symbols_.push_back(param);
        }
        if (sym >= std::size(kProbeA)) continue;  // too many: left free, a Shape of it is refused
        a[size_t(k)] = kProbeA[sym];
        b[size_t(k)] = kProbeB[sym];
      }
      probe_inputs_[v.get()] = {Variable::input(NDShape(a), dt, false, false, {}, vi.name()),
                                Variable::input(NDShape(b), dt, false, false, {}, vi.name())};
      probe_order_.push_back({v, a, b});
    }
    values_[vi.name()] = v;
    elem_types_[vi.name()] = tt.elem_type();
  }

  void read_node(const ::onnx::NodeProto& n) {
    node_ = &n;
    for (const auto& in : n.input())
      if (!in.empty() && !values_.count(in))
        fail("its input '" + in + "' is computed by no earlier node (the graph must be in topological order)");
    const ImportFn* rule = find_onnx_import(n.op_type(), opset(), n.domain());
    if (!rule) {
      if (!opsets_.count(n.domain() == "ai.onnx" ? "" : n.domain()))
        fail("its domain '" + n.domain() + "' is not imported by the model");
      fail("the op type is not supported by the reader (opset " + std::to_string(opset()) + ")");
    }
    probed_inputs_.clear();
    output_probes_.clear();
    std::vector<Variable> outs = (*rule)(*this);
    // An output that is one of the node's inputs unchanged (Identity, Dropout at inference)
    // still gets a function named after the node, so that the node's name survives the read.
    for (Variable& o : outs)
      for (const auto& in : n.input())
        if (!in.empty() && o.defined() && values_.at(in).get() == o.get()) {
          o = primitive("Pass", {o})->output();
          break;
        }
    if (outs.size() > size_t(n.output_size())) fail("the rule made more outputs than the node has");
    bool all_known = true, probed = false;
    for (int i = 0; i < n.input_size(); ++i) {
      const std::string& in = n.input(i);
      if (in.empty()) continue;
      auto it = known_.find(in);
      if (it == known_.end()) {
        all_known = false;
      } else if (it->second.probe_b) {
        probed = true;
      }
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const std::string& out = n.output(int(k));
      if (out.empty()) continue;
      if (!outs[k].defined()) fail("output " + std::to_string(k) + " was not made");
      values_[out] = outs[k];
      // Not recorded by the rule: the value's own float type (a rule passing its input's type on
      // need not say so for float16 and double), else float.
      if (!elem_types_.count(out))
        elem_types_[out] = outs[k].dtype() == DataType::Float16  ? TensorProto::FLOAT16
                           : outs[k].dtype() == DataType::Double ? TensorProto::DOUBLE
                                                                 : TensorProto::FLOAT;
      if (outs[k].is_constant()) {
        known_[out] = KnownValue{outs[k].value(), constant_node_ints(n), std::nullopt};
        if (auto p = output_probes_.find(k); p != output_probes_.end()) {
          known_[out].probe_b = p->second;
          probe_leaves_.insert_or_assign(outs[k].get(), std::pair{outs[k], Variable::constant(p->second, out)});
        }
      } else if (all_known && outs[k].is_output() && outs[k].dynamic_axes().empty()) {
        fold(out, outs[k], probed);
      }
    }
    // A value computed from probe sizes is no value of the model: it may only flow into other
    // such values (folded in both worlds) or into the rules that read it as probed values.
    for (int i = 0; i < n.input_size(); ++i) {
      auto it = n.input(i).empty() ? known_.end() : known_.find(n.input(i));
      if (it == known_.end() || !it->second.depends()) continue;
      if (std::find(probed_inputs_.begin(), probed_inputs_.end(), size_t(i)) != probed_inputs_.end()) continue;
      for (size_t k = 0; k < outs.size(); ++k)
        if (!n.output(int(k)).empty() && !known_.count(n.output(int(k))))
          fail("input " + std::to_string(i) + " is computed from a free dimension of the graph's inputs, which " +
               "this op cannot take as data");
    }
    for (int k = int(outs.size()); k < n.output_size(); ++k)
      if (!n.output(k).empty()) fail("output " + std::to_string(k) + " is not supported");
    node_ = nullptr;
  }

  // The exact values of an integer Constant node: its float32 value loses int64s such as the
  // INT64_MAX that exporters write for "to the end" in Slice.
  std::optional<std::vector<int64_t>> constant_node_ints(const ::onnx::NodeProto& n) const {
    if (n.op_type() != "Constant") return std::nullopt;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value" && !is_float_type(a.t().data_type())) return tensor_to_i64(a.t(), base_dir_, where());
      if (a.name() == "value_int") return std::vector<int64_t>{a.i()};
      if (a.name() == "value_ints") return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    }
    return std::nullopt;
  }

  // Evaluates a value computed from constants alone (no arguments); where some of them are
  // probe values, in world b too (the graph cloned over their world-b constants).
  void fold(const std::string& name, const Variable& v, bool probed) {
    FunctionPtr f = v.owner();
    if (!f) return;
    // The whole graph's arguments, not the function's own inputs': an If's or Loop's outputs
    // may read the enclosing graph's inputs through the body's values.
    FunctionPtr g = Function::composite(f);
    if (!g->arguments().empty()) return;
    for (int64_t d : v.shape().dims())
      if (d < 0) return;
    std::vector<Value> vals;
    forward(g, {}, {v}, vals, false);
    NDArrayView value = vals.at(0).data().copy();
    KnownValue k{value, std::nullopt, std::nullopt};
    if (probed) {
      std::unordered_map<VariableImpl*, Variable> subs;
      for (const Variable& leaf : g->inputs())
        if (auto p = probe_leaves_.find(leaf.get()); p != probe_leaves_.end())
          subs.emplace(leaf.get(), p->second.second);
      const auto& outs = f->outputs();
      const size_t at = size_t(std::find(outs.begin(), outs.end(), v) - outs.begin());
      try {
        FunctionPtr gb = g->clone(CloneMethod::Share, subs);
        std::vector<Value> vb;
        forward(gb, {}, {gb->outputs().at(at)}, vb, false);
        k.probe_b = vb.at(0).data().copy();
      } catch (const Error& e) {
        fail(std::string("a value computed from free dimensions that holds only at some of their sizes: ") + e.what());
      }
    }
    auto it = elem_types_.find(name);
    if (it != elem_types_.end() && !is_float_type(it->second)) k.ints = rounded_ints(value);
    known_[name] = std::move(k);
  }

  // v's static shape with the graph inputs' free dims at their probe sizes of world a or b.
  std::vector<int64_t> probe_shape(const Variable& v, bool world_b) {
    if (auto p = probe_inputs_.find(v.get()); p != probe_inputs_.end())
      return (world_b ? p->second.second : p->second.first).shape().dims();
    if (!v.is_output()) return v.shape().dims();
    FunctionPtr g = Function::composite(v.owner());
    std::unordered_map<VariableImpl*, Variable> subs;
    for (const Variable& arg : g->arguments())
      if (auto p = probe_inputs_.find(arg.get()); p != probe_inputs_.end())
        subs.emplace(arg.get(), world_b ? p->second.second : p->second.first);
    FunctionPtr gp;
    try {
      gp = g->clone(CloneMethod::Share, subs);
    } catch (const Error& e) {
      fail(std::string("its input's shape cannot be followed from the graph's free dimensions: ") + e.what());
    }
    const auto& outs = v.owner()->outputs();
    const size_t at = size_t(std::find(outs.begin(), outs.end(), v) - outs.begin());
    return gp->outputs().at(at).shape().dims();
  }

  const ::onnx::ModelProto& m_;
  std::string source_, base_dir_;
  bool own_file_ = false;
  std::map<std::string, int> opsets_;
  const ::onnx::NodeProto* node_ = nullptr;
  std::unordered_map<std::string, Variable> values_;
  std::unordered_map<std::string, KnownValue> known_;
  std::unordered_map<std::string, int32_t> elem_types_;
  // Free dimensions (ImportContext::Probed): the graph inputs' stand-ins of world a and b, the
  // symbolic names bound so far, the world-b values of the constants holding world-a probe
  // values, probed dims already computed, and the current node's probed inputs and outputs.
  std::unordered_map<VariableImpl*, std::pair<Variable, Variable>> probe_inputs_;
  struct ProbeInput {
    Variable input;
    std::vector<int64_t> a, b;
  };
  std::vector<ProbeInput> probe_order_;
  std::vector<std::string> probe_symbols_;
  std::unordered_map<VariableImpl*, std::pair<Variable, Variable>> probe_leaves_;
  // (each entry holds its variable, so that no later variable takes its address)
  std::unordered_map<VariableImpl*, std::pair<Variable, Probed>> probe_dims_;
  std::vector<size_t> probed_inputs_;
  std::map<size_t, NDArrayView> output_probes_;
};

void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, [] { register_onnx_import_rules(); });
}

}  // namespace

}  // namespace cntk::onnx_io

namespace cntk {

FunctionPtr load_onnx_from_bytes(const std::string& bytes, const std::string& source, const std::string& base_dir) {
  ::onnx::ModelProto m;
  if (bytes.empty() || !m.ParseFromString(bytes))
    throw IOError("ONNX import: " + source + " is not an ONNX model (truncated or corrupt)");
  return onnx_io::Reader(m, source, base_dir).read();
}

FunctionPtr load_onnx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError("ONNX import: cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  namespace fs = std::filesystem;
  const fs::path p(path);
  return load_onnx_from_bytes(ss.str(), "'" + path + "'", p.has_parent_path() ? p.parent_path().string() : ".");
}

}  // namespace cntk
