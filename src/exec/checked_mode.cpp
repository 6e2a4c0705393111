#include "exec/checked_mode.h"

#include <cmath>
#include <limits>

#include "cntk/common.h"
#include "ops/sequence.h"

namespace cntk::checked {

namespace {

bool has_nan(const NDArrayView& v) {
  if (!v.defined() || v.is_sparse() || v.numel() == 0) return false;
  if (v.dtype() != DataType::Float && v.dtype() != DataType::Double) return false;
  NDArrayView c = v.contiguous();
  bool found = false;
  CNTK_DISPATCH_FLOAT(c.dtype(), T, [&] {
    const T* d = c.data<T>();
    for (int64_t k = 0; k < c.numel() && !found; ++k) found = std::isnan(d[k]);
  });
  return found;
}

// The valid frames of a value in the runtime layout: all of it, or per sequence of a
// [T, B, ...] value the frames before its length.
template <class F>
void for_valid_frames(const NDArrayView& v, const std::vector<int64_t>& lengths, F&& f) {
  if (lengths.empty() || v.rank() < 2) {
    f(v);
    return;
  }
  const int64_t T = v.shape()[0], B = std::min<int64_t>(v.shape()[1], int64_t(lengths.size()));
  for (int64_t b = 0; b < B; ++b)
    if (lengths[size_t(b)] > 0) f(v.slice(0, 0, std::min(lengths[size_t(b)], T)).slice(1, b, b + 1));
}

bool nan_in_valid_frames(const NDArrayView& v, const std::vector<int64_t>& lengths) {
  bool found = false;
  for_valid_frames(v, lengths, [&](const NDArrayView& part) { found = found || has_nan(part); });
  return found;
}

std::string describe(const PlanStep& st) {
  const std::string& name = st.fn->name();
  return (name.empty() ? st.fn->uid() : name) + " " + st.op->name;
}

// Values whose padding checked mode rewrites: plain dense floating-point sequence tensors.
bool has_padding(const NDArrayView& v, const std::vector<int64_t>& lengths) {
  return v.defined() && !v.is_sparse() && !lengths.empty() && v.rank() >= 2 &&
         (v.dtype() == DataType::Float || v.dtype() == DataType::Double);
}

}  // namespace

void invalidate_padding(int slot, BackPropState& s) {
  NDArrayView& v = s.values[size_t(slot)];
  const auto& lengths = s.seq_lengths[size_t(slot)];
  if (has_padding(v, lengths)) v = fill_padding(v, lengths, std::numeric_limits<double>::quiet_NaN());
}

void after_forward(const PlanStep& st, BackPropState& s) {
  for (int slot : st.out) {
    const NDArrayView& v = s.values[size_t(slot)];
    if (!v.defined() || v.is_sparse()) continue;  // kept in a oneDNN layout, or sparse
    if (nan_in_valid_frames(v, s.seq_lengths[size_t(slot)]))
      throw Error("checked mode: " + describe(st) + " operation unexpectedly produced NaN values");
    invalidate_padding(slot, s);
  }
}

void after_loop(const PlanLoop& loop, const Plan& p, BackPropState& s) {
  for (int k = loop.first; k <= loop.last; ++k) after_forward(p.steps[size_t(k)], s);
}

void mask_padding(ComputeContext& ctx) {
  auto mask = [](NDArrayView& v, const std::vector<int64_t>& lengths) {
    if (has_padding(v, lengths)) v = fill_padding(v, lengths, 0.0);
  };
  for (size_t i = 0; i < ctx.inputs.size() && i < ctx.in_lengths.size(); ++i) mask(ctx.inputs[i], ctx.in_lengths[i]);
  for (size_t k = 0; k < ctx.outputs.size() && k < ctx.out_lengths.size(); ++k)
    mask(ctx.outputs[k], ctx.out_lengths[k]);
  for (size_t k = 0; k < ctx.grad_outputs.size() && k < ctx.out_lengths.size(); ++k)
    mask(ctx.grad_outputs[k], ctx.out_lengths[k]);
}

void check_gradient(const PlanStep& st, size_t i, const NDArrayView& g, const BackPropState& s) {
  if (!g.defined()) return;
  const int slot = st.in[i];
  if (nan_in_valid_frames(g, s.seq_lengths[size_t(slot)]))
    throw Error("checked mode: " + describe(st) + " operation unexpectedly produced NaN gradients on its input " +
                std::to_string(i) + " (" + s.plan->slot_var[size_t(slot)].str() + ")");
}

}  // namespace cntk::checked
