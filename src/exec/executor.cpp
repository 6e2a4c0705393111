// Forward and backward over a compiled plan.
#include <omp.h>

#include <algorithm>
#include <exception>
#include <map>
#include <tuple>
#include <unordered_set>

#include "cntk/evaluation.h"
#include "cntk/profiler.h"
#include "cntk/switches.h"
#include "exec/checked_mode.h"
#include "exec/plan.h"
#include "exec/run_state.h"
#include "kernels/backend.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/sparse.h"
#include "ops/eager.h"
#include "ops/sequence.h"

namespace cntk {

FunctionPtr backprop_state_function(const BackPropStatePtr& s) { return s->function; }

const NDArrayView& plain_value(BackPropState& s, int slot) {
  NDArrayView& v = s.values[size_t(slot)];
  if (!v.defined() && size_t(slot) < s.layout_values.size() && s.layout_values[size_t(slot)])
    v = kernels::cpu_backend().to_plain(*s.layout_values[size_t(slot)]);
  return v;
}

NDShape slot_shape(const BackPropState& s, int slot) {
  const NDArrayView& v = s.values[size_t(slot)];
  if (!v.defined() && size_t(slot) < s.layout_values.size() && s.layout_values[size_t(slot)])
    return s.layout_values[size_t(slot)]->shape;
  return v.shape();
}

DataType slot_dtype(const BackPropState& s, int slot) {
  const NDArrayView& v = s.values[size_t(slot)];
  if (!v.defined() && size_t(slot) < s.layout_values.size() && s.layout_values[size_t(slot)])
    return s.layout_values[size_t(slot)]->dtype;
  return v.dtype();
}

ComputeContext make_context(const PlanStep& st, BackPropState& s) {
  ComputeContext ctx;
  ctx.fn = st.fn;
  ctx.attrs = &st.fn->attributes();
  ctx.training = s.training;
  // Kernels compute in the output's data type: an input of another type (float32
  // data next to a float64 one) is converted first.
  DataType dt = st.out.empty() || st.op->own_input_types ? DataType::Unknown : s.plan->slot_var[st.out[0]].dtype();
  // float16 is a storage type: its steps compute in float32 (see to_slot_type).
  if (dt == DataType::Float16) dt = DataType::Float;
  // Ops that read backend layouts get such values as they are; the others get them plain.
  const bool layouts = st.op->backend_layouts && !s.layout_values.empty();
  for (size_t i = 0; i < st.in.size(); ++i) {
    const int slot = st.in[i];
    // A slot may have both: a plain value that a convolution also reordered into its layout.
    const bool blocked =
        layouts && s.layout_values[size_t(slot)] && (dt == DataType::Float || !s.values[slot].defined());
    const NDArrayView& v = blocked ? s.values[slot] : plain_value(s, slot);
    if (blocked)
      ctx.inputs.push_back(v);
    else if (v.is_sparse() && !st.op->sparse_inputs)
      ctx.inputs.push_back(v.dtype() != dt && dt != DataType::Unknown ? v.cast(dt) : v.to_dense());
    else
      ctx.inputs.push_back(v.defined() && dt != DataType::Unknown && v.dtype() != dt ? v.cast(dt) : v);
    if (layouts) ctx.layout_inputs.push_back(blocked ? s.layout_values[size_t(slot)] : nullptr);
    ctx.in_dyn.push_back(int(st.in_axes[i].size()));
    ctx.in_axes.push_back(st.in_axes[i]);
    ctx.in_lengths.push_back(s.seq_lengths[st.in[i]]);
  }
  if (layouts) {
    ctx.make_plain = [&s, &st](bool output, size_t k) { return plain_value(s, output ? st.out[k] : st.in[k]); };
    for (int o : st.out) ctx.layout_output_ok.push_back(s.plan->layout_kept[size_t(o)]);
  }
  ctx.out_axes = st.out_axes;
  ctx.out_dyn = int(st.out_axes.size());
  ctx.deferred = &s.deferred;
  if (!s.continues.empty()) ctx.continues = &s.continues;
  return ctx;
}

namespace {

// The slots a fused step computes internally and no longer writes (see fusion.h).
std::vector<int> fused_intermediates(const PlanStep& st) {
  std::vector<int> out;
  for (size_t c = 0; c + 1 < st.fused_from.size(); ++c) out.push_back(st.fused_from[c].out[0]);
  return out;
}

bool wants_fused_intermediate(const PlanStep& st, const std::vector<bool>& wanted) {
  for (int slot : fused_intermediates(st))
    if (wanted[size_t(slot)]) return true;
  return false;
}

// The step that computes fused-away `slot` internally (its value's shape and lengths
// are the step's output's).
const PlanStep* fusing_step(const Plan& p, int slot) {
  for (auto& st : p.steps)
    for (int f : fused_intermediates(st))
      if (f == slot) return &st;
  return nullptr;
}

}  // namespace

NDArrayView input_gradient(const PlanStep& st, ComputeContext& ctx, size_t i) {
  switch (st.op->input_gradient(i)) {
    case Gradient::Zero: return {};
    case Gradient::None:
      // An input a differentiable op takes as state (running statistics, Assign's ref, NCE's
      // noise constants) contributes no gradient; an op that is not differentiable raises.
      if (st.op->gradient != Gradient::None) return {};
      throw ValueError("'" + st.op->name + "' is not differentiable with respect to its input " + std::to_string(i));
    case Gradient::Rule:
      if (!st.op->backward) throw NotImplementedError("'" + st.op->name + "' has no gradient rule");
      return st.op->backward(ctx, i);
  }
  return {};
}

// A per-node profiler event (and node timing) for a step that ran from t0 to t1
// (perhaps on another thread).
void node_event(const PlanStep& st, bool backward, uint64_t t0, uint64_t t1) {
  if (profiler::enabled()) {
    auto kind = backward ? profiler::EventKind::NodeBackward : profiler::EventKind::NodeForward;
    profiler::detail::record(backward ? st.backward_event_name : st.event_name, kind, t0, t1);
  }
  if (profiler::node_timing()) profiler::add_node_time(st.fn->uid(), backward, t1 - t0);
}

// The same for a step that began at t0 and ends now.
void node_event(const PlanStep& st, bool backward, uint64_t t0) {
  node_event(st, backward, t0, profiler::detail::now());
}

// f(), with its start and end times when per-node events are wanted.
template <class F>
decltype(auto) timed(uint64_t& t0, uint64_t& t1, F&& f) {
  const bool wanted = profiler::node_events_wanted();
  if (wanted) t0 = profiler::detail::now();
  struct Stamp {  // the end time, also when f returns nothing
    bool wanted;
    uint64_t& t1;
    ~Stamp() {
      if (wanted) t1 = profiler::detail::now();
    }
  } stamp{wanted, t1};
  return f();
}

// Runs f and g at once, on two OpenMP threads (in turn when the team has one); the
// first exception either raised is raised here once both have ended.
template <class F, class G>
void run_together(F&& f, G&& g) {
  std::exception_ptr err[2];
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num(), team = omp_get_num_threads();
    for (int job = t; job < 2; job += team) {
      try {
        if (job == 0)
          f();
        else
          g();
      } catch (...) {
        err[job] = std::current_exception();
      }
    }
  }
  for (auto& e : err)
    if (e) std::rethrow_exception(e);
}

