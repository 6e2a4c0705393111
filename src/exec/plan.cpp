#include "exec/plan.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <unordered_set>

#include "cntk/profiler.h"
#include "cntk/switches.h"
#include "exec/fused_rnn.h"
#include "exec/fusion.h"
#include "kernels/backend.h"
#include "ops/sequence_delay.h"

namespace cntk {

namespace {
std::atomic<size_t> g_plans{0};
}

size_t plans_compiled() { return g_plans; }

std::vector<Axis> layout_axes(const Variable& v) {
  std::vector<Axis> out(v.dynamic_axes().rbegin(), v.dynamic_axes().rend());
  return out;
}

namespace {

class PlanBuilder {
 public:
  // `uses` (may be null: no fusion) lets recognized recurrences run as one fused step.
  PlanBuilder(Plan& p, const VariableUses* uses) : p_(p), uses_(uses) {}

  // `bind` maps inner placeholders of the blocks being inlined to outer slots.
  int slot_of(const Variable& v, const std::unordered_map<VariableImpl*, int>& bind) {
    if (v.is_placeholder()) {
      auto it = bind.find(v.get());
      if (it != bind.end()) return it->second;
      throw ValueError("cannot compute: placeholder " + v.str() + " is not bound; use replace_placeholders first");
    }
    auto found = p_.slot.find(v.get());
    if (found != p_.slot.end()) return found->second;
    if (!v.is_output()) {
      int s = new_slot(v);
      p_.leaf_slots.push_back(s);
      return s;
    }
    FunctionPtr owner = v.owner();
    if (!owner)
      throw ValueError("cannot compute: the function computing " + v.str() +
                       " was freed (a recurrent loop is kept alive by the functions built on it; keep a handle "
                       "to the loop's output)");
    emit(owner, bind);
    found = p_.slot.find(v.get());
    if (found == p_.slot.end()) throw Error("plan: output " + v.str() + " was not produced");
    return found->second;
  }

  // Operands of delays are planned after the rest, which is what lets a graph
  // refer to its own past (or future) outputs.
  void resolve_deferred() {
    while (!deferred_.empty()) {
      Deferred d = std::move(deferred_.back());
      deferred_.pop_back();
      int s = slot_of(d.var, d.bind);
      p_.steps[d.step].in[d.input] = s;
    }
  }

 private:
  struct Deferred {
    size_t step, input;
    Variable var;
    std::unordered_map<VariableImpl*, int> bind;
  };

  int new_slot(const Variable& v) {
    int s = (int)p_.slot_var.size();
    p_.slot_var.push_back(Variable(v.impl()));  // no owner reference: see PlanCache
    p_.slot[v.get()] = s;
    return s;
  }

