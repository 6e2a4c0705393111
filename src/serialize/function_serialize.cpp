// Function <-> CNTK's serialized function Dictionary, laid out as CNTK 2.x's
// CompositeFunction/PrimitiveFunction/Variable serialization does (see README.md).
#include <algorithm>
#include <array>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "cntk/serialize.h"
#include "cntk/user_function.h"
#include "ops/op.h"
#include "cntk/legacy_model.h"
#include "serialize/attribute_types.h"

namespace cntk {

namespace {

// CNTK's op numbers live in the op catalogue's schema (OpDef::op_type, ops/op.cpp); these
// are looked up when first used, after the catalogue is registered.
int64_t block_op() {
  static const int64_t n = cntk_op_number("Block");
  return n;
}
int64_t custom_proxy_op() {
  static const int64_t n = cntk_op_number("CustomProxyOp");
  return n;
}
// Ops of the engine that CNTK lacks are written as CustomProxyOp naming the op here.
const char* const kEngineOpKey = "opencntk_op";

// Versions written: accepted by CNTK 2.x readers (Variable 1, PrimitiveFunction up to
// the reader's own, CompositeFunction 2 with random-number state under "state").
constexpr int64_t kVariableVersion = 1;
constexpr int64_t kPrimitiveVersion = 17;
constexpr const char* kUserFunctionType = "UserDefinedFunction";
constexpr const char* kCustomAttributesKey = "customAttributes";

UserFunctionDeserializer& user_function_deserializer() {
  static UserFunctionDeserializer d;
  return d;
}
constexpr int64_t kCompositeVersion = 2;

int64_t op_type_of(const std::string& name) { return cntk_op_number(name); }

// ------------------------------------------------- attribute conversions
//
// The Dictionary writer turns NumPy axis i into CNTK's -i-1 and reverses shapes. What
// is left here: attributes that are not plain axes (reshape bounds, permutations)
// and per-axis lists, which are stored in CNTK's axis order.

// A reshape bound x in [0, rank] (NumPy order; new_leading_axis = rank) as the engine Axis
// that the writer turns into CNTK's bound.
Axis bound_to_cntk(const Axis& x) {
  if (x.static_index() == Axis::kNewLeading) return Axis(-1);  // CNTK Axis(0)
  if (x.static_index() == 0) return Axis::new_leading_axis();  // CNTK's end of the static axes
  return Axis(x.static_index() - 1);                           // CNTK Axis(-x)
}
Axis bound_from_cntk(const Axis& y) {
  if (y.static_index() == Axis::kNewLeading) return Axis(0);
  if (y.static_index() == -1) return Axis::new_leading_axis();
  return Axis(y.static_index() + 1);
}

// A permutation of the last n axes, as CNTK's Python layer reverses it.
std::vector<int64_t> reverse_permutation(const std::vector<int64_t>& p, const std::string& where) {
  int64_t n = int64_t(p.size());
  std::vector<int64_t> q(p.size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = p[size_t(n - 1 - i)];
    if (v < 0) v += n;
    if (v < 0 || v >= n)
      throw ValueError(where + ": permutation element " + std::to_string(p[size_t(n - 1 - i)]) + " is out of range");
    q[size_t(i)] = n - 1 - v;
  }
  return q;
}

DictValue::List reversed(const DictValue::List& l) { return DictValue::List(l.rbegin(), l.rend()); }

// Per-axis attributes the schema declares in NumPy order (AxisOrder::NumPy): the engine keeps
// them as NumPy-order lists (an int or bool alone standing for every axis). CNTK keeps the
// shape-typed ones (convolution's strides, pads, windows, ...) as NDShapes, which the
// Dictionary writer reverses, and the other lists (bool flags, Pad's head and foot) in its own
// axis order. Axis-typed attributes are converted by the Dictionary writer itself.
void per_axis_to_cntk(const std::string& op, const Dictionary& in, Dictionary& a) {
  const OpDef* def = find_op(op);
  if (!def) return;
  for (const AttrSpec& spec : def->attrs) {
    if (spec.order != AxisOrder::NumPy) continue;
    auto it = in.find(spec.key);
    if (it == in.end() || it->second.empty()) continue;
    const DictValue& v = it->second;
    if (spec.type == AttrType::Shape) {
      if (v.is<int64_t>())
        a[spec.key] = NDShape({v.as_int()});
      else if (v.is<std::shared_ptr<DictValue::List>>())
        a[spec.key] = NDShape(v.as_int_list());
    } else if (spec.type == AttrType::BoolList) {
      if (v.is<bool>()) a[spec.key] = DictValue::List{v};
      if (!v.is<std::shared_ptr<DictValue::List>>()) continue;
      DictValue::List l;
      for (auto& e : v.as_list()) l.push_back(DictValue(e.is<bool>() ? e.as_bool() : e.as_int() != 0));
      a[spec.key] = reversed(l);
    } else if (spec.type == AttrType::IntList && v.is<std::shared_ptr<DictValue::List>>()) {
      a[spec.key] = reversed(v.as_list());
    }
  }
}

void per_axis_from_cntk(const std::string& op, const Dictionary& in, Dictionary& a) {
  const OpDef* def = find_op(op);
  if (!def) return;
  for (const AttrSpec& spec : def->attrs) {
    if (spec.order != AxisOrder::NumPy) continue;
    auto it = in.find(spec.key);
    if (it == in.end()) continue;
    const DictValue& v = it->second;
    if (spec.type == AttrType::Shape && v.is<NDShape>()) {
      DictValue::List l;
      for (int64_t d : v.as_shape().dims()) l.push_back(DictValue(d));
      a[spec.key] = l;
    } else if ((spec.type == AttrType::BoolList || spec.type == AttrType::IntList) &&
               v.is<std::shared_ptr<DictValue::List>>()) {
      a[spec.key] = reversed(v.as_list());
    }
  }
}

// Ops whose operands CNTK lists the other way round (OpDef::cntk_swaps_operands).
bool swaps_operands(const std::string& op) {
  const OpDef* def = find_op(op);
  return def && def->cntk_swaps_operands;
}

// Attribute keys that the engine spells otherwise than CNTK (AttrSpec::cntk_key).
void rename_keys(const std::string& op, Dictionary& a, bool to_cntk) {
  const OpDef* def = find_op(op);
  if (!def) return;
  for (const AttrSpec& spec : def->attrs) {
    if (spec.cntk_key.empty()) continue;
    const std::string& from = to_cntk ? spec.key : spec.cntk_key;
    const std::string& to = to_cntk ? spec.cntk_key : spec.key;
    auto it = a.find(from);
    if (it == a.end()) continue;
    DictValue v = it->second;
    a.erase(it);
    a[to] = v;
  }
}

Dictionary attributes_to_cntk(const std::string& op, const Dictionary& in) {
  Dictionary a = in;
  rename_keys(op, a, true);
  if (op == "Reshape") {
    Axis b = in.count("beginAxis") ? in.at("beginAxis").as_axis() : Axis(0);
    Axis e = in.count("endAxis") ? in.at("endAxis").as_axis() : Axis::new_leading_axis();
    // CNTK's begin is the NumPy end, and the reverse.
    a["beginAxis"] = bound_to_cntk(e);
    a["endAxis"] = bound_to_cntk(b);
  } else if (op == "TransposeAxes" && in.count("axisVec")) {
    std::vector<int64_t> p;
    for (auto& ax : in.at("axisVec").as_axis_list()) p.push_back(ax.static_index());
    DictValue::List out;
    for (auto q : reverse_permutation(p, op)) out.push_back(Axis(int(-q - 1)));
    a["axisVec"] = out;
  }
  per_axis_to_cntk(op, in, a);
  return a;
}

Dictionary attributes_from_cntk(const std::string& op, const Dictionary& in) {
  Dictionary a = in;
  rename_keys(op, a, false);
  if (op == "Reshape") {
    if (in.count("beginAxis") && in.count("endAxis")) {
      a["beginAxis"] = bound_from_cntk(in.at("endAxis").as_axis());
      a["endAxis"] = bound_from_cntk(in.at("beginAxis").as_axis());
    } else {
      a.erase("beginAxis");
      a.erase("endAxis");
    }
  } else if (op == "TransposeAxes" && in.count("axisVec")) {
    std::vector<int64_t> q;
    for (auto& ax : in.at("axisVec").as_axis_list()) q.push_back(-int64_t(ax.static_index()) - 1);
    DictValue::List out;
    for (auto p : reverse_permutation(q, op)) out.push_back(Axis(int(p)));
    a["axisVec"] = out;
  }
  per_axis_from_cntk(op, in, a);
  return a;
}

// ------------------------------------------------- engine ops that are CNTK blocks
//
// CNTK builds these from primitives inside a block named after the op. Saving writes
// the same block, so CNTK loads it; loading such a block (ours or CNTK's) gives the
// engine's single primitive back, with the block's attributes.

// Ops that CNTK writes as a block (their schema gives the block).
bool is_block_op(const std::string& op) {
  const OpDef* def = find_op(op);
  return def && def->cntk_block;
}

// ------------------------------------------------------------------ saving

DictValue::List string_list(const std::vector<std::string>& v) {
  DictValue::List l;
  for (auto& s : v) l.push_back(DictValue(s));
  return l;
}

Dictionary variable_dict(const Variable& v) {
  Dictionary d;
  d["version"] = kVariableVersion;
  d["type"] = "Variable";
  d["uid"] = v.uid();
  d["kind"] = int64_t(v.kind());
  d["data_type"] = int64_t(v.dtype());
  DictValue::List axes;
  // The engine lists the batch axis first; CNTK lists the sequence axis first.
  for (auto it = v.dynamic_axes().rbegin(); it != v.dynamic_axes().rend(); ++it) axes.push_back(*it);
  d["dynamic_axis"] = axes;
  d["is_sparse"] = v.is_sparse();
  if (!v.name().empty()) d["name"] = v.name();
  d["needs_gradient"] = v.needs_gradient();
  d["shape"] = v.shape();
  if (v.is_parameter() || v.is_constant()) {
    if (!v.shape().is_known())
      throw ValueError("cannot save " + v.str() + ": its shape " + v.shape().str() +
                       " is not known yet (run the model once or give full shapes)");
    d["value"] = v.value();
  }
  return d;
}

struct Saver {
  DictValue::List inputs, functions;
  Dictionary state;
  std::unordered_set<VariableImpl*> seen_vars;
  std::unordered_set<Function*> seen_fns;
  // Blocks built for ops that CNTK builds as blocks live until the save is done, so
  // that no later function reuses their addresses (seen_fns holds raw pointers).
  std::vector<FunctionPtr> keep_alive;

