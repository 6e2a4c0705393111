// ONNX shape and data-movement ops read as the engine's Reshape, TransposeAxes, Splice,
// Slice, Squeeze, Gather and Pad. The leading dims of an input that are dynamic axes (a model
// OpenCNTK wrote) stay where they are; an ONNX axis on one of them is refused.
#include <algorithm>
#include <limits>
#include <set>

#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;
Variable out(const FunctionPtr& f) { return f->output(); }

std::vector<int64_t> known(ImportContext& c, size_t i, const std::string& what) {
  auto v = c.constant_input_i64(i);
  if (!v) c.fail("its " + what + " input must be known while reading (an initializer or computed from constants)");
  return *v;
}

// A result with no elements (an empty slice or split part): a constant of its shape, which
// holds all it carries. The engine's Slice refuses empty ranges; an input with dynamic axes
// would give the result a size only known at run time.
Variable empty_result(ImportContext& c, const Variable& x, std::vector<int64_t> dims, const std::string& name) {
  if (!x.dynamic_axes().empty() || std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; }))
    c.fail("an empty result from an input with dynamic axes or free dimensions");
  return Variable::constant(NDShape(std::move(dims)), x.dtype(), 0.0, name);
}

// x reshaped to the static shape `dims` (at most one -1: inferred).
Variable reshape_to(ImportContext& c, const Variable& x, const std::vector<int64_t>& dims) {
  return out(c.primitive("Reshape", {x}, {{"newShape", NDShape(dims)}}));
}

// Reshape to a target that depends on free dimensions (ImportContext::Probed): the leading
// and trailing entries that are the input's own dims (equal in both probe worlds) stay, by
// reshaping only the axes between; there at most one entry may depend on free dims or be -1,
// and it becomes the engine's inferred dimension.
std::optional<Variable> split_by_unmerging(ImportContext& c, const Variable& x, const ImportContext::Probed& in,
                                           const ImportContext::Probed& t, size_t lead, size_t trail);

Variable reshape_probed(ImportContext& c, const Variable& x, ImportContext::Probed t, bool allowzero,
                        bool unmerge = true) {
  const ImportContext::Probed in = c.probe_dims(x);
  const size_t r = in.a.size();
  std::vector<bool> copied(t.a.size());  // entry 0: the input's dim, known or not
  for (size_t k = 0; k < t.a.size(); ++k)
    if (t.a[k] == 0 && !allowzero && !t.depends(k)) {
      if (k >= r) c.fail("shape entry 0 at an axis the input lacks");
      t.a[k] = in.a[k];
      t.b[k] = in.b[k];
      copied[k] = true;
    }
  auto open_dim = [&](size_t i) { return in.depends(i) || in.a[i] < 0; };
  // A -1 is resolved in both worlds: a size equal in both is a known one.
  for (size_t k = 0; k < t.a.size(); ++k) {
    if (t.a[k] != -1 || t.depends(k)) continue;
    int64_t na = 1, nb = 1, ka = 1, kb = 1;
    bool known = true;
    for (size_t i = 0; i < r; ++i) na *= in.a[i], nb *= in.b[i], known = known && in.a[i] >= 0;
    for (size_t j = 0; j < t.a.size(); ++j) known = known && (j == k || t.a[j] >= 0);
    if (!known) continue;
    for (size_t j = 0; j < t.a.size(); ++j)
      if (j != k) ka *= t.a[j], kb *= t.b[j];
    if (ka > 0 && kb > 0 && na % ka == 0 && nb % kb == 0) t.a[k] = na / ka, t.b[k] = nb / kb;
  }
  auto same = [&](size_t i, size_t k) {
    return (i == k && copied[k]) || (in.a[i] == t.a[k] && in.b[i] == t.b[k] && in.a[i] >= 0);
  };
  size_t lead = 0, trail = 0;
  while (lead < r && lead < t.a.size() && same(lead, lead)) ++lead;
  while (trail + lead < r && trail + lead < t.a.size() && same(r - 1 - trail, t.a.size() - 1 - trail)) ++trail;
  std::vector<int64_t> dims;
  int unknown = 0;
  for (size_t k = lead; k + trail < t.a.size(); ++k) unknown += t.depends(k) || t.a[k] < 0;
  if (unknown > 1 && unmerge && lead + trail + 1 == r)
    if (auto y = split_by_unmerging(c, x, in, t, lead, trail)) return *y;
  for (size_t k = lead; k + trail < t.a.size(); ++k) {
    const bool open = t.depends(k) || t.a[k] < 0;
    if (open && unknown > 1)
      c.fail(
          "a target shape with several entries depending on free dimensions where its input has one "
          "(the engine's Reshape infers one dimension; a free dimension split in two is read only "
          "where the ops since its merge act on each of its indices alike)");
    dims.push_back(open ? NDShape::kInferredDimension : t.a[k]);
  }
  // The axes in between, if any free, must be resolved by one inferred entry.
  bool free_between = false;
  for (size_t i = lead; i + trail < r; ++i) free_between = free_between || open_dim(i);
  if (free_between && !unknown) c.fail("a target shape that fixes a free dimension of its input");
  Dictionary a{{"newShape", NDShape(dims)}, {"beginAxis", Axis(int(lead))}};
  if (trail) a["endAxis"] = Axis(int(r - trail));
  return out(c.primitive("Reshape", {x}, std::move(a)));
}