  void emit(const FunctionPtr& f, const std::unordered_map<VariableImpl*, int>& bind) {
    if (!in_progress_.insert(f.get()).second)
      throw ValueError("the graph has a cycle through '" + f->op_name() + "' (" + f->uid() +
                       ") that passes no past_value/future_value: it cannot be computed");
    FusedRnnMatch fused;
    if (f->is_block() && uses_ && match_fused_rnn(f, *uses_, fused)) {
      emit_fused(f, fused, bind);
    } else if (f->is_block()) {
      std::unordered_map<VariableImpl*, int> inner_bind = bind;
      for (auto& [ph, outer] : f->block_arguments_mapping()) inner_bind[ph.get()] = slot_of(outer, bind);
      auto inner_outs = f->block_root()->outputs();
      auto outs = f->outputs();
      for (size_t i = 0; i < outs.size(); ++i) {
        int s = slot_of(inner_outs[i], inner_bind);
        p_.slot[outs[i].get()] = s;
      }
    } else if (f->op_name() == "Combine") {
      for (auto& in : f->direct_inputs()) slot_of(in, bind);
    } else {
      PlanStep step;
      step.fn = f.get();
      step.op = f->op();
      bool delay = is_delay_op(step.op);
      const auto& ins = f->direct_inputs();
      for (size_t i = 0; i < ins.size(); ++i) {
        if (delay && i == 0) {
          step.in.push_back(-1);  // planned by resolve_deferred, once this step has its index
        } else {
          step.in.push_back(slot_of(ins[i], bind));
        }
        step.in_axes.push_back(layout_axes(ins[i]));
      }
      auto outs = f->outputs();
      for (auto& o : outs) {
        if (o.shape().is_unknown())
          throw ValueError("cannot compute '" + f->op_name() + "': its output shape is unknown (unbound placeholders)");
        step.out.push_back(new_slot(o));
      }
      step.out_axes = layout_axes(outs[0]);
      // Profiler event names: "<Op> <node name or uid>", interned once per plan.
      std::string label = f->op_name() + " " + (f->name().empty() ? f->uid() : f->name());
      step.event_name = profiler::intern(label);
      step.backward_event_name = profiler::intern(label + " (backward)");
      if (delay) deferred_.push_back({p_.steps.size(), 0, ins[0], bind});
      p_.steps.push_back(std::move(step));
    }
    in_progress_.erase(f.get());
  }

  // One step computing f's first output over the whole sequence; f's other outputs
  // (an LSTM's cell state) get no slot, which match_fused_rnn made sure nobody reads.
  void emit_fused(const FunctionPtr& f, const FusedRnnMatch& m, const std::unordered_map<VariableImpl*, int>& bind) {
    PlanStep step;
    step.kind = StepKind::FusedRecurrence;
    step.fn = f.get();
    step.op = m.op;
    for (auto& v : m.inputs) {
      step.in.push_back(slot_of(v, bind));
      step.in_axes.push_back(layout_axes(v));
    }
    Variable h = f->outputs()[0];
    step.out.push_back(new_slot(h));
    step.out_axes = layout_axes(h);
    std::string label = "FusedRecurrence(" + f->op_name() + ") " + (f->name().empty() ? f->uid() : f->name());
    step.event_name = profiler::intern(label);
    step.backward_event_name = profiler::intern(label + " (backward)");
    p_.steps.push_back(std::move(step));
  }

