#include "cntk/function.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

#include "cntk/user_function.h"
#include "ops/op.h"
#include "ops/sequence_delay.h"

namespace cntk {

namespace {

// A composite's attribute listing its arguments' uids in the order arguments() gives
// them (set by readers of formats whose inputs are ordered, such as ONNX's reader).
constexpr const char* kArgumentOrderKey = "argumentOrder";

bool has_unknown_input(const std::vector<Variable>& inputs) {
  for (auto& v : inputs) {
    if (v.shape().is_unknown()) return true;
    for (auto& a : v.dynamic_axes())
      if (a.is_dynamic() && a.name() == "UnknownAxes") return true;
  }
  return false;
}

// What computing v reads, walking up from it without passing `target`: whether it
// needs the output of `target` (v lies on a loop through it), and whether it reads an
// input or an unbound placeholder on the way (data from outside such a loop).
// A block's output is followed through the block's inside, so that it depends only
// on the arguments that output reads: a block that routes several variables (such
// as the argument-ordering 'Tuple' of a Python step function) joins no loops.
struct Reach {
  bool target = false;
  bool outside_data = false;
};

Reach reach(const Variable& v, const Function* target) {
  Reach r;
  // Blocks entered on the way, each with the block it lies in (-1: the outer graph);
  // an inner placeholder leads to the argument of the block it was reached through.
  struct Frame {
    const Function* block;
    int parent;
  };
  std::vector<Frame> frames;
  std::map<std::pair<const Function*, int>, int> frame_index;
  std::vector<std::pair<Variable, int>> stack{{v, -1}};
  std::set<std::pair<const VariableImpl*, int>> seen;
  while (!stack.empty()) {
    auto [var, frame] = stack.back();
    stack.pop_back();
    if (!seen.insert({var.get(), frame}).second) continue;
    if (var.is_input()) r.outside_data = true;
    if (var.is_placeholder()) {
      if (frame < 0) {
        r.outside_data = true;
        continue;
      }
      for (auto& [ph, outer] : frames[frame].block->block_arguments_mapping())
        if (ph.get() == var.get()) stack.push_back({outer, frames[frame].parent});
      continue;
    }
    Function* f = var.is_output() ? var.impl()->owner : nullptr;
    if (!f) continue;
    if (f == target) {
      r.target = true;
      continue;
    }
    if (f->is_block()) {
      auto inner = f->block_root()->outputs();
      size_t i = var.impl()->output_index;
      if (i < inner.size()) {
        auto [it, added] = frame_index.try_emplace({f, frame}, int(frames.size()));
        if (added) frames.push_back({f, frame});
        stack.push_back({inner[i], it->second});
        continue;
      }
    }
    for (auto& in : f->direct_inputs()) stack.push_back({in, frame});
  }
  return r;
}

bool is_unknown(const Variable& v) {
  if (v.shape().is_unknown()) return true;
  for (auto& a : v.dynamic_axes())
    if (a.is_dynamic() && a.name() == "UnknownAxes") return true;
  return false;
}

// Shape inference over a graph with recurrent loops: a delay whose operand depends
// on the delay itself starts from its initial state's type (see infer_outputs), and
// the passes repeat until nothing changes.
thread_local bool t_guessed_loop_state = false;  // a delay guessed its state in this inference
thread_local int t_infer_depth = 0;
// Outputs computed from a guessed (scalar) loop state in the current inference.
thread_local std::unordered_set<const VariableImpl*> t_guessed_outputs;
// The first shape rule in this pass that could not take a value derived from a guessed
// (scalar) loop state: its outputs wait for the next pass, as if a placeholder were
// unbound, and the error is raised only if the loop never settles to a known state.
thread_local std::string t_guess_failure;

// Binary elementwise ops: where one operand is still pending and the other is known,
// the output takes the known operand's type (as CNTK's elementwise shape rule does with
// an unknown operand); that is how a loop state starting from a scalar learns its shape
// from `step(h, x) = f(h) + x`.
bool is_binary_elementwise(const OpDef* op) { return op && op->is(kElementwiseBinary); }

// Ops whose output has their one input's type (the unary elementwise family and others the
// schema marks so): an input whose shape is known while its dynamic axes wait gives an
// output that waits the same way.
bool keeps_input_type(const OpDef* op) { return op->is(kSameShape); }

// A placeholder input still waiting to be bound (not one of a block's inside).
bool reads_unbound_placeholder(const std::vector<FunctionPtr>& order) {
  for (auto& f : order)
    for (auto& in : f->direct_inputs())
      if (in.is_placeholder() && is_unknown(in)) return true;
  return false;
}

void infer_until_stable(const std::vector<FunctionPtr>& order) {
  bool loops = false;
  for (auto& f : order) loops = loops || is_delay_op(f->op());
  for (int pass = 0; pass < (loops ? 16 : 1); ++pass) {
    std::vector<std::tuple<NDShape, DataType, std::vector<Axis>>> before;
    if (loops)
      for (auto& f : order)
        for (auto& o : f->output_impls()) before.emplace_back(o->shape, o->dtype, o->dynamic_axes);
    if (t_infer_depth == 0) {
      t_guessed_loop_state = false;
      t_guessed_outputs.clear();
      t_guess_failure.clear();
    }
    struct Depth {
      Depth() { ++t_infer_depth; }
      ~Depth() { --t_infer_depth; }
    };
    try {
      Depth depth;
      for (auto& f : order) f->infer_outputs();
    } catch (const ShapeError& e) {
      if (!t_guessed_loop_state || t_infer_depth > 0) throw;
      throw ShapeError(std::string(e.what()) +
                       "; this happened while inferring the state of a recurrent loop from the shape of its "
                       "initial state: give the delay (or Recurrence) an initial_state of the state's shape");
    }
    bool changed = false;
    size_t k = 0;
    for (auto& f : order)
      for (auto& o : f->output_impls()) {
        if (k >= before.size() || std::get<0>(before[k]) != o->shape || std::get<1>(before[k]) != o->dtype ||
            std::get<2>(before[k]) != o->dynamic_axes)
          changed = true;
        ++k;
      }
    if (!changed) {
      // Settled with a shape rule still refusing the guessed state: the loop's state
      // never became known (unless inputs are still to be bound).
      if (t_infer_depth == 0 && !t_guess_failure.empty() && !reads_unbound_placeholder(order))
        throw ShapeError(t_guess_failure +
                         "; this happened while inferring the state of a recurrent loop from its scalar initial "
                         "state, and the step function's output never gave the state a shape: give the delay (or "
                         "Recurrence) an initial_state of the state's shape");
      return;
    }
  }
  if (loops)
    throw ShapeError(
        "the shapes in a recurrent loop do not settle: the state a delay reads back does not keep the "
        "shape it started from; give the delay an initial_state of the state's shape");
}

std::atomic<size_t> g_live_functions{0};

}  // namespace

size_t live_functions() { return g_live_functions.load(); }

Function::Function() { ++g_live_functions; }

// Output variables may outlive their function (a loop-closing edge, a user's
// handle): they must not point at a freed one.
Function::~Function() {
  --g_live_functions;
  for (auto& o : outputs_)
    if (o && o->owner == this) o->owner = nullptr;
}

void Function::link_input(const Variable& in) {
  if (!in.is_output() || !in.impl()->owner) return;
  Function* producer = in.impl()->owner;
  std::erase_if(producer->consumers_, [](const std::weak_ptr<Function>& c) { return c.expired(); });
  producer->consumers_.push_back(weak_from_this());
  auto a = producer->loop_anchor();
  if (a && std::find(held_anchors_.begin(), held_anchors_.end(), a) == held_anchors_.end())
    held_anchors_.push_back(std::move(a));
}

void Function::link_inputs() {
  for (auto& in : inputs_) link_input(in);
}

// A depth-first walk from this function's root: an edge to a function still on the
// walk's stack closes a loop and is made non-owning; every other edge owns its
// producer, so everything the root reaches stays reachable through owning edges.
// Each loop (a strongly connected component, Tarjan) gets a LoopAnchor owning the
// producers of its non-owning edges: its functions know it weakly, and this function
// (a composite), the functions already reading the loop from outside and every later
// one own it. One anchor per loop, not one for all the loops closed at once: a
// function between two loops (reading the first, read by the second) owns the first
// one's anchor and is reached from the second one's producers, so an anchor shared by
// both loops would own itself through it (stacked recurrent layers closed together
// were never freed).
void Function::own_loops_acyclically() {
  struct Node {
    int index = -1, low = 0;
    bool on_path = false, on_tarjan = false;
  };
  std::unordered_map<Function*, Node> nodes;
  std::vector<Function*> tarjan;
  std::vector<FunctionPtr> closers;
  std::vector<std::vector<Function*>> loops;  // the components that closers are in, or of several functions
  int counter = 0;
  std::function<void(Function*)> visit = [&](Function* f) {
    Node& n = nodes[f];
    n.index = n.low = counter++;
    n.on_path = n.on_tarjan = true;
    tarjan.push_back(f);
    for (auto& in : f->inputs_) {
      if (!in.is_output() || !in.impl()->owner) continue;
      Function* g = in.impl()->owner;
      auto it = nodes.find(g);
      if (it != nodes.end() && it->second.on_path) {
        // Closes a loop.
        if (std::find_if(closers.begin(), closers.end(), [&](const FunctionPtr& c) { return c.get() == g; }) ==
            closers.end())
          closers.push_back(g->shared_from_this());
        if (in.owner_ref_) in = Variable(in.impl());
        nodes[f].low = std::min(nodes[f].low, it->second.index);
        continue;
      }
      if (!in.owner_ref_ && !f->outputs_alias_inputs_) in = Variable(in.impl(), g->shared_from_this());
      if (it == nodes.end()) {
        visit(g);
        nodes[f].low = std::min(nodes[f].low, nodes[g].low);
      } else if (it->second.on_tarjan) {
        nodes[f].low = std::min(nodes[f].low, it->second.index);
      }
    }
    Node& m = nodes[f];
    m.on_path = false;
    if (m.low == m.index) {
      std::vector<Function*> component;
      Function* w = nullptr;
      do {
        w = tarjan.back();
        tarjan.pop_back();
        nodes[w].on_tarjan = false;
        component.push_back(w);
      } while (w != f);
      const bool self_loop = std::find_if(closers.begin(), closers.end(),
                                          [&](const FunctionPtr& c) { return c.get() == f; }) != closers.end();
      if (component.size() > 1 || self_loop) loops.push_back(std::move(component));
    }
  };
  FunctionPtr keep = shared_from_this();
  visit(root_function().get());
  if (closers.empty()) return;
  // A loop closed earlier is part of one of these (loops only grow): its anchor's closers
  // join that loop's anchor, and no function of a loop may own an old anchor any more.
  std::vector<std::shared_ptr<LoopAnchor>> anchors, old_anchors;
  for (auto& loop : loops) {
    const std::unordered_set<Function*> in_loop(loop.begin(), loop.end());
    auto anchor = std::make_shared<LoopAnchor>();
    for (auto& c : closers)
      if (in_loop.count(c.get())) anchor->closers.push_back(c);
    for (Function* m : loop)
      if (auto old = m->loop_anchor()) {
        if (std::find(old_anchors.begin(), old_anchors.end(), old) == old_anchors.end()) old_anchors.push_back(old);
        for (auto& c : old->closers)
          if (in_loop.count(c.get()) &&
              std::find(anchor->closers.begin(), anchor->closers.end(), c) == anchor->closers.end())
            anchor->closers.push_back(c);
      }
    anchors.push_back(std::move(anchor));
  }
  for (size_t i = 0; i < loops.size(); ++i)
    for (Function* m : loops[i]) {
      m->loop_anchor_ = anchors[i];
      std::erase_if(m->held_anchors_, [&](const std::shared_ptr<LoopAnchor>& a) {
        return std::find(old_anchors.begin(), old_anchors.end(), a) != old_anchors.end();
      });
    }
  auto hold = [](Function* f, const std::shared_ptr<LoopAnchor>& anchor) {
    if (std::find(f->held_anchors_.begin(), f->held_anchors_.end(), anchor) == f->held_anchors_.end())
      f->held_anchors_.push_back(anchor);
  };
  for (size_t i = 0; i < loops.size(); ++i) {
    const std::unordered_set<Function*> in_loop(loops[i].begin(), loops[i].end());
    // Functions made before the loop was closed that read it from outside.
    for (Function* m : loops[i])
      for (auto& c : m->consumers_)
        if (auto consumer = c.lock(); consumer && !in_loop.count(consumer.get())) hold(consumer.get(), anchors[i]);
    // A function of the loop reaches all of it through owning edges already, and
    // holding the anchor itself would be a cycle again.
    if (!in_loop.count(this)) hold(this, anchors[i]);
  }
}

FunctionPtr Function::primitive(const std::string& op_name, std::vector<Variable> inputs, Dictionary attributes,
                                const std::string& name) {
  // Combine is structural: it only gathers outputs and has no catalogue entry.
  const OpDef* op = op_name == "Combine" ? nullptr : find_op(op_name);
  if (!op && op_name != "Combine") throw NotImplementedError("op '" + op_name + "' is not implemented");
  if (op) check_attributes(*op, attributes);  // keys the op does not declare: ValueError
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) throw ValueError(op_name + ": input " + std::to_string(i) + " is undefined");
  FunctionPtr f(new Function());
  f->kind_ = FunctionKind::Primitive;
  f->op_ = op;
  f->op_name_ = op_name;
  f->name_ = name;
  f->uid_ = new_uid(op_name.c_str());
  f->inputs_ = std::move(inputs);
  f->link_inputs();
  f->attributes_ = std::move(attributes);
  if (op_name == "Combine") {
    f->outputs_alias_inputs_ = true;
    for (auto& v : f->inputs_) f->outputs_.push_back(v.impl());
    return f;
  }
  f->infer_outputs();
  return f;
}

