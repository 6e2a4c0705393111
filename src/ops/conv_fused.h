// Convolution fused with its bias and activation. The planner's fusion pass
// (exec/fusion.cpp) replaces the steps Convolution -> Plus(per-channel bias) ->
// activation, when nothing else reads their intermediate results, by one step whose
// OpDef comes from here: one oneDNN convolution with the bias and the activation as
// post-ops, and a gradient equal to the three steps' gradients.
#pragma once
#include <vector>

#include "ops/op.h"

namespace cntk {

enum class FusedActivation { None, ReLU, Sigmoid, Tanh, ELU };

// One of the original steps a fused step stands for.
struct FusedPart {
  Function* fn = nullptr;
  const OpDef* op = nullptr;
  std::vector<std::vector<Axis>> in_axes;  // layout order per input, as in PlanStep
};

// What a fused step computes: act(Convolution(W, X) + b). Its inputs are (W, X) and,
// with a bias, b; the parts are kept so that cases oneDNN cannot run (float64, a
// geometry oneDNN cannot express, an empty batch) run the original ops one by one.
struct FusedConvSpec {
  FusedPart conv;
  bool has_bias = false;
  FusedPart plus;
  size_t bias_side = 1;  // which input of Plus is the bias
  FusedActivation activation = FusedActivation::None;
  FusedPart act;
  double alpha = 0;  // ELU's alpha
};

// The activation `f` computes if the fusion can carry it as a post-op; None otherwise.
FusedActivation fusable_activation(const Function& f);

// The op definition of a fused step for `spec` (named e.g. "Convolution+Plus+ReLU").
// Its backward for input index n (one past its last input) returns the gradient with
// respect to the activation's input: the gradient of both intermediates the step no
// longer writes, since the bias Plus passes its gradient through unchanged in shape.
OpDef fused_convolution_op(const FusedConvSpec& spec);

}  // namespace cntk
