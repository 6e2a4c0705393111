// A compiled plan: the primitive steps of a graph in execution order, every
// variable mapped to a value slot, blocks inlined. Plans are cached per
// (function, requested outputs) and rebuilt only when the graph changes.
#pragma once
#include <unordered_map>
#include <vector>

#include "cntk/function.h"
#include "ops/op.h"

namespace cntk {

struct PlanStep {
  Function* fn;
  const OpDef* op;
  std::vector<int> in, out;
  std::vector<std::vector<Axis>> in_axes;  // layout order per input
  std::vector<Axis> out_axes;
  const char* event_name = nullptr;           // the profiler's per-node event names
  const char* backward_event_name = nullptr;
};

struct Plan {
  std::vector<PlanStep> steps;
  std::vector<Variable> slot_var;               // a variable for each slot (leaves: the leaf itself)
  std::unordered_map<VariableImpl*, int> slot;  // every variable reachable, inner block ones included
  std::vector<int> leaf_slots;                  // inputs, parameters, constants
  std::vector<int> output_slots;                // the requested outputs, in order
};

std::shared_ptr<const Plan> get_plan(const FunctionPtr& f, const std::vector<Variable>& outputs);

// The runtime layout of a variable's dynamic axes: sequence axes first, batch last.
std::vector<Axis> layout_axes(const Variable& v);

}  // namespace cntk