// Parameters and constants made without a data type take their op's: that of its
// first input that is not a constant (else of its first typed input), as CNTK infers it.
static void adopt_data_type(std::vector<Variable>& inputs, const std::string& op_name) {
  DataType op_type = DataType::Unknown, first = DataType::Unknown;
  for (auto& v : inputs) {
    if (v.dtype() == DataType::Unknown) continue;
    if (first == DataType::Unknown) first = v.dtype();
    if (op_type == DataType::Unknown && !v.is_constant()) op_type = v.dtype();
  }
  if (op_type == DataType::Unknown) op_type = first;
  if (op_type == DataType::Unknown) return;
  for (auto& v : inputs) {
    // A constant of another float type is coerced to its op's, as CNTK did when building
    // its network (a layer's float32 scalar meets float16 weights). In place: a block lists
    // the constants of its inside as its own inputs. float32 with float64 is left to the ops,
    // which compute such pairs in float64; BatchNormalization keeps float32 statistics
    // under float16 data.
    auto real = [](DataType t) { return t == DataType::Float || t == DataType::Double || t == DataType::Float16; };
    const bool half = v.dtype() == DataType::Float16 || op_type == DataType::Float16;
    if (v.is_constant() && v.dtype() != op_type && real(v.dtype()) && real(op_type) && half &&
        op_name != "BatchNormalization") {
      VariableImpl& impl = *v.impl();
      if (impl.value.defined()) impl.value = impl.value.cast(op_type);
      impl.dtype = op_type;
    }
    if (v.dtype() != DataType::Unknown || !(v.is_parameter() || v.is_constant())) continue;
    VariableImpl& impl = *v.impl();
    impl.dtype = op_type;
    if (impl.value.defined())
      impl.value = impl.value.cast(op_type);
    else if (impl.init && impl.shape.is_known())
      impl.value = initialize_parameter(*impl.init, impl.shape, op_type);
  }
}

