// Typed helpers for building graphs from C++.
//
// Function::primitive takes CNTK's op name and a Dictionary of attributes; these
// inline functions fill both in with CNTK's names and keys, so that graph code
// reads like the Python API:
//
//   using namespace cntk::ops;
//   auto z = tanh(plus(times(x, W), b));        // z: FunctionPtr
//   auto loss = reduce_sum(z);                  // over all static axes
//   auto ce = cross_entropy_with_softmax(z, labels);
//
// Attributes a helper leaves out take the defaults the op's schema declares
// (`_cntk.op_schema(name)` in Python lists them).
//
// Every helper takes Operands (a Variable or a FunctionPtr, whose single output
// is used) and returns the new function as a composite, as CNTK does. Shape and
// type errors are thrown at once (ShapeError/TypeError naming the op).
// Only a handful of ops are covered; anything else goes through
// Function::primitive directly.
#pragma once
#include <optional>
#include <string>

#include "cntk/function.h"

namespace cntk::ops {

// A graph operand: a variable, or a function standing for its single output.
class Operand {
 public:
  Operand(Variable v) : v_(std::move(v)) {}           // NOLINT: implicit on purpose
  Operand(const FunctionPtr& f) : v_(f->output()) {}  // NOLINT
  const Variable& var() const { return v_; }
  operator const Variable&() const { return v_; }  // NOLINT

