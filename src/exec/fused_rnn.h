// Fused recurrences: the planner replaces the loop of Recurrence(LSTM/GRU/RNNStep)
// (a step block whose state arguments are delays of its own outputs) by one step that
// runs the whole sequence on oneDNN's RNN primitives (kernels/cpu/rnn.h), forward and
// backward, when the step's inner graph is wired as a cell oneDNN computes (matched by
// structure, not names: see README.md). Anything else is inlined and runs step by
// step. CNTK_RNN_FUSION=0 in the environment turns fusion off (tests and benchmarks
// compare the two paths).
#pragma once
#include <unordered_map>
#include <vector>

#include "cntk/function.h"
#include "ops/op.h"

namespace cntk {

namespace kernels {
enum class RnnCell;
}

// How often each variable is read anywhere in a graph (inside blocks too), counting
// the requested outputs as reads.
using VariableUses = std::unordered_map<const VariableImpl*, int>;
VariableUses count_variable_uses(const FunctionPtr& root, const std::vector<Variable>& outputs);

struct FusedRnnMatch {
  const OpDef* op = nullptr;
  // The fused step's inputs: x, W, H, [H1 for GRU], b, the initial state of h, [of c
  // for LSTM]; all outer variables (or the block's own parameters).
  std::vector<Variable> inputs;
  // The cell and whether it runs backward in time (FutureValue delays): what the ONNX
  // writer needs to write the recurrence as one LSTM/GRU/RNN node.
  kernels::RnnCell cell{};
  bool backward = false;
};

// Whether block `f` is the step of a fusable recurrence, given the graph's uses; on
// success fills `m`: any block qualifies by its wiring, whatever its name. The fused
// step's only output is f's first output (h). The fused kernels compute float32 only;
// `any_float` accepts float16/float64 steps too (the ONNX writer reads the structure).
bool match_fused_rnn(const FunctionPtr& f, const VariableUses& uses, FusedRnnMatch& m, bool any_float = false);

}  // namespace cntk