FunctionPtr Function::user_defined(std::shared_ptr<UserFunctionBackend> backend, std::vector<Variable> inputs,
                                   Dictionary attributes, const std::string& name) {
  if (!backend) throw ValueError("user function: no implementation given");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) throw ValueError("user function: input " + std::to_string(i) + " is undefined");
  FunctionPtr f(new Function());
  f->kind_ = FunctionKind::Primitive;
  f->op_ = find_op("UserFunction");
  f->op_name_ = backend->op_name();
  f->name_ = name;
  f->uid_ = new_uid("UserFunction");
  f->inputs_ = std::move(inputs);
  f->link_inputs();
  f->attributes_ = std::move(attributes);
  f->user_ = std::move(backend);
  f->infer_outputs();
  return f;
}

void Function::infer_outputs() {
  if (outputs_alias_inputs_) return;
  // Inference over a loop's guessed state: mark what derives from it (see op.h).
  bool outer_guessed = inferring_from_guessed_state();
  bool guessed = outer_guessed;
  for (auto& v : inputs_) guessed = guessed || t_guessed_outputs.count(v.get()) > 0;
  struct Restore {
    bool value;
    ~Restore() { inferring_from_guessed_state() = value; }
  } restore{outer_guessed};
  inferring_from_guessed_state() = guessed;
  // A pass of infer_until_stable over values derived from a guessed loop state (a
  // function built later on such a value is checked as always).
  const bool in_loop_pass = guessed && t_infer_depth > 0;
  std::vector<OutputInfo> infos;
  std::vector<bool> user_needs_grad;  // user functions declare it per output
  // A delay whose operand is pending: what the loop through it reads.
  const Reach loop =
      op_ && is_delay_op(op_) && inputs_.size() == 2 && is_unknown(inputs_[0]) ? reach(inputs_[0], this) : Reach{};
  if (kind_ == FunctionKind::Block) {
    // Give the inner placeholders the outer variables' types, then re-infer the inside.
    for (auto& [ph, outer] : block_map_) {
      ph.impl()->shape = outer.shape();
      ph.impl()->dtype = outer.dtype();
      ph.impl()->dynamic_axes = outer.dynamic_axes();
      ph.impl()->is_sparse = outer.is_sparse();
    }
    infer_until_stable(root_->topological_order());
    for (auto& o : root_->outputs()) infos.push_back({o.shape(), o.dtype(), o.dynamic_axes(), o.is_sparse()});
  } else if (op_ && is_delay_op(op_) && inputs_.size() == 2 && is_unknown(inputs_[0]) && !is_unknown(inputs_[1]) &&
             loop.target && !loop.outside_data) {
    // A loop that reads no data from outside (a delay of its own output and constants
    // only): nothing will ever give it dynamic axes, and CNTK leaves them unknown.
    infos.push_back({NDShape::unknown(), DataType::Float, {Axis::dynamic("UnknownAxes")}, false});
  } else if (op_ && is_delay_op(op_) && inputs_.size() == 2 && is_unknown(inputs_[0]) && !is_unknown(inputs_[1]) &&
             loop.target) {
    // A delay in a recurrent loop whose state is not known yet: the initial state's
    // type is the first guess, refined by the next pass (infer_until_stable).
    // Only the batch axis: the loop's sequence axis comes with its other inputs.
    // The step's output may know the state's shape already, with its dynamic axes still
    // pending (an elementwise op with a parameter, see is_binary_elementwise): that shape
    // is the state's, not a guess.
    t_guessed_loop_state = true;
    const bool from_step = !inputs_[0].shape().is_unknown();
    const Variable& like = from_step ? inputs_[0] : inputs_[1];
    if (!from_step && inputs_[1].shape().rank() == 0) guessed = true;  // a scalar says nothing of the state's shape
    std::vector<Axis> axes{Axis::default_batch_axis()};
    for (auto& a : inputs_[1].dynamic_axes())
      if (!a.is_sequence()) axes = {a};
    infos.push_back({like.shape(), like.dtype(), axes, false});
  } else if (op_ && inputs_.size() == 2 && is_binary_elementwise(op_) &&
             is_unknown(inputs_[0]) != is_unknown(inputs_[1]) &&
             inputs_[is_unknown(inputs_[0]) ? 1 : 0].shape().rank() > 0 &&
             (in_loop_pass || inputs_[is_unknown(inputs_[0]) ? 1 : 0].dynamic_axes().empty())) {
    // The pending operand's dynamic axes are not known either, unless the known one has
    // some: then the output waits too (only its shape is known), except in a pass over
    // a loop's guessed state, which the next pass refines anyway.
    const Variable& known = inputs_[is_unknown(inputs_[0]) ? 1 : 0];
    std::vector<Axis> axes = known.dynamic_axes();
    if (axes.empty()) axes = {Axis::dynamic("UnknownAxes")};
    infos.push_back({known.shape(), known.dtype(), axes, false});
  } else if (op_ && inputs_.size() == 1 && is_unknown(inputs_[0]) && !inputs_[0].shape().is_unknown() &&
             keeps_input_type(op_)) {
    infos.push_back({inputs_[0].shape(), inputs_[0].dtype(), inputs_[0].dynamic_axes(), false});
  } else if (has_unknown_input(inputs_)) {
    // Shapes wait until the placeholders are bound.
    size_t n = !outputs_.empty() ? outputs_.size() : (op_ && op_->output_count) ? op_->output_count(attributes_) : 1;
    if (outputs_.empty() && user_) {
      // How many outputs a user function has is its own to say, placeholders or not
      // (CNTK asks it too); one that cannot tell yet gets one.
      try {
        n = std::max<size_t>(1, user_->infer_outputs(*this, inputs_).size());
      } catch (const std::exception&) {
      }
    }
    for (size_t i = 0; i < n; ++i)
      infos.push_back({NDShape::unknown(), DataType::Float, {Axis::dynamic("UnknownAxes")}, false});
  } else if (user_) {
    for (auto& o : user_->infer_outputs(*this, inputs_)) {
      if (!o.defined()) throw TypeError(op_name_ + ": infer_outputs returned an undefined variable");
      infos.push_back({o.shape(), o.dtype(), o.dynamic_axes(), o.is_sparse()});
      user_needs_grad.push_back(o.needs_gradient());
    }
    if (infos.empty()) throw ValueError(op_name_ + ": infer_outputs returned no outputs");
  } else {
    adopt_data_type(inputs_, op_name_);
    InferContext ctx(op_name_, inputs_, attributes_);
    try {
      infos = op_->infer(ctx);
    } catch (const ShapeError& e) {
      if (!in_loop_pass) throw;
      if (t_guess_failure.empty()) t_guess_failure = e.what();
      size_t n = !outputs_.empty() ? outputs_.size() : op_->output_count ? op_->output_count(attributes_) : 1;
      for (size_t i = 0; i < n; ++i)
        infos.push_back({NDShape::unknown(), DataType::Float, {Axis::dynamic("UnknownAxes")}, false});
    }
  }
  bool needs_grad = false;
  // A placeholder may stand for a variable that needs a gradient (the inside of a block
  // keeps its placeholders bound only through the block's mapping).
  for (auto& v : inputs_) needs_grad = needs_grad || v.needs_gradient() || v.is_placeholder();
  if (kind_ == FunctionKind::Block) needs_grad = true;
  if (outputs_.size() < infos.size()) {
    for (size_t i = outputs_.size(); i < infos.size(); ++i) {
      auto o = std::make_shared<VariableImpl>();
      o->kind = VariableKind::Output;
      o->owner = this;
      o->output_index = i;
      o->uid = uid_ + "_Output_" + std::to_string(i);
      o->name = name_;  // CNTK names a function's outputs after the function
      outputs_.push_back(o);
    }
  }
  for (size_t i = 0; i < infos.size(); ++i) {
    auto& o = *outputs_[i];
    o.shape = infos[i].shape;
    o.dtype = infos[i].dtype;
    o.dynamic_axes = infos[i].dynamic_axes;
    o.is_sparse = infos[i].is_sparse;
    o.needs_gradient = i < user_needs_grad.size() ? needs_grad && user_needs_grad[i] : needs_grad;
    if (guessed)
      t_guessed_outputs.insert(&o);
    else
      t_guessed_outputs.erase(&o);
  }
}