// Whether f acts on every index of the axes before `axis` of its output `y` alike, keeping
// them (an elementwise op whose other operand spans only later axes, a product by a matrix):
// the position of the input that carries them.
std::optional<size_t> acts_per_row(const FunctionPtr& f, const Variable& y, size_t axis) {
  static const std::set<std::string> unary{"Pass", "ReLU", "Tanh", "StableSigmoid", "Exp", "Negate", "Abs", "Erf"};
  static const std::set<std::string> binary{"Plus", "Minus", "ElementTimes", "ElementDivide"};
  const std::vector<Variable> ins = f->inputs();
  const size_t rank = y.shape().rank();
  if (!y.dynamic_axes().empty()) return std::nullopt;
  if (unary.count(f->op_name()) && ins.size() == 1) return 0;
  if (binary.count(f->op_name()) && ins.size() == 2)
    for (size_t i = 0; i < 2; ++i)
      if (ins[i].shape().rank() == rank && ins[1 - i].shape().rank() + axis + 1 <= rank) return i;
  if (f->op_name() == "Times" && ins.size() == 2 && ins[1].shape().rank() <= 2 && ins[0].shape().rank() == rank &&
      axis + 1 < rank)
    return 0;
  return std::nullopt;
}

// A free dim split in two where the input merged it from two (PyTorch's attention: [s, b, h,
// d] -> [s * b, h * d], a Linear, -> [s, b, h * d]): the merge is redone keeping the target's
// dims apart, and the ops between are applied again over it. Where those ops act on each index
// of the merged axis alike, the result is the split's, with the same parameters.
std::optional<Variable> split_by_unmerging(ImportContext& c, const Variable& x, const ImportContext::Probed& in,
                                           const ImportContext::Probed& t, size_t lead, size_t trail) {
  const size_t p = lead;  // x's merged axis
  std::vector<std::pair<FunctionPtr, size_t>> path;
  Variable v = x;
  FunctionPtr merge;
  for (int depth = 0; depth < 16 && v.is_output(); ++depth) {
    FunctionPtr f = v.owner();
    if (f->op_name() == "Reshape") {
      merge = f;
      break;
    }
    auto idx = acts_per_row(f, v, p);
    if (!idx) return std::nullopt;
    path.emplace_back(f, *idx);
    v = f->inputs()[*idx];
  }
  if (!merge) return std::nullopt;
  const ImportContext::Probed pm = c.probe_dims(v);
  if (pm.a.size() <= p || pm.a[p] != in.a[p] || pm.b[p] != in.b[p]) return std::nullopt;
  ImportContext::Probed mt;
  for (auto [src, dst] : {std::pair{&pm.a, &mt.a}, std::pair{&pm.b, &mt.b}}) {
    const std::vector<int64_t>& tt = src == &pm.a ? t.a : t.b;
    dst->assign(src->begin(), src->begin() + std::ptrdiff_t(p));
    dst->insert(dst->end(), tt.begin() + std::ptrdiff_t(lead), tt.end() - std::ptrdiff_t(trail));
    dst->insert(dst->end(), src->begin() + std::ptrdiff_t(p) + 1, src->end());
  }
  try {
    Variable y = reshape_probed(c, merge->inputs()[0], mt, true, false);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      std::vector<Variable> ins = it->first->inputs();
      ins[it->second] = y;
      y = Function::primitive(it->first->op_name(), ins, it->first->attributes(), it->first->name())->output();
    }
    const ImportContext::Probed py = c.probe_dims(y);
    if (py.a != t.a || py.b != t.b) return std::nullopt;
    return y;
  } catch (const ValueError&) {  // ShapeError included
    return std::nullopt;
  }
}

