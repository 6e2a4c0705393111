#include "exec/plan.h"

#include "cntk/profiler.h"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <unordered_set>

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
  explicit PlanBuilder(Plan& p) : p_(p) {}

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
    if (!owner) throw Error("output variable " + v.str() + " has no owner");
    emit(owner, bind);
    found = p_.slot.find(v.get());
    if (found == p_.slot.end()) throw Error("plan: output " + v.str() + " was not produced");
    return found->second;
  }

 private:
  int new_slot(const Variable& v) {
    int s = (int)p_.slot_var.size();
    p_.slot_var.push_back(Variable(v.impl()));  // no owner reference: see PlanCache
    p_.slot[v.get()] = s;
    return s;
  }

  void emit(const FunctionPtr& f, const std::unordered_map<VariableImpl*, int>& bind) {
    if (!in_progress_.insert(f.get()).second)
      throw NotImplementedError("the graph has a loop through '" + f->op_name() +
                                "'; recurrent loops (past_value/future_value cycles) are not supported yet");
    if (f->is_block()) {
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
      for (auto& in : f->direct_inputs()) {
        step.in.push_back(slot_of(in, bind));
        step.in_axes.push_back(layout_axes(in));
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
      p_.steps.push_back(std::move(step));
    }
    in_progress_.erase(f.get());
  }

  Plan& p_;
  std::unordered_set<Function*> in_progress_;
};

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

PlanCache& cache_of(const FunctionPtr& f) {
  auto& holder = f->plan_cache();
  if (!holder) holder = std::make_shared<PlanCache>();
  return *std::static_pointer_cast<PlanCache>(holder);
}

// A cached plan stays valid while every variable it maps still has the same
// shape and every function the same inputs: a cheap check against graph edits.
bool still_valid(const Plan& p) {
  for (auto& st : p.steps) {
    const auto& ins = st.fn->direct_inputs();
    if (ins.size() != st.in.size()) return false;
    for (size_t i = 0; i < ins.size(); ++i) {
      auto it = p.slot.find(ins[i].get());
      if (it == p.slot.end() || it->second != st.in[i]) return false;
    }
  }
  return true;
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

std::shared_ptr<const Plan> get_plan(const FunctionPtr& f, const std::vector<Variable>& outputs) {
  auto key = key_of(outputs);
  auto& c = cache_of(f);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.plans.find(key);
    if (it != c.plans.end()) {
      if (still_valid(*it->second)) return it->second;
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
  PlanBuilder b(*p);
  std::unordered_map<VariableImpl*, int> none;
  for (auto& o : outputs) p->output_slots.push_back(b.slot_of(o, none));
  ++g_plans;
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.plans.size() > 64) c.plans.clear();
  c.plans[key] = p;
  return p;
}

}  // namespace cntk
