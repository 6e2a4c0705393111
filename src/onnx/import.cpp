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

// ------------------------------------------------------------------ the reader

namespace {

bool is_float_type(int32_t t) {
  return t == TensorProto::FLOAT || t == TensorProto::DOUBLE || t == TensorProto::FLOAT16 || t == TensorProto::BFLOAT16;
}

struct KnownValue {
  NDArrayView value;
  std::optional<std::vector<int64_t>> ints;  // exact integers where the tensor held them
};

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
    if (it == known_.end()) return std::nullopt;
    return it->second.value;
  }
  std::optional<std::vector<int64_t>> constant_input_i64(size_t i) override {
    if (!has_input(i)) return std::nullopt;
    auto it = known_.find(node_->input(int(i)));
    if (it == known_.end()) return std::nullopt;
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
    KnownValue k{v, std::nullopt};
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
    if (!vi.type().has_tensor_type()) throw ValueError(what + " is not a tensor (sequences and maps are not read)");
    const auto& tt = vi.type().tensor_type();
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
    bool all_known = true;
    for (const auto& in : n.input())
      if (!in.empty() && !known_.count(in)) all_known = false;
    for (size_t k = 0; k < outs.size(); ++k) {
      const std::string& out = n.output(int(k));
      if (out.empty()) continue;
      if (!outs[k].defined()) fail("output " + std::to_string(k) + " was not made");
      values_[out] = outs[k];
      if (!elem_types_.count(out)) elem_types_[out] = TensorProto::FLOAT;
      if (outs[k].is_constant()) {
        known_[out] = KnownValue{outs[k].value(), constant_node_ints(n)};
      } else if (all_known && outs[k].is_output() && outs[k].dynamic_axes().empty()) {
        fold(out, outs[k]);
      }
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

  // Evaluates a value computed from constants alone (no arguments).
  void fold(const std::string& name, const Variable& v) {
    FunctionPtr f = v.owner();
    if (!f || !f->arguments().empty()) return;
    for (int64_t d : v.shape().dims())
      if (d < 0) return;
    std::vector<Value> vals;
    forward(Function::composite(f), {}, {v}, vals, false);
    NDArrayView value = vals.at(0).data().copy();
    KnownValue k{value, std::nullopt};
    auto it = elem_types_.find(name);
    if (it != elem_types_.end() && !is_float_type(it->second)) {
      const NDArrayView d = value.cast(DataType::Double).contiguous();
      std::vector<int64_t> ints(size_t(d.numel()));
      for (int64_t j = 0; j < d.numel(); ++j) ints[size_t(j)] = float_to_i64(std::round(d.data<double>()[j]));
      k.ints = std::move(ints);
    }
    known_[name] = std::move(k);
  }

  const ::onnx::ModelProto& m_;
  std::string source_, base_dir_;
  bool own_file_ = false;
  std::map<std::string, int> opsets_;
  const ::onnx::NodeProto* node_ = nullptr;
  std::unordered_map<std::string, Variable> values_;
  std::unordered_map<std::string, KnownValue> known_;
  std::unordered_map<std::string, int32_t> elem_types_;
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
