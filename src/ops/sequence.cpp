// Op family: sequence. Ops that read or create sequence axes (everything but the
// delays, which live with the recurrent loops):
//   Where, GatherPacked, ScatterPacked, SequenceSlice   steps picked by index; new axes
//   IsWithin                                           1 on the first/last n steps
//   ReconcileDynamicAxis                               adopt (or broadcast to) another layout
//   UnpackSequence, ToSequence, ToSequenceLike          sequence axis <-> leading static axis
//   UnpackBatchAxis, ToBatchAxis                        batch axis <-> leading static axis
// Reductions over the sequence axis are ReduceElements (reduce.cpp).
//
// An op that creates a sequence axis names it after the variables it comes from,
// so that re-inference gives the same axis and two ops selecting the same steps
// (where(c) and gather(x, c)) agree on it. Its forward sets ctx.out_lengths.
//
// CNTK's GatherPacked/ScatterPacked take positions in its packed layout (made by
// PackedIndex); here the indices are time steps within each sequence, which is
// what Where produces, so no PackedIndex step is needed.
#include "ops/sequence.h"

#include <algorithm>
#include <limits>
#include <cmath>
#include <optional>

#include "kernels/cpu/reduce.h"
#include "ops/eager.h"
#include "ops/op.h"
#include "onnx/export.h"