// Whether instructions a and b (next in the program) are fused recurrences that may run
// side by side: neither reads the other's results, there are two threads to run them,
// and no check between steps (checked mode) expects them one after the other.
bool independent_recurrences(const Plan& p, const Instruction& a, const Instruction& b) {
  if (a.kind != StepKind::FusedRecurrence || b.kind != StepKind::FusedRecurrence) return false;
  if (!recurrence_concurrency() || checked_mode() || omp_in_parallel() || omp_get_max_threads() < 2) return false;
  const PlanStep &sa = p.steps[size_t(a.index)], &sb = p.steps[size_t(b.index)];
  // Values in backend layouts are made plain on demand, into the pass's state.
  if (sa.op->backend_layouts || sb.op->backend_layouts) return false;
  for (int o : sa.out)
    if (std::find(sb.in.begin(), sb.in.end(), o) != sb.in.end()) return false;
  for (int o : sb.out)
    if (std::find(sa.in.begin(), sa.in.end(), o) != sa.in.end()) return false;
  return true;
}

namespace {

// The layout data for v must have, e.g. "(batch, sequence, 3, 4)".
std::string dims_str(const Variable& v) {
  std::string s;
  for (auto& a : v.dynamic_axes()) s += std::string(s.empty() ? "" : ", ") + (a.is_batch() ? "batch" : "sequence");
  for (auto d : v.shape().dims())
    s += std::string(s.empty() ? "" : ", ") + (d == NDShape::kFreeDimension ? std::string("any") : std::to_string(d));
  return "(" + s + (v.shape().rank() + v.dynamic_axes().size() == 1 ? ",)" : ")");
}

bool static_matches(const NDShape& declared, const NDShape& actual) {
  if (declared.rank() != actual.rank()) return false;
  for (size_t i = 0; i < declared.rank(); ++i)
    if (declared[i] >= 0 && declared[i] != actual[i]) return false;
  return true;
}

// A step's result in its slot's type (float16 steps compute in float32).
NDArrayView to_slot_type(const Plan& p, int slot, NDArrayView v) {
  DataType t = p.slot_var[size_t(slot)].dtype();
  return v.defined() && t == DataType::Float16 && v.dtype() != t ? v.cast(t) : v;
}

// What a float16 step's gradient rule reads, in the type it computes in.
NDArrayView to_compute_type(const PlanStep& st, NDArrayView v) {
  return v.defined() && !st.op->own_input_types && v.dtype() == DataType::Float16 ? v.cast(DataType::Float) : v;
}

bool is_float_slot(const Plan& p, int slot) {
  const Variable& v = p.slot_var[size_t(slot)];
  return v.dtype() == DataType::Float && !v.is_sparse();
}

void run_deferred(BackPropState& s) {
  auto actions = std::move(s.deferred);
  s.deferred.clear();
  for (auto& a : actions) a();
}

}  // namespace

