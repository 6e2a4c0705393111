// Identity-like ops: NoOp (alias), Pass, and StopGradient (identity with a zero gradient).
#include "onnx/export.h"
#include "ops/op.h"

namespace cntk {

void register_identity_ops() {
  // Combine's outputs are its inputs (Function::primitive special-cases it); the
  // planner never runs it, so it needs no kernel.
  OpDef combine;
  combine.name = "Combine";
  combine.op_type = 44;
  combine.inputs = {{"operands", Gradient::Rule, true}};
  combine.infer = [](InferContext& ctx) {
    std::vector<OutputInfo> out;
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      out.push_back({ctx.shape(i), ctx.dtype(i), ctx.input(i).dynamic_axes(), ctx.input(i).is_sparse()});
    return out;
  };
  combine.forward = [](ComputeContext& ctx) { return ctx.inputs; };
  combine.backward = [](ComputeContext& ctx, size_t i) { return ctx.grad_outputs[i]; };
  register_op(std::move(combine));

  for (auto [name, number] : {std::pair{"NoOp", 62}, std::pair{"Pass", 56}, std::pair{"StopGradient", 64}}) {
    OpDef d;
    d.name = name;
    d.op_type = number;
    d.inputs = {{"x", std::string(name) == "StopGradient" ? Gradient::Zero : Gradient::Rule}};
    d.infer = [](InferContext& ctx) {
      ctx.expect_inputs(1);
      auto out = ctx.one(ctx.shape(0));
      out[0].is_sparse = ctx.input(0).is_sparse();
      return out;
    };
    d.forward = [](ComputeContext& ctx) { return std::vector<NDArrayView>{ctx.inputs[0]}; };
    if (std::string(name) == "StopGradient")
      d.gradient = Gradient::Zero;
    else
      d.backward = [](ComputeContext& ctx, size_t) { return ctx.grad_outputs[0]; };
    register_op(std::move(d));
    set_onnx_export(name, onnx_io::export_as("Identity"));
  }

  // Its first input, unchanged; the others are read only so that they stay arguments of the
  // graph (an ONNX model's inputs that no output depends on: callers still feed them).
  OpDef dep;
  dep.name = "DependsOn";
  dep.inputs = {{"x"}, {"dependencies", Gradient::Zero, true}};
  dep.sparse_inputs = true;
  dep.own_input_types = true;
  // The first input's shape, type and axes alone: the dependencies may be of any type and axes
  // (an ONNX model's unread integer inputs beside a float16 output).
  dep.infer = [](InferContext& ctx) {
    return std::vector<OutputInfo>{{ctx.shape(0), ctx.dtype(0), ctx.input(0).dynamic_axes(), ctx.input(0).is_sparse()}};
  };
  dep.forward = [](ComputeContext& ctx) { return std::vector<NDArrayView>{ctx.inputs[0]}; };
  dep.backward = [](ComputeContext& ctx, size_t) { return ctx.grad_outputs[0]; };
  register_op(std::move(dep));
  set_onnx_export("DependsOn", [](onnx_io::ExportContext& c) { c.node1("Identity", {c.input(0)}, {}, c.output(0)); });
}

}  // namespace cntk