namespace cntk {

const Axis* sequence_axis_of(const Variable& v) {
  for (auto& a : v.dynamic_axes())
    if (a.is_sequence()) return &a;
  return nullptr;
}

void set_padding(NDArrayView& y, const std::vector<int64_t>& lengths, double value) {
  if (lengths.empty() || y.rank() < 2) return;
  int64_t T = y.shape()[0], B = std::min<int64_t>(y.shape()[1], int64_t(lengths.size()));
  for (int64_t b = 0; b < B; ++b)
    if (lengths[b] < T) y.slice(0, std::max<int64_t>(lengths[b], 0), T).slice(1, b, b + 1).fill(value);
}

NDArrayView fill_padding(const NDArrayView& x, const std::vector<int64_t>& lengths, double value) {
  NDArrayView y = x.to_dense().contiguous();
  if (y.same_storage(x)) y = y.copy();
  set_padding(y, lengths, value);
  return y;
}

namespace {

// Per sequence, the time steps of a source tensor that make up each step of another.
using StepMap = std::vector<std::vector<int64_t>>;

int64_t step_size(const NDArrayView& x) {
  int64_t s = 1;
  for (size_t i = 2; i < x.rank(); ++i) s *= x.shape()[i];
  return s;
}

std::vector<int64_t> lengths_or_full(const std::vector<int64_t>& lengths, const NDArrayView& x) {
  if (!lengths.empty()) return lengths;
  return std::vector<int64_t>(size_t(x.shape()[1]), x.shape()[0]);
}

int64_t longest(const StepMap& m) {
  int64_t n = 0;
  for (auto& s : m) n = std::max<int64_t>(n, int64_t(s.size()));
  return n;
}

std::vector<int64_t> map_lengths(const StepMap& m) {
  std::vector<int64_t> l;
  for (auto& s : m) l.push_back(int64_t(s.size()));
  return l;
}

// Every step map[b][t] must lie inside a source of t_src steps and every t inside a
// target of t_tgt steps (sequences over one axis have the same lengths in one call;
// this catches data that breaks that).
void check_map(const StepMap& map, int64_t t_src, int64_t t_tgt, int64_t batch) {
  if (int64_t(map.size()) != batch)
    throw ValueError("sequence op: " + std::to_string(map.size()) + " sequences where " + std::to_string(batch) +
                     " were expected");
  for (auto& steps : map) {
    if (int64_t(steps.size()) > t_tgt)
      throw ValueError("sequence op: a sequence of " + std::to_string(steps.size()) + " steps does not fit in " +
                       std::to_string(t_tgt));
    for (auto t : steps)
      if (t < 0 || t >= t_src)
        throw ValueError("sequence op: step " + std::to_string(t) + " is outside " + std::to_string(t_src) + " steps");
  }
}

// out[t, b] = src[map[b][t], b]; steps past map[b].size() are zero. src is [Ts, B, S...].
NDArrayView gather_steps(const NDArrayView& src_in, const StepMap& map, int64_t t_out) {
  NDArrayView src = src_in.to_dense().contiguous();
  int64_t B = src.shape()[1], S = step_size(src);
  check_map(map, src.shape()[0], t_out, B);
  std::vector<int64_t> dims = src.shape().dims();
  dims[0] = t_out;
  NDArrayView out = NDArrayView::zeros(src.dtype(), NDShape(dims));
  CNTK_DISPATCH_FLOAT(src.dtype(), T, [&] {
    const T* ps = src.data<T>();
    T* po = out.data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (size_t t = 0; t < map[b].size(); ++t)
        std::copy_n(ps + (map[b][t] * B + b) * S, S, po + (int64_t(t) * B + b) * S);
  });
  return out;
}

// out[map[b][t], b] += src[t, b] for t < map[b].size(); out is [t_out, B, S...], zero elsewhere.
NDArrayView scatter_steps(const NDArrayView& src_in, const StepMap& map, int64_t t_out) {
  NDArrayView src = src_in.to_dense().contiguous();
  int64_t B = src.shape()[1], S = step_size(src);
  check_map(map, t_out, src.shape()[0], B);
  std::vector<int64_t> dims = src.shape().dims();
  dims[0] = t_out;
  NDArrayView out = NDArrayView::zeros(src.dtype(), NDShape(dims));
  CNTK_DISPATCH_FLOAT(src.dtype(), T, [&] {
    const T* ps = src.data<T>();
    T* po = out.data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (size_t t = 0; t < map[b].size(); ++t) {
        const T* s = ps + (int64_t(t) * B + b) * S;
        T* d = po + (map[b][t] * B + b) * S;
        for (int64_t k = 0; k < S; ++k) d[k] += s[k];
      }
  });
  return out;
}

// The steps (per sequence) of an index tensor [T', B] of time steps, checked against
// the lengths of the sequences they index.
StepMap read_step_indices(const NDArrayView& idx, const std::vector<int64_t>& idx_lengths,
                          const std::vector<int64_t>& target_lengths, const char* op) {
  NDArrayView x = idx.to_dense().cast(DataType::Double).contiguous();
  int64_t T = x.shape()[0], B = x.shape()[1];
  const double* p = x.data<double>();
  if (int64_t(target_lengths.size()) != B || (!idx_lengths.empty() && int64_t(idx_lengths.size()) != B))
    throw ValueError(std::string(op) + ": the indices are for " + std::to_string(B) + " sequences but the data has " +
                     std::to_string(target_lengths.size()));
  StepMap m(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = idx_lengths.empty() ? T : idx_lengths[b];
    for (int64_t t = 0; t < len; ++t) {
      double v = p[t * B + b];
      if (!(v >= 0 && v < double(target_lengths[b])))
        throw ValueError(std::string(op) + ": step index " + std::to_string(v) + " of sequence " + std::to_string(b) +
                         " is outside its length " + std::to_string(target_lengths[b]));
      m[b].push_back(int64_t(v));
    }
  }
  return m;
}

void expect_sequence(const InferContext& ctx, size_t i, const char* what) {
  if (!sequence_axis_of(ctx.input(i))) ctx.fail(std::string(what) + " must be a sequence (have a sequence axis)");
}

std::vector<Axis> batch_and(const Variable& like, const Axis& seq) {
  std::vector<Axis> axes;
  for (auto& a : like.dynamic_axes())
    if (a.is_batch()) axes.push_back(a);
  axes.push_back(seq);
  return axes;
}

std::vector<Axis> without_sequence(const Variable& v) {
  std::vector<Axis> axes;
  for (auto& a : v.dynamic_axes())
    if (!a.is_sequence()) axes.push_back(a);
  return axes;
}

// ------------------------------------------------------------------- Where
//
// The condition's value at each step is a count: the step's index is emitted that
// many times (0/1 for boolean conditions). Fractional counts accumulate as CNTK's
// WhereNode does: after each step there are as many items as the running sum,
// rounded up (less a relative margin of the condition type's epsilon, so that sums
// like 3 * (1/3) do not round up to one item too many).

StepMap where_map(const ComputeContext& ctx) {
  double margin = 1 - (ctx.inputs[0].dtype() == DataType::Double ? std::numeric_limits<double>::epsilon()
                                                                 : double(std::numeric_limits<float>::epsilon()));
  NDArrayView c = ctx.inputs[0].to_dense().cast(DataType::Double).contiguous();
  int64_t B = c.shape()[1], S = step_size(c);
  if (S != 1) throw ValueError("Where: the condition must hold one value per step, not " + std::to_string(S));
  auto lens = lengths_or_full(ctx.in_lengths[0], c);
  const double* p = c.data<double>();
  StepMap m(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    double acc = 0;
    for (int64_t t = 0; t < lens[b]; ++t) {
      double v = p[t * B + b];
      if (!(v >= 0)) throw ValueError("Where: condition values must be non-negative counts, got " + std::to_string(v));
      acc += v;
      while ((m[b].empty() && acc > 0) || double(m[b].size()) < acc * margin) m[b].push_back(t);
    }
  }
  return m;
}

// CNTK's new_sequence_axis_typeinfo (Utils.h GetDerivedDynamicAxes): a Where may
// declare its result's length as scale * (source length) + add. The declaration
// names the new axis after the condition's sequence axis and the two factors, so
// results declared alike over one source share an axis (and can be combined);
// (1, 0) is the source axis itself and (0, 1) leaves no sequence axis at all.
struct DeclaredLength {
  bool given = false;
  int64_t scale = 0, add = 0;
};

DeclaredLength declared_length(const Dictionary& attrs) {
  DeclaredLength d;
  auto s = attrs.find("newSequenceAxisLengthScalingFactor");
  auto a = attrs.find("newSequenceAxisLengthAdditiveFactor");
  if (s == attrs.end() || a == attrs.end()) return d;
  d.given = true;
  d.scale = s->second.as_int();
  d.add = a->second.as_int();
  return d;
}

bool declares_no_axis(const DeclaredLength& d) { return d.given && d.scale == 0 && d.add == 1; }

std::optional<Axis> where_axis(const InferContext& ctx) {
  const Variable& condition = ctx.input(0);
  DeclaredLength d = declared_length(ctx.attrs());
  if (!d.given) return Axis::dynamic("whereNodeDynamicAxis_conditionVar_" + condition.uid());
  if (d.scale < 0 || (d.scale == 0 && d.add <= 0))
    ctx.fail("the declared length of the new sequence axis, " + std::to_string(d.scale) + " * length + " +
             std::to_string(d.add) + ", is not positive");
  if (declares_no_axis(d)) return std::nullopt;
  const Axis& source = *sequence_axis_of(condition);
  if (d.scale == 1 && d.add == 0) return source;
  std::string name = source.name();
  if (d.scale > 0)
    name += "_times_" + std::to_string(d.scale) +
            (d.add > 0 ? "_plus_" + std::to_string(d.add) : "_minus_" + std::to_string(-d.add));
  else
    name += "_fixedSliceOf_" + std::to_string(d.add);
  return Axis::dynamic(name, source.is_ordered());
}

// The declared lengths are checked at run time: one axis has one length per sequence.
void check_declared_lengths(const DeclaredLength& d, const StepMap& m, const std::vector<int64_t>& source) {
  if (!d.given) return;
  for (size_t b = 0; b < m.size(); ++b) {
    int64_t want = d.scale * source[b] + d.add;
    if (int64_t(m[b].size()) != want)
      throw ValueError("Where: sequence " + std::to_string(b) + " selects " + std::to_string(m[b].size()) +
                       " steps, but the new sequence axis was declared (new_sequence_axis_typeinfo (" +
                       std::to_string(d.scale) + ", " + std::to_string(d.add) + ")) to have " +
                       std::to_string(d.scale) + " * " + std::to_string(source[b]) + " + " + std::to_string(d.add) +
                       " = " + std::to_string(want));
  }
}

// Indices (or data) without a sequence axis hold one step per sequence: [B, ...] -> [1, B, ...].
NDArrayView as_one_step(const NDArrayView& x) {
  std::vector<int64_t> dims = x.shape().dims();
  dims.insert(dims.begin(), 1);
  return x.to_dense().contiguous().reshape(NDShape(dims));
}

NDArrayView drop_step_axis(const NDArrayView& x) {
  std::vector<int64_t> dims = x.shape().dims();
  dims.erase(dims.begin());
  return x.reshape(NDShape(dims));
}

void register_where() {
  OpDef d;
  d.name = "Where";
  d.op_type = 13;
  d.inputs = {{"condition", Gradient::Zero}};
  d.attrs = {{"newSequenceAxisLengthScalingFactor", AttrType::Int},
             {"newSequenceAxisLengthAdditiveFactor", AttrType::Int},
             {"newDynamicAxes", AttrType::AxisList, {}, AxisOrder::NumPy}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    expect_sequence(ctx, 0, "the condition");
    if (ctx.shape(0).is_known() && ctx.shape(0).total_size() != 1)
      ctx.fail("the condition must hold one value per step (shape () or (1,))");
    std::optional<Axis> axis = where_axis(ctx);
    return std::vector<OutputInfo>{
        {NDShape{}, ctx.dtype(0), axis ? batch_and(ctx.input(0), *axis) : without_sequence(ctx.input(0))}};
  };
  d.forward = [](ComputeContext& ctx) {
    StepMap m = where_map(ctx);
    DeclaredLength declared = declared_length(ctx.attr());
    check_declared_lengths(declared, m, lengths_or_full(ctx.in_lengths[0], ctx.inputs[0]));
    if (declares_no_axis(declared)) {  // one index per sequence, no sequence axis
      int64_t B = int64_t(m.size());
      NDArrayView out = NDArrayView::zeros(DataType::Double, NDShape{B});
      for (int64_t b = 0; b < B; ++b) out.data<double>()[b] = double(m[size_t(b)][0]);
      ctx.out_lengths = {std::vector<int64_t>{}};
      return std::vector<NDArrayView>{out.cast(ctx.inputs[0].dtype())};
    }
    int64_t T = longest(m), B = int64_t(m.size());
    NDArrayView out = NDArrayView::zeros(DataType::Double, NDShape{T, B});
    double* p = out.data<double>();
    for (int64_t b = 0; b < B; ++b)
      for (size_t t = 0; t < m[b].size(); ++t) p[int64_t(t) * B + b] = double(m[b][t]);
    ctx.out_lengths = {map_lengths(m)};
    return std::vector<NDArrayView>{out.cast(ctx.inputs[0].dtype())};
  };
  d.gradient = Gradient::Zero;  // indices are piecewise constant in the condition
  register_op(std::move(d));
}

// ------------------------------------------------------------ GatherPacked
//
// Inputs: operand (a sequence), indices (a sequence of time steps into the operand,
// over a new axis; or, without a sequence axis, one step per sequence). Output: the
// indexed steps, over the indices' axes.

void register_gather_packed() {
  OpDef d;
  d.name = "GatherPacked";
  d.op_type = 29;
  d.inputs = {{"source"}, {"indices", Gradient::Zero}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    expect_sequence(ctx, 0, "the operand");
    if (!sequence_axis_of(ctx.input(1)) && ctx.input(1).dynamic_axes().empty())
      ctx.fail("the indices must be a sequence or have a batch axis");
    return std::vector<OutputInfo>{{ctx.shape(0), ctx.dtype(0), ctx.input(1).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    auto lens = lengths_or_full(ctx.in_lengths[0], ctx.inputs[0]);
    if (ctx.in_dyn[1] == 1) {  // one step per sequence: the result has no sequence axis
      StepMap m = read_step_indices(as_one_step(ctx.inputs[1]), {}, lens, "GatherPacked");
      return std::vector<NDArrayView>{drop_step_axis(gather_steps(ctx.inputs[0], m, 1))};
    }
    StepMap m = read_step_indices(ctx.inputs[1], ctx.in_lengths[1], lens, "GatherPacked");
    ctx.out_lengths = {map_lengths(m)};
    return std::vector<NDArrayView>{gather_steps(ctx.inputs[0], m, ctx.inputs[1].shape()[0])};
  };
  d.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    if (i != 0) return {};  // indices: no gradient
    auto lens = lengths_or_full(ctx.in_lengths[0], ctx.inputs[0]);
    if (ctx.in_dyn[1] == 1) {
      StepMap m = read_step_indices(as_one_step(ctx.inputs[1]), {}, lens, "GatherPacked");
      return scatter_steps(as_one_step(ctx.grad_outputs[0]), m, ctx.inputs[0].shape()[0]);
    }
    StepMap m = read_step_indices(ctx.inputs[1], ctx.in_lengths[1], lens, "GatherPacked");
    return scatter_steps(ctx.grad_outputs[0], m, ctx.inputs[0].shape()[0]);
  };
  register_op(std::move(d));
}

// ----------------------------------------------------------- ScatterPacked
//
// Inputs: operand (a sequence over the indices' axis), indices (time steps of the
// layout), layout (the sequence whose axis the output takes). Steps no index names are
// zero. Indices without a sequence axis (one step per sequence) take an operand
// without one: one item per sequence.

void register_scatter_packed() {
  OpDef d;
  d.name = "ScatterPacked";
  d.op_type = 30;
  d.inputs = {{"source"}, {"indices", Gradient::Zero}, {"like", Gradient::Zero}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(3);
    expect_sequence(ctx, 2, "the layout");
    const Axis* op_axis = sequence_axis_of(ctx.input(0));
    const Axis* idx_axis = sequence_axis_of(ctx.input(1));
    if (!op_axis != !idx_axis || (op_axis && *op_axis != *idx_axis))
      ctx.fail("the operand's sequence axis '" + (op_axis ? op_axis->name() : std::string("(none)")) +
               "' is not the indices' axis '" + (idx_axis ? idx_axis->name() : std::string("(none)")) +
               "': the operand must have as many steps as the condition selects");
    if (!op_axis && (ctx.input(0).dynamic_axes().empty() || ctx.input(1).dynamic_axes().empty()))
      ctx.fail("the operand and the indices must have a batch axis");
    return std::vector<OutputInfo>{{ctx.shape(0), ctx.dtype(0), ctx.input(2).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    auto lens = lengths_or_full(ctx.in_lengths[2], ctx.inputs[2]);
    ctx.out_lengths = {lens};
    if (ctx.in_dyn[1] == 1) {
      StepMap m = read_step_indices(as_one_step(ctx.inputs[1]), {}, lens, "ScatterPacked");
      return std::vector<NDArrayView>{scatter_steps(as_one_step(ctx.inputs[0]), m, ctx.inputs[2].shape()[0])};
    }
    StepMap m = read_step_indices(ctx.inputs[1], ctx.in_lengths[1], lens, "ScatterPacked");
    return std::vector<NDArrayView>{scatter_steps(ctx.inputs[0], m, ctx.inputs[2].shape()[0])};
  };
  d.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    if (i != 0) return {};
    auto lens = lengths_or_full(ctx.in_lengths[2], ctx.inputs[2]);
    if (ctx.in_dyn[1] == 1) {
      StepMap m = read_step_indices(as_one_step(ctx.inputs[1]), {}, lens, "ScatterPacked");
      return drop_step_axis(gather_steps(ctx.grad_outputs[0], m, 1));
    }
    StepMap m = read_step_indices(ctx.inputs[1], ctx.in_lengths[1], lens, "ScatterPacked");
    return gather_steps(ctx.grad_outputs[0], m, ctx.inputs[0].shape()[0]);
  };
  register_op(std::move(d));
}

// ----------------------------------------------------------- SequenceSlice
//
// Steps [beginIndex, endIndex) of each sequence; negative indices count from its
// end and endIndex 0 means its end (CNTK's sequence.slice). Sequences too short
// for the range give empty sequences.

StepMap slice_map(const ComputeContext& ctx) {
  int64_t begin = ctx.attr_int("beginIndex"), end = ctx.attr_int("endIndex");
  auto lens = lengths_or_full(ctx.in_lengths[0], ctx.inputs[0]);
  StepMap m(lens.size());
  for (size_t b = 0; b < lens.size(); ++b) {
    int64_t L = lens[b];
    int64_t lo = begin < 0 ? std::max<int64_t>(L + begin, 0) : std::min(begin, L);
    int64_t hi = end <= 0 ? std::max<int64_t>(L + end, 0) : std::min(end, L);
    for (int64_t t = lo; t < hi; ++t) m[b].push_back(t);
  }
  return m;
}

void register_sequence_slice() {
  OpDef d;
  d.name = "SequenceSlice";
  d.inputs = {{"x"}};
  d.attrs = {{"beginIndex", AttrType::Int, 0}, {"endIndex", AttrType::Int, 0}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    expect_sequence(ctx, 0, "the operand");
    int64_t begin = ctx.attr_int("beginIndex"), end = ctx.attr_int("endIndex");
    if ((begin >= 0 && end > 0 && end <= begin) || (begin < 0 && end < 0 && end <= begin))
      ctx.fail("the slice [" + std::to_string(begin) + ", " + std::to_string(end) + ") is empty");
    Axis axis = Axis::dynamic("sliceDynamicAxis_" + ctx.input(0).uid() + "_" + std::to_string(begin) + "_" +
                              std::to_string(end));
    return std::vector<OutputInfo>{{ctx.shape(0), ctx.dtype(0), batch_and(ctx.input(0), axis)}};
  };
  d.forward = [](ComputeContext& ctx) {
    StepMap m = slice_map(ctx);
    ctx.out_lengths = {map_lengths(m)};
    return std::vector<NDArrayView>{gather_steps(ctx.inputs[0], m, longest(m))};
  };
  d.backward = [](ComputeContext& ctx, size_t) {
    return scatter_steps(ctx.grad_outputs[0], slice_map(ctx), ctx.inputs[0].shape()[0]);
  };
  register_op(std::move(d));
}

// ---------------------------------------------------------------- IsWithin
//
// 1 on the first `offset` steps of each sequence (offset > 0) or on its last
// -offset steps (offset < 0), 0 elsewhere; one scalar per step (CNTK's is_first,
// is_last).

void register_is_within() {
  OpDef d;
  d.name = "IsWithin";
  d.inputs = {{"x", Gradient::Zero}};
  d.attrs = {{"offset", AttrType::Int, 1}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    expect_sequence(ctx, 0, "the operand");
    if (ctx.attr_int("offset") == 0) ctx.fail("offset must not be 0");
    return std::vector<OutputInfo>{{NDShape{}, ctx.dtype(0), ctx.input(0).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    int64_t off = ctx.attr_int("offset");
    const NDArrayView& x = ctx.inputs[0];
    int64_t T = x.shape()[0], B = x.shape()[1];
    auto lens = lengths_or_full(ctx.in_lengths[0], x);
    NDArrayView out = NDArrayView::zeros(DataType::Double, NDShape{T, B});
    double* p = out.data<double>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < lens[b]; ++t) p[t * B + b] = (off > 0 ? t < off : t >= lens[b] + off) ? 1.0 : 0.0;
    return std::vector<NDArrayView>{out.cast(x.dtype())};
  };
  d.gradient = Gradient::Zero;
  register_op(std::move(d));
}

// ---------------------------------------------------- ReconcileDynamicAxis
//
// The operand's data with the layout's dynamic axes (CNTK's broadcast_as and
// reconcile_dynamic_axes): an operand with fewer dynamic axes is repeated along the
// missing ones; one with as many must match the layout's sizes.

void register_reconcile() {
  OpDef d;
  d.name = "ReconcileDynamicAxis";
  d.op_type = 50;
  d.inputs = {{"x"}, {"layout", Gradient::Zero}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    const auto &xa = ctx.input(0).dynamic_axes(), &la = ctx.input(1).dynamic_axes();
    if (la.empty()) ctx.fail("the layout operand has no dynamic axes");
    if (xa.size() > la.size()) ctx.fail("the operand has more dynamic axes than the layout operand");
    bool x_batch = false, l_batch = false;
    for (auto& a : xa) x_batch = x_batch || a.is_batch();
    for (auto& a : la) l_batch = l_batch || a.is_batch();
    if (x_batch && !l_batch) ctx.fail("the operand has a batch axis but the layout operand has none");
    if (xa.size() == la.size() && sequence_axis_of(ctx.input(0)) == nullptr && sequence_axis_of(ctx.input(1)))
      ctx.fail("the operand's dynamic axes do not fit the layout operand's");
    return std::vector<OutputInfo>{{ctx.shape(0), ctx.dtype(0), la}};
  };
  d.forward = [](ComputeContext& ctx) {
    const NDArrayView& x = ctx.inputs[0];
    const NDArrayView& l = ctx.inputs[1];
    int nx = ctx.in_dyn[0], nl = ctx.in_dyn[1];
    ctx.out_lengths = {ctx.in_lengths[1]};
    NDShape dyn = l.shape().sub(0, size_t(nl));
    if (nx == nl) {
      if (x.shape().sub(0, size_t(nx)) != dyn)
        throw ValueError("ReconcileDynamicAxis: the operand's dynamic axes have sizes " +
                         x.shape().sub(0, size_t(nx)).str() + " but the layout's have " + dyn.str());
      return std::vector<NDArrayView>{x};
    }
    // Fewer axes: the operand's dynamic dims are the trailing ones of the layout's (batch last).
    NDShape ones(std::vector<int64_t>(size_t(nl - nx), 1));
    NDArrayView xr = x.to_dense().contiguous().reshape(ones.concat(x.shape()));
    return std::vector<NDArrayView>{xr.broadcast_to(dyn.concat(x.shape().sub(size_t(nx)))).contiguous()};
  };
  d.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    if (i != 0) return {};
    int nx = ctx.in_dyn[0], nl = ctx.in_dyn[1];
    const NDArrayView& g = ctx.grad_outputs[0];
    if (nx == nl) return g;
    NDArrayView gz = nl == 2 ? fill_padding(g, ctx.in_lengths[1], 0.0) : g;
    std::vector<int64_t> kept(g.shape().dims());
    for (int k = 0; k < nl - nx; ++k) kept[size_t(k)] = 1;
    return kernels::sum_to(gz, NDShape(kept)).reshape(ctx.inputs[0].shape());
  };
  register_op(std::move(d));
}

// ------------------------------------------------------------ ONNX forms
//
// Inside a written graph a sequence is [batch, Sequence, static...] (src/onnx/README.md):
// the sequence axis is ONNX axis 1. ONNX has no sequence lengths, so as in CNTK 2.7's files
// every sequence of a batch is taken as the tensor's full length.

using onnx_io::Attr;
using onnx_io::ExportContext;

void expect_batch_and_sequence(ExportContext& c, size_t i) {
  const auto& axes = c.input_var(i).dynamic_axes();
  if (axes.size() != 2 || !axes[0].is_batch()) c.unsupported("an operand without both a batch and a sequence axis");
}

std::string reduce_sum(ExportContext& c, const std::string& x, std::vector<int64_t> axes, int64_t keepdims) {
  if (c.opset() >= 13) return c.node1("ReduceSum", {x, c.constant_i64(axes)}, {Attr("keepdims", keepdims)});
  return c.node1("ReduceSum", {x}, {Attr("axes", std::move(axes)), Attr("keepdims", keepdims)});
}

// Zeros [batch, Sequence] of input i's type, computed from it (no Shape node, so that a
// reader keeping both dimensions free can follow; a NaN or infinity in the input makes
// its step's zero NaN).
std::string step_zeros(ExportContext& c, size_t i) {
  std::string x = c.input(i);
  const int64_t r = int64_t(c.input_var(i).shape().rank());
  if (r > 0) {
    std::vector<int64_t> axes;
    for (int64_t k = 0; k < r; ++k) axes.push_back(2 + k);
    x = reduce_sum(c, x, axes, 0);
  }
  return c.node1("Mul", {x, c.constant_f(0.0, c.input_var(i).dtype())});
}

void export_sequence_slice(ExportContext& c) {
  expect_batch_and_sequence(c, 0);
  const int64_t begin = c.attr_int("beginIndex"), e = c.attr_int("endIndex");
  const int64_t end = e == 0 ? std::numeric_limits<int64_t>::max() : e;  // 0: to the end
  if (c.opset() < 10) {
    c.node1("Slice", {c.input(0)},
            {Attr("starts", std::vector<int64_t>{begin}), Attr("ends", std::vector<int64_t>{end}),
             Attr("axes", std::vector<int64_t>{1})},
            c.output(0));
    return;
  }
  c.node1("Slice", {c.input(0), c.constant_i64({begin}), c.constant_i64({end}), c.constant_i64({1})}, {}, c.output(0));
}

// 1 on the first |offset| steps (offset > 0) or the last |offset| (offset < 0): ones shifted
// by |offset| steps (Pad with zeros on one side, Slice the other side off) are 1 exactly on
// the other steps. No CumSum or Range: the sequence's length need not be known to a reader.
void export_is_within(ExportContext& c) {
  expect_batch_and_sequence(c, 0);
  const int64_t offset = c.attr_int("offset"), k = offset < 0 ? -offset : offset;
  const DataType t = c.input_var(0).dtype();
  std::string ones = c.node1("Add", {step_zeros(c, 0), c.constant_f(1.0, t)});
  const std::vector<int64_t> pads = offset > 0 ? std::vector<int64_t>{0, k, 0, 0} : std::vector<int64_t>{0, 0, 0, k};
  std::string padded =
      c.opset() >= 11 ? c.node1("Pad", {ones, c.constant_i64(pads)}) : c.node1("Pad", {ones}, {Attr("pads", pads)});
  const int64_t begin = offset > 0 ? 0 : k, end = offset > 0 ? -k : std::numeric_limits<int64_t>::max();
  std::string shifted =
      c.opset() >= 10 ? c.node1("Slice", {padded, c.constant_i64({begin}), c.constant_i64({end}), c.constant_i64({1})})
                      : c.node1("Slice", {padded},
                                {Attr("starts", std::vector<int64_t>{begin}), Attr("ends", std::vector<int64_t>{end}),
                                 Attr("axes", std::vector<int64_t>{1})});
  c.node1("Sub", {c.constant_f(1.0, t), shifted}, {}, c.output(0));  // IsWithin's type is its operand's
}

// PastValue/FutureValue outside a loop: x shifted by `offset` steps along the sequence (Pad
// with zeros, Slice off the other end), the initial state where steps were shifted in. A
// delay inside a loop is written only as part of a matched cell (export_rnn.cpp); the writer
// refuses other loops.
void export_delay(ExportContext& c) {
  expect_batch_and_sequence(c, 0);
  for (const auto& a : c.input_var(1).dynamic_axes())
    if (!a.is_batch()) c.unsupported("an initial state that is a sequence");
  const bool past = c.function().op_name() == "PastValue";
  const int64_t k = c.attr_int("offset"), r = int64_t(c.input_var(0).shape().rank());
  const DataType t = c.input_var(0).dtype();
  auto shift = [&](const std::string& v, int64_t rank) {
    std::vector<int64_t> pads(size_t(2 * rank), 0);
    pads[past ? 1 : size_t(rank) + 1] = k;
    std::string padded =
        c.opset() >= 11 ? c.node1("Pad", {v, c.constant_i64(pads)}) : c.node1("Pad", {v}, {Attr("pads", pads)});
    const int64_t begin = past ? 0 : k, end = past ? -k : std::numeric_limits<int64_t>::max();
    if (c.opset() >= 10)
      return c.node1("Slice", {padded, c.constant_i64({begin}), c.constant_i64({end}), c.constant_i64({1})});
    return c.node1("Slice", {padded},
                   {Attr("starts", std::vector<int64_t>{begin}), Attr("ends", std::vector<int64_t>{end}),
                    Attr("axes", std::vector<int64_t>{1})});
  };
  if (k == 0) {
    c.node1("Identity", {c.input(0)}, {}, c.output(0));
    return;
  }
  std::string shifted = shift(c.input(0), 2 + r);
  // 1 on the steps shifted in: ones shifted the same way are 0 there.
  std::string ones = c.node1("Add", {step_zeros(c, 0), c.constant_f(1.0, t)});
  std::string fresh = c.node1("Less", {shift(ones, 2), c.constant_f(0.5, t)});
  if (r > 0) {
    std::vector<int64_t> axes;
    for (int64_t j = 0; j < r; ++j) axes.push_back(2 + j);
    fresh = c.unsqueeze(fresh, axes);
  }
  c.node1("Where", {fresh, c.aligned(1, size_t(r)), shifted}, {}, c.output(0));
}

// sequence.unpack / to_sequence: inside a written graph a sequence is already [batch,
// Sequence, ...], the same tensor as its unpacked [batch, steps, ...]; the mask is all ones
// (ONNX has no lengths: every sequence is the tensor's full length).
void export_unpack_sequence(ExportContext& c) {
  expect_batch_and_sequence(c, 0);
  c.node1("Identity", {c.input(0)}, {}, c.output(0));
  if (c.num_outputs() > 1)
    c.node1("Add", {step_zeros(c, 0), c.constant_f(1.0, c.input_var(0).dtype())}, {}, c.output(1));
}

void export_to_sequence(ExportContext& c) {
  if (c.num_inputs() > 1) c.unsupported("sequence lengths (ONNX's tensors carry none)");
  if (c.input_dyn(0) != 1) c.unsupported("an operand without a batch axis");
  c.node1("Identity", {c.input(0)}, {}, c.output(0));
}

// broadcast_as / reconcile_dynamic_axes: an operand without the sequence axis is repeated
// along the layout's steps (added to zeros of the layout's [batch, Sequence]).
void export_reconcile(ExportContext& c) {
  const int nx = c.input_dyn(0), nl = c.input_dyn(1);
  if (nx == nl) {
    c.node1("Identity", {c.input(0)}, {}, c.output(0));
    return;
  }
  expect_batch_and_sequence(c, 1);
  const auto& xa = c.input_var(0).dynamic_axes();
  if (nx == 1 && !xa[0].is_batch()) c.unsupported("an operand with a sequence axis but no batch axis");
  const int64_t r = int64_t(c.input_var(0).shape().rank());
  std::string x = c.unsqueeze(c.input(0), nx == 0 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1});
  std::string zeros = step_zeros(c, 1);
  if (c.input_var(1).dtype() != c.input_var(0).dtype())
    zeros = c.node1("Cast", {zeros}, {Attr("to", int64_t(onnx_io::elem_type_of(c.input_var(0).dtype())))});
  if (r > 0) {
    std::vector<int64_t> axes;
    for (int64_t k = 0; k < r; ++k) axes.push_back(2 + k);
    zeros = c.unsqueeze(zeros, axes);
  }
  c.node1("Add", {x, zeros}, {}, c.output(0));
}

// ----------------------------------------------------------- UnpackSequence
//
// A sequence becomes a tensor with a leading static axis of the longest length:
// output 0 [B, T, *shape] with padding `paddingValue`, output 1 the mask [B, T]
// (1 on valid steps) unless suppressMaskOutput.

std::vector<int> swap01(size_t rank) {
  std::vector<int> p(rank);
  for (size_t i = 0; i < rank; ++i) p[i] = int(i);
  std::swap(p[0], p[1]);
  return p;
}

void register_unpack_sequence() {
  OpDef d;
  d.name = "UnpackSequence";
  d.op_type = 72;
  d.inputs = {{"x"}};
  d.attrs = {{"paddingValue", AttrType::Double, 0.0, AxisOrder::None, "sequenceUnpackPaddingValue"},
             {"suppressMaskOutput", AttrType::Bool, false, AxisOrder::None, "sequenceUnpackSuppressMaskOutput"}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    expect_sequence(ctx, 0, "the operand");
    std::vector<Axis> axes = without_sequence(ctx.input(0));
    std::vector<OutputInfo> out{{NDShape{NDShape::kFreeDimension}.concat(ctx.shape(0)), ctx.dtype(0), axes}};
    if (!ctx.attr_bool("suppressMaskOutput")) out.push_back({NDShape{NDShape::kFreeDimension}, ctx.dtype(0), axes});
    return out;
  };
  d.output_count = [](const Dictionary& attrs) -> size_t {
    return op_attr_bool("UnpackSequence", attrs, "suppressMaskOutput") ? 1 : 2;
  };
  d.forward = [](ComputeContext& ctx) {
    const NDArrayView& x = ctx.inputs[0];
    auto lens = lengths_or_full(ctx.in_lengths[0], x);
    NDArrayView padded = fill_padding(x, lens, ctx.attr_double("paddingValue"));
    std::vector<NDArrayView> out{padded.permute(swap01(x.rank())).contiguous()};
    if (!ctx.attr_bool("suppressMaskOutput")) {
      int64_t T = x.shape()[0], B = x.shape()[1];
      NDArrayView mask = NDArrayView::zeros(DataType::Double, NDShape{B, T});
      double* p = mask.data<double>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < lens[b]; ++t) p[b * T + t] = 1.0;
      out.push_back(mask.cast(x.dtype()));
    }
    return out;
  };
  d.backward = [](ComputeContext& ctx, size_t) {
    const NDArrayView& g = ctx.grad_outputs[0];
    return fill_padding(g.permute(swap01(g.rank())), ctx.in_lengths[0], 0.0);
  };
  register_op(std::move(d));
}

// ---------------------------------------------------- ToSequence(Like)
//
// The leading static axis of a batch becomes a sequence axis. ToSequence takes the
// lengths from an optional second input (one number per sample; all full without
// it); ToSequenceLike from the sequences of its second input.

void check_batch_only(const InferContext& ctx, size_t i) {
  const auto& axes = ctx.input(i).dynamic_axes();
  if (axes.size() != 1 || !axes[0].is_batch()) ctx.fail("the operand must have a batch axis and no sequence axis");
  if (ctx.shape(i).rank() < 1) ctx.fail("the operand needs a leading static axis to become the sequence axis");
}

std::vector<int64_t> read_lengths(const NDArrayView& v, int64_t T, int64_t B) {
  NDArrayView x = v.to_dense().cast(DataType::Double).contiguous();
  if (x.numel() != B) throw ValueError("ToSequence: expected one sequence length per sample, got " + x.shape().str());
  const double* p = x.data<double>();
  std::vector<int64_t> out;
  for (int64_t b = 0; b < B; ++b) {
    double l = std::round(p[b]);
    if (!(l >= 0 && l <= double(T)))
      throw ValueError("ToSequence: sequence length " + std::to_string(p[b]) + " is outside [0, " + std::to_string(T) +
                       "]");
    out.push_back(int64_t(l));
  }
  return out;
}

std::vector<NDArrayView> to_sequence_forward(ComputeContext& ctx, std::vector<int64_t> lens) {
  const NDArrayView& x = ctx.inputs[0];
  ctx.out_lengths = {lens};
  return {fill_padding(x.to_dense().permute(swap01(x.rank())), lens, 0.0)};
}

NDArrayView to_sequence_backward(ComputeContext& ctx) {
  const NDArrayView& g = ctx.grad_outputs[0];
  return fill_padding(g, ctx.out_lengths[0], 0.0).permute(swap01(g.rank())).contiguous();
}

void register_to_sequence() {
  OpDef d;
  d.name = "ToSequence";
  d.op_type = 70;
  d.inputs = {{"x"}, {"lengths", Gradient::Zero, true}};
  d.attrs = {{"sequenceAxisNamePrefix", AttrType::String, "toSequence_", AxisOrder::None, "sequenceAxis"}};
  d.infer = [](InferContext& ctx) {
    if (ctx.num_inputs() != 1 && ctx.num_inputs() != 2) ctx.fail("expects 1 or 2 inputs");
    check_batch_only(ctx, 0);
    std::string name = ctx.attr_string("sequenceAxisNamePrefix") + ctx.input(0).uid();
    if (ctx.num_inputs() == 2) {
      const auto& la = ctx.input(1).dynamic_axes();
      if (la.size() != 1 || !la[0].is_batch()) ctx.fail("the sequence lengths must have a batch axis and no other");
      if (ctx.shape(1).is_known() && ctx.shape(1).total_size() != 1) ctx.fail("give one sequence length per sample");
      name += "_" + ctx.input(1).uid();
    }
    return std::vector<OutputInfo>{{ctx.shape(0).sub(1), ctx.dtype(0), batch_and(ctx.input(0), Axis::dynamic(name))}};
  };
  d.forward = [](ComputeContext& ctx) {
    int64_t B = ctx.inputs[0].shape()[0], T = ctx.inputs[0].shape()[1];
    std::vector<int64_t> lens(size_t(B), T);
    if (ctx.inputs.size() == 2) lens = read_lengths(ctx.inputs[1], T, B);
    return to_sequence_forward(ctx, lens);
  };
  d.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    if (i != 0) return {};
    return to_sequence_backward(ctx);
  };
  register_op(std::move(d));