  void leaf(const Variable& v) {
    if (v.is_output() || !seen_vars.insert(v.get()).second) return;
    inputs.push_back(variable_dict(v));
  }

  void visit_inputs(const FunctionPtr& f) {
    for (auto& in : f->direct_inputs()) {
      if (in.is_output()) {
        FunctionPtr owner = in.owner();
        if (!owner) throw ValueError("cannot save: " + in.str() + " has no owner function");
        emit(owner);
      } else {
        leaf(in);
      }
    }
  }

  // Writes a block function dictionary: `root` is its composite's root function, `keys` its
  // placeholders and `values` what they stand for; `in_uids` are its other inputs (parameters
  // and constants its composite uses directly), listed first as CNTK lists them.
  void write_block(const std::string& uid, const std::string& name, const std::string& op_name, const Dictionary& attrs,
                   const std::string& root, const std::vector<std::string>& keys,
                   const std::vector<std::string>& values, std::vector<std::string> in_uids = {}) {
    Dictionary d;
    d["version"] = kPrimitiveVersion;
    d["type"] = "PrimitiveFunction";
    d["uid"] = uid;
    if (!name.empty()) d["name"] = name;
    in_uids.insert(in_uids.end(), values.begin(), values.end());
    d["inputs"] = string_list(in_uids);
    d["op"] = block_op();
    d["attributes"] = attrs;
    Dictionary comp;
    comp["version"] = kCompositeVersion;
    comp["type"] = "CompositeFunction";
    comp["uid"] = "CompositeFunction_" + uid;
    comp["root"] = root;
    d["block_function_composite"] = comp;
    d["block_function_op_name"] = op_name;
    d["block_function_composite_arguments_map_keys"] = string_list(keys);
    d["block_function_composite_arguments_map_values"] = string_list(values);
    functions.push_back(d);
  }

  // Emits a block: its inner functions first, then the block itself under `uid`.
  void emit_block(const FunctionPtr& b, const std::string& uid, const std::string& name, const Dictionary& attrs) {
    visit_inputs(b);
    FunctionPtr inner = b->block_root();
    FunctionPtr root = inner->root_function();
    emit(root);
    for (auto& [ph, outer] : b->block_arguments_mapping()) leaf(ph);
    std::vector<std::string> in_uids, keys, values;
    for (auto& [ph, outer] : b->block_arguments_mapping()) {
      keys.push_back(ph.uid());
      values.push_back(outer.uid());
    }
    // As CNTK lists a block's inputs: its parameters and constants, then its arguments.
    for (size_t i = 0; i < b->block_leaf_count(); ++i) in_uids.push_back(b->direct_inputs()[i].uid());
    write_block(uid, name, b->op_name(), attrs, root->uid(), keys, values, in_uids);
  }

  // ---------------------------------------------- CNTK compositions written as dictionaries
  //
  // LocalResponseNormalization, Sequence::IsFirst/IsLast, Sequence::Slice and convolutions of
  // reduction rank 0 are blocks in CNTK (Function.cpp) over primitives that the engine lacks
  // (PackedIndex) or does not need; their composites are written here function by function.
  // Attributes are given in the engine's convention and converted as for any function.

  std::vector<Variable> keep_vars;  // leaves made here live until the save is done (seen_vars holds raw pointers)
  int64_t written = 0;