// Converts a user Value for variable v into the runtime layout (time-major for sequences).
NDArrayView value_to_runtime(const Variable& v, const Value& val, std::vector<int64_t>& lengths) {
  NDArrayView d = val.data();
  size_t ndyn = v.dynamic_axes().size();
  if (d.dtype() != v.dtype()) d = d.to_dense().cast(v.dtype());
  // Sparse data stays sparse for variables declared sparse (ops that cannot read it
  // get it densified, see make_context); otherwise it is densified here.
  if (d.is_sparse() && !v.is_sparse()) d = d.to_dense();
  if (d.rank() < ndyn || !static_matches(v.shape(), d.shape().sub(ndyn))) {
    // A single sample without a batch axis is accepted for batch-only variables.
    if (ndyn == 1 && static_matches(v.shape(), d.shape())) {
      d = d.reshape(NDShape{1}.concat(d.shape()));
    } else if (ndyn == 1 && d.rank() == v.shape().rank() + 2 && d.shape()[1] == 1 &&
               static_matches(v.shape(), d.shape().sub(2))) {
      // As in CNTK, batch data may come as sequences of length 1: (batch, 1, *shape).
      NDShape dims{d.shape()[0]};
      d = d.reshape(dims.concat(d.shape().sub(2)));
    } else if (ndyn == 2 && d.rank() == v.shape().rank() + 1 && static_matches(v.shape(), d.shape().sub(1))) {
      // As in CNTK, data without the batch axis is one sequence: (length, *shape).
      d = d.reshape(NDShape{1}.concat(d.shape()));
    } else if (ndyn == 2 && static_matches(v.shape(), d.shape())) {
      d = d.reshape(NDShape{1, 1}.concat(d.shape()));  // a single sample
    } else if (const size_t extra = d.rank() - v.shape().rank();
               ndyn == 0 && d.rank() > v.shape().rank() && extra <= 2 &&
               d.shape().sub(0, extra) == NDShape(std::vector<int64_t>(extra, 1)) &&
               static_matches(v.shape(), d.shape().sub(extra))) {
      // As in CNTK, a variable without dynamic axes takes data with up to two extra leading
      // axes of size 1 (a batch and a sequence of one).
      d = d.reshape(d.shape().sub(extra));
    } else {
      throw ValueError("the data for " + v.str() + " has shape " + d.shape().str() + ", expected " + dims_str(v));
    }
  }
  if (ndyn == 2) {
    int64_t B = d.shape()[0], T = d.shape()[1];
    lengths.assign(B, T);
    if (val.mask()) lengths = val.mask()->lengths();
    std::vector<int> perm(d.rank());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int(i);
    std::swap(perm[0], perm[1]);
    d = d.is_sparse() ? kernels::sparse_swap_leading(d) : d.permute(perm).contiguous();
  }
  return d;
}

Value runtime_to_value(const Variable& v, const NDArrayView& x, const std::vector<int64_t>& lengths) {
  if (v.dynamic_axes().size() == 2) {
    std::vector<int> perm(x.rank());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int(i);
    std::swap(perm[0], perm[1]);
    NDArrayView d = x.is_sparse() ? kernels::sparse_swap_leading(x) : x.permute(perm).contiguous();
    std::vector<int64_t> lens = lengths;
    if (lens.empty()) lens.assign(d.shape()[0], d.shape()[1]);
    bool full = true;
    for (auto l : lens) full = full && l == d.shape()[1];
    return Value(d, full ? nullptr : std::make_shared<NDMask>(NDMask::from_lengths(lens, d.shape()[1])));
  }
  return Value(x);
}

namespace {
NDArrayView to_runtime(const Variable& v, const Value& val, std::vector<int64_t>& lengths) {
  return value_to_runtime(v, val, lengths);
}
Value to_value(const Variable& v, const NDArrayView& x, const std::vector<int64_t>& lengths) {
  return runtime_to_value(v, x, lengths);
}
}  // namespace

