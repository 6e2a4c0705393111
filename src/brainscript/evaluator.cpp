// BrainScript evaluator (see evaluator.h).
#include "brainscript/evaluator.h"

#include "brainscript/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "cntk/ops.h"

namespace cntk::brainscript {

using namespace detail;

namespace {

// Every record made by the evaluation in progress. Scopes and closures refer to each other
// (a record's member is a function whose closure is the record), so the records of an
// evaluation form reference cycles: they are broken when it ends (RecordsReleased).
std::vector<std::weak_ptr<Record>> g_records;

RecordPtr new_record() {
  auto r = std::make_shared<Record>();
  g_records.push_back(r);
  return r;
}

// Ends an evaluation: empties the records it made that are still alive. The results the
// API returns (numbers, strings, nodes, networks) refer to no record.
struct RecordsReleased {
  RecordsReleased() { g_records.clear(); }
  ~RecordsReleased() {
    std::vector<std::weak_ptr<Record>> made;
    made.swap(g_records);
    for (auto& w : made)
      if (auto r = w.lock()) {
        r->members.clear();
        r->bases.clear();
        r->parent.reset();
      }
  }
};
// Nodes made with a `tag` (CNTK's node groups: feature, label, criterion, evaluation, output).
std::vector<std::pair<Variable, std::string>> g_tags;

// A delay's input, read once the description is evaluated: recurrences refer to themselves
// through PastValue/FutureValue, so a delay starts on a placeholder that the input replaces.
struct PendingDelay {
  Variable placeholder;
  std::function<ValuePtr()> input;
  TextLocation location;
};
std::vector<PendingDelay> g_pending;

// The positional arguments of the function calls in progress, innermost last.
std::vector<std::vector<ThunkPtr>> g_call_arguments;

// The dynamic axes of a delay's placeholder, before its input is known: those of the data the
// enclosing function calls were given (the innermost argument already computed that is a
// sequence), so that a recurrence over an Input on a DynamicAxis of its own runs along that
// axis; otherwise the default sequence axis.
std::vector<Axis> recurrence_axes() {
  for (auto frame = g_call_arguments.rbegin(); frame != g_call_arguments.rend(); ++frame)
    for (const auto& t : *frame) {
      if (!t->value || t->value->kind != Value::Kind::Node) continue;
      const auto& axes = t->value->node.dynamic_axes();
      const bool known =
          std::none_of(axes.begin(), axes.end(), [](const Axis& a) { return a.name() == "UnknownAxes"; });
      if (axes.size() == 2 && known) return axes;
    }
  return {Axis::default_batch_axis(), Axis::default_dynamic_axis()};
}

// Stateless apart from the recursion depth: thunks and closures outlive any one evaluation
// call, so they use the one shared instance (ev()).
class Evaluator {
 public:
  ValuePtr eval(const ExpressionPtr& e, const RecordPtr& scope, const std::string& path);
  ValuePtr call(const ValuePtr& f, std::vector<ValuePtr> args, std::map<std::string, ValuePtr> named,
                const TextLocation& where, const std::string& path);
  // A call whose arguments are evaluated when the callee first reads them, as in CNTK: a
  // function may hand an argument to PastValue before the argument's own value exists.
  ValuePtr call_lazy(const ValuePtr& f, std::vector<ThunkPtr> args, std::map<std::string, ThunkPtr> named,
                     const TextLocation& where, const std::string& path);
  RecordPtr make_record(const ExpressionPtr& e, const RecordPtr& parent, const std::string& path);