  OpDef like;
  like.name = "ToSequenceLike";
  like.op_type = 71;
  like.inputs = {{"x"}, {"like", Gradient::Zero}};
  like.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    check_batch_only(ctx, 0);
    expect_sequence(ctx, 1, "the dynamic_axes_like operand");
    return std::vector<OutputInfo>{{ctx.shape(0).sub(1), ctx.dtype(0), ctx.input(1).dynamic_axes()}};
  };
  like.forward = [](ComputeContext& ctx) {
    const NDArrayView &x = ctx.inputs[0], &l = ctx.inputs[1];
    if (x.shape()[0] != l.shape()[1] || x.shape()[1] != l.shape()[0])
      throw ValueError("ToSequenceLike: the operand has " + std::to_string(x.shape()[0]) + " samples of " +
                       std::to_string(x.shape()[1]) + " steps but the sequences to copy are " +
                       std::to_string(l.shape()[1]) + " of at most " + std::to_string(l.shape()[0]) + " steps");
    return to_sequence_forward(ctx, lengths_or_full(ctx.in_lengths[1], l));
  };
  like.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    if (i != 0) return {};
    return to_sequence_backward(ctx);
  };
  register_op(std::move(like));
}

// -------------------------------------------------- UnpackBatchAxis, ToBatchAxis
//
// The batch axis becomes a leading static axis and back. Both layouts keep the
// batch first, so the data is unchanged.

