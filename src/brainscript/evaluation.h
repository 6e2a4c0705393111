// Evaluation internals shared by evaluator.cpp (the language) and primitives.cpp (its built-in
// functions): values, lazy thunks, records, arrays, lambdas, and the state of the evaluation in
// progress. Not part of the evaluator's interface (evaluator.h).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "brainscript/evaluator.h"

namespace cntk::brainscript {

// ---------------------------------------------------------------------------------------------
// values

struct Lambda;
struct Array;
using Builtin = std::function<ValuePtr(std::vector<ValuePtr>&, std::map<std::string, ValuePtr>&, const TextLocation&)>;

struct Value {
  enum class Kind { Number, String, Bool, Record, Array, Lambda, Node, Builtin, Network, DynamicAxis } kind;
  double number = 0;
  std::string text;
  bool boolean = false;
  RecordPtr record;
  std::shared_ptr<Array> array;
  std::shared_ptr<Lambda> lambda;
  Variable node;
  std::shared_ptr<Builtin> builtin;
  std::shared_ptr<const Network> network;
  std::string delay_op;  // "PastValue"/"FutureValue": a builtin whose input is read after the call
  // DynamicAxis(): a sequence axis of its own, named after the member that made it (set when
  // first named or used).
  mutable std::optional<Axis> axis;  // values are shared as const; the axis is fixed once, at its first use
  explicit Value(Kind k) : kind(k) {}
};

namespace detail {

inline const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Number: return "number";
    case Value::Kind::String: return "string";
    case Value::Kind::Bool: return "boolean";
    case Value::Kind::Record: return "record";
    case Value::Kind::Array: return "array";
    case Value::Kind::Lambda: return "function";
    case Value::Kind::Node: return "node";
    case Value::Kind::Builtin: return "function";
    case Value::Kind::Network: return "network";
    case Value::Kind::DynamicAxis: return "dynamic axis";
  }
  return "?";
}

inline ValuePtr number(double d) {
  auto v = std::make_shared<Value>(Value::Kind::Number);
  v->number = d;
  return v;
}
inline ValuePtr string_value(std::string s) {
  auto v = std::make_shared<Value>(Value::Kind::String);
  v->text = std::move(s);
  return v;
}
inline ValuePtr boolean(bool b) {
  auto v = std::make_shared<Value>(Value::Kind::Bool);
  v->boolean = b;
  return v;
}
inline ValuePtr node(Variable n) {
  auto v = std::make_shared<Value>(Value::Kind::Node);
  v->node = std::move(n);
  return v;
}
inline ValuePtr builtin(Builtin f) {
  auto v = std::make_shared<Value>(Value::Kind::Builtin);
  v->builtin = std::make_shared<Builtin>(std::move(f));
  return v;
}

[[noreturn]] inline void fail(const std::string& msg, const TextLocation& where) {
  throw ConfigError("evaluation", msg, where);
}

}  // namespace detail

// A lazily computed value, computed once; a value needed while it is being computed is a cycle.
struct Thunk {
  std::function<ValuePtr()> compute;
  ValuePtr value;
  bool busy = false;
  TextLocation location;
  ValuePtr force() {
    if (value) return value;
    if (busy) detail::fail("circular reference (a value needed to compute itself)", location);
    busy = true;
    value = compute();
    busy = false;
    compute = nullptr;
    return value;
  }
};
using ThunkPtr = std::shared_ptr<Thunk>;

inline ThunkPtr ready(ValuePtr v) {
  auto t = std::make_shared<Thunk>();
  t->value = std::move(v);
  return t;
}

struct Record {
  RecordPtr parent;
  std::string path;  // member path for node names ("" at the top)
  std::map<std::string, ThunkPtr> members;
  std::vector<RecordPtr> bases;  // records whose members this one shares (`a with b`)
  const ThunkPtr* find_here(const std::string& name) const {
    auto it = members.find(name);
    return it == members.end() ? nullptr : &it->second;
  }
};

struct Array {
  long long first = 0;
  std::vector<ThunkPtr> items;
};

struct Lambda {
  ExpressionPtr params;  // "()" node
  ExpressionPtr body;
  RecordPtr closure;
};

namespace detail {

// The evaluation in progress (one at a time; evaluate_member resets them).
inline DataType g_dtype = DataType::Float;  // precision of the network being built
inline bool g_sequential = false;           // whether a sequence op was made (the inputs then keep their sequence axis)
inline std::vector<PrecomputedStatistic> g_statistics;  // Mean/InvStdDev nodes made while building it

inline NDShape bs_shape(const std::vector<size_t>& dims) {  // BrainScript (column-major) -> engine shape
  return NDShape(std::vector<int64_t>(dims.rbegin(), dims.rend()));
}

inline Variable to_node(const ValuePtr& v, const TextLocation& where, const std::string& what) {
  if (v->kind == Value::Kind::Node) return v->node;
  if (v->kind == Value::Kind::Number) return Variable::constant(NDShape{}, g_dtype, v->number, "");
  if (v->kind == Value::Kind::Bool) return Variable::constant(NDShape{}, g_dtype, v->boolean ? 1.0 : 0.0, "");
  fail(what + ": node or number expected, got a " + kind_name(v->kind), where);
}

// The operands of one node, each on the first one's sequence axis where they differ
// (primitives.cpp).
std::vector<Variable> on_common_axes(std::vector<Variable> operands);

// The built-in functions by name (primitives.cpp).
using Table = std::map<std::string, Builtin>;
Table builtin_table();
// `new StringFunction [ ... ]`, `new NumericFunction`, `new PrintAction` (primitives.cpp).
ValuePtr new_value_function(const char* cls, std::vector<ValuePtr>& p, const TextLocation& where);
// Calls a BrainScript function value (evaluator.cpp).
ValuePtr call_function(const ValuePtr& f, std::vector<ValuePtr> args, const TextLocation& where);

}  // namespace detail
}  // namespace cntk::brainscript