  Plan& p_;
  const VariableUses* uses_;
  std::unordered_set<Function*> in_progress_;
  std::vector<Deferred> deferred_;
};

std::string step_name(const PlanStep& st) { return "'" + st.fn->op_name() + "' (" + st.fn->uid() + ")"; }

// Orders the steps so that every step follows the steps it reads from, except
// inside recurrent loops (strongly connected components through delays), whose
// steps become one contiguous, validated range.
void order_steps(Plan& p) {
  const size_t n = p.steps.size();
  std::vector<int> producer(p.slot_var.size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (int o : p.steps[i].out) producer[o] = int(i);
  std::vector<std::vector<int>> preds(n);
  for (size_t i = 0; i < n; ++i)
    for (int s : p.steps[i].in)
      if (producer[s] >= 0) preds[i].push_back(producer[s]);
  // Tarjan's algorithm over the predecessor edges (iterative, so deep graphs do not
  // exhaust the stack). Components come out with their predecessors first.
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<bool> on_stack(n, false);
  std::vector<int> stack;
  std::vector<std::vector<int>> comps;
  int counter = 0;
  for (size_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    std::vector<std::pair<int, size_t>> work{{int(root), 0}};
    while (!work.empty()) {
      auto& [v, next] = work.back();
      if (next == 0 && index[v] < 0) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (next < preds[v].size()) {
        int w = preds[v][next++];
        if (index[w] < 0) {
          work.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::vector<int> c;
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = int(comps.size());
          c.push_back(w);
        } while (w != v);
        comps.push_back(std::move(c));
      }
      int done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
    }
  }
  std::vector<PlanStep> ordered;
  ordered.reserve(n);
  for (auto& c : comps) {
    bool self_edge = false;
    for (int pr : preds[c[0]]) self_edge = self_edge || pr == c[0];
    if (c.size() == 1 && !self_edge) {
      ordered.push_back(std::move(p.steps[c[0]]));
      continue;
    }
    // A recurrent loop. The delays whose operand comes from inside it cut the
    // cycles; the other edges order the steps within one time step.
    const int cid = comp[c[0]];
    std::vector<bool> in_loop_delay(n, false);
    int direction = 0;  // +1 past (forward in time), -1 future
    const PlanStep* first_delay = nullptr;
    for (int i : c) {
      const PlanStep& st = p.steps[i];
      if (!is_delay_op(st.op) || producer[st.in[0]] < 0 || comp[producer[st.in[0]]] != cid) continue;
      DelaySpec d = delay_spec(*st.fn);
      if (d.offset < 1)
        throw ValueError("recurrent loop: " + step_name(st) +
                         " has a time step of 0 inside a loop, "
                         "which makes the loop wait on itself");
      int dir = d.past ? 1 : -1;
      if (direction != 0 && dir != direction)
        throw ValueError("recurrent loop: " + step_name(*first_delay) + " and " + step_name(st) +
                         " delay in opposite directions in one loop (past_value and future_value mixed); "
                         "such a loop cannot run step by step");
      direction = dir;
      first_delay = &st;
      in_loop_delay[i] = true;
      if (producer[st.in[1]] >= 0 && comp[producer[st.in[1]]] == cid)
        throw ValueError("recurrent loop: the initial state of " + step_name(st) + " is computed inside the loop");
    }
    if (direction == 0)
      throw ValueError("recurrent loop through " + step_name(p.steps[c[0]]) + " contains no past_value/future_value");
    Axis seq_axis;
    bool have_axis = false;
    for (int i : c) {
      const PlanStep& st = p.steps[i];
      if (st.out_axes.size() != 2)
        throw ValueError("recurrent loop: " + step_name(st) + " is part of a loop but its output has no sequence axis");
      if (have_axis && !(st.out_axes[0] == seq_axis))
        throw ValueError("recurrent loop: " + step_name(st) +
                         " runs over another sequence axis than the rest of the loop");
      seq_axis = st.out_axes[0];
      have_axis = true;
      for (size_t k = 0; k < st.in.size(); ++k)
        if (st.in_axes[k].size() == 2 && !(st.in_axes[k][0] == seq_axis) && !(in_loop_delay[i] && k == 1))
          throw ValueError("recurrent loop: input " + std::to_string(k) + " of " + step_name(st) +
                           " has another sequence axis than the loop");
    }
    // Kahn's algorithm within the loop, without the cut edges.
    std::vector<int> members = c;
    std::sort(members.begin(), members.end());  // emission order, for a stable result
    std::unordered_map<int, int> pending;
    for (int i : members) {
      int cnt = 0;
      if (!in_loop_delay[i])
        for (int pr : preds[i]) cnt += comp[pr] == cid;
      else
        for (size_t k = 1; k < p.steps[i].in.size(); ++k)
          cnt += producer[p.steps[i].in[k]] >= 0 && comp[producer[p.steps[i].in[k]]] == cid;
      pending[i] = cnt;
    }
    PlanLoop loop;
    loop.forward_in_time = direction > 0;
    loop.first = int(ordered.size());
    std::vector<int> done;
    while (done.size() < members.size()) {
      int pick = -1;
      for (int i : members)
        if (pending[i] == 0) {
          pick = i;
          break;
        }
      if (pick < 0)
        throw ValueError("recurrent loop through " + step_name(p.steps[members[0]]) +
                         " has a cycle within one time step (no past_value/future_value on it)");
      pending[pick] = -1;
      done.push_back(pick);
      for (int i : members) {
        if (pending[i] <= 0) continue;
        const PlanStep& st = p.steps[i];
        for (size_t k = in_loop_delay[i] ? 1 : 0; k < st.in.size(); ++k)
          if (producer[st.in[k]] == pick) --pending[i];
      }
    }
    for (int i : done) {
      for (int o : p.steps[i].out) loop.out_slots.push_back(o);
      ordered.push_back(std::move(p.steps[i]));
      ordered.back().loop = int(p.loops.size());
      if (in_loop_delay[i]) ordered.back().kind = StepKind::Delay;
    }
    loop.last = int(ordered.size()) - 1;
    p.loops.push_back(std::move(loop));
  }
  p.steps = std::move(ordered);
}

// Plans of one function, keyed by the requested outputs. Plans hold only raw
// pointers and output variables without owner references, so a function's own
// cache never keeps it alive.
struct PlanCache {
  std::mutex mu;
  std::map<std::vector<VariableImpl*>, std::shared_ptr<const Plan>> plans;
  std::set<std::vector<VariableImpl*>> checked;  // output sets known to belong to the graph
};

std::vector<VariableImpl*> key_of(const std::vector<Variable>& outputs) {
  std::vector<VariableImpl*> key;
  for (auto& o : outputs) key.push_back(o.get());
  return key;
}

PlanCache& cache_of(const FunctionPtr& f) { return *f->plan_cache<PlanCache>(); }

// A cached plan stays valid while every variable it maps still has the same
// shape and every function the same inputs: a cheap check against graph edits.
// Fused steps are checked through the steps they replace.
bool still_valid(const Plan& p) {
  auto step_valid = [&](const PlanStep& st) {
    const auto& ins = st.fn->direct_inputs();
    if (ins.size() != st.in.size()) return false;
    for (size_t i = 0; i < ins.size(); ++i) {
      auto it = p.slot.find(ins[i].get());
      if (it == p.slot.end() || it->second != st.in[i]) return false;
    }
    return true;
  };
  for (auto& st : p.steps) {
    if (st.kind == StepKind::FusedRecurrence) continue;  // its inputs are not its block's direct inputs
    if (st.fused_from.empty() ? !step_valid(st) : !std::all_of(st.fused_from.begin(), st.fused_from.end(), step_valid))
      return false;
  }
  return true;
}

// The program: the steps outside loops, and each loop (a contiguous range) as one Loop.
// Brings independent fused recurrences next to each other in the program (the two
// directions of a bidirectional layer, with the steps each one's input needs between
// them), so that the executor can run them side by side: between recurrence a and the
// next one b, the steps that do not depend on a move before it, the ones that do move
// after b, provided b does not depend on a either. The order stays topological.
void pair_recurrences(Plan& p) {
  constexpr size_t kWindow = 16;  // instructions looked at past a
  for (size_t i = 0; i < p.program.size(); ++i) {
    if (p.program[i].kind != StepKind::FusedRecurrence) continue;
    std::unordered_set<int> after_a;  // slots computed from a's results
    for (int o : p.steps[size_t(p.program[i].index)].out) after_a.insert(o);
    auto reads = [&](const PlanStep& st) {
      for (int in : st.in)
        if (after_a.count(in)) return true;
      return false;
    };
    std::vector<Instruction> before, later;
    size_t j = i + 1;
    for (; j < p.program.size() && j <= i + kWindow; ++j) {
      const Instruction& ins = p.program[j];
      if (ins.kind == StepKind::Loop) break;
      const PlanStep& st = p.steps[size_t(ins.index)];
      if (ins.kind == StepKind::FusedRecurrence) break;
      if (reads(st)) {
        for (int o : st.out) after_a.insert(o);
        later.push_back(ins);
      } else {
        before.push_back(ins);
      }
    }
    if (j >= p.program.size() || j > i + kWindow || p.program[j].kind != StepKind::FusedRecurrence ||
        reads(p.steps[size_t(p.program[j].index)]))
      continue;
    const Instruction a = p.program[i], b = p.program[j];
    size_t n = i;
    for (const Instruction& ins : before) p.program[n++] = ins;
    p.program[n++] = a;
    p.program[n++] = b;
    for (const Instruction& ins : later) p.program[n++] = ins;
    i = n - 1 - later.size();  // continue after b
  }
}

void make_program(Plan& p) {
  p.program.clear();
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const PlanStep& st = p.steps[k];
    p.carries_state = p.carries_state || is_delay_op(st.op) || st.kind == StepKind::FusedRecurrence;
    if (st.loop >= 0) {
      p.program.push_back({StepKind::Loop, st.loop});
      k = size_t(p.loops[size_t(st.loop)].last);
      continue;
    }
    p.program.push_back({st.kind, int(k)});
  }
  pair_recurrences(p);
}

}  // namespace

void check_outputs_in_graph(const FunctionPtr& f, const std::vector<Variable>& outputs) {
  auto key = key_of(outputs);
  auto& c = cache_of(f);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.checked.count(key)) return;
  }
  std::unordered_set<const Function*> fns;
  for (auto& fn : f->topological_order()) fns.insert(fn.get());
  std::unordered_set<const VariableImpl*> leaves;
  for (auto& v : f->inputs()) leaves.insert(v.get());
  for (auto& o : outputs) {
    if (!o.defined()) throw ValueError("cannot compute an undefined variable");
    bool ok = o.is_output() ? fns.count(o.owner().get()) > 0 : leaves.count(o.get()) > 0;
    if (!ok) throw ValueError(o.str() + " is not part of the graph of the function it was requested from");
  }
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.checked.size() > 64) c.checked.clear();
  c.checked.insert(key);
}