  static std::string out(const std::string& fn_uid) { return fn_uid + "_Output_0"; }
  std::string new_leaf(const Variable& v) {
    keep_vars.push_back(v);
    leaf(v);
    return v.uid();
  }
  std::string scalar_leaf(DataType t, double v) { return new_leaf(Variable::constant(NDArrayView::scalar(t, v), "")); }
  std::string placeholder_like(const Variable& v, const std::string& name = "") {
    return new_leaf(Variable::placeholder(v.shape(), v.dynamic_axes(), name));
  }
  // Writes one primitive of CNTK's and returns its uid.
  std::string write_fn(const std::string& base, const std::string& op, const std::vector<std::string>& ins,
                       const Dictionary& attrs = {}) {
    std::string uid = op + written_suffix(base);
    Dictionary d;
    d["version"] = kPrimitiveVersion;
    d["type"] = "PrimitiveFunction";
    d["uid"] = uid;
    d["inputs"] = string_list(ins);
    d["op"] = op_type_of(op);
    d["attributes"] = attributes_to_cntk(op, attrs);
    functions.push_back(d);
    return uid;
  }
  std::string written_suffix(const std::string& base) { return "_" + base + "_" + std::to_string(written++); }

  // CNTK's ElementDivide block over the outputs a / b.
  std::string write_element_divide(const std::string& base, const std::string& a, const std::string& b,
                                   const Variable& like) {
    std::string pa = placeholder_like(like), pb = placeholder_like(like);
    std::string rec = write_fn(base, "Reciprocal", {pb});
    std::string times = write_fn(base, "ElementTimes", {pa, out(rec)});
    std::string uid = "ElementDivide" + written_suffix(base);
    write_block(uid, "", "ElementDivide", {}, times, {pa, pb}, {a, b});
    return uid;
  }

  // Internal::IsWithin: 1 on the first `offset` steps (offset > 0) or the last -offset steps.
  std::string write_is_within(const std::string& base, const std::string& operand, int64_t offset) {
    std::string zero = scalar_leaf(DataType::Float, 0.0);
    std::string like = write_fn(base, "ReconcileDynamicAxis", {zero, operand});
    std::string one = scalar_leaf(DataType::Float, 1.0);
    Dictionary a;
    a["offset"] = offset > 0 ? offset : -offset;
    return write_fn(base, offset > 0 ? "PastValue" : "FutureValue", {out(like), one}, a);
  }

  static Dictionary reshape_attrs(NDShape shape, int begin, int end) {
    Dictionary a;
    a["newShape"] = shape;
    a["beginAxis"] = Axis(begin);
    a["endAxis"] = Axis(end);
    return a;
  }

  // Returns false when `f` is not one of these ops (or a form CNTK builds otherwise).
  bool emit_cntk_composite(const FunctionPtr& f) {
    const std::string& op = f->op_name();
    const auto& ins = f->direct_inputs();
    const Dictionary& a = f->attributes();
    const std::string& uid = f->uid();
    if (op == "LocalResponseNormalization" && ins.size() == 1) {
      visit_inputs(f);
      const Variable& x = ins[0];
      DataType t = x.dtype();
      int64_t radius = schema_attr_int(*f, "depthRadius");
      double alpha = schema_attr_double(*f, "alpha"), bias = schema_attr_double(*f, "bias");
      double beta = schema_attr_double(*f, "beta");
      // The channels are the first axis here (CNTK's last); like CNTK, a window wider than
      // the channels is cut to them, and alpha is still divided by the full width.
      if (x.shape().rank() < 1 || x.shape()[0] <= 0 || radius < 0)
        throw ValueError("cannot save LocalResponseNormalization " + f->uid() +
                         ": its operand's channel axis (the first) is not known yet");
      int64_t width = 2 * radius + 1, k = std::min(width, x.shape()[0]);
      std::string ph = placeholder_like(x);
      std::string sq = write_fn(uid, "ElementTimes", {ph, ph});
      std::string r1 =
          write_fn(uid, "Reshape", {out(sq)}, reshape_attrs(NDShape{1, NDShape::kInferredDimension}, 0, 1));
      std::string w =
          new_leaf(Variable::constant(NDArrayView::full(t, NDShape{1, k, 1, 1}, alpha / double(width)), ""));
      Dictionary ca;
      ca["strides"] = DictValue::List{DictValue(int64_t(1))};
      ca["sharing"] = DictValue::List{DictValue(true)};
      ca["autoPadding"] = DictValue::List{DictValue(true)};
      ca["lowerPad"] = DictValue::List{DictValue(int64_t(0))};
      ca["upperPad"] = DictValue::List{DictValue(int64_t(0))};
      ca["dilation"] = DictValue::List{DictValue(int64_t(1))};
      ca["transpose"] = false;
      ca["sequential"] = false;
      ca["outputShape"] = DictValue::List{DictValue(int64_t(0))};
      ca["groups"] = int64_t(1);
      ca["maxTempMemSizeInSamples"] = int64_t(0);
      std::string conv = write_fn(uid, "Convolution", {w, out(r1)}, ca);
      std::string r2 = write_fn(uid, "Reshape", {out(conv)}, reshape_attrs(NDShape{NDShape::kInferredDimension}, 0, 2));
      std::string plus = write_fn(uid, "Plus", {scalar_leaf(t, bias), out(r2)});
      std::string log = write_fn(uid, "Log", {out(plus)});
      std::string times = write_fn(uid, "ElementTimes", {scalar_leaf(t, beta), out(log)});
      std::string denom = write_fn(uid, "Exp", {out(times)});
      std::string div = write_element_divide(uid, ph, out(denom), x);
      write_block(uid, f->name(), op, a, div, {ph}, {x.uid()});
      return true;
    }
    if (op == "IsWithin" && ins.size() == 1) {
      int64_t offset = schema_attr_int(*f, "offset");
      if (offset != 1 && offset != -1) return false;  // only is_first / is_last are CNTK blocks
      visit_inputs(f);
      std::string ph = placeholder_like(ins[0], "operand");  // named as CNTK names it
      std::string root = write_is_within(uid, ph, offset);
      write_block(uid, f->name(), offset > 0 ? "Sequence::IsFirst" : "Sequence::IsLast", {}, root, {ph},
                  {ins[0].uid()});
      return true;
    }
    if (op == "SequenceSlice" && ins.size() == 1) {
      int64_t begin = schema_attr_int(*f, "beginIndex"), end = schema_attr_int(*f, "endIndex");
      if (begin == 0 && end == 0) return false;  // CNTK returns the operand itself
      const int64_t far = int64_t(1) << 62;      // beyond any sequence; keeps end - begin in range
      if (begin <= -far || begin >= far || end <= -far || end >= far) return false;
      visit_inputs(f);
      std::string ph = placeholder_like(ins[0], "operand");  // named as CNTK names it
      auto one_minus = [&](const std::string& flags) {
        return write_fn(uid, "Minus", {scalar_leaf(DataType::Float, 1.0), out(flags)});
      };
      auto begin_flags = [&] {
        std::string w = write_is_within(uid, ph, begin);
        return begin > 0 ? one_minus(w) : w;
      };
      auto end_flags = [&] {
        std::string w = write_is_within(uid, ph, end);
        return end > 0 ? w : one_minus(w);
      };
      std::string flags;
      if (begin == 0) {
        flags = end_flags();
      } else if (end == 0) {
        flags = begin_flags();
      } else {
        std::string b = begin_flags(), e = end_flags();
        flags = write_fn(uid, "ElementTimes", {out(b), out(e)});
      }
      int64_t length = end - begin;
      Dictionary wa;
      wa["newSequenceAxisLengthScalingFactor"] = int64_t(length > 0 ? 0 : 1);
      wa["newSequenceAxisLengthAdditiveFactor"] = length;
      std::string where = write_fn(uid, "Where", {out(flags)}, wa);
      std::string index = write_fn(uid, "PackedIndex", {ph, out(where)});
      std::string gather = write_fn(uid, "GatherPacked", {ph, out(index)});
      write_block(uid, f->name(), "Sequence::Slice", {}, gather, {ph}, {ins[0].uid()});
      return true;
    }
    if (op == "Convolution" && ins.size() == 2 && schema_attr_int(*f, "reductionRank") == 0) {
      // CNTK's convolution of reduction rank 0: a block over a convolution of reduction rank 1,
      // with a channel axis of 1 reshaped into the kernel and the operand.
      visit_inputs(f);
      const Variable &kernel = ins[0], &x = ins[1];
      bool transpose = schema_attr_bool(*f, "transpose");
      size_t n = x.shape().rank();
      Dictionary ca = a;
      ca.erase("reductionRank");
      // Per-axis lists that name every spatial axis get the channel axis' entry (CNTK appends
      // it to its column-major list: first in NumPy order).
      if (ca.count("strides") && !ca.at("strides").empty() && !ca.at("strides").is<NDShape>()) {
        std::vector<int64_t> s = ca.at("strides").is<int64_t>() ? std::vector<int64_t>{ca.at("strides").as_int()}
                                                                : ca.at("strides").as_int_list();
        if (s.size() == n) s.insert(s.begin(), 1);
        DictValue::List l;
        for (auto v : s) l.push_back(DictValue(v));
        ca["strides"] = l;
      }
      if (ca.count("autoPadding") && !ca.at("autoPadding").empty()) {
        DictValue::List l;
        if (ca.at("autoPadding").is<bool>())
          l.push_back(ca.at("autoPadding"));
        else if (ca.at("autoPadding").is<std::shared_ptr<DictValue::List>>())
          l = ca.at("autoPadding").as_list();
        if (l.size() == n) l.insert(l.begin(), DictValue(false));
        ca["autoPadding"] = l;
      }
      std::string ph = placeholder_like(x);
      // The kernel (O, k...) takes its channel axis after O (a transposed one: before it).
      int at = transpose ? 0 : 1;
      std::string w = write_fn(uid, "Reshape", {kernel.uid()}, reshape_attrs(NDShape{1}, at, at));
      std::string xr = write_fn(uid, "Reshape", {ph}, reshape_attrs(NDShape{1}, 0, 0));
      std::string conv = write_fn(uid, "Convolution", {out(w), out(xr)}, ca);
      write_block(uid, f->name(), transpose ? "ConvolutionTranspose" : "Convolution", {}, conv, {ph}, {x.uid()},
                  {kernel.uid()});
      return true;
    }
    return false;
  }