Vars reshape(ImportContext& c) {
  Variable x = c.input(0);
  const bool allowzero = c.attr_int("allowzero", 0) != 0;
  if (c.opset() >= 5 && c.input_dyn(0) == 0)
    if (auto t = c.probed_input_i64(1); t && t->any_depends())
      return keep_type(c, 0, {reshape_probed(c, x, *t, allowzero)});
  std::vector<int64_t> shape = c.opset() < 5 ? c.attr_ints("shape") : known(c, 1, "shape");
  const size_t nd = size_t(c.input_dyn(0));
  const std::vector<int64_t> in = x.shape().dims();
  // The dynamic dims must stay: 0 (copy) or, for one of them, -1.
  if (shape.size() < nd) c.fail("a reshape that merges the dynamic axes of its input");
  for (size_t k = 0; k < nd; ++k)
    if (shape[k] != 0 && shape[k] != -1) c.fail("a reshape that changes a dynamic axis of its input");
  std::vector<int64_t> dims;
  for (size_t k = nd; k < shape.size(); ++k) {
    int64_t d = shape[k];
    if (d == 0 && !allowzero) {  // with allowzero, 0 is a dimension of size 0 (the input has no elements)
      if (k - nd >= in.size()) c.fail("shape entry 0 at an axis the input lacks");
      d = in[k - nd];
    }
    dims.push_back(d < 0 ? NDShape::kInferredDimension : d);
  }
  // Several free dims copied (0) or inferred: those the input keeps in place stay by a reshape
  // of the axes between, where the graph inputs explain them.
  if (nd == 0 && c.opset() >= 5 && std::count(dims.begin(), dims.end(), NDShape::kInferredDimension) > 1)
    return keep_type(c, 0, {reshape_probed(c, x, {shape, shape}, allowzero)});
  return keep_type(c, 0, {reshape_to(c, x, dims)});
}

Vars flatten(ImportContext& c) {
  Variable x = c.input(0);
  const int64_t nd = c.input_dyn(0), rank = nd + int64_t(x.shape().rank());
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) c.fail("axis out of range");
  if (nd > 0) {  // the dynamic dims are the outer part
    if (axis != nd) c.fail("a flatten that merges the dynamic axes of its input");
    return keep_type(c, 0, {reshape_to(c, x, {NDShape::kInferredDimension})});
  }
  const NDShape s = x.shape();
  if (s.is_known())
    return keep_type(c, 0, {reshape_to(c, x, {s.sub(0, size_t(axis)).total_size(), s.sub(size_t(axis)).total_size()})});
  // Free dims on one side of the axis: each side merged by a reshape of its own axes, that
  // side's size inferred at run time.
  const NDShape lead = s.sub(0, size_t(axis)), tail = s.sub(size_t(axis));
  if (!lead.is_known() && !tail.is_known()) c.fail("flattening free dimensions on both sides of the axis");
  auto merged = [](const NDShape& part) {
    return NDShape({part.is_known() ? part.total_size() : NDShape::kInferredDimension});
  };
  Variable y = out(c.primitive("Reshape", {x}, {{"newShape", merged(tail)}, {"beginAxis", Axis(int(axis))}}));
  y = out(
      c.primitive("Reshape", {y}, {{"newShape", merged(lead)}, {"beginAxis", Axis(0)}, {"endAxis", Axis(int(axis))}}));
  return keep_type(c, 0, {y});
}