 private:
  static constexpr std::uintptr_t kStackBudget = std::uintptr_t(4) << 20;  // of the usual 8 MB
  int depth_ = 0;
  std::uintptr_t stack_base_ = 0;  // where the outermost eval's frame is
  ValuePtr lookup(const std::string& id, const RecordPtr& scope, const TextLocation& where);
  ValuePtr infix(const std::string& op, const ValuePtr& a, const ValuePtr& b, const TextLocation& where);
  ValuePtr index(const ValuePtr& a, const ValuePtr& i, const TextLocation& where);
  ValuePtr delay(const std::string& op, const ExpressionPtr& call, const RecordPtr& scope);
};

Evaluator& ev() {
  static thread_local Evaluator instance;
  return instance;
}

// Names a node after the member that computed it, as CNTK names nodes by expression path.
ValuePtr named_node(ValuePtr v, const std::string& path) {
  if (v->kind == Value::Kind::Node && !path.empty() && v->node.is_output()) {
    FunctionPtr owner = v->node.owner();
    if (owner && owner->name().empty()) owner->set_name(path);
  } else if (v->kind == Value::Kind::Node && !path.empty() && v->node.is_parameter() && v->node.name().empty()) {
    v->node.impl()->name = path;  // a layer's parameter: its member path, e.g. "h.lstm.W"
  } else if (v->kind == Value::Kind::DynamicAxis && !path.empty() && !v->axis) {
    v->axis = Axis::dynamic(path);  // CNTK named an input's axis after its DynamicAxis node
  }
  return v;
}

RecordPtr Evaluator::make_record(const ExpressionPtr& e, const RecordPtr& parent, const std::string& path) {
  auto r = new_record();
  r->parent = parent;
  r->path = path;
  std::weak_ptr<Record> self = r;
  for (const auto& [name, member] : e->named) {
    auto t = std::make_shared<Thunk>();
    t->location = member.first;
    const std::string member_path = path.empty() ? name : path + "." + name;
    ExpressionPtr expr = member.second;
    t->compute = [expr, self, member_path]() {
      RecordPtr scope = self.lock();
      if (!scope) throw ValueError("BrainScript: a record member was read after its record was freed");
      return named_node(ev().eval(expr, scope, member_path), member_path);
    };
    r->members[name] = t;
  }
  return r;
}

ValuePtr Evaluator::lookup(const std::string& id, const RecordPtr& scope, const TextLocation& where) {
  for (Record* r = scope.get(); r; r = r->parent.get())
    if (const ThunkPtr* t = r->find_here(id)) return (*t)->force();
  fail("unknown identifier '" + id + "'", where);
}

ValuePtr Evaluator::eval(const ExpressionPtr& e, const RecordPtr& scope, const std::string& path) {
  // Unbounded recursion ends in a ConfigError, not a stack overflow: nesting is bounded by
  // depth and by the stack it has used (frames are much larger in sanitizer builds).
  struct Depth {
    int& d;
    explicit Depth(int& depth, std::uintptr_t& base, const TextLocation& where) : d(depth) {
      const char here = 0;
      const auto at = reinterpret_cast<std::uintptr_t>(&here);
      if (++d == 1) base = at;
      const std::uintptr_t used = base > at ? base - at : at - base;
      if (d > 10000 || used > kStackBudget) fail("evaluation nested too deeply (unbounded recursion?)", where);
    }
    ~Depth() { --d; }
  } depth(depth_, stack_base_, e->location);
  const std::string& op = e->op;
  if (op == "d") return number(e->number);
  if (op == "s") return string_value(e->text);
  if (op == "b") return boolean(e->boolean);
  if (op == "id") return lookup(e->id, scope, e->location);
  if (op == "[]") {
    auto v = std::make_shared<Value>(Value::Kind::Record);
    v->record = make_record(e, scope, path);
    return v;
  }
  if (op == "=>") {
    auto v = std::make_shared<Value>(Value::Kind::Lambda);
    v->lambda = std::make_shared<Lambda>(Lambda{e->args[0], e->args[1], scope});
    return v;
  }
  if (op == ".") {
    ValuePtr r = eval(e->args[0], scope, path);
    if (r->kind == Value::Kind::Node && e->id == "dim") {  // a node's number of elements (0 while inferred)
      const NDShape& shape = r->node.shape();
      return number(shape.is_known() ? double(shape.total_size()) : 0);
    }
    if (r->kind != Value::Kind::Record)
      fail(std::string("'.") + e->id + "' applied to a " + kind_name(r->kind), e->location);
    const ThunkPtr* t = r->record->find_here(e->id);
    if (!t) fail("the record has no member '" + e->id + "'", e->location);
    return (*t)->force();
  }
  if (op == "(" || op == "{") {
    ValuePtr f = eval(e->args[0], scope, path);
    if (f->kind == Value::Kind::Builtin && !f->delay_op.empty()) return delay(f->delay_op, e, scope);
    auto deferred = [&scope](const ExpressionPtr& a) {
      auto t = std::make_shared<Thunk>();
      t->location = a->location;
      t->compute = [a, scope]() { return ev().eval(a, scope, ""); };
      return t;
    };
    std::vector<ThunkPtr> args;
    std::map<std::string, ThunkPtr> named;
    for (const auto& a : e->args[1]->args) args.push_back(deferred(a));
    for (const auto& [n, a] : e->args[1]->named) named[n] = deferred(a.second);
    return call_lazy(f, std::move(args), std::move(named), e->location, path);
  }
  if (op == "if") {
    ValuePtr c = eval(e->args[0], scope, "");
    if (c->kind != Value::Kind::Bool) fail("'if' condition must be a boolean", e->args[0]->location);
    return eval(e->args[c->boolean ? 1 : 2], scope, path);
  }
  if (op == "new") {
    ValuePtr arg = eval(e->args[0], scope, "");  // members of the constructed object are named from its root
    ValuePtr cls = lookup("new " + e->id, scope, e->location);  // constructors are library members "new X"
    return call(cls, {arg}, {}, e->location, path);
  }
  if (op == "array") {
    const double a = as_number(eval(e->args[0], scope, ""), "array start");
    const double b = as_number(eval(e->args[1], scope, ""), "array end");
    ValuePtr f = eval(e->args[2], scope, "");
    if (b - a > 1e7) fail("array too large", e->location);
    auto arr = std::make_shared<Array>();
    arr->first = static_cast<long long>(a);
    for (long long i = arr->first; i <= static_cast<long long>(b); ++i) {
      auto t = std::make_shared<Thunk>();
      t->location = e->location;
      const TextLocation where = e->location;
      t->compute = [f, i, where, path]() {
        return ev().call(f, {number(double(i))}, {}, where, path + "[" + std::to_string(i) + "]");
      };
      arr->items.push_back(t);
    }
    auto v = std::make_shared<Value>(Value::Kind::Array);
    v->array = arr;
    return v;
  }
  if (op == ":") {
    auto arr = std::make_shared<Array>();
    for (const auto& a : e->args) {
      ValuePtr item = eval(a, scope, "");
      if (item->kind == Value::Kind::Array && item->array->first == 0) {  // a:b with b an array appends it
        arr->items.insert(arr->items.end(), item->array->items.begin(), item->array->items.end());
      } else {
        arr->items.push_back(ready(item));
      }
    }
    auto v = std::make_shared<Value>(Value::Kind::Array);
    v->array = arr;
    return v;
  }
  if (op == "[") return index(eval(e->args[0], scope, ""), eval(e->args[1], scope, ""), e->location);
  if (op == "-(" || op == "+(" || op == "!(") {
    ValuePtr x = eval(e->args[0], scope, path);
    if (op == "!(") {
      if (x->kind == Value::Kind::Node)
        return node(ops::minus(to_node(number(1), e->location, "'!'"), x->node)->output());
      if (x->kind != Value::Kind::Bool) fail("'!' needs a boolean or a node", e->location);
      return boolean(!x->boolean);
    }
    if (op == "+(") return x;
    if (x->kind == Value::Kind::Number) return number(-x->number);
    return node(ops::negate(to_node(x, e->location, "'-'"))->output());
  }
  if (e->args.size() == 2) {
    // && and || evaluate their right side only when needed.
    ValuePtr a = eval(e->args[0], scope, "");
    if ((op == "&&" || op == "||") && a->kind == Value::Kind::Bool && a->boolean == (op == "||")) return a;
    return infix(op, a, eval(e->args[1], scope, ""), e->location);
  }
  fail("unsupported expression '" + op + "'", e->location);
}

// PastValue (dims, input, timeStep = 1, defaultHiddenActivation = 0.1): CNTK's delay; the
// input is evaluated after the whole description (see PendingDelay).
ValuePtr Evaluator::delay(const std::string& op, const ExpressionPtr& call, const RecordPtr& scope) {
  const ExpressionPtr& params = call->args[1];
  if (params->args.size() != 2) fail(op + " takes (dims, input)", call->location);
  std::map<std::string, double> options = {{"timeStep", 1}, {"defaultHiddenActivation", 0.1}};
  std::optional<Variable> initial_state;  // initialState (a node), when given, replaces defaultHiddenActivation
  for (const auto& [name, value] : params->named) {
    if (name == "initialState") {
      ValuePtr v = eval(value.second, scope, "");
      if (v->kind != Value::Kind::Array || !v->array->items.empty())  // None: not given
        initial_state = to_node(v, value.first, op + " initialState");
      continue;
    }
    if (!options.count(name)) fail(op + " has no optional parameter '" + name + "'", value.first);
    options[name] = as_number(eval(value.second, scope, ""), op + " " + name);
  }
  std::vector<size_t> dims;
  ValuePtr d = eval(params->args[0], scope, "");
  if (d->kind == Value::Kind::Array) {
    for (const auto& t : d->array->items) dims.push_back(size_t(as_number(t->force(), op + " dims")));
  } else {
    dims.push_back(size_t(as_number(d, op + " dims")));
  }
  // Dimensions 0 (CNTK's "inferred") leave the shape to the input that closes the delay.
  const bool inferred = std::all_of(dims.begin(), dims.end(), [](size_t k) { return k == 0; });
  const Variable placeholder =
      Variable::placeholder(inferred ? NDShape::unknown() : bs_shape(dims), recurrence_axes(), "");
  const Variable initial =
      initial_state ? *initial_state : Variable::constant(NDShape{}, g_dtype, options["defaultHiddenActivation"], "");
  const double step = options["timeStep"];
  if (step < 1 || step != std::floor(step)) fail(op + ": timeStep must be a whole number >= 1", call->location);
  Dictionary attrs = {{"offset", DictValue(int64_t(step))}};
  FunctionPtr f = ops::apply(op, {placeholder, initial}, attrs);
  ExpressionPtr input = params->args[1];
  g_pending.push_back({placeholder, [input, scope]() { return ev().eval(input, scope, ""); }, input->location});
  g_sequential = true;
  return node(f->output());
}

ValuePtr Evaluator::index(const ValuePtr& a, const ValuePtr& i, const TextLocation& where) {
  if (a->kind != Value::Kind::Array) fail(std::string("indexing a ") + kind_name(a->kind), where);
  const double d = as_number(i, "array index");
  const long long k = static_cast<long long>(d) - a->array->first;
  if (d != std::floor(d) || k < 0 || k >= static_cast<long long>(a->array->items.size()))
    fail("array index " + std::to_string(static_cast<long long>(d)) + " out of range", where);
  return a->array->items[size_t(k)]->force();
}

ValuePtr Evaluator::infix(const std::string& op, const ValuePtr& a, const ValuePtr& b, const TextLocation& where) {
  using K = Value::Kind;
  if (a->kind == K::Number && b->kind == K::Number) {
    const double x = a->number, y = b->number;
    if (op == "+") return number(x + y);
    if (op == "-") return number(x - y);
    if (op == "*" || op == ".*") return number(x * y);
    if (op == "/") return number(x / y);
    if (op == "%") return number(std::fmod(x, y));
    if (op == "**") return number(std::pow(x, y));
    if (op == "==") return boolean(x == y);
    if (op == "!=") return boolean(x != y);
    if (op == "<") return boolean(x < y);
    if (op == "<=") return boolean(x <= y);
    if (op == ">") return boolean(x > y);
    if (op == ">=") return boolean(x >= y);
  }
  if (a->kind == K::String && b->kind == K::String) {
    if (op == "+") return string_value(a->text + b->text);
    if (op == "==") return boolean(a->text == b->text);
    if (op == "!=") return boolean(a->text != b->text);
    if (op == "<") return boolean(a->text < b->text);
    if (op == ">") return boolean(a->text > b->text);
  }
  if (a->kind == K::Bool && b->kind == K::Bool) {
    if (op == "&&") return boolean(a->boolean && b->boolean);
    if (op == "||") return boolean(a->boolean || b->boolean);
    if (op == "==") return boolean(a->boolean == b->boolean);
    if (op == "!=") return boolean(a->boolean != b->boolean);
  }
  if (op == "with" && a->kind == K::Record && b->kind == K::Record) {
    // Record extension: the members of both, b's where both have one; each member keeps its scope.
    auto r = new_record();
    r->parent = b->record->parent;
    r->bases = {a->record, b->record};
    r->members = a->record->members;
    for (const auto& [name, t] : b->record->members) r->members[name] = t;
    auto v = std::make_shared<Value>(K::Record);
    v->record = r;
    return v;
  }
  if (op == "<<" && a->kind == K::Array && b->kind == K::Number) {  // the array without its first b items
    auto out = std::make_shared<Array>();
    const auto& items = a->array->items;
    const double n = std::max(b->number, 0.0);
    if (n < double(items.size())) out->items.assign(items.begin() + ptrdiff_t(n), items.end());
    auto v = std::make_shared<Value>(K::Array);
    v->array = out;
    return v;
  }
  if (a->kind == K::Node || b->kind == K::Node) {
    const auto operands = on_common_axes({to_node(a, where, "'" + op + "'"), to_node(b, where, "'" + op + "'")});
    const Variable &x = operands[0], &y = operands[1];
    // Comparisons and logic on nodes give 0/1 values, as CNTK's Less, Equal, And, ... nodes.
    static const std::map<std::string, std::string> node_ops = {
        {"<", "Less"},   {"<=", "LessEqual"}, {">", "Greater"}, {">=", "GreaterEqual"},
        {"==", "Equal"}, {"!=", "NotEqual"},  {"&&", "And"},    {"||", "Or"}};
    if (auto it = node_ops.find(op); it != node_ops.end()) return node(ops::apply(it->second, {x, y})->output());
    if (op == "+") return node(ops::plus(x, y)->output());
    if (op == "-") return node(ops::minus(x, y)->output());
    if (op == ".*") return node(ops::element_times(x, y)->output());
    if (op == "/") return node(ops::element_divide(x, y)->output());
    if (op == "*") {
      if (a->kind == K::Number || b->kind == K::Number) return node(ops::element_times(x, y)->output());
      return node(ops::times(y, x)->output());  // column-major A*B is the engine's times(B, A)
    }
  }
  fail(std::string("operator '") + op + "' is not defined for a " + kind_name(a->kind) + " and a " + kind_name(b->kind),
       where);
}

ValuePtr Evaluator::call(const ValuePtr& f, std::vector<ValuePtr> args, std::map<std::string, ValuePtr> named,
                         const TextLocation& where, const std::string& path) {
  std::vector<ThunkPtr> arg_thunks;
  std::map<std::string, ThunkPtr> named_thunks;
  for (auto& a : args) arg_thunks.push_back(ready(std::move(a)));
  for (auto& [n, a] : named) named_thunks[n] = ready(std::move(a));
  return call_lazy(f, std::move(arg_thunks), std::move(named_thunks), where, path);
}

ValuePtr Evaluator::call_lazy(const ValuePtr& f, std::vector<ThunkPtr> args, std::map<std::string, ThunkPtr> named,
                              const TextLocation& where, const std::string& path) {
  if (f->kind == Value::Kind::Builtin) {
    if (!f->builtin) fail(f->delay_op + " must be called directly (its input is read after the description)", where);
    std::vector<ValuePtr> values;
    std::map<std::string, ValuePtr> named_values;
    for (const auto& a : args) values.push_back(a->force());
    for (const auto& [n, a] : named) named_values[n] = a->force();
    ValuePtr result = named_node((*f->builtin)(values, named_values, where), path);
    if (auto tag = named_values.find("tag"); tag != named_values.end() && result->kind == Value::Kind::Node)
      g_tags.emplace_back(result->node, as_string(tag->second, "tag"));
    return result;
  }
  if (f->kind != Value::Kind::Lambda) fail(std::string("a ") + kind_name(f->kind) + " is not a function", where);
  const Lambda& l = *f->lambda;
  auto scope = new_record();
  scope->parent = l.closure;
  scope->path = path;
  if (args.size() != l.params->args.size())
    fail("function expects " + std::to_string(l.params->args.size()) + " positional arguments, got " +
             std::to_string(args.size()),
         where);
  for (size_t i = 0; i < args.size(); ++i) scope->members[l.params->args[i]->id] = args[i];
  // Every function takes a `tag` (CNTK's library declared one on each): it tags the result.
  ThunkPtr tag;
  if (auto it = named.find("tag"); it != named.end() && !l.params->named.count("tag")) {
    tag = it->second;
    named.erase(it);
  }
  for (const auto& [n, v] : named)
    if (!l.params->named.count(n)) fail("function has no optional parameter '" + n + "'", where);
  for (const auto& [n, def] : l.params->named) {
    auto it = named.find(n);
    if (it != named.end()) {
      scope->members[n] = it->second;
    } else {
      auto t = std::make_shared<Thunk>();
      t->location = def.first;
      // A default sees the other parameters (CNTK's library writes `inputDim = x.dim`).
      ExpressionPtr expr = def.second;
      std::weak_ptr<Record> params = scope;
      t->compute = [expr, params]() {
        RecordPtr in = params.lock();
        if (!in) throw ValueError("BrainScript: a default parameter value was read after its call ended");
        return ev().eval(expr, in, "");
      };
      scope->members[n] = t;
    }
  }
  g_call_arguments.push_back(args);
  struct Popped {
    ~Popped() { g_call_arguments.pop_back(); }
  } popped;
  ValuePtr result = named_node(eval(l.body, scope, path), path);
  if (tag && result->kind == Value::Kind::Node) g_tags.emplace_back(result->node, as_string(tag->force(), "tag"));
  return result;
}

// `new ComputationNetwork [ ... ]`: the record's role members (featureNodes, labelNodes,
// criterionNodes, evaluationNodes, outputNodes: a node or an array of nodes) and its nodes.
ValuePtr new_computation_network(std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>&, const TextLocation& w) {
  if (p.empty() || p[0]->kind != Value::Kind::Record) fail("ComputationNetwork needs a record", w);
  const RecordPtr& r = p[0]->record;
  auto net = std::make_shared<Network>();
  auto nodes_of = [&](const char* role) {
    std::vector<Variable> out;
    const ThunkPtr* t = r->find_here(role);
    if (!t) return out;
    ValuePtr v = (*t)->force();
    if (v->kind == Value::Kind::Array) {
      for (const auto& item : v->array->items) out.push_back(as_node(item->force(), role));
    } else {
      out.push_back(as_node(v, role));
    }
    return out;
  };
  net->features = nodes_of("featureNodes");
  net->labels = nodes_of("labelNodes");
  net->criteria = nodes_of("criterionNodes");
  net->evaluations = nodes_of("evaluationNodes");
  net->outputs = nodes_of("outputNodes");
  static const std::set<std::string> roles = {"featureNodes", "labelNodes", "criterionNodes", "evaluationNodes",
                                              "outputNodes"};
  for (const auto& [name, thunk] : r->members) {
    ValuePtr v = thunk->force();
    if (v->kind != Value::Kind::Node || roles.count(name)) continue;
    net->nodes[name] = v->node;
    // Inputs and parameters take their member's name (ops are named as their functions are made).
    const Variable& var = v->node;
    if ((var.is_input() || var.is_parameter() || var.is_constant()) && var.name().empty()) var.impl()->name = name;
  }
  // Tagged nodes join their group (CNTK's legacy spellings "criteria" and "eval" included).
  const std::map<std::string, std::vector<Variable>*> groups = {
      {"feature", &net->features},  {"label", &net->labels},           {"criterion", &net->criteria},
      {"criteria", &net->criteria}, {"evaluation", &net->evaluations}, {"eval", &net->evaluations},
      {"output", &net->outputs}};
  for (const auto& [var, tag] : g_tags) {
    auto group = groups.find(tag);
    if (group == groups.end()) continue;  // other tags mark nothing for training
    auto& nodes = *group->second;
    if (std::find(nodes.begin(), nodes.end(), var) == nodes.end()) nodes.push_back(var);
  }
  std::vector<Variable> roots;
  for (const auto* role : {&net->criteria, &net->evaluations, &net->outputs})
    roots.insert(roots.end(), role->begin(), role->end());
  if (roots.empty()) {  // no roles: every node member is a root, as CNTK built its networks
    for (const auto& [name, var] : net->nodes) roots.push_back(var);
    if (roots.empty()) fail("the network has no criterionNodes, evaluationNodes or outputNodes", w);
  }
  net->model = Function::combine(roots);
  // Close the recurrences: each delay's placeholder becomes its input (which may add delays).
  std::unordered_map<VariableImpl*, Variable> closing;
  while (!g_pending.empty()) {
    PendingDelay d = std::move(g_pending.back());
    g_pending.pop_back();
    ValuePtr in = d.input();
    if (in->kind != Value::Kind::Node) fail("a delay's input must be a node", d.location);
    closing[d.placeholder.get()] = in->node;
  }
  if (!closing.empty()) net->model->replace_placeholders(closing);
  if (!g_sequential) {
    // No sequence op: the inputs lose their sequence axis, so that each sample is its own
    // sequence-free entry of the batch (and v1 files record no sequence axis).
    std::unordered_map<VariableImpl*, Variable> batch_inputs;
    for (const auto& in : net->model->arguments())
      if (in.dynamic_axes().size() == 2)
        batch_inputs[in.get()] = Variable::input(in.shape(), in.dtype(), in.is_sparse(), in.needs_gradient(),
                                                 {Axis::default_batch_axis()}, in.name());
    if (!batch_inputs.empty()) {
      FunctionPtr model = net->model->clone(CloneMethod::Share, batch_inputs);
      auto remap = [&](Variable& v) {
        auto it = batch_inputs.find(v.get());
        if (it != batch_inputs.end()) v = it->second;
      };
      std::vector<Variable> outs = model->outputs();
      size_t k = 0;
      for (auto* role : {&net->criteria, &net->evaluations, &net->outputs})
        for (auto& v : *role) v = outs.at(k++);
      for (auto* role : {&net->features, &net->labels})
        for (auto& v : *role) remap(v);
      for (auto& stat : g_statistics) remap(stat.input);
      for (auto it = net->nodes.begin(); it != net->nodes.end();) {
        remap(it->second);
        if (it->second.is_output()) {  // an inner node: its counterpart in the clone, by name
          auto found = model->find_all_with_name(it->first);
          if (found.empty()) {
            it = net->nodes.erase(it);
            continue;
          }
          it->second = found[0]->output();
        }
        ++it;
      }
      net->model = model;
    }
  }
  net->statistics = std::move(g_statistics);
  g_statistics.clear();
  g_tags.clear();
  auto v = std::make_shared<Value>(Value::Kind::Network);
  v->network = net;
  return v;
}

RecordPtr global_scope(const EvaluationOptions& options) {
  auto g = new_record();
  // The primitives are also members of `__primitives`, for descriptions whose member names
  // shadow them (SimpleNetworkBuilder's node "CrossEntropyWithSoftmax").
  auto primitives = std::make_shared<Value>(Value::Kind::Record);
  primitives->record = new_record();
  for (auto& [name, f] : builtin_table()) {
    g->members[name] = ready(builtin(f));
    primitives->record->members[name] = g->members[name];
  }
  g->members["__primitives"] = ready(primitives);
  g->members["new ComputationNetwork"] = ready(builtin(new_computation_network));
  g->members["new NDLComputationNetwork"] = g->members["new ComputationNetwork"];
  for (const char* cls : {"StringFunction", "NumericFunction", "PrintAction"})
    g->members[std::string("new ") + cls] =
        ready(builtin([cls](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>&, const TextLocation& w) {
          return new_value_function(cls, p, w);
        }));
  for (const char* op : {"PastValue", "FutureValue"}) {
    auto d = std::make_shared<Value>(Value::Kind::Builtin);
    d->delay_op = op;
    g->members[op] = ready(d);
  }
  return g;
}

}  // namespace

ValuePtr detail::call_function(const ValuePtr& f, std::vector<ValuePtr> args, const TextLocation& where) {
  return ev().call(f, std::move(args), {}, where, "");
}

void set_dropout_rate(const FunctionPtr& model, double rate) {
  if (rate < 0 || rate >= 1) throw ValueError("dropoutRate must be in [0, 1), got " + std::to_string(rate));
  for (const auto& f : model->topological_order())
    if (f->op_name() == "Dropout") f->mutable_attributes()["dropoutRate"] = DictValue(rate);
}

double as_number(const ValuePtr& v, const std::string& what) {
  if (v->kind != Value::Kind::Number) throw ValueError(what + ": number expected, got a " + kind_name(v->kind));
  return v->number;
}
const std::string& as_string(const ValuePtr& v, const std::string& what) {
  if (v->kind != Value::Kind::String) throw ValueError(what + ": string expected, got a " + kind_name(v->kind));
  return v->text;
}
Variable as_node(const ValuePtr& v, const std::string& what) {
  if (v->kind != Value::Kind::Node) throw ValueError(what + ": node expected, got a " + kind_name(v->kind));
  return v->node;
}
std::shared_ptr<const Network> as_network(const ValuePtr& v, const std::string& what) {
  if (v->kind != Value::Kind::Network) throw ValueError(what + ": network expected, got a " + kind_name(v->kind));
  return v->network;
}

namespace {

// Evaluates member `name` of `members` and hands its value to `use` while the evaluation's
// records still live (they are released when it ends).
template <typename Use>
auto with_member(const ExpressionPtr& members, const std::string& name, const EvaluationOptions& options, Use use) {
  RecordsReleased release;
  g_dtype = options.dtype;
  g_statistics.clear();
  g_pending.clear();
  g_tags.clear();
  g_sequential = false;
  // The library's members are in scope of the evaluated record (CNTK includes cntk.core.bs first).
  static const ExpressionPtr library = parse_record(core_library_source(), "cntk.core.bs");
  RecordPtr global = global_scope(options);
  RecordPtr lib = ev().make_record(library, global, "");
  for (auto& [n, t] : lib->members) global->members[n] = t;
  for (const auto& [n, v] : options.given_nodes) global->members[n] = ready(node(v));
  RecordPtr top = ev().make_record(members, global, "");
  const ThunkPtr* t = top->find_here(name);
  if (!t) throw ValueError("BrainScript: no member '" + name + "'");
  return use((*t)->force());
}

// The nodes of `v` by their member paths from `path` (a record's members starting with "__"
// are its own workings, not its nodes).
void collect_nodes(const ValuePtr& v, const std::string& path, std::map<std::string, Variable>& out,
                   std::set<const Record*>& seen) {
  if (v->kind == Value::Kind::Node) {
    out[path] = v->node;
  } else if (v->kind == Value::Kind::Record && seen.insert(v->record.get()).second) {
    for (const auto& [member, thunk] : v->record->members)
      if (member.rfind("__", 0) != 0) collect_nodes(thunk->force(), path + "." + member, out, seen);
  }
}

}  // namespace

ValuePtr evaluate_member(const ExpressionPtr& members, const std::string& name, const EvaluationOptions& options) {
  return with_member(members, name, options, [&](ValuePtr v) {
    if (v->kind == Value::Kind::Record || v->kind == Value::Kind::Array || v->kind == Value::Kind::Lambda)
      throw ValueError("BrainScript: member '" + name + "' is a " + kind_name(v->kind) +
                       "; only numbers, strings, booleans, nodes and networks are returned");
    return v;
  });
}

std::map<std::string, Variable> evaluate_member_nodes(const ExpressionPtr& members, const std::string& name,
                                                      const EvaluationOptions& options) {
  return with_member(members, name, options, [&](const ValuePtr& v) {
    std::map<std::string, Variable> out;
    std::set<const Record*> seen;
    collect_nodes(v, name, out, seen);
    return out;
  });
}

Network build_network(const std::string& source, const EvaluationOptions& options) {
  const size_t start = source.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || (source[start] != '[' && source[start] != '{' && source[start] != '('))
    throw ValueError("a BrainScript network description must be a record in { } (or [ ]) or an expression in ( )");
  const std::string text =
      "network = " + std::string(source[start] == '(' ? "" : "new ComputationNetwork ") + source.substr(start);
  auto tree = parse_record(text, "BrainScriptNetworkBuilder", options.include_paths);
  return *as_network(evaluate_member(tree, "network", options), "BrainScriptNetworkBuilder");
}

}  // namespace cntk::brainscript