namespace {

// A Kernel, FusedRecurrence or FusedConv step in three parts: its context (reads the
// pass's state), its kernel (reads only the context), and its results written back.
ComputeContext begin_forward(const PlanStep& st, BackPropState& s) {
  ComputeContext ctx = make_context(st, s);
  if (!ctx.layout_output_ok.empty()) ctx.layout_outputs.assign(st.out.size(), nullptr);
  return ctx;
}

void finish_forward(size_t k, BackPropState& s, ComputeContext& ctx, std::vector<NDArrayView>& outs) {
  const Plan& p = *s.plan;
  const PlanStep& st = p.steps[k];
  // A plain input a step also made in a backend layout serves the other readers in it.
  for (size_t i = 0; i < ctx.layout_inputs.size(); ++i)
    if (ctx.layout_inputs[i] && !s.layout_values[size_t(st.in[i])] && is_float_slot(p, st.in[i]))
      s.layout_values[size_t(st.in[i])] = ctx.layout_inputs[i];
  if (s.training) {
    s.saved[k] = std::move(ctx.saved);
    s.saved_state[k] = std::move(ctx.state);
  }
  if (outs.size() != st.out.size()) throw Error(st.op->name + ": kernel returned the wrong number of outputs");
  // Sequence lengths follow the first input that has the output's sequence axis.
  std::vector<int64_t> lens;
  for (size_t i = 0; i < st.in.size() && lens.empty(); ++i)
    if (!s.seq_lengths[st.in[i]].empty() && st.out_axes.size() == 2) lens = s.seq_lengths[st.in[i]];
  // Ops that create a sequence axis (where, slice, ...) set the lengths themselves.
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!outs[j].defined() && j < ctx.layout_outputs.size() && ctx.layout_outputs[j]) {
      if (!ctx.may_keep_layout_output(j)) throw Error(st.op->name + ": kept an output in a backend layout unasked");
      s.layout_values[size_t(st.out[j])] = std::move(ctx.layout_outputs[j]);
    }
    s.values[st.out[j]] = to_slot_type(p, st.out[j], std::move(outs[j]));
    s.seq_lengths[st.out[j]] = j < ctx.out_lengths.size() ? ctx.out_lengths[j] : lens;
  }
  if (checked_mode()) [[unlikely]]
    checked::after_forward(st, s);
}

void step_forward(size_t k, BackPropState& s) {
  const PlanStep& st = s.plan->steps[k];
  ComputeContext ctx = begin_forward(st, s);
  std::vector<NDArrayView> outs;
  if (profiler::node_events_wanted()) [[unlikely]] {
    uint64_t t0 = profiler::detail::now();
    outs = st.op->forward(ctx);
    node_event(st, false, t0);
  } else {
    outs = st.op->forward(ctx);
  }
  finish_forward(k, s, ctx, outs);
}

// Two independent fused recurrences (a bidirectional layer's directions) run side by
// side, one per thread: their kernels are chains of small products that two threads
// share poorly, while each direction alone keeps one thread busy (the kernels inside
// see an active parallel region and run on their thread). Contexts and results are
// handled on this thread, in program order.
void steps_forward_together(size_t a, size_t b, BackPropState& s) {
  const PlanStep &sa = s.plan->steps[a], &sb = s.plan->steps[b];
  ComputeContext ca = begin_forward(sa, s), cb = begin_forward(sb, s);
  std::vector<NDArrayView> oa, ob;
  uint64_t t[4] = {};
  run_together([&] { oa = timed(t[0], t[1], [&] { return sa.op->forward(ca); }); },
               [&] { ob = timed(t[2], t[3], [&] { return sb.op->forward(cb); }); });
  if (profiler::node_events_wanted()) [[unlikely]] {
    node_event(sa, false, t[0], t[1]);
    node_event(sb, false, t[2], t[3]);
  }
  finish_forward(a, s, ca, oa);
  finish_forward(b, s, cb, ob);
}

}  // namespace

