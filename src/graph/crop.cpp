// Automatic crop offsets (include/cntk/crop.h): per spatial axis, the affine map from one
// variable's pixels to another's, composed along the graph.
#include "cntk/crop.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cntk/ops.h"

namespace cntk {

namespace {

// (scale, shift) for x (the last axis) and y (the one before): pixel p -> scale * p + shift.
struct Affine {
  double scale = 1.0, shift = 0.0;
  bool operator==(const Affine&) const = default;
};
using Transform = std::array<Affine, 2>;
constexpr Transform kIdentity{};

// a after b.
Transform compose(const Transform& a, const Transform& b) {
  Transform r;
  for (int i = 0; i < 2; ++i) r[i] = {a[i].scale * b[i].scale, a[i].scale * b[i].shift + a[i].shift};
  return r;
}

Transform inverse(const Transform& a) {
  Transform r;
  for (int i = 0; i < 2; ++i) r[i] = {1.0 / a[i].scale, -a[i].shift / a[i].scale};
  return r;
}

// Ops whose output pixel depends on the same input pixel alone (CNTK's identity transformer
// nodes): elementwise ops.
const std::unordered_set<std::string>& identity_ops() {
  static const std::unordered_set<std::string> ops{"Abs",           "Acos",
                                                   "And",           "Asin",
                                                   "Asinh",         "Atan",
                                                   "Atanh",         "Cos",
                                                   "Cosh",          "ELU",
                                                   "ElementDivide", "ElementTimes",
                                                   "Equal",         "Exp",
                                                   "Floor",         "Greater",
                                                   "GreaterEqual",  "HardSigmoid",
                                                   "LeakyReLU",     "Less",
                                                   "LessEqual",     "Log",
                                                   "LogPlus",       "Minus",
                                                   "Negate",        "Not",
                                                   "NotEqual",      "Or",
                                                   "Plus",          "Pow",
                                                   "ReLU",          "Reciprocal",
                                                   "SELU",          "Sin",
                                                   "Sinh",          "Sqrt",
                                                   "StableSigmoid", "StraightThrough",
                                                   "Tan",           "Tanh",
                                                   "Xor",           "Sigmoid",
                                                   "Softplus"};
  return ops;
}

// An attribute as a list of ints (bools as 0/1); empty when absent.
std::vector<int64_t> int_list(const DictValue& v) {
  if (v.empty()) return {};
  if (v.is<bool>()) return {int64_t(v.as_bool())};
  if (v.is<int64_t>()) return {v.as_int()};
  if (v.is<NDShape>()) return v.as_int_list();
  std::vector<int64_t> out;
  for (const DictValue& e : v.as_list()) out.push_back(e.is<bool>() ? int64_t(e.as_bool()) : e.as_int());
  return out;
}

std::vector<int64_t> int_list(const Dictionary& attrs, const std::string& key) {
  auto it = attrs.find(key);
  return it == attrs.end() ? std::vector<int64_t>{} : int_list(it->second);
}

// The last two entries (y, x) of a per-axis attribute expanded to `rank` axes as the ops
// expand it: right-aligned, the first value repeated leftwards up to `fill` axes, `fallback`
// beyond.
std::array<int64_t, 2> per_axis(const std::vector<int64_t>& v, size_t rank, size_t fill, int64_t fallback) {
  if (v.empty()) return {fallback, fallback};
  std::vector<int64_t> out;
  if (v.size() >= rank) {
    out = v;
  } else {
    out.assign(rank, fallback);
    const size_t off = rank - v.size();
    std::copy(v.begin(), v.end(), out.begin() + off);
    const size_t from = rank - std::min(rank, std::max(fill, v.size()));
    for (size_t i = from; i < off; ++i) out[i] = v[0];
  }
  if (out.size() < 2) out.insert(out.begin(), 2 - out.size(), fallback);
  return {out[out.size() - 2], out[out.size() - 1]};
}

std::array<int64_t, 2> last_two(const NDShape& s) {
  const size_t r = s.rank();
  return {r >= 2 ? s[r - 2] : 1, r >= 1 ? s[r - 1] : 1};
}

// The map from the windowed input's pixels to fn's output pixels (CNTK's
// ComputeFilterTransform): window position o is centred on input pixel
// stride * o + (kernel - 1) / 2 - lower_pad, the kernel size taken undilated as CNTK does.
// Convolution and pooling map input to output by its inverse; a transposed convolution and
// an unpooling by it directly. (CNTK 2.7 means the same for max unpooling but never fills
// in its transform and stops with an error.)
Transform window_transform(Function& fn) {
  const std::string& op = fn.op_name();
  const Dictionary& a = fn.attributes();
  const std::vector<Variable> ins = fn.inputs();
  Variable operand, window_in, window_out;
  std::array<int64_t, 2> kernel, dilation{1, 1};
  size_t fill, n;
  int64_t auto_default;
  bool direct;
  if (op == "Convolution") {
    operand = ins[1];
    auto rr = a.find("reductionRank");
    n = operand.shape().rank() - size_t(rr == a.end() ? 1 : rr->second.as_int());
    kernel = last_two(ins[0].shape());
    fill = operand.shape().rank();
    auto_default = 1;
    auto tr = a.find("transpose");
    direct = tr != a.end() && tr->second.as_bool();
    window_in = direct ? fn.output() : operand;
    window_out = direct ? operand : fn.output();
    dilation = per_axis(int_list(a, "dilation"), operand.shape().rank(), fill, 1);
  } else {
    const std::string key = op == "Pooling" ? "poolingWindowShape" : "unpoolingWindowShape";
    operand = ins[0];
    std::vector<int64_t> window = int_list(a, key);
    if (window.empty()) {
      const NDShape& s = operand.shape();
      for (size_t i = 1; i < s.rank(); ++i) window.push_back(s[i]);
    }
    fill = n = window.size();
    auto_default = 0;
    kernel = per_axis(window, operand.shape().rank(), fill, 1);
    direct = op == "Unpooling";
    window_in = direct ? ins[1] : operand;
    window_out = direct ? operand : fn.output();
  }
  if (n < 2)
    throw ValueError("crop_automatic: " + op + " on the path windows " + std::to_string(n) +
                     " spatial axis; a crop needs the spatial transform of two");
  const size_t rank = operand.shape().rank();
  const auto strides = per_axis(int_list(a, "strides"), rank, fill, 1);
  std::vector<int64_t> auto_pad = int_list(a, "autoPadding");
  if (auto_pad.empty()) auto_pad = {auto_default};
  const auto autopad = per_axis(auto_pad, rank, fill, 0);
  const auto lower = per_axis(int_list(a, "lowerPad"), rank, fill, 0);
  const auto size_in = last_two(window_in.shape()), size_out = last_two(window_out.shape());
  Transform t;
  for (int axis = 0; axis < 2; ++axis) {
    const int i = 1 - axis;  // x (the last axis), then y
    int64_t lo;
    if (autopad[i]) {
      if (size_in[i] < 0 || size_out[i] < 0)
        throw ValueError("crop_automatic: " + op +
                         " on the path has a free spatial dimension, so its padding and the crop offsets are unknown");
      const int64_t span = (kernel[i] - 1) * dilation[i] + 1;
      const int64_t extra = size_in[i] - ((size_out[i] - 1) * strides[i] + 1);
      // Python's floor division: extra may be negative.
      const int64_t centre = extra >= 0 ? extra / 2 : -((-extra + 1) / 2);
      lo = (span - 1) / 2 - centre;
    } else {
      lo = lower[i];
    }
    t[axis] = {double(strides[i]), double((kernel[i] - 1) / 2 - lo)};
  }
  return direct ? t : inverse(t);
}

// (input, transform from that input's pixels to fn's output pixels) pairs.
std::vector<std::pair<Variable, Transform>> transform_inputs(Function& fn) {
  const std::string& op = fn.op_name();
  std::vector<Variable> ins = fn.inputs();
  std::vector<std::pair<Variable, Transform>> out;
  if (identity_ops().count(op)) {
    for (Variable& v : ins) out.emplace_back(std::move(v), kIdentity);
  } else if (op == "BatchNormalization") {
    out.emplace_back(ins[0], kIdentity);
  } else if (op == "Crop") {
    const std::vector<int64_t> offset = int_list(fn.attributes(), "offset");
    if (offset.size() != 2) throw ValueError("crop_automatic: a Crop on the path has no (x, y) offset");
    out.emplace_back(ins[0], Transform{Affine{1.0, -double(offset[0])}, Affine{1.0, -double(offset[1])}});
  } else if (op == "Convolution") {
    out.emplace_back(ins[1], window_transform(fn));
  } else if (op == "Pooling" || op == "Unpooling") {
    out.emplace_back(ins[0], window_transform(fn));
  } else {
    throw ValueError("crop_automatic: " + op +
                     " does not support an affine spatial transform, so crop offsets cannot be computed through it");
  }
  return out;
}

// Walks from a variable towards the leaves, recording for each variable reached the
// transform from its pixels to the start's.
class CropSearch {
 public:
  using Seen = std::unordered_map<std::string, Transform>;  // by variable uid

