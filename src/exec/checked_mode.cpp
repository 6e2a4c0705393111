#include "exec/checked_mode.h"

#include <cmath>
#include <limits>

#include "cntk/common.h"

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

bool has_padding(const NDArrayView& v, const std::vector<int64_t>& lengths) {
  if (lengths.empty() || v.rank() < 2) return false;
  for (auto l : lengths)
    if (l < v.shape()[0]) return true;
  return false;
}

std::string describe(const PlanStep& st) {
  const std::string& name = st.fn->name();
  return (name.empty() ? st.fn->uid() : name) + " " + st.op->name;
}

}  // namespace

void after_forward(const PlanStep& st, BackPropState& s) {
  for (int slot : st.out) {
    NDArrayView& v = s.values[size_t(slot)];
    if (!v.defined() || v.is_sparse()) continue;  // kept in a oneDNN layout, or sparse
    const auto& lengths = s.seq_lengths[size_t(slot)];
    if (nan_in_valid_frames(v, lengths))
      throw Error("checked mode: " + describe(st) + " operation unexpectedly produced NaN values");
    if (!has_padding(v, lengths) || (v.dtype() != DataType::Float && v.dtype() != DataType::Double)) continue;
    // The output may share storage with an input (views) or user data: invalidate a copy.
    v = v.copy();
    const int64_t T = v.shape()[0];
    for (size_t b = 0; b < lengths.size() && int64_t(b) < v.shape()[1]; ++b)
      if (lengths[b] < T)
        v.slice(0, lengths[b], T).slice(1, int64_t(b), int64_t(b) + 1).fill(std::numeric_limits<double>::quiet_NaN());
  }
}

void after_loop(const PlanLoop& loop, const Plan& p, BackPropState& s) {
  for (int k = loop.first; k <= loop.last; ++k) {
    const PlanStep& st = p.steps[size_t(k)];
    for (int slot : st.out) {
      const NDArrayView& v = s.values[size_t(slot)];
      if (v.defined() && nan_in_valid_frames(v, s.seq_lengths[size_t(slot)]))
        throw Error("checked mode: " + describe(st) + " operation unexpectedly produced NaN values");
    }
  }
}

void check_gradient(const PlanStep& st, size_t i, const NDArrayView& g, const BackPropState& s) {
  if (!g.defined()) return;
  const int slot = st.in[i];
  if (nan_in_valid_frames(g, s.seq_lengths[size_t(slot)]))
    throw Error("checked mode: " + describe(st) + " operation unexpectedly produced NaN gradients on its input " +
                std::to_string(i) + " (" + s.plan->slot_var[size_t(slot)].str() + ")");
}

}  // namespace cntk::checked