Vars transpose(ImportContext& c) {
  Variable x = c.input(0);
  const int64_t nd = c.input_dyn(0), rank = nd + int64_t(x.shape().rank());
  std::vector<int64_t> perm = c.attr_ints("perm", std::vector<int64_t>{});
  if (perm.empty())
    for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  if (int64_t(perm.size()) != rank) c.fail("perm has the wrong length");
  std::vector<int64_t> p;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < nd) {
      if (perm[size_t(k)] != k) c.fail("a transpose that moves a dynamic axis of its input");
      continue;
    }
    p.push_back(perm[size_t(k)] - nd);
  }
  return keep_type(c, 0, {out(c.primitive("TransposeAxes", {x}, {{"axisVec", axis_list(p)}}))});
}

Vars squeeze(ImportContext& c) {
  Variable x = c.input(0);
  std::vector<int64_t> axes = axes_of(c, 13, 1);
  Dictionary a;
  if (!axes.empty()) {
    for (int64_t& ax : axes) ax = static_axis_of(c, 0, ax);
    a["axisVec"] = axis_list(axes);
  }
  return keep_type(c, 0, {out(c.primitive("Squeeze", {x}, std::move(a)))});
}

Vars unsqueeze(ImportContext& c) {
  Variable x = c.input(0);
  std::vector<int64_t> axes = axes_of(c, 13, 1);
  const int64_t n = int64_t(axes.size());
  std::vector<int64_t> dims = x.shape().dims();
  for (int64_t& ax : axes) ax = static_axis_of(c, 0, ax, n);
  std::sort(axes.begin(), axes.end());
  if (x.shape().is_known()) {
    for (int64_t ax : axes) dims.insert(dims.begin() + std::min<int64_t>(ax, int64_t(dims.size())), 1);
    return keep_type(c, 0, {reshape_to(c, x, dims)});
  }
  // Free dims stay as they are: each unit axis is inserted by a reshape of no axes.
  for (int64_t ax : axes) {
    const int at = int(std::min<int64_t>(ax, int64_t(x.shape().rank())));
    x = out(c.primitive("Reshape", {x}, {{"newShape", NDShape({1})}, {"beginAxis", Axis(at)}, {"endAxis", Axis(at)}}));
  }
  return keep_type(c, 0, {x});
}

Vars concat(ImportContext& c) {
  std::vector<Variable> ins;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i)) ins.push_back(c.input(i));
  // The axis was optional (default 1) before opset 4.
  const int64_t axis = static_axis_of(c, 0, c.opset() < 4 ? c.attr_int("axis", 1) : c.attr_int("axis"));
  // Pieces empty along the axis add nothing (the engine's Splice takes no empty input).
  std::vector<Variable> nonempty;
  for (const Variable& v : ins)
    if (size_t(axis) >= v.shape().rank() || v.shape()[size_t(axis)] != 0) nonempty.push_back(v);
  if (!nonempty.empty() && nonempty.size() < ins.size()) ins = std::move(nonempty);
  if (ins.size() == 1) return keep_type(c, 0, {out(c.primitive("Pass", ins))});
  return keep_type(c, 0, {out(c.primitive("Splice", ins, {{"axis", Axis(int(axis))}}))});
}

Variable slice(ImportContext& c, const Variable& x, const std::vector<int64_t>& axes, const std::vector<int64_t>& b,
               const std::vector<int64_t>& e, const std::vector<int64_t>& s) {
  return out(c.primitive("Slice", {x},
                         {{"axisVec", axis_list(axes)},
                          {"beginIndexVec", int_list(b)},
                          {"endIndexVec", int_list(e)},
                          {"sliceStridesVec", int_list(s)}}));
}