  // Every variable reachable from `start`, with its transform.
  Seen walk_all(const Variable& start) {
    Seen seen;
    walk(start, nullptr, seen);
    return seen;
  }
  // The first variable reached that is in `stop`, with its transform; nullopt if none.
  std::optional<std::pair<Variable, Transform>> walk_to(const Variable& start, const Seen& stop) {
    Seen seen;
    return walk(start, &stop, seen);
  }

 private:
  std::optional<std::pair<Variable, Transform>> walk(const Variable& start, const Seen* stop, Seen& seen) {
    seen[start.uid()] = kIdentity;
    std::vector<Variable> stack{start};
    while (!stack.empty()) {
      Variable v = std::move(stack.back());
      stack.pop_back();
      if (stop && stop->count(v.uid())) return std::make_pair(v, seen[v.uid()]);
      const Transform here = seen[v.uid()];
      for (auto& [u, t] : next(v)) {
        const Transform tr = compose(here, t);
        auto [it, added] = seen.emplace(u.uid(), tr);
        if (added)
          stack.push_back(u);
        else if (!(it->second == tr))
          throw ValueError("crop_automatic: different spatial transforms along different paths");
      }
    }
    return std::nullopt;
  }

  // The variables v's value comes from, with their transforms.
  std::vector<std::pair<Variable, Transform>> next(const Variable& v) {
    if (v.is_placeholder()) {
      auto it = outer_.find(v.uid());
      if (it == outer_.end()) return {};
      return {{it->second, kIdentity}};
    }
    if (!v.is_output()) return {};  // an input, parameter or constant
    FunctionPtr fn = v.owner()->root_function();
    if (fn->is_block()) {
      for (const auto& [placeholder, argument] : fn->block_arguments_mapping()) outer_[placeholder.uid()] = argument;
      const std::vector<Variable> outs = fn->outputs();
      size_t k = 0;
      while (k < outs.size() && outs[k].uid() != v.uid()) ++k;
      return {{fn->block_root()->outputs().at(k), kIdentity}};
    }
    return transform_inputs(*fn);
  }