  // A user function, laid out as CNTK writes one: the common entries, then what its
  // implementation keeps of it under "user_defined_state".
  void emit_user_function(const FunctionPtr& f) {
    visit_inputs(f);
    Dictionary d;
    d["version"] = kPrimitiveVersion;
    d["type"] = kUserFunctionType;
    d["uid"] = f->uid();
    if (!f->name().empty()) d["name"] = f->name();
    std::vector<std::string> in_uids;
    for (auto& v : f->direct_inputs()) in_uids.push_back(v.uid());
    d["inputs"] = string_list(in_uids);
    d["native"] = false;
    d["user_defined_state"] = f->user_backend()->serialize(*f);
    functions.push_back(d);
  }

  void emit(const FunctionPtr& f) {
    if (!seen_fns.insert(f.get()).second) return;
    if (f->is_composite()) throw ValueError("cannot save: a composite function inside a graph");
    if (f->is_block()) {
      emit_block(f, f->uid(), f->name(), f->attributes());
      return;
    }
    const std::string& op = f->op_name();
    if (f->user_backend()) {
      emit_user_function(f);
      return;
    }
    if (emit_cntk_composite(f)) return;
    if (is_block_op(op)) {
      FunctionPtr b = f->op()->cntk_block(*f);
      keep_alive.push_back(b);
      emit_block(b, f->uid(), f->name(), f->attributes());
      return;
    }
    visit_inputs(f);
    Dictionary d;
    d["version"] = kPrimitiveVersion;
    d["type"] = "PrimitiveFunction";
    d["uid"] = f->uid();
    if (!f->name().empty()) d["name"] = f->name();
    std::vector<std::string> in_uids;
    for (auto& v : f->direct_inputs()) in_uids.push_back(v.uid());
    if (swaps_operands(op) && in_uids.size() == 2) std::swap(in_uids[0], in_uids[1]);
    int64_t type = op_type_of(op);
    Dictionary attrs = attributes_to_cntk(op, f->attributes());
    if (op == "CosDistanceWithNegativeSamples" && in_uids.size() == 2) {
      // CNTK passes the shift and the number of negative samples as two float constants.
      in_uids.push_back(scalar_leaf(DataType::Float, double(schema_attr_int(*f, "shiftWindow"))));
      in_uids.push_back(scalar_leaf(DataType::Float, double(schema_attr_int(*f, "numberOfNegativeSamples"))));
      attrs.erase("shiftWindow");
      attrs.erase("numberOfNegativeSamples");
    }
    d["inputs"] = string_list(in_uids);
    if (type < 0) {
      type = custom_proxy_op();
      d[kEngineOpKey] = op;
    }
    d["op"] = type;
    if (attrs.count("rngSeed")) {
      Dictionary s;
      s["rng_seed"] = attrs.at("rngSeed");
      s["rng_offset"] = attrs.count("rngOffset") ? attrs.at("rngOffset") : DictValue(int64_t(0));
      state[f->uid()] = s;
    }
    // CNTK keeps a function's custom attributes among its attributes.
    if (!f->custom_attributes().empty()) attrs[kCustomAttributesKey] = f->custom_attributes();
    d["attributes"] = attrs;
    functions.push_back(d);
  }
};

// ----------------------------------------------------------------- loading

// Limits on what a loaded graph may hold, so that shape and axis arithmetic stays in range.
constexpr int64_t kMaxDim = int64_t(1) << 40;
constexpr int64_t kMaxElements = int64_t(1) << 48;
constexpr int kMaxStaticAxis = 1 << 20;

struct Loader {
  const std::string& source;
  std::unordered_map<std::string, Variable> vars;
  std::unordered_map<std::string, FunctionPtr> fns;

  [[noreturn]] void fail(const std::string& what) const { throw IOError(source + ": " + what); }