Vars split(ImportContext& c) {
  Variable x = c.input(0);
  const int64_t axis = static_axis_of(c, 0, c.attr_int("axis", 0));
  const int64_t n = x.shape()[size_t(axis)];
  if (n < 0) c.fail("splitting a free dimension");
  std::vector<int64_t> sizes = c.opset() < 13 ? c.attr_ints("split", std::vector<int64_t>{})
                                              : (c.has_input(1) ? known(c, 1, "split") : std::vector<int64_t>{});
  if (sizes.empty()) {
    const int64_t parts =
        c.opset() >= 18 && c.has_attr("num_outputs") ? c.attr_int("num_outputs") : int64_t(c.node().output_size());
    const int64_t each = (n + parts - 1) / parts;  // the last part may be smaller (opset 18)
    for (int64_t k = 0, left = n; k < parts; ++k, left -= each) sizes.push_back(std::min(each, left));
  }
  Vars outs;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("a part of negative size");
    if (begin + s > n) c.fail("the parts exceed the axis' size");
    // Each part named after its ONNX output (the node's name is shared by all parts).
    const size_t k = outs.size();
    const std::string name = int(k) < c.node().output_size() ? c.node().output(int(k)) : c.name();
    if (s == 0) {
      std::vector<int64_t> dims = x.shape().dims();
      dims[size_t(axis)] = 0;
      outs.push_back(empty_result(c, x, dims, name));
      continue;
    }
    outs.push_back(out(Function::primitive(
        "Slice", {x}, {{"axis", Axis(int(axis))}, {"beginIndex", begin}, {"endIndex", begin + s}}, name)));
    begin += s;
  }
  if (begin != n) c.fail("the parts do not add up to the axis' size");
  return keep_type(c, 0, outs);
}

// ONNX's clamped starts/ends/steps as the engine's concrete ranges (a negative step walks
// [begin, end) backwards from end - 1).
Vars slice_node(ImportContext& c) {
  Variable x = c.input(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts"), ends = c.attr_ints("ends"), axes = c.attr_ints("axes", std::vector<int64_t>{});
  } else {
    starts = known(c, 1, "starts"), ends = known(c, 2, "ends");
    if (c.has_input(3)) axes = known(c, 3, "axes");
    if (c.has_input(4)) steps = known(c, 4, "steps");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  std::vector<int64_t> ax, b, e, s;
  std::vector<int64_t> dims = x.shape().dims();  // the result's static dims
  bool empty = false;
  const int64_t nd = c.input_dyn(0), rank = nd + int64_t(x.shape().rank());
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < nd) {  // a dynamic axis: only its whole range
      if (steps[i] == 1 && starts[i] == 0 && ends[i] >= std::numeric_limits<int32_t>::max()) continue;
      c.fail("slicing a dynamic axis (sequence or batch) of the input");
    }
    const int64_t k = static_axis_of(c, 0, a), n = x.shape()[size_t(k)], st = steps[i];
    if (st == 0) c.fail("a step of 0");
    if (n < 0) {
      // A free dimension (a sequence written by OpenCNTK or CNTK 2.7): the engine's slice
      // counts a negative index from the end at run time; an end past the data is 0 there.
      if (st != 1) c.fail("slicing a free dimension with a step other than 1");
      const bool to_end = ends[i] >= std::numeric_limits<int32_t>::max();
      if (starts[i] == 0 && to_end) continue;
      if (starts[i] >= 0 && !to_end && ends[i] >= 0 && ends[i] <= starts[i])
        c.fail("an empty slice of a free dimension");
      if (ends[i] == 0) c.fail("an empty slice of a free dimension");
      ax.push_back(k), b.push_back(starts[i]), e.push_back(to_end ? 0 : ends[i]), s.push_back(1);
      continue;
    }
    auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); };
    int64_t lo = starts[i] < 0 ? starts[i] + n : starts[i], hi = ends[i] < 0 ? ends[i] + n : ends[i];
    if (st > 0) {
      lo = clamp(lo, 0, n), hi = clamp(hi, 0, n);
      dims[size_t(k)] = std::max<int64_t>(0, (hi - lo + st - 1) / st);
      b.push_back(lo), e.push_back(hi);
    } else {
      lo = clamp(lo, 0, n - 1), hi = clamp(hi, -1, n - 1);
      dims[size_t(k)] = std::max<int64_t>(0, (lo - hi - st - 1) / -st);
      b.push_back(hi + 1), e.push_back(lo + 1);  // from lo down to above hi
    }
    empty = empty || dims[size_t(k)] == 0;
    ax.push_back(k);
    s.push_back(st);
  }
  if (empty) return keep_type(c, 0, {empty_result(c, x, dims, c.name())});
  if (ax.empty()) return keep_type(c, 0, {out(c.primitive("Pass", {x}))});
  return keep_type(c, 0, {slice(c, x, ax, b, e, s)});
}