std::shared_ptr<const Plan> get_plan(const FunctionPtr& f, const std::vector<Variable>& outputs,
                                     bool allow_rnn_fusion) {
  const kernels::Backend& backend = kernels::cpu_backend();
  const bool rnn_fusion = allow_rnn_fusion && backend.fuses_recurrences();
  auto key = key_of(outputs);
  // Plans with and without fused recurrences live side by side (truncated BPTT switches
  // between them): the unfused one is keyed with a trailing null.
  if (!rnn_fusion) key.push_back(nullptr);
  auto& c = cache_of(f);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.plans.find(key);
    if (it != c.plans.end()) {
      if (it->second->rnn_fusion == rnn_fusion && it->second->fusion == backend.fuses_convolutions() &&
          it->second->kept_layouts == backend.keeps_layouts() && still_valid(*it->second))
        return it->second;
      c.plans.erase(it);
    }
  }
  // Placeholders bound through another function sharing these nodes leave unknown
  // output shapes here; infer them now that the inputs are known.
  for (auto& fn : f->topological_order())
    for (auto& o : fn->output_impls())
      if (o->shape.is_unknown()) {
        fn->infer_outputs();
        break;
      }
  for (auto& o : outputs)
    if (!o.defined()) throw ValueError("cannot compute an undefined variable");
  auto p = std::make_shared<Plan>();
  VariableUses uses;
  p->rnn_fusion = rnn_fusion;
  if (p->rnn_fusion) uses = count_variable_uses(f, outputs);
  PlanBuilder b(*p, p->rnn_fusion ? &uses : nullptr);
  std::unordered_map<VariableImpl*, int> none;
  for (auto& o : outputs) p->output_slots.push_back(b.slot_of(o, none));
  b.resolve_deferred();
  order_steps(*p);
  if (backend.fuses_convolutions()) fuse_steps(*p);
  if (backend.keeps_layouts()) mark_kept_layouts(*p);
  make_program(*p);
  ++g_plans;
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.plans.size() > 64) c.plans.clear();
  c.plans[key] = p;
  return p;
}

}  // namespace cntk
