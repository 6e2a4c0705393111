#include "exec/fusion.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "cntk/evaluation.h"
#include "cntk/profiler.h"
#include "ops/conv_fused.h"

namespace cntk {

namespace {

std::atomic<size_t> g_fused{0};

bool is_float(const Plan& p, int slot) {
  const Variable& v = p.slot_var[size_t(slot)];
  return v.dtype() == DataType::Float && !v.is_sparse();
}

// A bias Plus can add inside the convolution: no dynamic axes, float32, and one value
// per output channel (or one for all), i.e. a static shape that aligns with the
// convolution's (O, spatial...) output as (O or 1, 1, ..., 1).
bool per_channel_bias(const Plan& p, int bias, const NDShape& conv_out) {
  const Variable& b = p.slot_var[size_t(bias)];
  if (!b.dynamic_axes().empty() || !is_float(p, bias)) return false;
  const NDShape& s = b.shape();
  if (s.rank() > conv_out.rank() || conv_out.rank() == 0 || conv_out[0] < 1) return false;
  const size_t lead = conv_out.rank() - s.rank();  // axes the bias is broadcast along on the left
  for (size_t k = 0; k < s.rank(); ++k) {
    int64_t d = s[k];
    if (lead + k == 0 ? !(d == 1 || d == conv_out[0]) : d != 1) return false;
  }
  return true;
}

}  // namespace

size_t fused_steps_planned() { return g_fused; }

void fuse_steps(Plan& p) {
  p.fusion = true;
  const size_t nslots = p.slot_var.size(), nsteps = p.steps.size();
  p.fused_away.assign(nslots, false);
  // Who reads each slot: a chain's intermediate must have exactly one reader, its next step.
  std::vector<int> readers(nslots, 0), reader(nslots, -1);
  std::vector<bool> removed(nsteps, false), replaced(nsteps, false), taken(nsteps, false);
  std::vector<PlanStep> replacement(nsteps);
  for (size_t k = 0; k < nsteps; ++k)
    for (int s : p.steps[k].in)
      if (s >= 0) ++readers[size_t(s)], reader[size_t(s)] = int(k);
  for (int s : p.output_slots) readers[size_t(s)] += 2;  // a requested output is read by the caller
  auto sole_reader = [&](int slot) -> int {
    int k = readers[size_t(slot)] == 1 ? reader[size_t(slot)] : -1;
    return k >= 0 && p.steps[size_t(k)].loop < 0 && p.steps[size_t(k)].out.size() == 1 && !taken[size_t(k)] ? k : -1;
  };
  for (size_t k = 0; k < nsteps; ++k) {
    const PlanStep& conv = p.steps[k];
    if (taken[k] || conv.loop >= 0 || conv.op->name != "Convolution" || conv.out.size() != 1 || conv.in.size() != 2)
      continue;
    if (schema_attr_bool(*conv.fn, "transpose")) continue;
    if (!is_float(p, conv.out[0]) || !is_float(p, conv.in[0]) || !is_float(p, conv.in[1])) continue;
    const NDShape& conv_out = p.slot_var[size_t(conv.out[0])].shape();
    FusedConvSpec spec;
    spec.conv = {conv.fn, conv.op, conv.in_axes};
    std::vector<size_t> chain{k};
    int cur = conv.out[0];
    int bias = -1;
    int next = sole_reader(cur);
    if (next >= 0 && p.steps[size_t(next)].op->name == "Plus" && is_float(p, p.steps[size_t(next)].out[0])) {
      const PlanStep& plus = p.steps[size_t(next)];
      size_t side = plus.in[0] == cur ? 1 : 0;
      if (plus.in[1 - side] == cur && plus.in[side] != cur && per_channel_bias(p, plus.in[side], conv_out) &&
          p.slot_var[size_t(plus.out[0])].shape() == conv_out && plus.out_axes == conv.out_axes) {
        spec.has_bias = true;
        spec.plus = {plus.fn, plus.op, plus.in_axes};
        spec.bias_side = side;
        bias = plus.in[side];
        chain.push_back(size_t(next));
        cur = plus.out[0];
        next = sole_reader(cur);
      }
    }
    if (next >= 0 && is_float(p, p.steps[size_t(next)].out[0])) {
      const PlanStep& act = p.steps[size_t(next)];
      FusedActivation a = fusable_activation(*act.fn);
      if (a != FusedActivation::None && act.in.size() == 1) {
        spec.activation = a;
        spec.act = {act.fn, act.op, act.in_axes};
        // ELU's alpha (oneDNN's relu reads alpha as its negative slope: 0 here)
        if (a == FusedActivation::ELU) spec.alpha = schema_attr_double(*act.fn, "alpha");
        chain.push_back(size_t(next));
        cur = act.out[0];
      }
    }
    if (chain.size() < 2) continue;
    auto op = std::make_shared<const OpDef>(fused_convolution_op(spec));
    PlanStep f;
    f.kind = StepKind::FusedConv;
    f.fn = conv.fn;
    f.op = op.get();
    f.in = {conv.in[0], conv.in[1]};
    f.in_axes = {conv.in_axes[0], conv.in_axes[1]};
    if (bias >= 0) {
      f.in.push_back(bias);
      f.in_axes.push_back(spec.plus.in_axes[spec.bias_side]);
    }
    f.out = {cur};
    f.out_axes = p.steps[chain.back()].out_axes;
    std::string label = op->name + " " + (conv.fn->name().empty() ? conv.fn->uid() : conv.fn->name());
    f.event_name = profiler::intern(label);
    f.backward_event_name = profiler::intern(label + " (backward)");
    for (size_t c : chain) {
      f.fused_from.push_back(p.steps[c]);
      taken[c] = true;
    }
    for (size_t c = 0; c + 1 < chain.size(); ++c) {
      removed[chain[c]] = true;
      p.fused_away[size_t(p.steps[chain[c]].out[0])] = true;
    }
    // The fused step takes the place of the chain's last step: every input of the
    // chain is computed before it, every reader of its output after it.
    replacement[chain.back()] = std::move(f);
    replaced[chain.back()] = true;
    p.fused_ops.push_back(std::move(op));
    ++g_fused;
  }
  if (p.fused_ops.empty()) return;
  std::vector<int> new_index(nsteps, -1);
  std::vector<PlanStep> steps;
  steps.reserve(nsteps);
  for (size_t k = 0; k < nsteps; ++k) {
    if (removed[k]) continue;
    new_index[k] = int(steps.size());
    steps.push_back(replaced[k] ? std::move(replacement[k]) : std::move(p.steps[k]));
  }
  for (auto& loop : p.loops) {  // loop steps are never fused, only moved
    loop.first = new_index[size_t(loop.first)];
    loop.last = new_index[size_t(loop.last)];
  }
  p.steps = std::move(steps);
}

void mark_kept_layouts(Plan& p) {
  p.kept_layouts = true;
  const size_t nslots = p.slot_var.size();
  p.layout_kept.assign(nslots, false);
  // A step can take part when its op reads and writes backend layouts, it runs outside
  // loops, and it computes in float32 (its output's type).
  auto takes_part = [&](const PlanStep& st) {
    return st.op->backend_layouts && st.loop < 0 && st.out.size() == 1 && is_float(p, st.out[0]);
  };
  std::vector<bool> produced(nslots, false), other_reader(nslots, false), read(nslots, false);
  for (const PlanStep& st : p.steps) {
    const bool ok = takes_part(st);
    for (int o : st.out)
      if (ok) produced[size_t(o)] = true;
    for (int i : st.in) {
      if (i < 0) continue;
      read[size_t(i)] = true;
      if (!ok) other_reader[size_t(i)] = true;
    }
  }
  for (int s : p.output_slots) other_reader[size_t(s)] = true;
  for (size_t s = 0; s < nslots; ++s)
    p.layout_kept[s] = produced[s] && read[s] && !other_reader[s] && is_float(p, int(s));
}

}  // namespace cntk
