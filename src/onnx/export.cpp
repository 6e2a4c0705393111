// The ONNX writer: walks a function's graph in topological order, inlines blocks, and asks
// each primitive's schema entry (OpDef::onnx_export) for its nodes. Names: arguments keep
// their names (their uid where unnamed), parameters and constants their names where unique,
// every other value its variable's uid, and each node its function's name (or uid). The
// graph's doc_string lists "<<<uid, ONNX name>>>" pairs as CNTK 2.7 wrote them.
#include "onnx/export.h"
#include "onnx/export_block.h"

#include <filesystem>
#include <set>
#include <unordered_map>

#include "cntk/onnx.h"
#include "cntk/serialize.h"
#include "onnx/tensor.h"
#include "ops/op.h"
#include "ops/sequence_delay.h"

namespace cntk::onnx_io {

// ------------------------------------------------------------------ ExportContext

const DictValue& ExportContext::attr_value(const std::string& key) const {
  const Function& f = function();
  return schema_attr(f.op(), f.op_name(), f.attributes(), key);
}
int64_t ExportContext::attr_int(const std::string& key) const { return attr_value(key).as_int(); }
double ExportContext::attr_double(const std::string& key) const { return attr_value(key).as_double(); }
bool ExportContext::attr_bool(const std::string& key) const { return attr_value(key).as_bool(); }
std::string ExportContext::attr_string(const std::string& key) const { return attr_value(key).as_string(); }

void ExportContext::unsupported(const std::string& what) const {
  const Function& f = function();
  throw ValueError("ONNX export: " + f.op_name() + " ('" + (f.name().empty() ? f.uid() : f.name()) + "'): " + what +
                   " has no ONNX form (opset " + std::to_string(opset()) + ")");
}

std::string ExportContext::unsqueeze(const std::string& x, const std::vector<int64_t>& axes) {
  if (axes.empty()) return x;
  if (opset() >= 13) return node1("Unsqueeze", {x, constant_i64(axes)});
  return node1("Unsqueeze", {x}, {Attr("axes", axes)});
}

ExportFn export_as(const std::string& op_type, std::vector<Attr> attrs) {
  return [op_type, attrs](ExportContext& c) {
    std::vector<std::string> ins;
    for (size_t i = 0; i < c.num_inputs(); ++i) ins.push_back(c.input(i));
    c.node1(op_type, ins, attrs, c.output(0));
  };
}

ExportFn export_broadcast(const std::string& op_type) {
  return [op_type](ExportContext& c) {
    const size_t r = c.output_var(0).shape().rank();
    std::vector<std::string> ins;
    for (size_t i = 0; i < c.num_inputs(); ++i) ins.push_back(c.aligned(i, r));
    c.node1(op_type, ins, {}, c.output(0));
  };
}

namespace {

using ::onnx::TensorProto;

int ir_version_for(int opset) {
  if (opset <= 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  return 10;
}

class Writer final : public ExportContext {
 public:
  explicit Writer(const OnnxExportOptions& o) : opts_(o) {
    if (o.opset < kOnnxMinExportOpset || o.opset > kOnnxMaxOpset)
      throw ValueError("ONNX export: opset " + std::to_string(o.opset) + " is outside the opsets offered (" +
                       std::to_string(kOnnxMinExportOpset) + " to " + std::to_string(kOnnxMaxOpset) + ")");
    g_ = model_.mutable_graph();
  }

  ::onnx::ModelProto write(const FunctionPtr& root_in) {
    model_.set_ir_version(ir_version_for(opts_.opset));
    model_.set_producer_name("OpenCNTK");
    model_.set_producer_version("0.1");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opts_.opset);
    g_->set_name(root_in->name().empty() ? "CNTKGraph" : root_in->name());

    // Arguments first, in the function's order, so that the ONNX inputs keep it.
    for (const Variable& a : root_in->arguments()) declare_leaf(a);
    root_ = root_in;
    write_graph(root_in);
    std::set<std::string> seen_outputs;
    for (const Variable& o : root_in->outputs()) {
      std::string name = value_name(o);
      if (batch_and_sequence(o))
        name = swap_dynamic_axes(o, name, fresh_name(o.uid() + "_sequence_major"));
      else if (graph_inputs_.count(name) || initializers_.count(name) || seen_outputs.count(name))
        name = node1("Identity", {name}, {}, fresh_name(o.uid() + "_output"));
      seen_outputs.insert(name);
      auto* vi = g_->add_output();
      vi->set_name(name);
      set_type(o, vi->mutable_type(), true);
    }
    std::string doc = "<<<Uid, ONNXNodeName>>> pair: ";
    for (auto& [uid, name] : uid_names_) doc += "<<<" + uid + ", " + name + ">>> ";
    g_->set_doc_string(doc);
    return std::move(model_);
  }

  // ExportContext
  const Function& function() const override { return *fn_; }
  int opset() const override { return opts_.opset; }
  size_t num_inputs() const override { return in_vars_.size(); }
  const std::string& input(size_t i) override { return in_names_.at(i); }
  const Variable& input_var(size_t i) const override { return in_vars_.at(i); }
  const std::string& output(size_t k) override { return out_names_.at(k); }
  const Variable& output_var(size_t k) const override { return out_vars_.at(k); }

  std::vector<std::string> node(const std::string& op_type, const std::vector<std::string>& inputs,
                                const std::vector<Attr>& attrs, std::vector<std::string> outputs, size_t num_outputs,
                                const std::string& domain) override {
    auto* n = g_->add_node();
    n->set_op_type(op_type);
    if (!domain.empty()) n->set_domain(domain);
    // An unnamed function inside a named block takes the block's name (CNTK's tests look
    // for the block's name among the nodes read back).
    const std::string base = !fn_                   ? op_type
                             : !fn_->name().empty() ? fn_->name()
                             : !block_name_.empty() ? block_name_
                                                    : fn_->uid();
    std::string name = base;  // node names are unique (ONNX Runtime refuses duplicates)
    for (int k = 1; node_names_.count(name); ++k) name = base + "_" + std::to_string(k);
    n->set_name(name);
    node_names_.insert(n->name());
    for (const auto& i : inputs) n->add_input(i);
    if (outputs.empty())
      for (size_t k = 0; k < num_outputs; ++k) outputs.push_back(fresh_name(base + "_" + op_type));
    for (const auto& o : outputs) {
      n->add_output(o);
      used_.insert(o);
      produced_.insert(o);
    }
    for (const Attr& a : attrs) set_attr(a, n->add_attribute());
    return outputs;
  }

  std::string constant(const NDArrayView& value, const std::string& name) override {
    std::string n = name.empty() ? fresh_name(base_hint() + "_const") : name;
    auto* t = main_g()->add_initializer();
    t->set_name(n);
    view_to_tensor(value, *t);
    t->set_doc_string("CNTK Constant");
    initializers_.insert(n);
    used_.insert(n);
    return n;
  }
  std::string constant_i64(const std::vector<int64_t>& values, bool scalar) override {
    std::string n = fresh_name(base_hint() + "_i64");
    auto* t = main_g()->add_initializer();
    t->set_name(n);
    i64_to_tensor(values, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(values.size())}, *t);
    initializers_.insert(n);
    return n;
  }
  std::string constant_f(double value, DataType dtype) override {
    return constant(NDArrayView::scalar(dtype, value), "");
  }
  std::string fresh_name(const std::string& hint) override {
    std::string n = hint;
    for (int k = 1; used_.count(n); ++k) n = hint + "_" + std::to_string(k);
    used_.insert(n);
    return n;
  }