void register_batch_axis_ops() {
  OpDef unpack;
  unpack.name = "UnpackBatchAxis";
  unpack.inputs = {{"x"}};
  unpack.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    const auto& axes = ctx.input(0).dynamic_axes();
    if (axes.size() != 1 || !axes[0].is_batch()) ctx.fail("the operand must have a batch axis and no sequence axis");
    return std::vector<OutputInfo>{{NDShape{NDShape::kFreeDimension}.concat(ctx.shape(0)), ctx.dtype(0), {}}};
  };
  unpack.forward = [](ComputeContext& ctx) { return std::vector<NDArrayView>{ctx.inputs[0]}; };
  unpack.backward = [](ComputeContext& ctx, size_t) { return ctx.grad_outputs[0]; };
  register_op(std::move(unpack));

  OpDef to_batch;
  to_batch.name = "ToBatchAxis";
  to_batch.inputs = {{"x"}};
  to_batch.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    if (!ctx.input(0).dynamic_axes().empty()) ctx.fail("the operand must have no dynamic axes");
    if (ctx.shape(0).rank() < 1) ctx.fail("the operand needs a leading static axis to become the batch axis");
    return std::vector<OutputInfo>{{ctx.shape(0).sub(1), ctx.dtype(0), {Axis::default_batch_axis()}}};
  };
  to_batch.forward = [](ComputeContext& ctx) { return std::vector<NDArrayView>{ctx.inputs[0]}; };
  to_batch.backward = [](ComputeContext& ctx, size_t) { return ctx.grad_outputs[0]; };
  register_op(std::move(to_batch));
  // ONNX's tensor holds the batch first in both layouts: the data passes unchanged.
  set_onnx_export("UnpackBatchAxis", onnx_io::export_as("Identity"));
  set_onnx_export("ToBatchAxis", onnx_io::export_as("Identity"));
  set_onnx_export("SequenceSlice", export_sequence_slice);
  set_onnx_export("IsWithin", export_is_within);
  set_onnx_export("ReconcileDynamicAxis", export_reconcile);
  set_onnx_export("UnpackSequence", export_unpack_sequence);
  set_onnx_export("ToSequence", export_to_sequence);
  set_onnx_export("PastValue", export_delay);
  set_onnx_export("FutureValue", export_delay);
}

}  // namespace

void register_sequence_ops() {
  register_where();
  register_gather_packed();
  register_scatter_packed();
  register_sequence_slice();
  register_is_within();
  register_reconcile();
  register_unpack_sequence();
  register_to_sequence();
  register_batch_axis_ops();
}

}  // namespace cntk