BackPropStatePtr forward(const FunctionPtr& f, const VariableValues& arguments, const std::vector<Variable>& outputs_in,
                         std::vector<Value>& output_values, bool keep_for_backward) {
  std::vector<Variable> outputs = outputs_in.empty() ? f->outputs() : outputs_in;
  auto s = std::make_shared<BackPropState>();
  s->function = f;
  s->training = keep_for_backward;
  // A sequence continuing from the previous minibatch (no SequenceBegin at t=0): the
  // delays, and fused recurrences, start it from the state the previous call left on
  // the delay functions (truncated BPTT).
  bool continuing = false;
  for (auto& [var, val] : arguments)
    if (val.mask() && var.dynamic_axes().size() == 2 && val.mask()->max_len() > 0)
      for (int64_t b = 0; b < val.mask()->batch() && !continuing; ++b)
        continuing = val.mask()->at(b, 0) == MaskKind::Valid;
  s->plan = get_plan(f, outputs);
  const Plan& p = *s->plan;
  s->values.assign(p.slot_var.size(), NDArrayView());
  if (p.kept_layouts) s->layout_values.assign(p.slot_var.size(), nullptr);
  s->seq_lengths.assign(p.slot_var.size(), {});
  std::unordered_set<int> bound;
  const bool has_delays = p.carries_state;  // delays or fused recurrences
  for (auto& [var, val] : arguments) {
    auto it = p.slot.find(var.get());
    if (it == p.slot.end()) continue;  // not needed for these outputs
    s->values[it->second] = to_runtime(var, val, s->seq_lengths[it->second]);
    if (checked_mode()) [[unlikely]]
      checked::invalidate_padding(it->second, *s);
    bound.insert(it->second);
    if (continuing && has_delays && val.mask() && var.dynamic_axes().size() == 2)
      for (int64_t b = 0; b < val.mask()->batch(); ++b)
        if (val.mask()->max_len() > 0 && val.mask()->at(b, 0) == MaskKind::Valid) {
          if (s->continues.size() < size_t(val.mask()->batch())) s->continues.resize(size_t(val.mask()->batch()), 0);
          s->continues[size_t(b)] = 1;
        }
  }
  for (int leaf : p.leaf_slots) {
    const Variable& v = p.slot_var[leaf];
    if (bound.count(leaf)) continue;
    if (v.is_parameter() || v.is_constant()) {
      s->values[leaf] = v.value();
    } else {
      throw ValueError("no data was given for " + v.str() + ", which the requested outputs need");
    }
  }
  // Every dynamic axis has one size per call: inputs sharing an axis must agree on it.
  // (A short list, not a map: inputs are few and Axis comparison is a pointer comparison.)
  // On a sequence axis that holds for each sequence's length too (empty lengths: all full).
  struct AxisSize {
    Axis axis;
    int64_t size;
    const Variable* var;
    const std::vector<int64_t>* lengths;
  };
  auto same_lengths = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t full) {
    if (a.empty() || b.empty()) {
      const auto& given = a.empty() ? b : a;
      return std::all_of(given.begin(), given.end(), [&](int64_t l) { return l == full; });
    }
    return a == b;
  };
  std::vector<AxisSize> axis_sizes;
  for (auto& [var, val] : arguments) {
    auto it = p.slot.find(var.get());
    if (it == p.slot.end()) continue;
    const NDArrayView& d = s->values[it->second];
    const auto& dyn = var.dynamic_axes();
    for (size_t k = 0; k < dyn.size(); ++k) {
      const Axis& axis = dyn[dyn.size() - 1 - k];  // layout order: sequence first, batch last
      int64_t size = d.shape()[k];
      const std::vector<int64_t>* lengths = axis.is_sequence() ? &s->seq_lengths[it->second] : nullptr;
      auto seen = std::find_if(axis_sizes.begin(), axis_sizes.end(), [&](const AxisSize& a) { return a.axis == axis; });
      if (seen == axis_sizes.end())
        axis_sizes.push_back({axis, size, &var, lengths});
      else if (seen->size != size)
        throw ValueError(std::string(axis.is_batch() ? "batch sizes" : "sequence lengths") +
                         " differ: " + seen->var->str() + " has " + std::to_string(seen->size) + " but " + var.str() +
                         " has " + std::to_string(size));
      else if (lengths && seen->lengths && !same_lengths(*seen->lengths, *lengths, size))
        throw ValueError("sequence lengths differ: " + seen->var->str() + " and " + var.str() + " share the axis '" +
                         axis.name() + "' but their sequences have different lengths");
    }
  }
  s->saved.assign(p.steps.size(), {});
  s->saved_state.assign(p.steps.size(), nullptr);
  if (!p.loops.empty() && s->training) {
    s->loop_saved.assign(p.steps.size(), {});
    s->loop_saved_state.assign(p.steps.size(), {});
  }
  for (size_t n = 0; n < p.program.size(); ++n) {
    const Instruction& ins = p.program[n];
    switch (ins.kind) {
      case StepKind::Loop: {
        const PlanLoop& loop = p.loops[size_t(ins.index)];
        loop_forward(loop, *s);
        if (checked_mode()) [[unlikely]]
          checked::after_loop(loop, p, *s);
        break;
      }
      case StepKind::FusedRecurrence:
        if (n + 1 < p.program.size() && independent_recurrences(p, ins, p.program[n + 1])) {
          steps_forward_together(size_t(ins.index), size_t(p.program[n + 1].index), *s);
          ++n;
          break;
        }
        step_forward(size_t(ins.index), *s);
        break;
      case StepKind::Kernel:
      case StepKind::FusedConv: step_forward(size_t(ins.index), *s); break;
      case StepKind::Delay: throw Error("plan: a delay step outside its recurrent loop");
    }
  }
  output_values.clear();
  for (size_t i = 0; i < outputs.size(); ++i) {
    int slot = p.output_slots[i];
    output_values.push_back(to_value(outputs[i], s->values[slot], s->seq_lengths[slot]));
  }
  if (!keep_for_backward) run_deferred(*s);
  return keep_for_backward ? s : nullptr;
}

void backward(const BackPropStatePtr& sp, const VariableValues& root_gradients, const std::vector<Variable>& wrt,
              std::vector<Value>& gradients) {
  backward(sp, root_gradients, wrt, gradients, nullptr);
}

namespace {

// The gradients of one backward pass: per slot, plain and (for slots kept in a backend
// layout) in that layout, and the step-by-step rules that fill them.
struct GradientPass {
  BackPropState& s;
  const Plan& p;
  std::vector<bool> wanted, depends;  // per slot: its gradient is asked for / leads to one that is
  std::vector<NDArrayView> grads;
  // Gradients of slots kept in a backend layout may stay in one (from the backward of the
  // layout-keeping steps that read them to the one that produced them).
  std::vector<std::shared_ptr<const LayoutValue>> layout_grads;