  std::string aligned(size_t i, size_t r) override {
    const Variable& v = in_vars_.at(i);
    const auto& in_axes = v.dynamic_axes();
    const auto& out_axes = out_vars_.at(0).dynamic_axes();
    // The input's dynamic axes must be the trailing ones of the output's (batch last), so
    // that ONNX's right-aligned broadcasting lines them up.
    if (in_axes.size() > out_axes.size() ||
        !std::equal(in_axes.begin(), in_axes.end(), out_axes.end() - std::ptrdiff_t(in_axes.size())))
      unsupported("broadcasting an input with dynamic axes the output lacks");
    const size_t s = v.shape().rank();
    if (in_axes.empty() || s >= r) return in_names_.at(i);
    std::vector<int64_t> axes;
    for (size_t k = 0; k < r - s; ++k) axes.push_back(int64_t(in_axes.size() + k));
    return unsqueeze(in_names_.at(i), axes);
  }

 private:
  // Initializers and graph inputs go to the model's graph, also while a loop's body is written
  // (a body reads them from the enclosing scope).
  ::onnx::GraphProto* main_g() { return model_.mutable_graph(); }
  std::string base_hint() const { return fn_ ? (fn_->name().empty() ? fn_->uid() : fn_->name()) : "c"; }

  void set_attr(const Attr& a, ::onnx::AttributeProto* p) {
    using ::onnx::AttributeProto;
    p->set_name(a.name);
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, int64_t>) {
            p->set_type(AttributeProto::INT);
            p->set_i(v);
          } else if constexpr (std::is_same_v<V, float>) {
            p->set_type(AttributeProto::FLOAT);
            p->set_f(v);
          } else if constexpr (std::is_same_v<V, std::string>) {
            p->set_type(AttributeProto::STRING);
            p->set_s(v);
          } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
            p->set_type(AttributeProto::INTS);
            for (int64_t x : v) p->add_ints(x);
          } else if constexpr (std::is_same_v<V, std::vector<float>>) {
            p->set_type(AttributeProto::FLOATS);
            for (float x : v) p->add_floats(x);
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            p->set_type(AttributeProto::STRINGS);
            for (const auto& x : v) p->add_strings(x);
          } else {
            p->set_type(AttributeProto::TENSOR);
            view_to_tensor(v, *p->mutable_t());
          }
        },
        a.value);
  }

  // A value with both a batch and a sequence axis: the graph's inputs and outputs put the
  // sequence first ([Sequence, batch, ...], as CNTK 2.7 wrote them and as ONNX's recurrent ops
  // take them); inside the graph the engine's order holds, with a Transpose between.
  static bool batch_and_sequence(const Variable& v) {
    const auto& axes = v.dynamic_axes();
    return axes.size() == 2 && axes[0].is_batch() && !axes[1].is_batch();
  }
  std::string swap_dynamic_axes(const Variable& v, const std::string& in, const std::string& out) {
    std::vector<int64_t> perm{1, 0};
    for (int64_t k = 0; k < int64_t(v.shape().rank()); ++k) perm.push_back(k + 2);
    return node1("Transpose", {in}, {Attr("perm", perm)}, out);
  }

  // The ONNX type of a variable: its dynamic axes as symbolic dimensions, then its static shape.
  void set_type(const Variable& v, ::onnx::TypeProto* t, bool sequence_major = false) {
    auto* tt = t->mutable_tensor_type();
    tt->set_elem_type(int32_t(elem_type_of(v.dtype())));
    auto* shape = tt->mutable_shape();
    int seq = 0;
    std::vector<Axis> axes = v.dynamic_axes();
    if (sequence_major && batch_and_sequence(v)) std::swap(axes[0], axes[1]);
    for (const Axis& a : axes) {
      auto* d = shape->add_dim();
      if (a.is_batch()) {
        d->set_dim_param("batch");
        d->set_denotation("DATA_BATCH");
      } else {
        d->set_dim_param(seq++ == 0 ? "Sequence" : "Sequence_" + std::to_string(seq - 1));
        d->set_denotation("DATA_TIME");
      }
    }
    for (int64_t d : v.shape().dims()) {
      auto* dim = shape->add_dim();
      if (d == NDShape::kInferredDimension)
        throw ValueError(
            "ONNX export: " + v.str() +
            " has an inferred dimension; evaluate the model once (or give the dimension) before saving it");
      if (d >= 0) dim->set_dim_value(d);  // a free dimension stays free: neither value nor name
    }
  }

  std::string unique_value_name(const std::string& preferred, const std::string& fallback) {
    if (!preferred.empty() && !used_.count(preferred)) {
      used_.insert(preferred);
      return preferred;
    }
    return fresh_name(fallback);
  }

  // Leaves: arguments become graph inputs, parameters and constants initializers.
  void declare_leaf(const Variable& v) {
    if (names_.count(v.get())) return;
    std::string name;
    if (v.is_input()) {
      name = unique_value_name(v.name().empty() ? v.uid() : v.name(), v.uid());
      auto* vi = main_g()->add_input();
      vi->set_name(name);
      set_type(v, vi->mutable_type(), true);
      graph_inputs_.insert(name);
      names_[v.get()] = batch_and_sequence(v) ? swap_dynamic_axes(v, name, fresh_name(name + "_batch_major")) : name;
      uid_names_.emplace_back(v.uid(), name);
      // The batch dimension stays symbolic in the file (any batch size runs); the record says
      // how CNTK 2.7 wrote it (a fixed 1), which is how OpenCNTK's reader reads it back.
      if (std::any_of(v.dynamic_axes().begin(), v.dynamic_axes().end(), [](const Axis& a) { return a.is_batch(); })) {
        auto* meta = model_.add_metadata_props();
        meta->set_key(std::string(kOnnxStaticBatchKey) + name);
        meta->set_value("1");
      }
      return;
    } else if (v.is_parameter() || v.is_constant()) {
      name = unique_value_name(v.name(), v.uid());
      auto* t = main_g()->add_initializer();
      t->set_name(name);
      view_to_tensor(v.value(), *t);
      if (v.is_constant()) t->set_doc_string("CNTK Constant");
      initializers_.insert(name);
    } else if (v.is_placeholder()) {
      throw ValueError("ONNX export: " + v.str() + " is an unbound placeholder; bind it before saving");
    } else {
      return;  // outputs are named by the node that writes them
    }
    names_[v.get()] = name;
    uid_names_.emplace_back(v.uid(), name);
  }

  std::string value_name(const Variable& v) {
    auto it = names_.find(v.get());
    if (it != names_.end()) return it->second;
    declare_leaf(v);
    it = names_.find(v.get());
    if (it == names_.end()) {
      // Read before it is computed: the delay of a loop that no rule wrote as a whole.
      if (FunctionPtr g = v.is_output() ? v.owner() : nullptr) {
        if (is_delay_op(g->op())) unwritten_loop(*g);
        // A loop entered elsewhere than at its delay: name a delay on the way round.
        for (const Function* d : upstream(g.get()))
          if (is_delay_op(d->op()) && upstream(d).count(g.get())) unwritten_loop(*d);
      }
      throw Error("ONNX export: " + v.str() + " is used before the node that computes it");
    }
    return it->second;
  }

  // The functions that f reads from, directly or not (f itself where it lies on a loop).
  static std::set<const Function*> upstream(const Function* f) {
    std::set<const Function*> seen;
    std::vector<const Function*> todo{f};
    while (!todo.empty()) {
      const Function* g = todo.back();
      todo.pop_back();
      for (const Variable& in : g->direct_inputs())
        if (FunctionPtr o = in.is_output() ? in.owner() : nullptr; o && seen.insert(o.get()).second)
          todo.push_back(o.get());
    }
    return seen;
  }

  [[noreturn]] static void unwritten_loop(const Function& delay) {
    throw ValueError("ONNX export: " + delay.op_name() + " ('" + (delay.name().empty() ? delay.uid() : delay.name()) +
                     "') closes a recurrent loop that is not a Recurrence over an LSTM, GRU or RNNStep cell "
                     "(ONNX's LSTM, GRU and RNN nodes are the only loops written)");
  }

  void write_graph(const FunctionPtr& f) {
    // Blocks a rule writes as its own nodes (export_block.h), with the functions it absorbs.
    const auto order = f->topological_order();
    std::unordered_map<const Function*, BlockClaim> claims;
    std::set<const Function*> absorbed;
    for (const FunctionPtr& p : order)
      if (p->is_block())
        if (auto c = claim_block_export(p, root_)) {
          absorbed.insert(c->absorbed.begin(), c->absorbed.end());
          claims.emplace(p.get(), std::move(*c));
        }
    // Other recurrent loops are written as Scan nodes where their last function stands (in this
    // depth-first order every value a loop reads from outside comes before it, every reader
    // of its values after it).
    std::unordered_map<const Function*, std::vector<FunctionPtr>> loops;
    std::set<const Function*> in_loop;
    for (auto& members : find_loops(order, absorbed)) {
      for (const FunctionPtr& m : members) in_loop.insert(m.get());
      loops.emplace(members.back().get(), std::move(members));
    }
    for (const FunctionPtr& p : order) {
      if (absorbed.count(p.get())) continue;
      if (in_loop.count(p.get())) {
        if (auto it = loops.find(p.get()); it != loops.end()) write_loop(it->second, order, f->outputs());
        continue;
      }
      if (auto it = claims.find(p.get()); it != claims.end()) {
        write_claimed(p, it->second);
      } else if (p->is_block()) {
        write_block(p);
      } else {
        // A delay whose operand is not computed yet reads it from later in a loop.
        if (is_delay_op(p->op()) && p->direct_inputs()[0].is_output() && !names_.count(p->direct_inputs()[0].get()))
          unwritten_loop(*p);
        write_primitive(p);
      }
    }
  }

  // The strongly connected sets of functions in `order` (those in `skip` left out) that hold a
  // cycle, each listed in `order`'s order.
  static std::vector<std::vector<FunctionPtr>> find_loops(const std::vector<FunctionPtr>& order,
                                                          const std::set<const Function*>& skip) {
    std::unordered_map<const Function*, size_t> pos;
    for (size_t i = 0; i < order.size(); ++i)
      if (!skip.count(order[i].get())) pos[order[i].get()] = i;
    auto producers = [&](size_t i) {
      std::vector<size_t> out;
      for (const Variable& in : order[i]->inputs())
        if (FunctionPtr o = in.is_output() ? in.owner() : nullptr)
          if (auto it = pos.find(o.get()); it != pos.end()) out.push_back(it->second);
      return out;
    };
    // Tarjan's algorithm.
    std::vector<int64_t> index(order.size(), -1), low(order.size(), 0);
    std::vector<bool> on_stack(order.size(), false);
    std::vector<size_t> stack;
    std::vector<std::vector<FunctionPtr>> loops;
    int64_t next = 0;
    std::function<void(size_t)> visit = [&](size_t v) {
      index[v] = low[v] = next++;
      stack.push_back(v);
      on_stack[v] = true;
      bool self = false;
      for (size_t w : producers(v)) {
        self = self || w == v;
        if (index[w] < 0) {
          visit(w);
          low[v] = std::min(low[v], low[w]);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
      }
      if (low[v] != index[v]) return;
      std::vector<size_t> scc;
      size_t w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        scc.push_back(w);
      } while (w != v);
      if (scc.size() < 2 && !self) return;
      std::sort(scc.begin(), scc.end());
      std::vector<FunctionPtr> members;
      for (size_t k : scc) members.push_back(order[k]);
      loops.push_back(std::move(members));
    };
    for (auto& [f, i] : pos)
      if (index[i] < 0) visit(i);
    return loops;
  }

  // The ONNX type of one step of a loop's value inside a Scan body: [batch, 1, static shape],
  // the step's Sequence dimension kept (size 1, denotation DATA_TIME), so that the ops' rules
  // see the layout they write everywhere else.
  static void set_step_type(const Variable& v, ::onnx::ValueInfoProto* vi) {
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(int32_t(elem_type_of(v.dtype())));
    auto* shape = tt->mutable_shape();
    auto* b = shape->add_dim();
    b->set_dim_param("batch");
    b->set_denotation("DATA_BATCH");
    auto* s = shape->add_dim();
    s->set_dim_value(1);
    s->set_denotation("DATA_TIME");
    for (int64_t d : v.shape().dims()) shape->add_dim()->set_dim_value(d);
  }

  std::string reduce_sum(const std::string& x, std::vector<int64_t> axes, int64_t keepdims) {
    if (opset() >= 13) return node1("ReduceSum", {x, constant_i64(axes, false)}, {Attr("keepdims", keepdims)});
    return node1("ReduceSum", {x}, {Attr("axes", std::move(axes)), Attr("keepdims", keepdims)});
  }

  // A recurrent loop (delays of offset 1, all PastValue or all FutureValue, closing cycles over
  // one sequence axis) as an ONNX Scan over the Sequence dimension: the body holds the loop's
  // functions for one step, the delays' outputs are its state variables (their operands its
  // new states), the values the loop reads from outside with a sequence axis its scan inputs,
  // and the values read after the loop its scan outputs. Initial states are the delays'
  // initial values broadcast to [batch, 1, shape]. FutureValue loops scan in reverse.
  void write_loop(const std::vector<FunctionPtr>& members, const std::vector<FunctionPtr>& order,
                  const std::vector<Variable>& level_outputs) {
    std::set<const Function*> in_loop;
    for (const FunctionPtr& m : members) in_loop.insert(m.get());
    std::vector<FunctionPtr> delays;
    for (const FunctionPtr& m : members)
      if (!m->is_block() && is_delay_op(m->op())) delays.push_back(m);
    auto refuse = [&](const std::string& why) {
      const Function& d = delays.empty() ? *members.front() : *delays.front();
      throw ValueError("ONNX export: the recurrent loop closed by " + d.op_name() + " ('" +
                       (d.name().empty() ? d.uid() : d.name()) + "') has no ONNX form: " + why);
    };
    if (delays.empty()) refuse("it has no PastValue or FutureValue");
    const bool past = delay_spec(*delays[0]).past;
    for (const FunctionPtr& d : delays) {
      const DelaySpec spec = delay_spec(*d);
      if (spec.offset != 1) refuse("a delay of " + std::to_string(spec.offset) + " steps (Scan carries one step)");
      if (spec.past != past) refuse("it mixes PastValue and FutureValue");
    }
    for (const FunctionPtr& m : members)
      for (const Variable& o : m->outputs())
        if (!batch_and_sequence(o)) refuse("its value " + o.str() + " lacks a batch or a sequence axis");

    // The body's order: the members' dependencies within one step (delays read the previous one).
    std::vector<FunctionPtr> body_order;
    std::set<const Function*> placed;
    std::function<void(const FunctionPtr&)> place = [&](const FunctionPtr& p) {
      if (!placed.insert(p.get()).second) return;
      if (!(!p->is_block() && is_delay_op(p->op())))
        for (const Variable& in : p->inputs())
          if (FunctionPtr o = in.is_output() ? in.owner() : nullptr; o && in_loop.count(o.get())) place(o);
      body_order.push_back(p);
    };
    for (const FunctionPtr& m : members) place(m);

    // Scan inputs: what the loop reads from outside with a sequence axis.
    std::vector<Variable> scanned;
    std::set<VariableImpl*> seen;
    for (const FunctionPtr& m : members) {
      if (!m->is_block() && is_delay_op(m->op())) continue;
      for (const Variable& in : m->inputs()) {
        FunctionPtr o = in.is_output() ? in.owner() : nullptr;
        if ((o && in_loop.count(o.get())) || !seen.insert(in.get()).second) continue;
        if (batch_and_sequence(in)) {
          scanned.push_back(in);
        } else {
          for (const Axis& a : in.dynamic_axes())
            if (!a.is_batch()) refuse("it reads " + in.str() + " over another sequence axis");
        }
      }
    }
    if (scanned.empty()) refuse("it reads no sequence from outside (Scan takes its length from one)");

    // Outside the loop: scan inputs as [Sequence, batch, 1, ...]; initial states [batch, 1, ...].
    fn_ = nullptr;
    std::vector<std::string> outer_scanned, initial;
    for (const Variable& v : scanned) {
      std::vector<int64_t> perm{1, 0};
      for (int64_t k = 0; k < int64_t(v.shape().rank()); ++k) perm.push_back(k + 2);
      outer_scanned.push_back(unsqueeze(node1("Transpose", {value_name(v)}, {Attr("perm", perm)}), {2}));
    }
    // Zeros [batch, 1] from the first scan input (no Shape node, as the recurrent ops' states).
    std::string zeros_b1 = value_name(scanned[0]);
    if (const int64_t r = int64_t(scanned[0].shape().rank()); r > 0) {
      std::vector<int64_t> axes;
      for (int64_t k = 0; k < r; ++k) axes.push_back(2 + k);
      zeros_b1 = reduce_sum(zeros_b1, axes, 0);
    }
    zeros_b1 = node1("Mul", {reduce_sum(zeros_b1, {1}, 1), constant_f(0.0, scanned[0].dtype())});
    for (const FunctionPtr& d : delays) {
      const Variable out = d->outputs()[0];
      const Variable init = d->inputs()[1];
      const int64_t r = int64_t(out.shape().rank());
      std::vector<int64_t> axes;
      for (int64_t k = 0; k < r; ++k) axes.push_back(2 + k);
      std::string z = out.dtype() == scanned[0].dtype()
                          ? zeros_b1
                          : node1("Cast", {zeros_b1}, {Attr("to", int64_t(elem_type_of(out.dtype())))});
      z = unsqueeze(z, axes);
      z = node1("Add", {z, constant(NDArrayView::zeros(out.dtype(), out.shape()), "")});
      std::string v = value_name(init);
      if (init.dynamic_axes().size() == 1 && init.dynamic_axes()[0].is_batch()) {
        v = unsqueeze(v, {1});
      } else if (!init.dynamic_axes().empty()) {
        refuse("an initial state with a sequence axis");
      }
      initial.push_back(node1("Add", {z, v}));
    }

    // The body.
    ::onnx::GraphProto body;
    body.set_name(fresh_name("loop_body"));
    ::onnx::GraphProto* outer = g_;
    g_ = &body;
    std::unordered_map<VariableImpl*, std::string> saved;
    for (const Variable& v : scanned) saved[v.get()] = names_.at(v.get());
    for (const FunctionPtr& d : delays) {
      std::string s = fresh_name(d->outputs()[0].uid() + "_state");
      set_step_type(d->outputs()[0], body.add_input());
      body.mutable_input(body.input_size() - 1)->set_name(s);
      names_[d->outputs()[0].get()] = s;
    }
    for (const Variable& v : scanned) {
      std::string s = fresh_name(saved[v.get()] + "_step");
      set_step_type(v, body.add_input());
      body.mutable_input(body.input_size() - 1)->set_name(s);
      names_[v.get()] = s;
    }
    for (const FunctionPtr& p : body_order) {
      if (!p->is_block() && is_delay_op(p->op())) continue;
      if (p->is_block())
        write_block(p);
      else
        write_primitive(p);
    }
    auto body_output = [&](const Variable& v) {
      std::string o = node1("Identity", {value_name(v)}, {}, fresh_name(v.uid() + "_step_out"));
      set_step_type(v, body.add_output());
      body.mutable_output(body.output_size() - 1)->set_name(o);
    };
    for (const FunctionPtr& d : delays) body_output(Variable(d->inputs()[0]));
    // Scan outputs: the members' values read after the loop.
    std::set<VariableImpl*> read_after;
    for (const FunctionPtr& p : order)
      if (!in_loop.count(p.get()))
        for (const Variable& in : p->inputs()) read_after.insert(in.get());
    for (const Variable& o : level_outputs) read_after.insert(o.get());
    std::vector<Variable> results;
    for (const FunctionPtr& m : members)
      for (const Variable& o : m->outputs())
        if (read_after.count(o.get())) {
          results.push_back(o);
          body_output(o);
        }
    g_ = outer;
    fn_ = nullptr;
    for (const FunctionPtr& m : members)
      for (const Variable& o : m->outputs()) names_.erase(o.get());
    for (auto& [v, n] : saved) names_[v] = n;

    std::vector<std::string> ins = initial;
    ins.insert(ins.end(), outer_scanned.begin(), outer_scanned.end());
    std::vector<Attr> attrs{Attr("num_scan_inputs", int64_t(scanned.size()))};
    if (!past) {
      attrs.emplace_back("scan_input_directions", std::vector<int64_t>(scanned.size(), 1));
      attrs.emplace_back("scan_output_directions", std::vector<int64_t>(results.size(), 1));
    }
    std::vector<std::string> outs = node("Scan", ins, attrs, {}, delays.size() + results.size(), "");
    auto* a = g_->mutable_node(g_->node_size() - 1)->add_attribute();
    a->set_name("body");
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = std::move(body);
    // [Sequence, batch, 1, ...] -> [batch, Sequence, ...]
    for (size_t k = 0; k < results.size(); ++k) {
      const Variable& o = results[k];
      std::string sq = opset() >= 13
                           ? node1("Squeeze", {outs[delays.size() + k], constant_i64({2}, false)})
                           : node1("Squeeze", {outs[delays.size() + k]}, {Attr("axes", std::vector<int64_t>{2})});
      std::vector<int64_t> perm{1, 0};
      for (int64_t j = 0; j < int64_t(o.shape().rank()); ++j) perm.push_back(j + 2);
      std::string name = node1("Transpose", {sq}, {Attr("perm", perm)}, unique_value_name(o.uid(), o.uid()));
      names_[o.get()] = name;
      uid_names_.emplace_back(o.uid(), name);
    }
  }

  // A block is written as the functions inside it, its placeholders standing for its inputs.
  void write_block(const FunctionPtr& b) {
    for (const auto& [placeholder, actual] : b->block_arguments_mapping())
      names_[placeholder.get()] = value_name(actual);
    FunctionPtr inner = b->block_root();
    const std::string outer_name = block_name_;
    if (!b->name().empty()) block_name_ = b->name();
    write_graph(inner);
    block_name_ = outer_name;
    auto outs = b->outputs();
    auto inner_outs = inner->outputs();
    for (size_t k = 0; k < outs.size() && k < inner_outs.size(); ++k) names_[outs[k].get()] = value_name(inner_outs[k]);
  }

  // A claimed block: its rule reads the claim's inputs and writes output 0 at least.
  void write_claimed(const FunctionPtr& b, const BlockClaim& claim) {
    fn_ = b.get();
    in_vars_ = claim.inputs;
    in_names_.clear();
    for (const Variable& v : in_vars_) in_names_.push_back(value_name(v));
    out_vars_ = claim.outputs.empty() ? b->outputs() : claim.outputs;
    out_names_.clear();
    for (const Variable& o : out_vars_) out_names_.push_back(unique_value_name(o.uid(), o.uid()));
    claim.write(*this, [this](const std::string& output, const std::string& name, std::vector<std::string> values) {
      for (auto& n : *g_->mutable_node())
        if (std::find(n.output().begin(), n.output().end(), output) != n.output().end()) {
          auto* a = n.add_attribute();
          a->set_name(name);
          a->set_type(::onnx::AttributeProto::STRINGS);
          for (auto& v : values) a->add_strings(v);
        }
    });
    if (!produced_.count(out_names_[0]))
      throw Error("ONNX export: the rule of block " + b->op_name() + " did not write its output");
    for (size_t k = 0; k < out_vars_.size(); ++k)
      if (produced_.count(out_names_[k])) {
        names_[out_vars_[k].get()] = out_names_[k];
        uid_names_.emplace_back(out_vars_[k].uid(), out_names_[k]);
      }
    fn_ = nullptr;
  }

  void write_primitive(const FunctionPtr& p) {
    const OpDef* def = p->op();
    if (!def || !def->onnx_export)
      throw ValueError("ONNX export: " + p->op_name() + " ('" + (p->name().empty() ? p->uid() : p->name()) +
                       "') has no ONNX form");
    fn_ = p.get();
    in_vars_ = p->inputs();
    in_names_.clear();
    for (const Variable& v : in_vars_) in_names_.push_back(value_name(v));
    out_vars_ = p->outputs();
    out_names_.clear();
    for (const Variable& o : out_vars_) {
      std::string name = unique_value_name(o.uid(), o.uid());
      out_names_.push_back(name);
    }
    def->onnx_export(*this);
    for (size_t k = 0; k < out_vars_.size(); ++k) {
      if (!produced_.count(out_names_[k]))
        throw Error("ONNX export: the rule of " + p->op_name() + " did not write its output " + std::to_string(k));
      names_[out_vars_[k].get()] = out_names_[k];
      uid_names_.emplace_back(out_vars_[k].uid(), out_names_[k]);
    }
    fn_ = nullptr;
  }

  OnnxExportOptions opts_;
  ::onnx::ModelProto model_;
  ::onnx::GraphProto* g_;
  const Function* fn_ = nullptr;
  std::string block_name_;  // the innermost named block being written
  FunctionPtr root_;
  std::vector<Variable> in_vars_, out_vars_;
  std::vector<std::string> in_names_, out_names_;
  std::unordered_map<VariableImpl*, std::string> names_;
  std::set<std::string> used_, produced_, graph_inputs_, initializers_, node_names_;
  std::vector<std::pair<std::string, std::string>> uid_names_;
};

