// Recurrent loops: a loop runs its steps once per time step over views of one step
// ([1, B, ...]) of [T, B, ...] buffers allocated once per pass; inputs from outside
// the loop with a sequence axis are read the same way, others whole. Backward runs
// the time steps in reverse. See plan.h (PlanLoop) for how loops are found.
#include <algorithm>
#include <optional>

#include "cntk/profiler.h"
#include "cntk/switches.h"
#include "core/output_hint.h"
#include "exec/checked_mode.h"
#include "exec/run_state.h"
#include "ops/eager.h"
#include "ops/sequence_delay.h"

namespace cntk {

namespace {

struct LoopExtent {
  int64_t T = 0, B = 0;
  std::vector<int64_t> lengths;
};

bool is_loop_slot(const PlanLoop& loop, int slot) {
  return std::find(loop.out_slots.begin(), loop.out_slots.end(), slot) != loop.out_slots.end();
}

LoopExtent loop_extent(const Plan& p, const PlanLoop& loop, const BackPropState& s) {
  for (int k = loop.first; k <= loop.last; ++k) {
    const PlanStep& st = p.steps[k];
    if (st.kind == StepKind::Delay) continue;  // its initial state may run over another axis
    for (size_t i = 0; i < st.in.size(); ++i) {
      if (st.in_axes[i].size() != 2 || is_loop_slot(loop, st.in[i])) continue;
      const NDArrayView& v = s.values[st.in[i]];
      LoopExtent e;
      e.T = v.shape()[0];
      e.B = v.shape()[1];
      e.lengths = s.seq_lengths[st.in[i]];
      if (e.lengths.empty()) e.lengths.assign(size_t(e.B), e.T);
      return e;
    }
  }
  throw ValueError("recurrent loop through '" + p.steps[loop.first].fn->op_name() +
                   "' reads no sequence from outside the loop, so its length is unknown");
}

// Sequence lengths as one time step sees them: 1 where step t is inside the sequence.
std::vector<int64_t> step_lengths(const LoopExtent& e, int64_t t) {
  std::vector<int64_t> l(e.lengths.size());
  for (size_t b = 0; b < l.size(); ++b) l[b] = t < e.lengths[b] ? 1 : 0;
  return l;
}

NDArrayView at_step(const NDArrayView& v, int64_t t) { return v.slice(0, t, t + 1); }

ComputeContext make_step_context(const PlanStep& st, BackPropState& s, int64_t t, const std::vector<int64_t>& lens) {
  ComputeContext ctx = make_context(st, s);
  for (size_t i = 0; i < st.in.size(); ++i) {
    if (st.in_axes[i].size() != 2) continue;
    ctx.inputs[i] = at_step(ctx.inputs[i], t);
    ctx.in_lengths[i] = lens;
  }
  return ctx;
}

bool has_unknown_dim(const Variable& v) {
  for (auto d : v.shape().dims())
    if (d < 0) return true;
  return false;
}

// A delay's state needs its shape before the first step (its initial state is
// broadcast to it); other values of a loop may have free dimensions (a tensor as long
// as a sequence outside the loop, as attention over an unpacked encoder has): their
// buffers are allocated when the first step gives their shape.
void check_known(const Variable& v) {
  if (has_unknown_dim(v))
    throw NotImplementedError("recurrent loop: " + v.str() +
                              " has a free or inferred dimension; the state of a "
                              "loop (what a delay reads) needs static shapes that are known");
}

// The buffer of a loop value whose shape was not known before the first step.
NDArrayView& loop_buffer(BackPropState& s, int slot, const LoopExtent& e, const NDArrayView& step) {
  NDArrayView& buf = s.values[slot];
  if (!buf.defined())
    buf = NDArrayView::zeros(s.plan->slot_var[slot].dtype(), NDShape{e.T, e.B}.concat(step.shape().sub(2)));
  return buf;
}

// Accumulates g into the gradient of slot `in`: at step t for inputs with a
// sequence axis, whole for the others.
void accumulate(BackPropState& s, std::vector<NDArrayView>& grads, int in, bool sequence, int64_t t, NDArrayView g) {
  if (g.is_sparse()) g = g.to_dense();  // step gradients add up over time
  if (g.dtype() != s.values[in].dtype()) g = g.cast(s.values[in].dtype());
  if (sequence) {
    if (!grads[in].defined()) grads[in] = eager::zeros_like(s.values[in]);
    NDArrayView dst = at_step(grads[in], t);
    if (g.shape() != dst.shape())
      throw Error("recurrent loop: a step gradient of shape " + g.shape().str() + " does not fit " + dst.shape().str());
    eager::add_to(dst, g);
    return;
  }
  if (g.shape() != s.values[in].shape())
    throw Error("recurrent loop: a gradient of shape " + g.shape().str() + " does not fit " +
                s.values[in].shape().str());
  if (!grads[in].defined())
    grads[in] = g.copy();
  else
    eager::add_to(grads[in], g);
}

}  // namespace

void loop_forward(const PlanLoop& loop, BackPropState& s) {
  const Plan& p = *s.plan;
  LoopExtent e = loop_extent(p, loop, s);
  for (int k = loop.first; k <= loop.last; ++k)
    for (int o : p.steps[k].out) {
      const Variable& v = p.slot_var[o];
      s.seq_lengths[o] = e.lengths;
      if (p.steps[k].kind == StepKind::Delay) check_known(v);
      s.values[o] =
          has_unknown_dim(v) ? NDArrayView() : NDArrayView::zeros(v.dtype(), NDShape{e.T, e.B}.concat(v.shape()));
    }
  // The loop's delays (Delay steps), each with its initial state and carry for this pass.
  std::vector<std::optional<DelayLoopStep>> delays(size_t(loop.last - loop.first + 1));
  const std::vector<char>* continues = s.continues.empty() ? nullptr : &s.continues;
  for (int k = loop.first; k <= loop.last; ++k)
    if (p.steps[k].kind == StepKind::Delay) {
      const PlanStep& st = p.steps[k];
      const Variable& v = p.slot_var[st.out[0]];
      delays[size_t(k - loop.first)].emplace(make_context(st, s), v.shape(), v.dtype(), e.lengths, continues);
      if (s.values[st.in[0]].dtype() != s.values[st.out[0]].dtype())
        throw NotImplementedError("recurrent loop: " + st.fn->op_name() + " delays a " +
                                  to_string(s.values[st.in[0]].dtype()) + " value into a " +
                                  to_string(s.values[st.out[0]].dtype()) + " one");
    }
  if (s.training)
    for (int k = loop.first; k <= loop.last; ++k) {
      s.loop_saved[k].assign(size_t(e.T), {});
      s.loop_saved_state[k].assign(size_t(e.T), nullptr);
    }
  for (int64_t n = 0; n < e.T; ++n) {
    int64_t t = loop.forward_in_time ? n : e.T - 1 - n;
    std::vector<int64_t> lens = step_lengths(e, t);
    for (int k = loop.first; k <= loop.last; ++k) {
      const PlanStep& st = p.steps[k];
      if (st.kind == StepKind::Delay) {
        delays[size_t(k - loop.first)]->forward(s.values[st.in[0]], t, s.values[st.out[0]]);
        continue;
      }
      ComputeContext ctx = make_step_context(st, s, t, lens);
      const uint64_t t0 = profiler::node_events_wanted() ? profiler::detail::now() : 0;
      // The step's first output goes straight into its slice of the loop buffer
      // (see core/output_hint.h); user functions keep opaque state that might hold
      // it, so they get fresh memory.
      // A value with a free dimension has no buffer before its first step.
      NDArrayView dst0 = s.values[st.out[0]].defined() ? at_step(s.values[st.out[0]], t) : NDArrayView();
      std::vector<NDArrayView> outs;
      if (!st.fn->user_backend() && dst0.defined()) {
        detail::ScopedOutputHint hint(dst0);
        outs = st.op->forward(ctx);
      } else {
        outs = st.op->forward(ctx);
      }
      if (t0) node_event(st, false, t0);
      if (outs.size() != st.out.size()) throw Error(st.op->name + ": kernel returned the wrong number of outputs");
      for (size_t j = 0; j < outs.size(); ++j) {
        NDArrayView dst = j == 0 && dst0.defined() ? dst0 : at_step(loop_buffer(s, st.out[j], e, outs[j]), t);
        if (outs[j].shape() != dst.shape())
          throw ValueError("recurrent loop: '" + st.fn->op_name() + "' gave a step of shape " + outs[j].shape().str() +
                           " where " + dst.shape().str() + " was expected");
        if (outs[j].same_storage(dst) && outs[j].offset() == dst.offset() && outs[j].strides() == dst.strides() &&
            outs[j].dtype() == dst.dtype())
          continue;  // written in place
        // The kernel used the slice for something else (a temporary): what it keeps
        // for backward must not live there once the output is copied over it.
        for (auto& kept : ctx.saved)
          if (kept.defined() && !kept.is_sparse() && kept.same_storage(dst)) kept = kept.copy();
        for (size_t k = j + 1; k < outs.size(); ++k)
          if (outs[k].defined() && !outs[k].is_sparse() && outs[k].same_storage(dst)) outs[k] = outs[k].copy();
        dst.copy_from(outs[j].dtype() == dst.dtype() ? outs[j] : outs[j].cast(dst.dtype()));
      }
      if (s.training) {
        s.loop_saved[k][t] = std::move(ctx.saved);
        s.loop_saved_state[k][t] = std::move(ctx.state);
      }
    }
  }
  // A loop of no steps gives its free dimensions the size 0.
  for (int k = loop.first; k <= loop.last; ++k)
    for (int o : p.steps[k].out)
      if (!s.values[o].defined()) {
        std::vector<int64_t> dims{e.T, e.B};
        for (auto d : p.slot_var[o].shape().dims()) dims.push_back(d < 0 ? 0 : d);
        s.values[o] = NDArrayView::zeros(p.slot_var[o].dtype(), NDShape(dims));
      }
  // What a next call that continues these sequences starts from.
  for (int k = loop.first; k <= loop.last; ++k)
    if (p.steps[k].kind == StepKind::Delay) delays[size_t(k - loop.first)]->finish(s.values[p.steps[k].in[0]]);
}

void loop_backward(const PlanLoop& loop, BackPropState& s, std::vector<NDArrayView>& grads,
                   const std::vector<bool>& depends) {
  const Plan& p = *s.plan;
  bool needed = false;
  for (int k = loop.first; k <= loop.last; ++k)
    for (int i : p.steps[k].in) needed = needed || depends[i];
  if (!needed) return;
  LoopExtent e = loop_extent(p, loop, s);
  for (int o : loop.out_slots)
    if (!grads[o].defined()) grads[o] = eager::zeros_like(s.values[o]);
  // Gradients of loop values are read and written one step at a time: make them
  // private, contiguous buffers.
  for (int k = loop.first; k <= loop.last; ++k)
    for (size_t i = 0; i < p.steps[k].in.size(); ++i) {
      int in = p.steps[k].in[i];
      if (!depends[in] || p.steps[k].in_axes[i].size() != 2) continue;
      if (p.steps[k].kind == StepKind::Delay && i == 1) continue;  // the initial state: accumulated whole
      if (!grads[in].defined())
        grads[in] = eager::zeros_like(s.values[in]);
      else if (!grads[in].is_contiguous())
        grads[in] = grads[in].copy();
    }
  const std::vector<char>* continues = s.continues.empty() ? nullptr : &s.continues;
  std::vector<std::optional<DelayLoopGradient>> delays(size_t(loop.last - loop.first + 1));
  for (int k = loop.first; k <= loop.last; ++k) {
    const PlanStep& st = p.steps[k];
    if (st.kind == StepKind::Delay)
      delays[size_t(k - loop.first)].emplace(*st.fn, s.values[st.out[0]], depends[st.in[1]], e.lengths, continues);
  }
  std::vector<std::vector<NDArrayView>> step_grad_buffers(size_t(loop.last - loop.first + 1));
  std::vector<std::vector<NDArrayView>> step_scratch(step_grad_buffers.size());
  for (int64_t n = e.T; n-- > 0;) {
    int64_t t = loop.forward_in_time ? n : e.T - 1 - n;
    std::vector<int64_t> lens = step_lengths(e, t);
    for (int k = loop.last; k >= loop.first; --k) {
      const PlanStep& st = p.steps[k];
      if (st.kind == StepKind::Delay) {
        delays[size_t(k - loop.first)]->backward(grads[st.out[0]], t, depends[st.in[0]] ? &grads[st.in[0]] : nullptr);
        continue;
      }
      ComputeContext ctx = make_step_context(st, s, t, lens);
      if (s.training) {
        ctx.saved = s.loop_saved[k][t];
        ctx.state = s.loop_saved_state[k][t];
      }
      const uint64_t t0 = profiler::node_events_wanted() ? profiler::detail::now() : 0;
      for (int i : st.in) ctx.grad_wanted.push_back(depends[i]);
      for (int o : st.out) {
        ctx.out_lengths.push_back(lens);
        ctx.outputs.push_back(at_step(s.values[o], t));
        ctx.grad_outputs.push_back(at_step(grads[o], t));
      }
      if (checked_mode()) [[unlikely]]
        checked::mask_padding(ctx);
      for (size_t i = 0; i < st.in.size(); ++i) {
        int in = st.in[i];
        if (!depends[in]) continue;
        // The rule's result lands in a buffer kept for this (step, input) over all
        // time steps (it is added to the gradient before the next step reuses it).
        bool sequence = st.in_axes[i].size() == 2;
        auto& buffers = step_grad_buffers[size_t(k - loop.first)];
        if (buffers.size() < st.in.size()) buffers.resize(st.in.size());
        if (!buffers[i].defined() && !s.values[in].is_sparse() && !st.out.empty())
          buffers[i] = NDArrayView(p.slot_var[st.out[0]].dtype(),
                                   sequence ? at_step(s.values[in], t).shape() : s.values[in].shape());
        // An input broadcast over the step (a parameter read whole at every step) has
        // its gradient summed from the step's full shape: one more buffer for that
        // full-shape temporary (see core/output_hint.h).
        auto& scratch = step_scratch[size_t(k - loop.first)];
        if (scratch.size() < st.in.size()) scratch.resize(st.in.size());
        if (buffers[i].defined() && !scratch[i].defined() && !ctx.grad_outputs.empty() &&
            ctx.grad_outputs[0].numel() > buffers[i].numel())
          scratch[i] = NDArrayView(buffers[i].dtype(), ctx.grad_outputs[0].shape());
        NDArrayView g;
        if (buffers[i].defined() && !st.fn->user_backend()) {
          detail::ScopedOutputHint hint(buffers[i], &scratch[i]);
          g = input_gradient(st, ctx, i);
        } else {
          g = input_gradient(st, ctx, i);
        }
        if (!g.defined()) continue;
        accumulate(s, grads, in, sequence, t, g);
      }
      if (t0) node_event(st, true, t0);
    }
  }
  for (int k = loop.first; k <= loop.last; ++k) {
    const PlanStep& st = p.steps[k];
    if (st.kind != StepKind::Delay || !depends[st.in[1]]) continue;
    accumulate(s, grads, st.in[1], false, 0, delays[size_t(k - loop.first)]->initial_gradient(make_context(st, s)));
  }
}

}  // namespace cntk
