// A compiled plan: the primitive steps of a graph in execution order, every
// variable mapped to a value slot, blocks inlined. Plans are cached per
// (function, requested outputs) and rebuilt only when the graph changes.
#pragma once
#include <memory>
#include <unordered_map>
#include <vector>

#include "cntk/function.h"
#include "ops/op.h"

namespace cntk {

// What the executor does with a step (forward and backward); see Plan::program.
enum class StepKind : uint8_t {
  Kernel,           // its op's kernel and gradient rule (over one time step inside a loop)
  Delay,            // a PastValue/FutureValue inside a loop: the delay's step kernel
                    // (ops/sequence_delay.h) per time step, reading the loop's buffers
  Loop,             // (instructions only) a recurrent loop: its range of steps per time step
  FusedRecurrence,  // a whole recurrence recognized as one cell (fused_rnn.h)
  FusedConv,        // a convolution chain as one step (fusion.h): writes only its last result
};

// One instruction of a plan's program: step `index` (Plan::steps) or, for a Loop,
// loop `index` (Plan::loops).
struct Instruction {
  StepKind kind;
  int index;
};

struct PlanStep {
  StepKind kind = StepKind::Kernel;  // never Loop
  Function* fn;
  const OpDef* op;
  std::vector<int> in, out;
  std::vector<std::vector<Axis>> in_axes;  // layout order per input
  std::vector<Axis> out_axes;
  const char* event_name = nullptr;  // the profiler's per-node event names
  const char* backward_event_name = nullptr;
  int loop = -1;  // index into Plan::loops when the step is part of a recurrent loop
  // A fused step (see fusion.h): the steps it replaces, in order; empty otherwise.
  std::vector<PlanStep> fused_from;
};

// A recurrent loop: a strongly connected component of the graph through PastValue
// or FutureValue edges. Its steps are contiguous in Plan::steps, in the order one
// time step runs them; the executor runs them for every time step in turn, all
// sequences of the minibatch batched into each step, and backward through time in
// reverse. Its delays whose operand the loop computes are Delay steps, the others
// Kernel steps. (A recurrence recognized as one cell never becomes a loop: the planner
// emits one FusedRecurrence step for it instead, see fused_rnn.h.)
struct PlanLoop {
  int first = 0, last = 0;      // its steps are Plan::steps[first .. last]
  bool forward_in_time = true;  // PastValue loops run t = 0..T-1, FutureValue loops T-1..0
  std::vector<int> out_slots;   // the slots the loop's steps write
};

struct Plan {
  std::vector<PlanStep> steps;
  std::vector<Variable> slot_var;               // a variable for each slot (leaves: the leaf itself)
  std::unordered_map<VariableImpl*, int> slot;  // every variable reachable, inner block ones included
  std::vector<int> leaf_slots;                  // inputs, parameters, constants
  std::vector<int> output_slots;                // the requested outputs, in order
  std::vector<PlanLoop> loops;
  // What the executor runs, in order (backward: in reverse): the steps outside loops and
  // one Loop instruction per loop; made last, after fusion (make_program), which brings
  // independent fused recurrences next to each other (the executor may run such a pair
  // side by side). The order is topological but need not follow `steps`.
  std::vector<Instruction> program;
  bool carries_state = false;  // a delay or fused recurrence may continue sequences across calls
  bool rnn_fusion = false;     // compiled with fused recurrences (see fused_rnn.h)
  bool fusion = false;         // the fusion pass ran (see fusion.h)
  std::vector<std::shared_ptr<const OpDef>> fused_ops;  // the op definitions of its fused steps
  std::vector<bool> fused_away;                         // per slot: an intermediate result no step computes
  bool kept_layouts = false;                            // the layout pass ran (see fusion.h)
  std::vector<bool> layout_kept;                        // per slot: kept in its producer's backend layout between steps
};

// The plan computing `outputs` of f, cached on f. allow_rnn_fusion=false asks for one
// whose recurrences all run step by step.
std::shared_ptr<const Plan> get_plan(const FunctionPtr& f, const std::vector<Variable>& outputs,
                                     bool allow_rnn_fusion = true);

// The runtime layout of a variable's dynamic axes: sequence axes first, batch last.
std::vector<Axis> layout_axes(const Variable& v);

}  // namespace cntk