  const DictValue& need(const Dictionary& d, const char* key, const std::string& what) const {
    auto it = d.find(key);
    if (it == d.end()) fail(what + " has no '" + key + "' entry");
    return it->second;
  }
  template <class T>
  const T& typed(const Dictionary& d, const char* key, const std::string& what, const char* type) const {
    const DictValue& v = need(d, key, what);
    if (!v.is<T>()) fail(what + ": '" + key + "' is not a " + type);
    return std::get<T>(v.storage());
  }
  const std::string& str(const Dictionary& d, const char* key, const std::string& what) const {
    return typed<std::string>(d, key, what, "string");
  }
  int64_t integer(const Dictionary& d, const char* key, const std::string& what) const {
    return typed<int64_t>(d, key, what, "number");
  }
  bool boolean(const Dictionary& d, const char* key, const std::string& what) const {
    return typed<bool>(d, key, what, "bool");
  }
  const Dictionary& dict(const DictValue& v, const std::string& what) const {
    if (!v.is<std::shared_ptr<Dictionary>>()) fail(what + " is not a dictionary");
    return v.as_dict();
  }
  const DictValue::List& list(const Dictionary& d, const char* key, const std::string& what) const {
    return *typed<std::shared_ptr<DictValue::List>>(d, key, what, "list");
  }
  std::string name_of(const Dictionary& d) const {
    auto it = d.find("name");
    return it != d.end() && it->second.is<std::string>() ? it->second.as_string() : std::string();
  }
  const Variable& var(const std::string& uid, const std::string& what) const {
    auto it = vars.find(uid);
    if (it == vars.end()) fail(what + " refers to an unknown variable '" + uid + "'");
    return it->second;
  }
  // Recurrent loops: a function inside a loop refers to the output of the loop's delay
  // (PastValue/FutureValue), which comes later in the file. That output stands in as a
  // placeholder until its function is loaded; the placeholders are then replaced.
  std::unordered_map<std::string, Variable> forward_refs;
  std::unordered_map<VariableImpl*, Variable> loop_bindings;
  const Variable& input_var(const std::string& uid, const std::string& what) {
    auto it = vars.find(uid);
    if (it != vars.end()) return it->second;
    auto fr = forward_refs.find(uid);
    if (fr != forward_refs.end()) return fr->second;
    auto pos = uid.rfind("_Output_");
    if (pos == std::string::npos || pos == 0 || pos + 8 >= uid.size())
      fail(what + " refers to an unknown variable '" + uid + "'");
    for (size_t i = pos + 8; i < uid.size(); ++i)
      if (uid[i] < '0' || uid[i] > '9') fail(what + " refers to an unknown variable '" + uid + "'");
    if (forward_refs.size() > 4096) fail("more than 4096 forward references (recurrent loops)");
    Variable ph = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "");
    return forward_refs.emplace(uid, ph).first->second;
  }

  // Dimensions are sizes below 2^40 or a marker (inferred, free, unknown), and the known
  // ones multiply to at most 2^48 elements.
  void check_shape(const NDShape& s, const std::string& what) const {
    if (s.rank() > 64) fail(what + " has " + std::to_string(s.rank()) + " axes (at most 64)");
    int64_t total = 1;
    for (int64_t d : s.dims()) {
      bool marker = d == NDShape::kInferredDimension || d == NDShape::kFreeDimension || d == NDShape::kUnknownDimension;
      if (!marker && (d < 0 || d >= kMaxDim)) fail(what + " has the invalid dimension " + std::to_string(uint64_t(d)));
      if (!marker && d > 0) {
        if (total > kMaxElements / d) fail(what + " has more than 2^48 elements");
        total *= d;
      }
    }
  }
  void check_axis(const Axis& a, const std::string& what) const {
    if (a.is_static() && a.static_index() != Axis::kNewLeading &&
        (a.static_index() > kMaxStaticAxis || a.static_index() < -kMaxStaticAxis))
      fail(what + " has the invalid static axis " + std::to_string(-int64_t(a.static_index()) - 1));
    if (a.is_dynamic() && a.name().empty()) fail(what + " has a dynamic axis without a name");
  }
  // Attribute values the ops will compute with: every shape, axis and integer in range.
  void check_value(const DictValue& v, const std::string& what, int depth = 0) const {
    if (depth > 16) fail(what + " nests too deeply");
    if (v.is<NDShape>()) check_shape(v.as_shape(), what);
    if (v.is<Axis>()) check_axis(v.as_axis(), what);
    if (v.is<int64_t>() && (v.as_int() > kMaxElements || v.as_int() < -kMaxElements))
      fail(what + " holds the out-of-range number " + std::to_string(v.as_int()));
    if (v.is<std::shared_ptr<DictValue::List>>())
      for (auto& e : v.as_list()) check_value(e, what, depth + 1);
    if (v.is<std::shared_ptr<Dictionary>>())
      for (auto& [k, e] : v.as_dict()) check_value(e, what + " '" + k + "'", depth + 1);
  }

  void load_variable(const Dictionary& d) {
    std::string uid = str(d, "uid", "a variable");
    std::string what = "variable '" + uid + "'";
    if (vars.count(uid)) fail("two variables share the uid '" + uid + "'");
    int64_t kind = integer(d, "kind", what);
    int64_t dt = integer(d, "data_type", what);
    if (dt != 1 && dt != 2 && dt != 4 && dt != 5 && dt != 6)
      fail(what + " has the data type " + std::to_string(dt) +
           " (float32, float64, float16, int8 and int16 are supported)");
    DataType dtype = DataType(dt);
    const NDShape& shape = typed<NDShape>(d, "shape", what, "shape");
    check_shape(shape, what);
    std::vector<Axis> axes;
    const auto& al = list(d, "dynamic_axis", what);
    if (al.size() > 2) fail(what + " has " + std::to_string(al.size()) + " dynamic axes (at most 2)");
    for (auto it = al.rbegin(); it != al.rend(); ++it) {
      if (!it->is<Axis>() || !it->as_axis().is_dynamic()) fail(what + ": a dynamic axis is not a dynamic Axis");
      check_axis(it->as_axis(), what);
      axes.push_back(it->as_axis());
    }
    bool sparse = boolean(d, "is_sparse", what);
    bool needs_grad = boolean(d, "needs_gradient", what);
    std::string name = name_of(d);
    Variable v;
    switch (kind) {
      case 0: v = Variable::input(shape, dtype, sparse, needs_grad, axes, name); break;
      case 2:
      case 3: {
        const NDArrayView& value = typed<NDArrayView>(d, "value", what, "tensor");
        if (value.shape() != shape)
          fail(what + " has the shape " + shape.str() + " but its value has the shape " + value.shape().str());
        NDArrayView val = value.dtype() == dtype ? value : value.cast(dtype);
        v = kind == 2 ? Variable::parameter(shape, dtype, val, nullptr, name) : Variable::constant(val, name);
        break;
      }
      case 4: v = Variable::placeholder(shape, axes, name); break;
      default: fail(what + " has the unexpected kind " + std::to_string(kind));
    }
    v.impl()->uid = uid;
    vars[uid] = v;
  }

  // ------------------------------------------------ blocks that load as one engine op
  //
  // LeakyReLU, SELU, ..., LocalResponseNormalization, Sequence::IsFirst/IsLast/Slice and
  // CNTK's convolutions of reduction rank 0 are blocks in the file and one primitive here. Before
  // any function is built, each such block is planned (op, attributes, inputs) and the functions
  // of its composite are set aside: they are not built (some, like PackedIndex, do not exist
  // here).
  struct MappedBlock {
    std::string op;
    Dictionary attrs;
    std::vector<std::string> inputs;  // uids; empty: the block's arguments in order
    bool narrow_conv = false;         // drop the channel entries of a reduction-rank-0 convolution's lists
  };
  std::unordered_map<std::string, MappedBlock> mapped_blocks;
  std::unordered_set<std::string> set_aside;