  GradientPass(BackPropState& state, const std::vector<Variable>& wrt) : s(state), p(*state.plan) {
    const size_t n = p.slot_var.size();
    wanted.assign(n, false);
    for (auto& w : wrt) {
      auto it = p.slot.find(w.get());
      if (it != p.slot.end()) wanted[it->second] = true;
    }
    depends = wanted;
    // Loops feed values back to earlier steps: repeat until nothing changes.
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& st : p.steps) {
        bool any = wants_fused_intermediate(st, wanted);
        for (int i : st.in) any = any || depends[i];
        if (any)
          for (int o : st.out)
            if (!depends[o]) depends[o] = changed = true;
      }
    }
    grads.resize(n);
    if (p.kept_layouts) layout_grads.resize(n);
  }

  bool has_layout_grad(int slot) const { return !layout_grads.empty() && layout_grads[size_t(slot)]; }

  // The gradient of a slot as a plain tensor (an accumulator: it owns its storage).
  NDArrayView& plain_grad(int slot) {
    if (has_layout_grad(slot)) {
      NDArrayView g = kernels::cpu_backend().to_plain(*layout_grads[size_t(slot)]);
      layout_grads[size_t(slot)] = nullptr;
      if (grads[slot].defined())
        eager::add_to(grads[slot], g);
      else
        grads[slot] = g;
    }
    return grads[slot];
  }

  // A Kernel, FusedRecurrence or FusedConv step: its op's gradient rule per input, each
  // input's gradient added to its slot as soon as it is computed.
  void step_backward(size_t k) {
    const PlanStep& st = p.steps[k];
    ComputeContext ctx;
    if (!begin_backward(k, ctx)) return;
    const uint64_t t0 = profiler::node_events_wanted() ? profiler::detail::now() : 0;
    for (size_t i = 0; i < st.in.size(); ++i) {
      if (!depends[st.in[i]]) continue;
      ctx.layout_grad = nullptr;
      NDArrayView g = input_gradient(st, ctx, i);
      auto layout_grad = std::move(ctx.layout_grad);
      ctx.layout_grad = nullptr;
      add_input_gradient(st, ctx, i, std::move(g), std::move(layout_grad));
    }
    finish_backward(st, ctx);
    if (t0) node_event(st, true, t0);
  }

  // Two independent fused recurrences (see steps_forward_together): their gradient rules
  // run side by side, one per thread; the gradients are added to their slots afterwards
  // on this thread, b's first (the order step_backward takes them in).
  void steps_backward_together(size_t a, size_t b) {
    const PlanStep &sa = p.steps[a], &sb = p.steps[b];
    ComputeContext ca, cb;
    const bool run_a = begin_backward(a, ca), run_b = begin_backward(b, cb);
    struct Rules {
      std::vector<NDArrayView> g;
      std::vector<std::shared_ptr<const LayoutValue>> layout;
      uint64_t t0 = 0, t1 = 0;
    } ra, rb;
    auto rules = [&](const PlanStep& st, ComputeContext& ctx, Rules& r) {
      timed(r.t0, r.t1, [&] {
        r.g.resize(st.in.size());
        r.layout.resize(st.in.size());
        for (size_t i = 0; i < st.in.size(); ++i) {
          if (!depends[st.in[i]]) continue;
          ctx.layout_grad = nullptr;
          r.g[i] = input_gradient(st, ctx, i);
          r.layout[i] = std::move(ctx.layout_grad);
          ctx.layout_grad = nullptr;
        }
      });
    };
    run_together(
        [&] {
          if (run_a) rules(sa, ca, ra);
        },
        [&] {
          if (run_b) rules(sb, cb, rb);
        });
    for (auto [st, ctx, r, run] : {std::tuple{&sb, &cb, &rb, run_b}, std::tuple{&sa, &ca, &ra, run_a}}) {
      if (!run) continue;
      for (size_t i = 0; i < st->in.size(); ++i)
        if (depends[st->in[i]]) add_input_gradient(*st, *ctx, i, std::move(r->g[i]), std::move(r->layout[i]));
      finish_backward(*st, *ctx);
      if (r->t1) node_event(*st, true, r->t0, r->t1);
    }
  }

  // The context of step k's gradient rules; false when it has none to run (no gradient
  // reaches its outputs, or none of its inputs leads to a wanted one).
  bool begin_backward(size_t k, ComputeContext& ctx) {
    const PlanStep& st = p.steps[k];
    bool has_grad = false;
    for (int o : st.out) has_grad = has_grad || grads[o].defined() || has_layout_grad(o);
    bool needed = wants_fused_intermediate(st, wanted);
    for (int i : st.in) needed = needed || depends[i];
    if (!has_grad || !needed) return false;
    ctx = make_context(st, s);
    const bool layouts = !ctx.layout_inputs.empty();
    if (k < s.saved.size()) ctx.saved = s.saved[k];
    if (k < s.saved_state.size()) ctx.state = s.saved_state[k];
    for (int i : st.in) ctx.grad_wanted.push_back(depends[i]);
    for (int o : st.out) {
      ctx.out_lengths.push_back(s.seq_lengths[o]);
      // Ops that read backend layouts get their outputs and output gradients as they are
      // (output(k) and grad_output(k) make them plain).
      const bool blocked = layouts && !s.values[o].defined() && s.layout_values[size_t(o)];
      ctx.outputs.push_back(blocked ? s.values[o] : plain_value(s, o));
      if (layouts) ctx.layout_outputs.push_back(blocked ? s.layout_values[size_t(o)] : nullptr);
      const bool blocked_grad = layouts && has_layout_grad(o) && !grads[o].defined();
      if (layouts) ctx.layout_grad_outputs.push_back(blocked_grad ? layout_grads[size_t(o)] : nullptr);
      if (blocked_grad)
        ctx.grad_outputs.push_back(NDArrayView());
      else if (plain_grad(o).defined())
        ctx.grad_outputs.push_back(grads[o]);
      else
        ctx.grad_outputs.push_back(NDArrayView::zeros(slot_dtype(s, o), slot_shape(s, o)));
    }
    for (auto& v : ctx.outputs) v = to_compute_type(st, v);
    for (auto& v : ctx.grad_outputs) v = to_compute_type(st, v);
    if (checked_mode()) [[unlikely]]
      checked::mask_padding(ctx);
    if (layouts)
      for (int i : st.in) ctx.layout_grad_ok.push_back(p.layout_kept[size_t(i)]);
    return true;
  }

  // Adds the gradient rule's result for input i (plain g, or layout_grad in a backend
  // layout) to the input's slot.
  void add_input_gradient(const PlanStep& st, ComputeContext& ctx, size_t i, NDArrayView g,
                          std::shared_ptr<const LayoutValue> layout_grad) {
    const int in = st.in[i];
    if (!g.defined() && layout_grad) {
      if (!ctx.may_keep_layout_grad(i)) throw Error(st.op->name + ": kept a gradient in a backend layout unasked");
      if (layout_grad->shape != slot_shape(s, in))
        throw Error(st.op->name + ": gradient for input " + std::to_string(i) + " has shape " +
                    layout_grad->shape.str() + ", expected " + slot_shape(s, in).str());
      if (grads[in].defined())
        eager::add_to(grads[in], kernels::cpu_backend().to_plain(*layout_grad));
      else if (has_layout_grad(in))
        layout_grads[size_t(in)] = kernels::cpu_backend().add(*layout_grads[size_t(in)], *layout_grad);
      else
        layout_grads[size_t(in)] = layout_grad;
      return;
    }
    if (!g.defined()) return;
    // A sparse gradient (NCE's weight rows) reaches a parameter as it is, as in CNTK;
    // gradients that other ops read back, or that add up, are dense.
    if (g.is_sparse() && (!p.slot_var[size_t(in)].is_parameter() || plain_grad(in).defined())) g = g.to_dense();
    if (checked_mode()) [[unlikely]]
      checked::check_gradient(st, i, g.is_sparse() ? g.to_dense() : g, s);
    if (g.dtype() != slot_dtype(s, in)) g = g.cast(slot_dtype(s, in));  // promoted step
    if (g.shape() != slot_shape(s, in))
      throw Error(st.op->name + ": gradient for input " + std::to_string(i) + " has shape " + g.shape().str() +
                  ", expected " + slot_shape(s, in).str());
    if (!plain_grad(in).defined()) {
      // Accumulators are written in place later: never let one share storage.
      bool shared = (s.values[in].defined() && g.same_storage(s.values[in])) || !g.is_contiguous();
      for (auto& go : ctx.grad_outputs) shared = shared || (go.defined() && g.same_storage(go));
      for (auto& x : ctx.inputs) shared = shared || (x.defined() && g.same_storage(x));
      grads[in] = shared ? g.copy() : g;
    } else {
      if (grads[in].is_sparse()) grads[in] = grads[in].to_dense();
      eager::add_to(grads[in], g);
    }
  }

  // After the gradient rules: a fused step's intermediates (the convolution's result, the
  // bias sum) share one gradient, the activation's input gradient; its backward hands it
  // out as input n.
  void finish_backward(const PlanStep& st, ComputeContext& ctx) {
    if (st.kind == StepKind::FusedConv)
      for (int slot : fused_intermediates(st))
        if (wanted[size_t(slot)]) {
          grads[size_t(slot)] = st.op->backward(ctx, st.in.size()).copy();
          s.seq_lengths[size_t(slot)] = s.seq_lengths[size_t(st.out[0])];
        }
  }
};

}  // namespace