 private:
  Variable v_;
};

// One primitive op wrapped as a composite.
inline FunctionPtr apply(const std::string& op, std::vector<Variable> inputs, Dictionary attrs = {},
                         const std::string& name = "") {
  return Function::composite(Function::primitive(op, std::move(inputs), std::move(attrs), name), name);
}

// ---------------------------------------------------------------- elementwise

inline FunctionPtr plus(const Operand& a, const Operand& b, const std::string& name = "") {
  return apply("Plus", {a, b}, {}, name);
}
inline FunctionPtr minus(const Operand& a, const Operand& b, const std::string& name = "") {
  return apply("Minus", {a, b}, {}, name);
}
inline FunctionPtr element_times(const Operand& a, const Operand& b, const std::string& name = "") {
  return apply("ElementTimes", {a, b}, {}, name);
}
inline FunctionPtr element_divide(const Operand& a, const Operand& b, const std::string& name = "") {
  return apply("ElementDivide", {a, b}, {}, name);
}
inline FunctionPtr negate(const Operand& x, const std::string& name = "") { return apply("Negate", {x}, {}, name); }
inline FunctionPtr tanh(const Operand& x, const std::string& name = "") { return apply("Tanh", {x}, {}, name); }
inline FunctionPtr sigmoid(const Operand& x, const std::string& name = "") {
  return apply("StableSigmoid", {x}, {}, name);
}
inline FunctionPtr relu(const Operand& x, const std::string& name = "") { return apply("ReLU", {x}, {}, name); }
inline FunctionPtr exp(const Operand& x, const std::string& name = "") { return apply("Exp", {x}, {}, name); }
inline FunctionPtr log(const Operand& x, const std::string& name = "") { return apply("Log", {x}, {}, name); }

// -------------------------------------------------------------------- linalg

// CNTK's times (NumPy order): contracts the trailing axes of `left` with the
// leading axes of `right`, keeping the last `output_rank` axes of `right`. Settings
// left out take the defaults Times declares.
inline FunctionPtr times(const Operand& left, const Operand& right, std::optional<int> output_rank = {},
                         std::optional<int> infer_input_rank_to_map = {}, const std::string& name = "") {
  Dictionary attrs;
  if (output_rank) attrs["outputRank"] = *output_rank;
  if (infer_input_rank_to_map) attrs["inferInputRankToMap"] = *infer_input_rank_to_map;
  return apply("Times", {left, right}, std::move(attrs), name);
}

// ----------------------------------------------------------------- reductions

// ReduceElements with `op` one of Sum, Mean, Max, Min, Prod, LogSum, Argmax, Argmin.
// `axis`: a static axis, Axis::all_static_axes() (the default), Axis::all_axes(),
// or the batch axis.
inline FunctionPtr reduce(const std::string& op, const Operand& x, const Axis& axis = Axis::all_static_axes(),
                          bool keepdims = true, const std::string& name = "") {
  return apply("ReduceElements", {x}, {{"reductionOpName", op}, {"axis", axis}, {"reductionKeepDimensions", keepdims}},
               name);
}
inline FunctionPtr reduce_sum(const Operand& x, const Axis& axis = Axis::all_static_axes(), bool keepdims = true,
                              const std::string& name = "") {
  return reduce("Sum", x, axis, keepdims, name);
}
inline FunctionPtr reduce_mean(const Operand& x, const Axis& axis = Axis::all_static_axes(), bool keepdims = true,
                               const std::string& name = "") {
  return reduce("Mean", x, axis, keepdims, name);
}
inline FunctionPtr reduce_max(const Operand& x, const Axis& axis = Axis::all_static_axes(), bool keepdims = true,
                              const std::string& name = "") {
  return reduce("Max", x, axis, keepdims, name);
}

// --------------------------------------------------------- losses and metrics

// Cross entropy between `target` and softmax(`output`) along the static axis
// `axis` (the last by default): log_sum_exp(output) - sum(target * output), one
// value per sample with the axis kept as size 1 (shape (1,) for vectors). The
// gradient with respect to `output` is softmax(output) - target.
inline FunctionPtr cross_entropy_with_softmax(const Operand& output, const Operand& target, int axis = -1,
                                              const std::string& name = "") {
  return apply("CrossEntropyWithSoftmax", {output, target}, {{"axis", Axis(axis)}}, name);
}

// Classification error along the last axis: 1 for a sample whose target class
// (a one-hot `target`) is not the output's argmax (the first maximum wins ties),
// else 0; shape (1,) per sample for vectors. Not differentiable (zero gradient):
// a metric, not a loss.
inline FunctionPtr classification_error(const Operand& output, const Operand& target, const std::string& name = "") {
  return apply("ClassificationError", {output, target}, {}, name);
}

// --------------------------------------------------------- convolution and pooling

// Per-axis flags as an attribute list (right-aligned to the operand's axes).
inline DictValue flag_list(const std::vector<bool>& flags) {
  DictValue::List l;
  for (bool f : flags) l.push_back(DictValue(f));
  return DictValue(std::move(l));
}

// Cross-correlation of `operand` (C, M1..Mn) with `kernel` (O, C/groups, m1..mn), CNTK's
// Convolution: per-axis strides, auto padding (centred; see docs/architecture.md),
// dilation and groups. Result (O, M1'..Mn').
inline FunctionPtr convolution(const Operand& kernel, const Operand& operand, const NDShape& strides = NDShape{1},
                               const std::vector<bool>& auto_padding = {true}, const NDShape& dilation = NDShape{1},
                               int64_t groups = 1, const std::string& name = "") {
  return apply("Convolution", {kernel, operand},
               {{"strides", strides},
                {"autoPadding", flag_list(auto_padding)},
                {"dilation", dilation},
                {"groups", groups},
                {"sharing", flag_list({true})},
                {"reductionRank", int64_t(1)},
                {"transpose", false}},
               name);
}

// Convolution over the sequence axis too (CNTK's convolution with sequential=True), the
// sequence axis being the kernel's first spatial axis: each sequence is zero-padded to
// the longest of the minibatch, convolved, and cut back to its own output length on a new
// sequence axis. `attrs` are the Convolution attributes (as convolution() above fills them).
FunctionPtr sequential_convolution(const Variable& kernel, const Variable& operand, Dictionary attrs,
                                   const std::string& name = "");

enum class PoolingType { Max = 0, Average = 1 };

// Max or average pooling over windows right-aligned to the operand's axes.
inline FunctionPtr pooling(const Operand& operand, PoolingType type, const NDShape& window,
                           const NDShape& strides = NDShape{1}, const std::vector<bool>& auto_padding = {false},
                           bool ceil_out_dim = false, bool include_pad = false, const std::string& name = "") {
  return apply("Pooling", {operand},
               {{"poolingType", int64_t(type)},
                {"poolingWindowShape", window},
                {"strides", strides},
                {"autoPadding", flag_list(auto_padding)},
                {"ceilOutDim", ceil_out_dim},
                {"includePad", include_pad}},
               name);
}

// --------------------------------------------------------------- sampled losses

// Noise contrastive estimation (CNTK's nce_loss), one value per sample. Each evaluation
// draws `num_samples` classes from `noise_weights` (a vector of non-negative class
// weights, normalized here), shared by the minibatch; the label's class is the positive
// example. weights: (classes, input dimension); biases: (classes, 1); inputs: a vector;
// labels: one-hot over the classes. A negative seed takes the next global seeds
// (cntk/random.h). ValueError names the argument that does not fit.
FunctionPtr nce_loss(const Operand& weights, const Operand& biases, const Operand& inputs, const Operand& labels,
                     const NDArrayView& noise_weights, int64_t num_samples = 32, bool allow_duplicates = true,
                     int64_t seed = -1, const std::string& name = "");

}  // namespace cntk::ops
