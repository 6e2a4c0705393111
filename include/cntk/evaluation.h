// Running a graph: forward (eval), and backward from root gradients.
#pragma once
#include <memory>
#include <vector>

#include "cntk/function.h"
#include "cntk/value.h"

namespace cntk {

// What forward keeps for a later backward: the compiled plan and every value it computed.
struct BackPropState;
using BackPropStatePtr = std::shared_ptr<BackPropState>;

using VariableValues = std::vector<std::pair<Variable, Value>>;

// Computes `outputs` of `f` from `arguments`. When `keep_for_backward` is true the
// call runs in training mode (dropout active, as in CNTK) and returns a state for backward.
BackPropStatePtr forward(const FunctionPtr& f, const VariableValues& arguments, const std::vector<Variable>& outputs,
                         std::vector<Value>& output_values, bool keep_for_backward);

// `forward` computes any variable reachable from the arguments; CNTK's API only lets a
// function compute its own graph's variables. This throws ValueError for the others.
void check_outputs_in_graph(const FunctionPtr& f, const std::vector<Variable>& outputs);

// Gradients of the roots (seeded with `root_gradients`) with respect to `wrt`.
void backward(const BackPropStatePtr& state, const VariableValues& root_gradients, const std::vector<Variable>& wrt,
              std::vector<Value>& gradients);

// Gradients summed over the batch; parameters never carry a batch axis so their
// gradients are plain arrays (what learners consume).
FunctionPtr backprop_state_function(const BackPropStatePtr& state);

// Number of plans compiled so far (tests check that a repeated layout plans once).
size_t plans_compiled();

// Whether Recurrence(LSTM/GRU/RNNStep) loops run as one fused oneDNN step (true unless
// CNTK_RNN_FUSION=0); a change applies to plans compiled from then on (cached plans of
// the other mode are recompiled).
void set_rnn_fusion(bool on);
bool rnn_fusion_enabled();
// Number of fused steps (a convolution with its bias and activation as one oneDNN
// primitive) in the plans compiled so far; tests check that a chain fused or did not.
// Setting the environment variable CNTK_NO_FUSION=1 turns the fusion off.
size_t fused_steps_planned();
// Reorders between CNTK's plain layout and oneDNN's own (blocked) layouts, counted since
// the start: of activations and gradients, and of weights. Consecutive convolution,
// pooling and relu steps keep oneDNN's layout between them unless the environment
// variable CNTK_DNNL_BLOCKED=0 is set (then every oneDNN step reorders in and out).
size_t dnnl_reorders();
size_t dnnl_weight_reorders();

}  // namespace cntk