namespace {
std::atomic<bool> g_renaming_allowed{false};
}

void Function::allow_renaming_functions() { g_renaming_allowed = true; }
bool Function::renaming_functions_allowed() { return g_renaming_allowed; }

void Function::set_name(const std::string& n) {
  if (n == name_) return;
  if (!name_.empty() && !g_renaming_allowed)
    throw ValueError("cannot rename function '" + name_ + "' to '" + n +
                     "': a function that already has a name cannot be renamed");
  std::string old = name_;
  name_ = n;
  if (!outputs_alias_inputs_)
    for (auto& o : outputs_)
      if (o->name == old) o->name = n;
}

FunctionPtr Function::composite(FunctionPtr root, const std::string& name) {
  if (!root) throw ValueError("as_composite: root function is undefined");
  if (root->is_composite()) root = root->root_;
  FunctionPtr f(new Function());
  f->kind_ = FunctionKind::Composite;
  f->root_ = root;
  // A composite of a loop's function keeps the whole loop (see LoopAnchor), also
  // when the loop is closed later.
  if (auto a = root->loop_anchor()) f->held_anchors_.push_back(std::move(a));
  std::erase_if(root->consumers_, [](const std::weak_ptr<Function>& c) { return c.expired(); });
  root->consumers_.push_back(f);
  f->op_name_ = root->op_name_;
  f->name_ = name.empty() ? root->name_ : name;
  f->uid_ = root->uid_;
  return f;
}