  static std::string owner_uid(const std::string& output_uid) {
    auto pos = output_uid.rfind("_Output_");
    return pos == std::string::npos ? std::string() : output_uid.substr(0, pos);
  }
  static bool is_block_dict(const Dictionary& fd) {
    auto it = fd.find("op");
    return it != fd.end() && it->second.is<int64_t>() && it->second.as_int() == block_op();
  }
  int64_t op_of(const Dictionary& fd) const {
    auto it = fd.find("op");
    return it != fd.end() && it->second.is<int64_t>() ? it->second.as_int() : -1;
  }

  // The functions of a block's composite: from its root down to the block's own inputs.
  std::vector<const Dictionary*> members_of(const Dictionary& block, const std::string& what,
                                            const std::unordered_map<std::string, const Dictionary*>& by_uid) {
    const Dictionary& comp = dict(need(block, "block_function_composite", what), what + ": block_function_composite");
    std::unordered_set<std::string> stop;
    for (auto& u : list(block, "inputs", what))
      if (u.is<std::string>()) stop.insert(owner_uid(u.as_string()));
    std::vector<const Dictionary*> out;
    std::unordered_set<std::string> seen;
    std::vector<std::string> todo{str(comp, "root", what + ": block_function_composite")};
    while (!todo.empty()) {
      std::string u = std::move(todo.back());
      todo.pop_back();
      auto it = by_uid.find(u);
      if (it == by_uid.end() || stop.count(u) || !seen.insert(u).second) continue;
      const Dictionary& fd = *it->second;
      out.push_back(&fd);
      for (auto& in : list(fd, "inputs", "function '" + u + "'"))
        if (in.is<std::string>() && !owner_uid(in.as_string()).empty()) todo.push_back(owner_uid(in.as_string()));
      if (is_block_dict(fd)) {
        const Dictionary& c = dict(need(fd, "block_function_composite", u), u + ": block_function_composite");
        todo.push_back(str(c, "root", u + ": block_function_composite"));
      }
    }
    return out;
  }

  static bool small_int(const Dictionary& a, const char* key, int64_t& v) {
    auto it = a.find(key);
    if (it == a.end() || !it->second.is<int64_t>()) return false;
    v = it->second.as_int();
    return v > -kMaxElements && v < kMaxElements;
  }

  // sequence.slice's begin and end from its composite: the offsets of its IsWithin delays and
  // the length its Where adds (end - begin).
  void plan_slice(const std::vector<const Dictionary*>& members, const Dictionary& attrs, const std::string& what,
                  MappedBlock& m) {
    int64_t begin = 0, end = 0;
    bool given = small_int(attrs, "beginIndex", begin) && small_int(attrs, "endIndex", end);
    if (!given) {
      std::vector<int64_t> offsets;
      int64_t length = 0;
      bool have_length = false;
      for (auto* fd : members) {
        int64_t op = op_of(*fd);
        if (op != 37 && op != 38 && op != 13) continue;
        const Dictionary& a = dict(need(*fd, "attributes", what), what + ": attributes");
        int64_t v = 0;
        if (op == 13 && small_int(a, "newSequenceAxisLengthAdditiveFactor", v)) length = v, have_length = true;
        if (op != 13 && small_int(a, "offset", v) && v > 0) offsets.push_back(op == 37 ? v : -v);
      }
      if (!have_length || offsets.empty() || offsets.size() > 2)
        fail(what + ": a Sequence::Slice block whose composite is not CNTK's (IsWithin delays and a Where)");
      if (offsets.size() == 1) {
        int64_t o = offsets[0];
        if (o == length)
          begin = 0, end = o;
        else if (-o == length)
          begin = o, end = 0;
        else
          fail(what + ": the Sequence::Slice block's offsets do not match its length");
      } else if (offsets[1] - offsets[0] == length) {
        begin = offsets[0], end = offsets[1];
      } else if (offsets[0] - offsets[1] == length) {
        begin = offsets[1], end = offsets[0];
      } else {
        fail(what + ": the Sequence::Slice block's offsets do not match its length");
      }
    }
    m.op = "SequenceSlice";
    m.attrs["beginIndex"] = begin;
    m.attrs["endIndex"] = end;
  }

  // CNTK's convolution of reduction rank 0: Convolution(Reshape(kernel), Reshape(argument)).
  bool plan_convolution(const Dictionary& block, const std::string& what,
                        const std::unordered_map<std::string, const Dictionary*>& by_uid, MappedBlock& m) {
    const Dictionary& comp = dict(need(block, "block_function_composite", what), what + ": block_function_composite");
    auto find_fn = [&](const std::string& uid) -> const Dictionary* {
      auto it = by_uid.find(uid);
      return it == by_uid.end() ? nullptr : it->second;
    };
    const Dictionary* conv = find_fn(str(comp, "root", what));
    if (!conv || op_of(*conv) != 33) return false;
    const auto& ci = list(*conv, "inputs", what);
    if (ci.size() != 2 || !ci[0].is<std::string>() || !ci[1].is<std::string>()) return false;
    const Dictionary* wr = find_fn(owner_uid(ci[0].as_string()));
    const Dictionary* xr = find_fn(owner_uid(ci[1].as_string()));
    if (!wr || !xr || op_of(*wr) != 16 || op_of(*xr) != 16) return false;
    const auto &wi = list(*wr, "inputs", what), &xi = list(*xr, "inputs", what);
    const auto& keys = list(block, "block_function_composite_arguments_map_keys", what);
    const auto& values = list(block, "block_function_composite_arguments_map_values", what);
    if (wi.size() != 1 || xi.size() != 1 || keys.size() != 1 || values.size() != 1 || !wi[0].is<std::string>() ||
        !xi[0].is<std::string>() || !keys[0].is<std::string>() || !values[0].is<std::string>() ||
        xi[0].as_string() != keys[0].as_string())
      return false;
    const Dictionary& raw = dict(need(*conv, "attributes", what), what + ": attributes");
    for (auto& [k, v] : raw) check_value(v, what + ": attribute '" + k + "'");
    m.op = "Convolution";
    m.attrs = attributes_from_cntk("Convolution", raw);
    m.attrs["reductionRank"] = int64_t(0);
    m.inputs = {wi[0].as_string(), values[0].as_string()};
    m.narrow_conv = true;
    return true;
  }

  void plan_blocks(const DictValue::List& functions) {
    std::unordered_map<std::string, const Dictionary*> by_uid;
    for (auto& v : functions) {
      const Dictionary& fd = dict(v, "an entry of 'primitive_functions'");
      auto it = fd.find("uid");
      if (it != fd.end() && it->second.is<std::string>()) by_uid.emplace(it->second.as_string(), &fd);
    }
    for (auto& v : functions) {
      const Dictionary& fd = dict(v, "an entry of 'primitive_functions'");
      if (!is_block_dict(fd)) continue;
      std::string uid = str(fd, "uid", "a function");
      std::string what = "block function '" + uid + "'";
      std::string op = str(fd, "block_function_op_name", what);
      const Dictionary& raw = dict(need(fd, "attributes", what), what + ": attributes");
      MappedBlock m;
      if (is_block_op(op) || op == "LocalResponseNormalization") {
        if (!find_op(op)) continue;
        for (auto& [k, a] : raw) check_value(a, what + ": attribute '" + k + "'");
        m.op = op;
        m.attrs = attributes_from_cntk("", raw);
      } else if (op == "Sequence::IsFirst" || op == "Sequence::IsLast") {
        m.op = "IsWithin";
        m.attrs["offset"] = int64_t(op == "Sequence::IsFirst" ? 1 : -1);
      } else if (op == "Sequence::Slice") {
        plan_slice(members_of(fd, what, by_uid), raw, what, m);
      } else if (op == "Convolution" || op == "ConvolutionTranspose") {
        if (!plan_convolution(fd, what, by_uid, m)) continue;
      } else {
        continue;
      }
      for (auto* member : members_of(fd, what, by_uid)) set_aside.insert(member->at("uid").as_string());
      mapped_blocks[uid] = std::move(m);
    }
  }

