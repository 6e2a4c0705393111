// UserFunction: the catalogue entry behind user-defined functions. The function's
// UserFunctionBackend supplies the shape rule (Function::infer_outputs asks it) and
// computes forward and backward on Values in the user layout; this kernel converts
// between that layout and the runtime one.
#include "cntk/user_function.h"
#include "ops/op.h"

namespace cntk {

namespace {

UserFunctionBackend& backend_of(const ComputeContext& ctx) {
  if (!ctx.fn || !ctx.fn->user_backend()) throw Error("UserFunction: the function has no implementation");
  return *ctx.fn->user_backend();
}

Variable output_var(const ComputeContext& ctx, size_t k) { return Variable(ctx.fn->output_impls()[k]); }

// The sequence lengths of the first input that has a sequence axis (as the executor
// gives the outputs).
std::vector<int64_t> first_lengths(const ComputeContext& ctx) {
  for (size_t i = 0; i < ctx.in_lengths.size(); ++i)
    if (!ctx.in_lengths[i].empty()) return ctx.in_lengths[i];
  return {};
}

std::vector<NDArrayView> user_forward(ComputeContext& ctx) {
  UserFunctionBackend& b = backend_of(ctx);
  const auto& ins = ctx.fn->direct_inputs();
  std::vector<Value> args;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    args.push_back(runtime_to_value(ins[i], ctx.inputs[i],
                                    i < ctx.in_lengths.size() ? ctx.in_lengths[i] : std::vector<int64_t>{}));
  std::vector<Value> outs;
  std::shared_ptr<void> state = b.forward(*ctx.fn, args, ctx.training, outs);
  size_t n = ctx.fn->output_impls().size();
  if (outs.size() != n)
    throw ValueError("user function '" + ctx.fn->op_name() + "' computed " + std::to_string(outs.size()) +
                     " outputs, but infer_outputs declared " + std::to_string(n));
  std::vector<NDArrayView> result;
  for (size_t k = 0; k < n; ++k) {
    Variable o = output_var(ctx, k);
    if (!outs[k].is_valid())
      throw ValueError("user function '" + ctx.fn->op_name() + "' did not compute output " + std::to_string(k));
    std::vector<int64_t> lens;
    NDArrayView r = value_to_runtime(o, outs[k], lens);
    if (r.dtype() != o.dtype()) r = r.cast(o.dtype());
    result.push_back(r.contiguous());
  }
  if (ctx.training) ctx.state = std::move(state);
  return result;
}

NDArrayView user_backward(ComputeContext& ctx, size_t input) {
  auto grads = std::static_pointer_cast<std::vector<NDArrayView>>(ctx.scratch);
  if (!grads) {
    UserFunctionBackend& b = backend_of(ctx);
    grads = std::make_shared<std::vector<NDArrayView>>(ctx.inputs.size());
    ctx.scratch = grads;
    // Outputs declared without gradients stop the flow: backward is not called for them.
    bool any = false;
    std::vector<Value> roots;
    std::vector<int64_t> fallback = first_lengths(ctx);
    for (size_t k = 0; k < ctx.grad_outputs.size(); ++k) {
      Variable o = output_var(ctx, k);
      if (!o.needs_gradient()) {
        roots.push_back(Value());
        continue;
      }
      any = true;
      const auto& lens = k < ctx.out_lengths.size() && !ctx.out_lengths[k].empty() ? ctx.out_lengths[k] : fallback;
      roots.push_back(runtime_to_value(o, ctx.grad_outputs[k], lens));
    }
    if (!any) return NDArrayView();
    std::vector<bool> wanted = ctx.grad_wanted;
    wanted.resize(ctx.inputs.size(), false);
    const auto& ins = ctx.fn->direct_inputs();
    // A placeholder (the inside of a block) stands for the block's input, which the plan wants.
    for (size_t i = 0; i < ins.size(); ++i)
      wanted[i] = wanted[i] && (ins[i].needs_gradient() || ins[i].is_placeholder());
    std::vector<Value> g = b.backward(*ctx.fn, ctx.state, roots, wanted);
    if (g.size() != ins.size())
      throw ValueError("user function '" + ctx.fn->op_name() + "': backward returned " + std::to_string(g.size()) +
                       " gradients for " + std::to_string(ins.size()) + " inputs");
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!wanted[i] || !g[i].is_valid()) continue;
      std::vector<int64_t> lens;
      NDArrayView r = value_to_runtime(ins[i], g[i], lens);
      if (r.shape() != ctx.inputs[i].shape()) {
        // A gradient for a batch-less input given with a batch axis of 1 is accepted.
        if (r.numel() == ctx.inputs[i].numel())
          r = r.contiguous().reshape(ctx.inputs[i].shape());
        else
          throw ValueError("user function '" + ctx.fn->op_name() + "': the gradient for input " + std::to_string(i) +
                           " has shape " + r.shape().str() + ", expected " + ctx.inputs[i].shape().str());
      }
      (*grads)[i] = r.contiguous().copy();
    }
  }
  return input < grads->size() ? (*grads)[input] : NDArrayView();
}

}  // namespace

void register_user_function_ops() {
  OpDef d;
  d.name = "UserFunction";
  d.inputs = {{"operands", Gradient::Rule, true}};
  // Function::infer_outputs asks the function's backend; this rule is never reached.
  d.infer = [](InferContext& ctx) -> std::vector<OutputInfo> {
    ctx.fail("a user function needs its implementation to infer its outputs");
  };
  d.forward = user_forward;
  d.backward = user_backward;
  register_op(std::move(d));
}

}  // namespace cntk