  std::unordered_map<std::string, Variable> outer_;  // a block's placeholder uid -> what feeds it
};

}  // namespace

CropOffsets automatic_crop_offsets(const Variable& input, const Variable& referent,
                                   const std::optional<std::pair<Variable, Variable>>& ancestors,
                                   const std::string& op) {
  CropSearch search;
  CropSearch::Seen stop = search.walk_all(input);
  if (ancestors) {
    auto it = stop.find(ancestors->first.uid());
    if (it == stop.end()) throw ValueError(op + ": ancestor_input is not an ancestor of node_input");
    stop[ancestors->second.uid()] = it->second;
  }
  auto found = search.walk_to(referent, stop);
  if (!found) throw ValueError(op + ": the inputs have no common ancestor, so crop offsets cannot be computed");
  const Transform final = compose(found->second, inverse(stop.at(found->first.uid())));
  for (const Affine& f : final) {
    if (f.scale != 1.0) throw ValueError(op + ": the inputs differ in scale, which a crop cannot match");
    if (f.shift > 0) throw ValueError(op + ": the referent extends beyond the input (negative crop offset)");
  }
  const double ox = -final[0].shift, oy = -final[1].shift;
  if (ox != std::floor(ox) || oy != std::floor(oy)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "(%g, %g)", ox, oy);
    throw ValueError(op + ": the computed crop offsets " + buf + " are not whole pixels");
  }
  return {int64_t(ox), int64_t(oy)};
}

namespace ops {

FunctionPtr crop_automatic(const Variable& input, const Variable& referent, const std::string& name) {
  const CropOffsets o = automatic_crop_offsets(input, referent);
  return apply("Crop", {input, referent}, {{"offset", DictValue::List{o.x, o.y}}}, name);
}

FunctionPtr crop_automatic_with_ancestors(const Variable& input, const Variable& referent,
                                          const Variable& ancestor_input, const Variable& ancestor_referent,
                                          const std::string& name) {
  const CropOffsets o = automatic_crop_offsets(input, referent, std::make_pair(ancestor_input, ancestor_referent),
                                               "crop_automatic_with_ancestors");
  return apply("Crop", {input, referent, ancestor_input, ancestor_referent}, {{"offset", DictValue::List{o.x, o.y}}},
               name);
}

}  // namespace ops

}  // namespace cntk