  // A reduction-rank-0 convolution's strides and auto padding as the engine keeps them: without
  // the entry CNTK adds for the channel axis.
  static void narrow_conv_lists(Dictionary& a, const Variable& x) {
    if (!x.shape().is_known()) return;
    size_t n = x.shape().rank();
    for (const char* k : {"strides", "autoPadding"}) {
      auto it = a.find(k);
      if (it == a.end() || !it->second.is<std::shared_ptr<DictValue::List>>()) continue;
      DictValue::List l = it->second.as_list();
      if (l.size() == n + 1) {
        l.erase(l.begin());
        it->second = l;
      }
    }
  }

  FunctionPtr load_block(const Dictionary& d, const std::string& uid, const Dictionary& attrs) {
    std::string what = "block function '" + uid + "'";
    const Dictionary& comp = dict(need(d, "block_function_composite", what), what + ": block_function_composite");
    std::string root_uid = str(comp, "root", what + ": block_function_composite");
    std::string op = str(d, "block_function_op_name", what);
    const auto& keys = list(d, "block_function_composite_arguments_map_keys", what);
    const auto& values = list(d, "block_function_composite_arguments_map_values", what);
    if (keys.size() != values.size())
      fail(what + " maps " + std::to_string(keys.size()) + " placeholders to " + std::to_string(values.size()) +
           " variables");
    std::vector<std::pair<Variable, Variable>> mapping;
    std::vector<Variable> outer;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!keys[i].is<std::string>() || !values[i].is<std::string>())
        fail(what + ": argument map entries must be uids");
      const Variable& ph = var(keys[i].as_string(), what);
      if (!ph.is_placeholder()) fail(what + ": argument map key '" + keys[i].as_string() + "' is not a placeholder");
      mapping.push_back({ph, input_var(values[i].as_string(), what)});
      outer.push_back(mapping.back().second);
    }
    std::string name = name_of(d);
    auto mb = mapped_blocks.find(uid);
    if (mb != mapped_blocks.end()) {
      MappedBlock& m = mb->second;
      std::vector<Variable> ins;
      if (m.inputs.empty()) ins = outer;
      for (auto& u : m.inputs) ins.push_back(input_var(u, what));
      if (m.narrow_conv && ins.size() == 2) narrow_conv_lists(m.attrs, ins[1]);
      return Function::primitive(m.op, ins, m.attrs, name);
    }
    auto rit = fns.find(root_uid);
    if (rit == fns.end()) fail(what + " refers to an unknown root function '" + root_uid + "'");
    FunctionPtr inner = Function::composite(rit->second);
    // A recurrent loop inside the block: its delays are loaded by now, so close the loop
    // before the block checks that its only placeholders are its arguments.
    std::unordered_map<VariableImpl*, Variable> closed;
    for (auto& ph : inner->placeholders()) {
      auto b = loop_bindings.find(ph.get());
      if (b != loop_bindings.end()) closed.insert(*b);
    }
    if (!closed.empty()) inner = inner->replace_placeholders(closed);
    return Function::block(inner, mapping, op, name);
  }

  static bool is_user_function_dict(const Dictionary& d) {
    auto it = d.find("type");
    return it != d.end() && it->second.is<std::string>() && it->second.as_string() == kUserFunctionType;
  }

  FunctionPtr load_user_function(const Dictionary& d) {
    std::string uid = str(d, "uid", "a function");
    std::string what = "user function '" + uid + "'";
    if (fns.count(uid)) fail("two functions share the uid '" + uid + "'");
    if (d.count("native") && d.at("native").is<bool>() && d.at("native").as_bool())
      throw NotImplementedError(source + ": " + what +
                                " is a native (C++) user function; OpenCNTK cannot load "
                                "the libraries that implement them");
    const Dictionary& state = dict(need(d, "user_defined_state", what), what + ": user_defined_state");
    std::vector<Variable> inputs;
    for (auto& u : list(d, "inputs", what)) {
      if (!u.is<std::string>()) fail(what + ": an input is not a uid");
      inputs.push_back(input_var(u.as_string(), what));
    }
    if (!user_function_deserializer()) fail(what + " cannot be rebuilt: no user function deserializer is registered");
    FunctionPtr f = user_function_deserializer()(inputs, name_of(d), state);
    if (!f) fail(what + " was not rebuilt: its deserializer returned nothing");
    return f->root_function();
  }

  FunctionPtr load_function(const Dictionary& d) {
    if (is_user_function_dict(d)) return load_user_function(d);
    std::string uid = str(d, "uid", "a function");
    std::string what = "function '" + uid + "'";
    if (fns.count(uid)) fail("two functions share the uid '" + uid + "'");
    int64_t type = integer(d, "op", what);
    const Dictionary& raw = dict(need(d, "attributes", what), what + ": attributes");
    for (auto& [k, v] : raw)
      if (k != "rngSeed" && k != "rngOffset") check_value(v, what + ": attribute '" + k + "'");
    std::string op = cntk_op_name(type);
    if (op.empty()) fail(what + " has the unknown op type " + std::to_string(type));
    if (type == block_op()) return load_block(d, uid, attributes_from_cntk("", raw));
    if (type == custom_proxy_op() && d.count(kEngineOpKey)) op = str(d, kEngineOpKey, what);
    if (op == "Sigmoid") op = "StableSigmoid";  // the same function; the engine has one op for it
    std::vector<Variable> inputs;
    for (auto& u : list(d, "inputs", what)) {
      if (!u.is<std::string>()) fail(what + ": an input is not a uid");
      inputs.push_back(input_var(u.as_string(), what));
    }
    if (swaps_operands(op) && inputs.size() == 2) std::swap(inputs[0], inputs[1]);
    Dictionary attrs = attributes_from_cntk(op, raw);
    if (op == "CosDistanceWithNegativeSamples" && inputs.size() == 4) {
      // CNTK's form: the shift and the number of negative samples are two scalar constants.
      const char* keys[2] = {"shiftWindow", "numberOfNegativeSamples"};
      for (size_t i = 0; i < 2; ++i) {
        const Variable& c = inputs[2 + i];
        if (!c.is_constant() || c.value().numel() != 1)
          fail(what + ": CosDistanceWithNegativeSamples takes its " + keys[i] + " as a scalar constant");
        double v = c.value().item();
        if (!(v >= 0 && v < double(kMaxElements)))
          fail(what + ": CosDistanceWithNegativeSamples has the " + keys[i] + " " + std::to_string(v));
        attrs[keys[i]] = int64_t(v);
      }
      inputs.resize(2);
    }
    // Before PrimitiveFunction version 4, batch normalization had no running sample count
    // input; CNTK adds one holding 0 when it loads such a model, and so does this loader.
    int64_t version = d.count("version") && d.at("version").is<int64_t>() ? d.at("version").as_int() : 0;
    if (op == "BatchNormalization" && version < 4 && inputs.size() == 5) {
      Variable count = Variable::constant(NDArrayView::scalar(DataType::Float, 0.0), "");
      count.impl()->uid = "BatchNormSampleCount" + uid;
      inputs.push_back(count);
    }
    if (op != "Combine" && !find_op(op))
      throw NotImplementedError(source + ": " + what + " uses the op '" + op + "' (PrimitiveOpType " +
                                std::to_string(type) + "), which OpenCNTK does not implement yet");
    Dictionary custom;
    auto c = attrs.find(kCustomAttributesKey);
    if (c != attrs.end()) {
      if (c->second.is<std::shared_ptr<Dictionary>>()) custom = c->second.as_dict();
      attrs.erase(c);
    }
    FunctionPtr f = Function::primitive(op, std::move(inputs), attrs, name_of(d));
    f->custom_attributes() = std::move(custom);
    return f;
  }

  FunctionPtr load(const Dictionary& d) {
    if (d.count("type") && (!d.at("type").is<std::string>() || d.at("type").as_string() != "CompositeFunction"))
      fail("not a CNTK model: the top-level type is not 'CompositeFunction'");
    for (const char* k : {"inputs", "primitive_functions", "root"})
      if (!d.count(k)) fail("not a CNTK model: the '" + std::string(k) + "' entry is missing");
    for (auto& v : list(d, "inputs", "the model")) load_variable(dict(v, "an entry of 'inputs'"));
    Dictionary state;
    if (d.count("state") && d.at("state").is<std::shared_ptr<Dictionary>>()) state = d.at("state").as_dict();
    const auto& functions = list(d, "primitive_functions", "the model");
    plan_blocks(functions);
    for (auto& v : functions) {
      const Dictionary& fd = dict(v, "an entry of 'primitive_functions'");
      if (fd.count("uid") && fd.at("uid").is<std::string>() && set_aside.count(fd.at("uid").as_string())) continue;
      FunctionPtr f = load_function(fd);
      std::string uid = fd.at("uid").as_string();
      fns[uid] = f;
      if (state.count(uid) && state.at(uid).is<std::shared_ptr<Dictionary>>()) {
        const Dictionary& s = state.at(uid).as_dict();
        if (s.count("rng_seed")) f->mutable_attributes()["rngSeed"] = s.at("rng_seed");
        if (s.count("rng_offset")) f->mutable_attributes()["rngOffset"] = s.at("rng_offset");
      }
      if (f->op_name() == "Combine") continue;  // its outputs are its inputs
      auto outs = f->outputs();
      for (size_t i = 0; i < outs.size(); ++i) {
        std::string ou = uid + "_Output_" + std::to_string(i);
        if (vars.count(ou)) fail("two variables share the uid '" + ou + "'");
        vars[ou] = outs[i];
        auto fr = forward_refs.find(ou);
        if (fr != forward_refs.end()) {
          loop_bindings[fr->second.get()] = outs[i];
          forward_refs.erase(fr);
        }
      }
    }
    if (!forward_refs.empty()) fail("a function refers to an unknown variable '" + forward_refs.begin()->first + "'");
    std::string root = str(d, "root", "the model");
    auto it = fns.find(root);
    if (it == fns.end()) fail("the root function '" + root + "' is not among the primitive functions");
    FunctionPtr f = Function::composite(it->second, name_of(d));
    if (!loop_bindings.empty()) {
      // Only the stand-ins that the model's graph reaches (functions the root does not use are dropped).
      std::unordered_map<VariableImpl*, Variable> reached;
      for (auto& ph : f->placeholders()) {
        auto b = loop_bindings.find(ph.get());
        if (b != loop_bindings.end()) reached.insert(*b);
      }
      if (!reached.empty()) {
        try {
          f = f->replace_placeholders(reached);
        } catch (...) {
          // A loop whose shapes do not check is left closed, its functions holding each other:
          // let go of the links between the loaded functions so that they are freed.
          for (auto& [uid, fn] : fns)
            for (auto& in : fn->mutable_direct_inputs())
              if (in.is_output()) in = Variable(in.impl());
          throw;
        }
      }
    }
    return f;
  }
};

}  // namespace