FunctionPtr Function::combine(const std::vector<Variable>& outputs, const std::string& name) {
  // An empty combine is a function without outputs, as CNTK allowed (Keras' CNTK
  // backend makes one when a model has no update ops, and only searches it).
  return composite(primitive("Combine", outputs, {}, name), name);
}

FunctionPtr Function::block(FunctionPtr composite_fn, const std::vector<std::pair<Variable, Variable>>& mapping,
                            const std::string& op_name, const std::string& instance_name) {
  if (!composite_fn->is_composite()) composite_fn = composite(composite_fn);
  auto phs = composite_fn->placeholders();
  for (auto& ph : phs) {
    bool found = false;
    for (auto& m : mapping) found = found || m.first == ph;
    if (!found)
      throw ValueError("as_block: placeholder " + ph.str() + " of the composite is not in block_arguments_map");
  }
  for (auto& m : mapping) {
    if (!m.first.is_placeholder()) throw ValueError("as_block: the keys of block_arguments_map must be placeholders");
    if (!m.second.defined()) throw ValueError("as_block: block_arguments_map maps " + m.first.str() + " to nothing");
    bool inside = false;
    for (auto& ph : phs) inside = inside || ph == m.first;
    if (!inside)
      throw ValueError("as_block: " + m.first.str() + " in block_arguments_map is not a placeholder of the composite");
  }
  for (auto& arg : composite_fn->arguments())
    if (arg.is_input())
      throw ValueError("as_block: every argument of the encapsulated composite must be a placeholder, but " +
                       arg.str() + " is an input");
  FunctionPtr f(new Function());
  f->kind_ = FunctionKind::Block;
  f->root_ = composite_fn;
  f->op_name_ = op_name;
  f->name_ = instance_name;
  f->uid_ = new_uid(op_name.c_str());
  f->block_map_ = mapping;
  // CNTK's order of a block's inputs: the parameters and constants inside it (in the
  // order the composite reads them), then the mapped arguments.
  for (auto& in : composite_fn->inputs())
    if (in.is_parameter() || in.is_constant()) f->inputs_.push_back(in);
  for (auto& m : mapping) f->inputs_.push_back(m.second);
  f->link_inputs();
  f->infer_outputs();
  return f;
}