void backward(const BackPropStatePtr& sp, const VariableValues& root_gradients, const std::vector<Variable>& wrt,
              std::vector<Value>& gradients, const GradientReadyFn& on_ready) {
  if (!sp) throw ValueError("backward: no state; call forward with keep_for_backward first");
  BackPropState& s = *sp;
  const Plan& p = *s.plan;
  GradientPass pass(s, wrt);
  std::vector<NDArrayView>& grads = pass.grads;
  for (auto& [var, val] : root_gradients) {
    auto it = p.slot.find(var.get());
    if (it == p.slot.end()) throw ValueError("backward: " + var.str() + " is not an output of this function");
    std::vector<int64_t> lens;
    NDArrayView g = to_runtime(var, val, lens);
    if (g.shape() != slot_shape(s, it->second))
      throw ValueError("backward: root gradient of shape " + g.shape().str() + " does not match the output's " +
                       slot_shape(s, it->second).str());
    grads[it->second] = g.contiguous().copy();
    set_padding(grads[it->second], lens, 0.0);  // padded steps carry no gradient
  }
  // Early reports (on_ready): a wrt slot's gradient is final once the backward of its
  // first reader (the earliest instruction of the program reading it) has run.
  std::vector<bool> reported(wrt.size(), !on_ready);
  std::vector<std::pair<size_t, size_t>> first_reader;  // (program position, wrt index), latest first
  if (on_ready) {
    // One pass over the program: the first instruction reading each slot.
    std::vector<int64_t> first_pos(p.slot_var.size(), -1);
    for (size_t n = p.program.size(); n-- > 0;) {
      const Instruction& ins = p.program[n];
      const bool loop = ins.kind == StepKind::Loop;
      const size_t first = loop ? size_t(p.loops[size_t(ins.index)].first) : size_t(ins.index);
      const size_t last = loop ? size_t(p.loops[size_t(ins.index)].last) : size_t(ins.index);
      for (size_t k = first; k <= last; ++k)
        for (int in : p.steps[k].in) first_pos[size_t(in)] = int64_t(n);
    }
    for (size_t j = 0; j < wrt.size(); ++j) {
      auto it = p.slot.find(wrt[j].get());
      if (it == p.slot.end() || !wrt[j].dynamic_axes().empty()) continue;  // reported at the end
      if (first_pos[size_t(it->second)] >= 0) first_reader.emplace_back(size_t(first_pos[size_t(it->second)]), j);
    }
    std::sort(first_reader.begin(), first_reader.end(), std::greater<>());
  }
  size_t next_report = 0;
  // Reports the gradients every one of whose readers has run backward (the instructions
  // from program position `done` on).
  auto report_final = [&](size_t done) {
    for (; next_report < first_reader.size() && first_reader[next_report].first >= done; ++next_report) {
      const size_t j = first_reader[next_report].second;
      const int slot = p.slot.at(wrt[j].get());
      if (!pass.plain_grad(slot).defined()) continue;  // reported at the end, as zeros
      on_ready(j, grads[size_t(slot)]);
      reported[j] = true;
    }
  };
  for (size_t n = p.program.size(); n-- > 0;) {
    const Instruction& ins = p.program[n];
    switch (ins.kind) {
      case StepKind::Loop: {
        const PlanLoop& loop = p.loops[size_t(ins.index)];
        report_final(n + 1);
        loop_backward(loop, s, grads, pass.depends);
        break;
      }
      case StepKind::FusedRecurrence:
        report_final(n + 1);
        if (n > 0 && independent_recurrences(p, p.program[n - 1], ins)) {
          pass.steps_backward_together(size_t(p.program[n - 1].index), size_t(ins.index));
          --n;
          break;
        }
        pass.step_backward(size_t(ins.index));
        break;
      case StepKind::Kernel:
      case StepKind::FusedConv:
        report_final(n + 1);
        pass.step_backward(size_t(ins.index));
        break;
      case StepKind::Delay: throw Error("plan: a delay step outside its recurrent loop");
    }
  }
  gradients.clear();
  for (auto& w : wrt) {
    auto it = p.slot.find(w.get());
    if (it != p.slot.end()) pass.plain_grad(it->second);
    if (it == p.slot.end() || !grads[it->second].defined()) {
      // Not reached from the roots: the gradient is zero.
      int like = it == p.slot.end() ? -1 : it->second;
      if (like >= 0 && !s.values[size_t(like)].defined())
        if (const PlanStep* f = fusing_step(p, like)) like = f->out[0];
      NDShape shape = like < 0 ? w.shape() : slot_shape(s, like);
      NDArrayView z = NDArrayView::zeros(w.dtype(), shape);
      gradients.push_back(like < 0 ? Value(z) : to_value(w, z, s.seq_lengths[size_t(like)]));
      continue;
    }
    gradients.push_back(to_value(w, grads[it->second], s.seq_lengths[it->second]));
  }
  for (size_t j = 0; j < wrt.size(); ++j)
    if (!reported[j]) on_ready(j, gradients[j].data());
  run_deferred(s);
}

}  // namespace cntk