// Gather(data, indices, axis): the engine gathers rows (axis 0); another axis is moved to
// the front, gathered, and the result's axes put in ONNX's order.
Vars gather(ImportContext& c) {
  Variable data = c.input(0);
  if (!data.dynamic_axes().empty()) c.fail("gathering from data with dynamic axes");
  Variable idx = c.input(1);
  const int64_t r = int64_t(data.shape().rank());
  const int64_t axis = static_axis_of(c, 0, c.attr_int("axis", 0));
  if (auto v = c.constant_input(1)) {  // negative indices count from the end
    const int64_t n = data.shape()[size_t(axis)];
    NDArrayView t = v->cast(DataType::Float).contiguous().copy();
    float* p = t.data<float>();
    for (int64_t k = 0; k < t.shape().total_size(); ++k)
      if (p[k] < 0) p[k] += float(n);
    idx = Variable::constant(t, c.name() + "/indices");
  } else {  // known only at run time: idx < 0 ? idx + n : idx
    Variable n = Variable::constant(NDShape{}, idx.dtype(), double(data.shape()[size_t(axis)]), c.name() + "/size");
    Variable zero = Variable::constant(NDShape{}, idx.dtype(), 0.0, c.name() + "/zero");
    idx = out(c.primitive("Select", {out(c.primitive("Less", {idx, zero})), out(c.primitive("Plus", {idx, n})), idx}));
  }
  // A rank-0 index (Gather(Shape(x), 0), as torch.onnx writes) gathers by a one-element
  // index; the gathered axis is squeezed away again.
  const bool scalar = idx.shape().rank() == 0;
  if (scalar) idx = out(c.primitive("Reshape", {idx}, {{"newShape", NDShape({1})}}));
  auto drop = [&](const Variable& v) {
    return scalar ? out(c.primitive("Squeeze", {v}, {{"axisVec", axis_list({axis})}})) : v;
  };
  if (axis == 0) return keep_type(c, 0, {drop(out(c.primitive("Gather", {idx, data})))});
  std::vector<int64_t> front{axis};
  for (int64_t k = 0; k < r; ++k)
    if (k != axis) front.push_back(k);
  Variable moved = out(c.primitive("TransposeAxes", {data}, {{"axisVec", axis_list(front)}}));
  Variable g = out(c.primitive("Gather", {idx, moved}));  // [idx.., data without axis..]
  const int64_t q = int64_t(idx.shape().rank());
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < axis; ++k) perm.push_back(q + k);
  for (int64_t k = 0; k < q; ++k) perm.push_back(k);
  for (int64_t k = axis; k < r - 1; ++k) perm.push_back(q + k);
  return keep_type(c, 0, {drop(out(c.primitive("TransposeAxes", {g}, {{"axisVec", axis_list(perm)}})))});
}

