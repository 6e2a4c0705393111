// Running a graph: forward (eval), and backward from root gradients.
//
// Threads (docs/architecture.md, "Threads"): forward and backward may run on several
// threads at once, on different functions or on the same one. Concurrent inference
// calls of one function give what each would give alone. A training pass
// (keep_for_backward) writes state that outlives the call (random generator
// positions, batch normalization's running statistics, recurrent carries), so
// training passes of one function must not run concurrently with each other or with
// anything that reads that state; nothing detects it, and the results are undefined.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "cntk/function.h"
#include "cntk/switches.h"  // set_rnn_fusion and the planner's other switches
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

// Told, while backward still runs, that the gradient of wrt[index] is final: no later
// step adds to it. The view (runtime layout) is the one backward returns for it; it may
// be read from another thread until backward returns, never written. Every index is
// reported exactly once, in the order the gradients become final (the same order for
// the same plan); those no step reaches are reported, as zeros, at the end.
using GradientReadyFn = std::function<void(size_t index, const NDArrayView& gradient)>;
void backward(const BackPropStatePtr& state, const VariableValues& root_gradients, const std::vector<Variable>& wrt,
              std::vector<Value>& gradients, const GradientReadyFn& on_ready);

// Gradients summed over the batch; parameters never carry a batch axis so their
// gradients are plain arrays (what learners consume).
FunctionPtr backprop_state_function(const BackPropStatePtr& state);

// Number of plans compiled so far (tests check that a repeated layout plans once).
size_t plans_compiled();

// Number of fused steps (a convolution with its bias and activation as one oneDNN
// primitive) in the plans compiled so far; tests check that a chain fused or did not.
// set_conv_fusion (cntk/switches.h) turns the fusion off.
size_t fused_steps_planned();
// Reorders between CNTK's plain layout and oneDNN's own (blocked) layouts, counted since
// the start: of activations and gradients, and of weights. Consecutive convolution,
// pooling and relu steps keep oneDNN's layout between them unless set_dnnl_layouts(false)
// (cntk/switches.h): then every oneDNN step reorders in and out.
size_t dnnl_reorders();
size_t dnnl_weight_reorders();
// Max pooling workspaces (each window's argmax) that a backward pass recomputed, counted
// since the start: a training step's forward pass keeps its own for the backward pass.
size_t max_pool_workspaces_recomputed();

}  // namespace cntk