FunctionPtr Function::root_function() { return kind_ == FunctionKind::Composite ? root_ : shared_from_this(); }

FunctionPtr Function::block_root() const {
  if (kind_ != FunctionKind::Block) throw ValueError("block_root: " + op_name_ + " is not a block function");
  return root_;
}

Variable Function::output_handle(size_t i) {
  return Variable(outputs_[i], outputs_alias_inputs_ ? nullptr : shared_from_this());
}

std::vector<Variable> Function::outputs() {
  if (kind_ == FunctionKind::Composite) return root_->outputs();
  std::vector<Variable> out;
  if (outputs_alias_inputs_) return inputs_;
  for (size_t i = 0; i < outputs_.size(); ++i) out.push_back(output_handle(i));
  return out;
}

Variable Function::output() {
  auto outs = outputs();
  if (outs.size() != 1)
    throw ValueError("function '" + op_name_ + "' has " + std::to_string(outs.size()) +
                     " outputs; use .outputs to pick one");
  return outs[0];
}

std::vector<FunctionPtr> Function::topological_order() {
  std::vector<FunctionPtr> order;
  std::unordered_set<Function*> seen;
  std::function<void(const FunctionPtr&)> visit = [&](const FunctionPtr& f) {
    if (!seen.insert(f.get()).second) return;
    for (auto& in : f->inputs_) {
      if (in.is_output()) {
        FunctionPtr o = in.owner();
        if (o) visit(o);
      }
    }
    order.push_back(f);
  };
  FunctionPtr root = root_function();
  if (root->outputs_alias_inputs_) {
    seen.insert(root.get());
    for (auto& in : root->inputs_)
      if (in.is_output() && in.owner()) visit(in.owner());
  } else {
    visit(root);
  }
  return order;
}

// The graph's leaves in CNTK's order: depth first from the root, each function's
// inputs in order, a leaf listed where it is first met (CNTK's pre-order walk, which
// gives `(x + y).arguments == (x, y)`). A block's leaves are its inputs: the inner
// parameters and constants, then its arguments.
std::vector<Variable> Function::leaves_in_order() {
  std::vector<Variable> out;
  std::unordered_set<VariableImpl*> seen_vars;
  std::unordered_set<Function*> seen_fns;
  std::vector<std::pair<Function*, size_t>> stack;  // function, next input
  auto enter = [&](Function* f) {
    if (seen_fns.insert(f).second) stack.push_back({f, 0});
  };
  enter(root_function().get());
  while (!stack.empty()) {
    auto& [f, next] = stack.back();
    if (next == f->inputs_.size()) {
      stack.pop_back();
      continue;
    }
    const Variable& v = f->inputs_[next++];
    if (!v.is_output()) {
      if (seen_vars.insert(v.get()).second) out.push_back(v);
    } else if (FunctionPtr o = v.owner()) {
      enter(o.get());
    }
  }
  return out;
}