bool is_int_typed_key(const std::string& key) {
  static const std::set<std::string> keys = {
      "inferInputRankToMap", "beginIndex",    "endIndex",
      "sliceStrides",        "beginIndexVec", "endIndexVec",
      "sliceStridesVec",     "newDataType",   "newSequenceAxisLengthAdditiveFactor"};
  return keys.count(key) > 0;
}

bool is_float_typed_key(const std::string&) { return false; }

int64_t cntk_op_type(const std::string& name) { return op_type_of(name); }

Dictionary function_to_dictionary(const FunctionPtr& f) {
  if (!f) throw ValueError("save: the function is undefined");
  FunctionPtr root = f->root_function();
  Saver s;
  s.emit(root);
  Dictionary d;
  d["version"] = kCompositeVersion;
  d["type"] = "CompositeFunction";
  d["uid"] = "CompositeFunction_" + root->uid();
  if (!f->name().empty()) d["name"] = f->name();
  d["root"] = root->uid();
  d["inputs"] = s.inputs;
  d["primitive_functions"] = s.functions;
  d["state"] = s.state;
  return d;
}

FunctionPtr function_from_dictionary(const Dictionary& d, const std::string& source) {
  Loader l{source, {}, {}, {}, {}, {}, {}};
  try {
    return l.load(d);
  } catch (const IOError&) {
    throw;
  } catch (const NotImplementedError&) {
    throw;
  } catch (const Error& e) {
    // Shape and type errors while rebuilding the graph: the file describes an invalid graph.
    throw IOError(source + ": the model describes an invalid graph: " + e.what());
  } catch (const std::bad_alloc&) {
    throw IOError(source + ": the model needs more memory than is available");
  } catch (const std::exception& e) {
    // Whatever else the graph code rejects on the way: still a bad file, never a crash.
    throw IOError(source + ": the model describes an invalid graph (" + e.what() + ")");
  }
}

void set_user_function_deserializer(UserFunctionDeserializer deserializer) {
  user_function_deserializer() = std::move(deserializer);
}

std::string save_function_to_bytes(const FunctionPtr& f) { return dictionary_to_bytes(function_to_dictionary(f)); }

void save_function(const FunctionPtr& f, const std::string& path) {
  write_file_atomically(path, save_function_to_bytes(f));
}

FunctionPtr load_function(const std::string& path) { return load_function_from_bytes(read_file_bytes(path), path); }

FunctionPtr load_function_from_bytes(const std::string& bytes, const std::string& source) {
  // CNTK's v1 format is recognised by its first bytes, as CNTK 2.7's Function::Load did.
  if (is_legacy_model(bytes)) return load_legacy_model_from_bytes(bytes, source);
  return function_from_dictionary(dictionary_from_bytes(bytes, source), source);
}

}  // namespace cntk