Vars pad(ImportContext& c) {
  Variable x = c.input(0);
  const std::string mode = c.attr_string("mode", std::string("constant"));
  std::vector<int64_t> pads = c.opset() < 11 ? c.attr_ints(c.opset() < 2 ? "paddings" : "pads") : known(c, 1, "pads");
  double value = 0;
  Variable run_value;  // a constant_value only known at run time
  if (c.opset() < 11) {
    value = c.attr_float("value", 0.f);
  } else if (c.has_input(2)) {
    if (auto v = c.constant_input(2))
      value = v->cast(DataType::Double).contiguous().data<double>()[0];
    else if (mode == "constant")
      run_value = c.input(2);
  }
  const int64_t nd = c.input_dyn(0), rank = nd + int64_t(x.shape().rank());
  std::vector<int64_t> axes = c.opset() >= 18 && c.has_input(3) ? known(c, 3, "axes") : std::vector<int64_t>{};
  if (axes.empty())
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  if (pads.size() != 2 * axes.size()) c.fail("pads has the wrong length");
  const size_t sr = x.shape().rank();
  // Negative pads crop the padded result (ONNX pads first); cut[k] holds them as positives.
  std::vector<int64_t> head(sr, 0), foot(sr, 0), cut_head(sr, 0), cut_foot(sr, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    int64_t h = pads[i], f = pads[i + axes.size()];
    if (h == 0 && f == 0) continue;
    const size_t k = size_t(static_axis_of(c, 0, a));
    head[k] = std::max<int64_t>(h, 0), foot[k] = std::max<int64_t>(f, 0);
    cut_head[k] = std::max<int64_t>(-h, 0), cut_foot[k] = std::max<int64_t>(-f, 0);
  }
  auto range = [&](const Variable& v, size_t k, int64_t b, int64_t e) {
    return out(c.primitive("Slice", {v}, {{"axis", Axis(int(k))}, {"beginIndex", b}, {"endIndex", e}}));
  };
  auto dim = [&](size_t k, const char* what) {
    const int64_t n = x.shape()[k];
    if (n <= 0) c.fail(std::string(what) + " of a free or empty dimension");
    return n;
  };
  const Variable x0 = x;
  if (mode == "edge" || mode == "wrap") {
    for (size_t k = 0; k < sr; ++k) {
      if (!head[k] && !foot[k]) continue;
      const int64_t n = dim(k, mode == "edge" ? "edge padding" : "wrap padding");
      std::vector<Variable> parts;
      if (mode == "edge") {  // the first and last slices repeated, spliced around the axis
        parts.assign(size_t(head[k]), range(x, k, 0, 1));
        parts.push_back(x);
        parts.insert(parts.end(), size_t(foot[k]), range(x, k, n - 1, n));
      } else {  // position i of [-head, n + foot) reads x at i mod n, in contiguous runs
        for (int64_t i = -head[k], end = n + foot[k]; i < end;) {
          const int64_t r = ((i % n) + n) % n, len = std::min(n - r, end - i);
          parts.push_back(r == 0 && len == n ? x : range(x, k, r, r + len));
          i += len;
        }
      }
      x = out(c.primitive("Splice", parts, {{"axis", Axis(int(k))}}));
    }
  } else {
    int64_t m = 0;
    if (mode == "reflect")
      m = 1;
    else if (mode != "constant")
      c.fail("pad mode '" + mode + "' is not supported (constant, reflect, edge and wrap are)");
    auto padded = [&](const Variable& v, double fill) {
      return out(c.primitive("Pad", {v},
                             {{"paddingHead", int_list(head)},
                              {"paddingFoot", int_list(foot)},
                              {"paddingMode", m},
                              {"paddingConstantValue", fill}}));
    };
    if (std::any_of(head.begin(), head.end(), [](int64_t v) { return v > 0; }) ||
        std::any_of(foot.begin(), foot.end(), [](int64_t v) { return v > 0; })) {
      if (run_value.defined()) {
        // The padded cells take the value where a padded mask of ones is 0 (a selection, so
        // that any value, inf or NaN included, lands unchanged).
        for (size_t k = 0; k < sr; ++k) dim(k, "padding with a constant_value known at run time");
        Variable ones = Variable::constant(x.shape(), x.dtype(), 1.0, c.name() + "/ones");
        Variable v = run_value.shape().rank() == 0
                         ? run_value
                         : out(c.primitive("Reshape", {run_value}, {{"newShape", NDShape{}}}));
        if (v.dtype() != x.dtype()) v = out(c.primitive("Cast", {v}, {{"newDataType", int64_t(x.dtype())}}));
        x = out(c.primitive("Select", {padded(ones, 0), padded(x, 0), v}));
      } else {
        x = padded(x, value);
      }
    }
  }
  for (size_t k = 0; k < sr; ++k)
    if (cut_head[k] || cut_foot[k]) {
      const int64_t n = dim(k, "cropping");  // x is padded by now
      if (cut_head[k] + cut_foot[k] >= n) c.fail("pads that crop the whole axis");
      x = range(x, k, cut_head[k], n - cut_foot[k]);
    }
  if (x.get() == x0.get()) x = out(c.primitive("Pass", {x}));
  return keep_type(c, 0, {x});
}