std::vector<Variable> Function::leaves(VariableKind kind) {
  std::vector<Variable> out;
  // Arguments are the inputs and the unbound placeholders, as in CNTK. As there, a
  // primitive or block function's are among its own inputs, a composite's among the
  // leaves of its whole graph.
  for (auto& v : kind_ == FunctionKind::Composite ? leaves_in_order() : inputs_)
    if (v.kind() == kind || (kind == VariableKind::Input && v.kind() == VariableKind::Placeholder)) out.push_back(v);
  // A composite read from a file that orders its inputs (ONNX's graph inputs) keeps
  // that order: the listed arguments first, as listed, then any others as met.
  auto order = attributes_.find(kArgumentOrderKey);
  if (kind == VariableKind::Input && kind_ == FunctionKind::Composite && order != attributes_.end()) {
    std::unordered_map<std::string, size_t> rank;
    for (const auto& uid : order->second.as_list()) rank.emplace(uid.as_string(), rank.size());
    auto pos = [&](const Variable& v) {
      auto it = rank.find(v.uid());
      return it == rank.end() ? rank.size() : it->second;
    };
    std::stable_sort(out.begin(), out.end(), [&](const Variable& a, const Variable& b) { return pos(a) < pos(b); });
  }
  return out;
}

std::vector<Variable> Function::inputs() {
  if (kind_ != FunctionKind::Composite) return inputs_;
  return leaves_in_order();
}

std::vector<Variable> Function::arguments() { return leaves(VariableKind::Input); }
std::vector<Variable> Function::parameters() { return leaves(VariableKind::Parameter); }
std::vector<Variable> Function::constants() { return leaves(VariableKind::Constant); }
std::vector<Variable> Function::placeholders() { return leaves(VariableKind::Placeholder); }

std::vector<FunctionPtr> Function::find_all_with_name(const std::string& name, bool nested) {
  std::vector<FunctionPtr> out;
  std::function<void(FunctionPtr)> walk = [&](FunctionPtr g) {
    for (auto& f : g->topological_order()) {
      if (f->name_ == name) out.push_back(f);
      if (nested && f->is_block()) walk(f->root_);
    }
  };
  walk(shared_from_this());
  return out;
}

FunctionPtr Function::replace_placeholders(const std::unordered_map<VariableImpl*, Variable>& map) {
  auto order = topological_order();
  // Every key must be a placeholder of this graph, as in CNTK.
  std::unordered_set<VariableImpl*> present;
  for (auto& ph : placeholders()) present.insert(ph.get());
  for (auto& [key, value] : map) {
    if (!value.defined()) throw ValueError("replace_placeholders: the replacement variable is undefined");
    if (!present.count(key))
      throw ValueError("replace_placeholders: '" + key->name + "' of shape " + key->shape.str() +
                       " is not a placeholder of this function");
  }
  for (auto& f : order)
    for (auto& in : f->inputs_) {
      auto it = map.find(in.get());
      if (it != map.end()) {
        in = it->second;
        f->link_input(in);
      }
    }
  for (auto& f : order)
    for (auto& m : f->block_map_) {
      auto it = map.find(m.second.get());
      if (it != map.end()) m.second = it->second;
    }
  // Closing a loop must not make the graph own itself in a cycle.
  bool closes_loop = false;
  for (auto& [key, value] : map) closes_loop = closes_loop || (value.is_output() && value.impl()->owner);
  if (closes_loop) own_loops_acyclically();
  // Re-infer from the (new) leaves upwards, including functions that now feed this graph.
  infer_until_stable(topological_order());
  return shared_from_this();
}