// Tensors larger than this go to external data when the model would pass protobuf's 2 GB.
constexpr size_t kExternalThreshold = 1024;
constexpr size_t kProtobufLimit = size_t(2) << 30;

}  // namespace

}  // namespace cntk::onnx_io

namespace cntk {

std::string save_onnx_to_bytes(const FunctionPtr& f, const OnnxExportOptions& options) {
  if (!f) throw ValueError("ONNX export: no function given");
  ::onnx::ModelProto m = onnx_io::Writer(options).write(f);
  if (m.ByteSizeLong() >= onnx_io::kProtobufLimit)
    throw ValueError(
        "ONNX export: the model is over 2 GB; save it to a file (its parameters then go to external data)");
  return m.SerializeAsString();
}

void save_onnx(const FunctionPtr& f, const std::string& path, const OnnxExportOptions& options) {
  if (!f) throw ValueError("ONNX export: no function given");
  ::onnx::ModelProto m = onnx_io::Writer(options).write(f);
  const bool external = options.external_data || m.ByteSizeLong() >= onnx_io::kProtobufLimit;
  if (external) {
    namespace fs = std::filesystem;
    const fs::path p(path);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    const std::string stem = p.filename().string();
    int k = 0;
    for (auto& t : *m.mutable_graph()->mutable_initializer())
      if (t.raw_data().size() >= onnx_io::kExternalThreshold || options.external_data)
        onnx_io::move_to_external(t, dir, stem + ".data_" + std::to_string(k++));
  }
  write_file_atomically(path, m.SerializeAsString());
}

}  // namespace cntk
