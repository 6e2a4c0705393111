// ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as subgraphs of the engine's
// primitives: the target picks its class through a one-hot mask along the class axis (axis 1
// of [N, C, d...]), class weights and ignore_index scale the mask, and the reductions are
// ReduceElements over the remaining axes. The engine's own criteria (CrossEntropyWithSoftmax)
// take one-hot labels and no weights or ignored classes, so they do not fit here.
#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;

Variable out(const FunctionPtr& f) { return f->output(); }

Variable as_dtype(ImportContext& c, const Variable& v, DataType dt) {
  if (v.dtype() == dt) return v;
  return out(c.primitive("Cast", {v}, Dictionary{{"newDataType", int64_t(dt)}}));
}

Variable reshape(ImportContext& c, const Variable& v, std::vector<int64_t> dims) {
  return out(c.primitive("Reshape", {v}, Dictionary{{"newShape", NDShape(std::move(dims))}}));
}

Variable sum_over(ImportContext& c, const Variable& v, const DictValue& axes, const char* key, bool keep) {
  return out(
      c.primitive("ReduceElements", {v},
                  Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", keep}, {key, axes}}));
}

// The loss of log-probabilities `x` [N, C, d...] (input 0's rank) against the class indices of
// input `target` [N, d...] with optional class weights (input `weight`, [C]).
Variable nll(ImportContext& c, const Variable& x, size_t target, size_t weight) {
  if (c.input_dyn(0) > 0 || c.input_dyn(target) > 0)
    c.fail("inputs with dynamic axes (sequence, batch) are not supported");
  const auto xd = x.shape().dims();
  const int64_t rank = int64_t(xd.size());
  if (rank < 2) c.fail("the input needs a class axis (rank 2 or more)");
  const int64_t classes = xd[1];
  if (classes <= 0) c.fail("the class axis needs a known length");
  if (int64_t(c.input(target).shape().rank()) != rank - 1) c.fail("the target's rank must be the input's less one");

  // The target as [N, 1, d...] against the class indices [C, 1...] (right-aligned broadcast).
  std::vector<int64_t> td = c.input(target).shape().dims();
  td.insert(td.begin() + 1, 1);
  Variable t = reshape(c, as_dtype(c, c.input(target), DataType::Float), td);
  std::vector<int64_t> cd(size_t(rank - 1), 1);
  cd[0] = classes;
  NDArrayView iota(DataType::Float, NDShape(cd));
  for (int64_t k = 0; k < classes; ++k) iota.data<float>()[k] = float(k);
  Variable mask = out(c.primitive("Equal", {t, Variable::constant(iota, c.name() + "/classes")}));
  if (c.has_attr("ignore_index")) {
    Variable ignore =
        Variable::constant(NDShape{}, t.dtype(), double(c.attr_int("ignore_index")), c.name() + "/ignore");
    mask = out(c.primitive("ElementTimes", {mask, out(c.primitive("NotEqual", {t, ignore}))}));
  }
  mask = as_dtype(c, mask, x.dtype());
  if (c.has_input(weight)) mask = out(c.primitive("ElementTimes", {mask, reshape(c, c.input(weight), cd)}));

  // -x[n, target, d...] * weight[target], 0 where ignored.
  Variable picked = out(c.primitive("ElementTimes", {x, mask}));
  Variable loss = out(c.primitive("Negate", {sum_over(c, picked, Axis(1), "axis", false)}));
  const std::string reduction = c.attr_string("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction != "sum" && reduction != "mean") c.fail("reduction '" + reduction + "' is not none, sum or mean");
  Variable total = sum_over(c, loss, Axis::all_static_axes(), "axis", false);
  if (reduction == "sum") return total;
  // The mean divides by the total weight of the targets counted (their number without weights).
  Variable count = sum_over(c, mask, Axis::all_static_axes(), "axis", false);
  return out(c.primitive("ElementDivide", {total, count}));
}

}  // namespace

void register_import_loss() {
  register_onnx_import(
      "NegativeLogLikelihoodLoss", [](ImportContext& c) { return Vars{nll(c, c.input(0), 1, 2)}; }, 12);
  // The loss of LogSoftmax over the class axis; the optional second output is that LogSoftmax.
  register_onnx_import(
      "SoftmaxCrossEntropyLoss",
      [](ImportContext& c) {
        if (c.input_dyn(0) > 0) c.fail("inputs with dynamic axes (sequence, batch) are not supported");
        if (c.input(0).shape().rank() < 2) c.fail("the scores need a class axis (rank 2 or more)");
        Variable log_prob = out(c.primitive("LogSoftmax", {c.input(0)}, Dictionary{{"axis", Axis(1)}}));
        Variable loss = nll(c, log_prob, 1, 2);
        if (c.node().output_size() > 1 && !c.node().output(1).empty()) return Vars{loss, log_prob};
        return Vars{loss};
      },
      12);
}

}  // namespace cntk::onnx_io