FunctionPtr Function::clone(CloneMethod method, const std::unordered_map<VariableImpl*, Variable>& substitutions) {
  std::unordered_map<VariableImpl*, Variable> mapped(substitutions);
  std::unordered_map<Function*, FunctionPtr> cloned;
  // Inputs and placeholders that a substitute's own graph reads stay shared, so the
  // clone and the substitute agree on them (CNTK re-clones the substitute instead).
  std::unordered_set<VariableImpl*> read_by_substitutes;
  for (auto& [key, value] : substitutions) {
    if (!value.defined()) throw ValueError("clone: a substitute variable is undefined");
    if (!value.is_output() || !value.owner()) continue;
    for (auto& fn : value.owner()->topological_order())
      for (auto& in : fn->direct_inputs())
        if (in.is_input() || in.is_placeholder()) read_by_substitutes.insert(in.get());
  }
  auto map_leaf = [&](const Variable& v) -> Variable {
    auto it = mapped.find(v.get());
    if (it != mapped.end()) return it->second;
    Variable out = v;
    if (v.is_parameter()) {
      if (method == CloneMethod::Clone) {
        auto impl = std::make_shared<VariableImpl>(*v.impl());
        impl->uid = new_uid("Parameter");
        if (impl->value.defined()) impl->value = impl->value.copy();
        out = Variable(impl);
      } else if (method == CloneMethod::Freeze) {
        out = Variable::constant(v.value().copy(), v.name());
      }
    } else if (v.is_constant() && method != CloneMethod::Share) {
      auto impl = std::make_shared<VariableImpl>(*v.impl());
      impl->uid = new_uid("Constant");
      if (impl->value.defined()) impl->value = impl->value.copy();
      out = Variable(impl);
    } else if ((v.is_input() || v.is_placeholder()) && !read_by_substitutes.count(v.get())) {
      // As in CNTK, leaves that are not substituted get fresh copies (same type and
      // name, new uid), so the clone never shares an argument with the original.
      auto impl = std::make_shared<VariableImpl>(*v.impl());
      impl->uid = new_uid(v.is_input() ? "Input" : "Placeholder");
      out = Variable(impl);
    }
    mapped[v.get()] = out;
    return out;
  };
  // Recurrent loops: an input produced by a function still being cloned (a back
  // edge) gets a stand-in placeholder, bound to the cloned output at the end.
  std::unordered_set<Function*> in_progress;
  std::unordered_map<VariableImpl*, Variable> back_edges;  // stand-in -> original variable
  std::function<FunctionPtr(const FunctionPtr&)> clone_fn = [&](const FunctionPtr& f) -> FunctionPtr {
    auto it = cloned.find(f.get());
    if (it != cloned.end()) return it->second;
    in_progress.insert(f.get());
    std::vector<Variable> ins;
    for (auto& in : f->inputs_) {
      auto sub = mapped.find(in.get());
      if (sub != mapped.end()) {
        ins.push_back(sub->second);
      } else if (in.is_output() && in.impl()->owner && in_progress.count(in.impl()->owner)) {
        Variable stand_in = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, in.name());
        back_edges[stand_in.get()] = in;
        ins.push_back(stand_in);
      } else if (in.is_output()) {
        FunctionPtr src = in.owner();
        FunctionPtr c = clone_fn(src);
        ins.push_back(c->outputs()[in.impl()->output_index]);
      } else {
        ins.push_back(map_leaf(in));
      }
    }
    FunctionPtr c;
    if (f->is_block()) {
      // The inside of a block keeps its placeholders; parameters follow the clone method.
      std::unordered_map<VariableImpl*, Variable> inner_subs;
      size_t leaves = f->block_leaf_count();
      for (size_t i = 0; i < leaves; ++i) inner_subs[f->inputs_[i].get()] = ins[i];
      std::vector<std::pair<Variable, Variable>> m;
      for (size_t i = 0; i < f->block_map_.size(); ++i) {
        const Variable& old_ph = f->block_map_[i].first;
        Variable ph = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, old_ph.name());
        inner_subs[old_ph.get()] = ph;
        m.push_back({ph, ins[leaves + i]});
      }
      FunctionPtr inner = f->root_->clone(CloneMethod::Share, inner_subs);
      c = block(inner, m, f->op_name_, f->name_);
    } else if (f->user_) {
      c = f->user_->clone(*f, ins);
      if (!c) throw ValueError("clone: the user function '" + f->op_name_ + "' returned no clone");
      c = c->root_function();
      if (c->outputs_.size() != f->outputs_.size())
        throw ValueError("clone: the clone of user function '" + f->op_name_ + "' has " +
                         std::to_string(c->outputs_.size()) + " outputs instead of " +
                         std::to_string(f->outputs_.size()));
    } else {
      c = primitive(f->op_name_, ins, f->attributes_, f->name_);
    }
    cloned[f.get()] = c;
    in_progress.erase(f.get());
    for (size_t i = 0; i < f->outputs_.size() && !f->outputs_alias_inputs_; ++i)
      mapped[f->outputs_[i].get()] = c->outputs()[i];
    return c;
  };
  auto close_loops = [&](FunctionPtr clone) {
    if (back_edges.empty()) return clone;
    std::unordered_map<VariableImpl*, Variable> bind;
    for (auto& [stand_in, original] : back_edges) {
      auto m = mapped.find(original.get());
      if (m == mapped.end()) throw Error("clone: a recurrent loop's output was not cloned");
      bind[stand_in] = m->second;
    }
    return clone->replace_placeholders(bind);
  };
  // The clone lists its arguments as this function does (their clones' uids).
  auto keep_argument_order = [&](FunctionPtr clone) {
    if (!attributes_.count(kArgumentOrderKey)) return clone;
    DictValue::List uids;
    for (const auto& a : arguments()) {
      auto it = mapped.find(a.get());
      uids.push_back(DictValue(it == mapped.end() ? a.uid() : it->second.uid()));
    }
    clone->attributes_[kArgumentOrderKey] = std::move(uids);
    return clone;
  };
  FunctionPtr root = root_function();
  FunctionPtr new_root;
  if (root->outputs_alias_inputs_) {
    std::vector<Variable> outs;
    for (auto& in : root->inputs_) {
      auto sub = mapped.find(in.get());
      if (sub != mapped.end())
        outs.push_back(sub->second);
      else if (in.is_output())
        outs.push_back(clone_fn(in.owner())->outputs()[in.impl()->output_index]);
      else
        outs.push_back(map_leaf(in));
    }
    return keep_argument_order(close_loops(combine(outs, name_)));
  }
  // A substitute for the root's output is the clone itself (CNTK does not clone past
  // a substitution, so the substitute's own graph is kept as it is).
  if (root->outputs_.size() == 1) {
    auto sub = substitutions.find(root->outputs_[0].get());
    if (sub != substitutions.end()) {
      const Variable& s = sub->second;
      if (s.is_output() && s.owner()) return composite(s.owner()->root_function(), name_);
      return combine({s}, name_);
    }
  }
  new_root = clone_fn(root);
  return keep_argument_order(close_loops(composite(new_root, name_)));
}

}  // namespace cntk