// Tile: copies spliced along each static axis.
Vars tile(ImportContext& c) {
  Variable x = c.input(0);
  std::vector<int64_t> reps = c.opset() < 6 ? std::vector<int64_t>{} : known(c, 1, "repeats");
  const int64_t nd = c.input_dyn(0);
  if (int64_t(reps.size()) != nd + int64_t(x.shape().rank())) c.fail("repeats has the wrong length");
  for (int64_t k = 0; k < int64_t(reps.size()); ++k) {
    if (reps[size_t(k)] == 1) continue;
    if (k < nd || reps[size_t(k)] < 1) c.fail("repeating a dynamic axis, or 0 times");
    std::vector<Variable> copies(size_t(reps[size_t(k)]), x);
    x = out(c.primitive("Splice", copies, {{"axis", Axis(int(k - nd))}}));
  }
  if (x.get() == c.input(0).get()) x = out(c.primitive("Pass", {x}));
  return keep_type(c, 0, {x});
}

// Expand: x broadcast with zeros of the given shape (the engine broadcasts as NumPy).
Vars expand(ImportContext& c) {
  Variable x = c.input(0);
  const size_t nd = size_t(c.input_dyn(0));
  // A shape depending on free dims: the zeros to broadcast with take them at run time.
  if (nd == 0)
    if (auto p = c.probed_input_i64(1); p && p->any_depends())
      return keep_type(c, 0, {out(c.primitive("Plus", {x, c.probed_fill(*p, x.dtype(), 0.0)}))});
  std::vector<int64_t> shape = known(c, 1, "shape");
  if (nd > 0) {
    if (shape.size() < nd + x.shape().rank()) c.fail("expanding an input with dynamic axes to fewer dimensions");
    shape.erase(shape.begin(), shape.begin() + std::ptrdiff_t(nd));
  }
  for (int64_t& d : shape)
    if (d < 1) c.fail("a dimension below 1 in the shape");
  Variable zeros = Variable::constant(NDShape(shape), x.dtype(), 0.0, c.name() + "/shape");
  return keep_type(c, 0, {out(c.primitive("Plus", {x, zeros}))});
}

}  // namespace

void register_import_movement() {
  register_onnx_import("Reshape", reshape);
  register_onnx_import("Flatten", flatten);
  register_onnx_import("Transpose", transpose);
  register_onnx_import("Squeeze", squeeze);
  register_onnx_import("Unsqueeze", unsqueeze);
  register_onnx_import("Concat", concat);
  register_onnx_import("Split", split);
  register_onnx_import("Slice", slice_node);
  register_onnx_import("Gather", gather);
  register_onnx_import("Pad", pad);
  register_onnx_import("Tile", tile);
  register_onnx_import("Expand", expand);
}

}  // namespace cntk::onnx_io
