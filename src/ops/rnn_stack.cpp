// Op family: OptimizedRNNStack, CNTK's cuDNN-backed stack of recurrent layers with one
// flat weight parameter in cuDNN's packed layout (see kernels/cpu/rnn_stack.h for the
// layout and the equations). Inputs in CNTK's order: the operand (rank 1, with a
// sequence axis; a batch without one is a batch of one-step sequences), then the weights.
// Attributes (CNTK's keys): hiddenSize, numLayers, bidirectional, recurrentOp; and
// returnFullState (OpenCNTK's, stored only when true, so other models stay readable by
// CNTK 2.7): the final states as extra outputs, h then (LSTM) c, each of shape
// (numLayers * D, hiddenSize) per sequence (batch axis, no sequence axis), row l*D + d
// for layer l and direction d (0 forward, 1 backward); the backward direction's final
// state is the one after the sequence's first item.
#include "kernels/cpu/rnn_stack.h"
#include "onnx/export.h"
#include "ops/op.h"

namespace cntk {
namespace {

enum RnnInput : size_t { kOperand = 0, kWeights = 1 };

kernels::RnnStackDims stack_dims(const Dictionary& a, int64_t input_size) {
  kernels::RnnStackDims d;
  const std::string op = "OptimizedRNNStack";
  d.cell = kernels::rnn_cell_from_name(op_attr_string(op, a, "recurrentOp"));
  d.hidden = op_attr_int(op, a, "hiddenSize");
  d.layers = op_attr_int(op, a, "numLayers");
  d.bidirectional = op_attr_bool(op, a, "bidirectional");
  d.input_size = input_size;
  return d;
}

// 0, or the number of final-state outputs (h, and c for LSTM) with returnFullState.
size_t final_state_outputs(const Dictionary& a) {
  if (!op_attr_bool("OptimizedRNNStack", a, "returnFullState")) return 0;
  return op_attr_string("OptimizedRNNStack", a, "recurrentOp") == "lstm" ? 2 : 1;
}

std::vector<OutputInfo> rnn_stack_infer(InferContext& ctx) {
  ctx.expect_inputs(2);
  const Variable& x = ctx.input(kOperand);
  const Variable& w = ctx.input(kWeights);
  kernels::RnnStackDims d;
  try {
    d = stack_dims(ctx.attrs(), 0);
  } catch (const ValueError& e) {
    ctx.fail(e.what());
  }
  if (d.hidden <= 0) ctx.fail("hidden_size must be positive, got " + std::to_string(d.hidden));
  if (d.layers <= 0) ctx.fail("num_layers must be positive, got " + std::to_string(d.layers));
  if (x.shape().rank() != 1) ctx.fail("the operand must have rank 1, got shape " + x.shape().str());
  if (x.dynamic_axes().empty()) ctx.fail("the operand must have a dynamic (sequence) axis");
  if (!w.dynamic_axes().empty()) ctx.fail("the weights must not have dynamic axes");
  if (x.shape().has_free()) ctx.fail("an operand with a free dimension is not supported");
  // The weight count follows from the input size; CNTK sets the whole [count/H, H]
  // shape of a rank-2 weight whose size is still open (its second dimension is only a
  // placeholder there, often 1 or the input size).
  if (!x.shape().has_inferred() && w.shape().rank() == 2) {
    d.input_size = x.shape()[0];
    NDShape want{d.weight_count() / d.hidden, d.hidden};
    if (w.shape() != want) {
      if (!w.shape().has_inferred())
        ctx.fail("the weights have shape " + w.shape().str() + "; this stack needs " + want.str());
      if (w.is_parameter() || w.is_constant() || w.is_placeholder())
        w.impl()->shape = NDShape{NDShape::kInferredDimension, NDShape::kInferredDimension};
      ctx.fill_inferred(kWeights, want);
    }
  } else if (w.shape().is_known() && !x.shape().has_inferred()) {
    d.input_size = x.shape()[0];
    if (w.shape().total_size() != d.weight_count())
      ctx.fail("the weights have " + std::to_string(w.shape().total_size()) + " elements; this stack needs " +
               std::to_string(d.weight_count()));
  }
  auto out = ctx.one(NDShape{d.output_size()});
  out[0].dynamic_axes = x.dynamic_axes();
  std::vector<Axis> per_sequence;
  for (auto& a : x.dynamic_axes())
    if (!a.is_sequence()) per_sequence.push_back(a);
  for (size_t k = 1; k < final_state_outputs(ctx.attrs()) + 1; ++k)
    out.push_back({NDShape{d.layers * d.dirs(), d.hidden}, out[0].dtype, per_sequence, false});
  return out;
}

// The operand as [T, B, I] and its sequence lengths (a batch without a sequence axis is
// a batch of one-step sequences).
NDArrayView as_sequences(const ComputeContext& ctx, std::vector<int64_t>& lengths) {
  const NDArrayView& x = ctx.inputs[kOperand];
  lengths.clear();
  if (ctx.in_dyn[kOperand] == 2) {
    lengths = ctx.in_lengths[kOperand];
    return x;
  }
  if (ctx.in_dyn[kOperand] != 1) throw ValueError("OptimizedRNNStack: the operand must have a dynamic axis");
  return x.reshape(NDShape{1, x.shape()[0], x.shape()[1]});
}

DataType out_dtype(const ComputeContext& ctx) {
  return ctx.inputs[kOperand].dtype() == DataType::Double || ctx.inputs[kWeights].dtype() == DataType::Double
             ? DataType::Double
             : DataType::Float;
}

NDArrayView in_dtype(const NDArrayView& a, DataType t) { return a.dtype() == t ? a : a.cast(t); }

struct RnnStackState {
  std::shared_ptr<kernels::RnnStackTape> tape;
};

std::vector<NDArrayView> rnn_stack_forward(ComputeContext& ctx) {
  std::vector<int64_t> lengths;
  DataType t = out_dtype(ctx);
  NDArrayView x = in_dtype(as_sequences(ctx, lengths), t);
  kernels::RnnStackDims d = stack_dims(ctx.attr(), x.shape()[2]);
  auto st = std::make_shared<RnnStackState>();
  const size_t finals = final_state_outputs(ctx.attr());
  kernels::RnnStackFinal fin;
  NDArrayView y = kernels::rnn_stack_forward(d, x, lengths, in_dtype(ctx.inputs[kWeights], t),
                                             ctx.training ? &st->tape : nullptr, finals ? &fin : nullptr);
  if (ctx.training) ctx.state = st;
  if (ctx.in_dyn[kOperand] == 1) y = y.reshape(NDShape{y.shape()[1], y.shape()[2]});
  std::vector<NDArrayView> out{y};
  if (finals == 0) return out;
  // The states hold no sequence axis: they carry no sequence lengths.
  ctx.out_lengths = {ctx.in_lengths[kOperand]};
  out.push_back(fin.h);
  if (finals == 2) out.push_back(fin.c);
  ctx.out_lengths.resize(out.size());
  return out;
}

NDArrayView rnn_stack_backward(ComputeContext& ctx, size_t i) {
  auto grads = std::static_pointer_cast<kernels::RnnStackGrads>(ctx.scratch);
  if (!grads) {
    std::vector<int64_t> lengths;
    DataType t = out_dtype(ctx);
    NDArrayView x = in_dtype(as_sequences(ctx, lengths), t);
    NDArrayView w = in_dtype(ctx.inputs[kWeights], t);
    kernels::RnnStackDims d = stack_dims(ctx.attr(), x.shape()[2]);
    auto st = std::static_pointer_cast<RnnStackState>(ctx.state);
    std::shared_ptr<kernels::RnnStackTape> tape = st ? st->tape : nullptr;
    const size_t finals = final_state_outputs(ctx.attr());
    kernels::RnnStackFinal unused;
    if (!tape) kernels::rnn_stack_forward(d, x, lengths, w, &tape, finals ? &unused : nullptr);  // redo it
    NDArrayView dy = in_dtype(ctx.grad_outputs[0], t).reshape(NDShape{x.shape()[0], x.shape()[1], d.output_size()});
    kernels::RnnStackFinal d_final;
    if (finals >= 1) d_final.h = in_dtype(ctx.grad_outputs[1], t);
    if (finals == 2) d_final.c = in_dtype(ctx.grad_outputs[2], t);
    grads = std::make_shared<kernels::RnnStackGrads>(
        kernels::rnn_stack_backward(d, x, lengths, w, dy, *tape, finals ? &d_final : nullptr));
    ctx.scratch = grads;
  }
  const NDArrayView& g = i == kOperand ? grads->dx : grads->dw;
  return in_dtype(g, ctx.inputs[i].dtype()).reshape(ctx.inputs[i].shape());
}

// ONNX form: one LSTM/GRU/RNN node per layer (both directions in one node), its W, R and B
// cut from the flat weights (Slice, Reshape) with the gate blocks gathered into ONNX's
// order: cuDNN's LSTM (i, f, g, o) -> ONNX's (i, o, f, c); GRU (r, z, n) -> (z, r, h), whose
// reset gate applies after the recurrent product (linear_before_reset=1). Inside the written
// graph a sequence is [batch, Sequence, ...]; ONNX's recurrent ops take [seq, batch, ...].
void export_rnn_stack(onnx_io::ExportContext& c) {
  using onnx_io::Attr;
  if (c.attr_bool("returnFullState")) c.unsupported("return_full_state");
  const int dyn = c.input_dyn(kOperand);
  if (dyn == 0) c.unsupported("an operand without dynamic axes");
  kernels::RnnStackDims d = stack_dims(c.function().attributes(), c.input_var(kOperand).shape()[0]);
  const int64_t H = d.hidden, G = d.gates(), D = d.dirs();
  std::vector<int64_t> order = d.cell == kernels::RnnCell::Lstm     ? std::vector<int64_t>{0, 3, 1, 2}
                               : d.cell == kernels::RnnCell::LbrGru ? std::vector<int64_t>{1, 0, 2}
                                                                    : std::vector<int64_t>{0};
  std::vector<int64_t> rows;
  for (int64_t g : order)
    for (int64_t r = 0; r < H; ++r) rows.push_back(g * H + r);
  const std::string gather_rows = c.constant_i64(rows);
  const std::string flat = c.node1("Reshape", {c.input(kWeights), c.constant_i64({-1})});
  auto cut = [&](int64_t begin, std::vector<int64_t> shape) {
    const int64_t n = [&] {
      int64_t k = 1;
      for (int64_t s : shape) k *= s;
      return k;
    }();
    std::string part =
        c.opset() >= 10
            ? c.node1("Slice", {flat, c.constant_i64({begin}), c.constant_i64({begin + n}), c.constant_i64({0})})
            : c.node1("Slice", {flat},
                      {Attr("starts", std::vector<int64_t>{begin}), Attr("ends", std::vector<int64_t>{begin + n}),
                       Attr("axes", std::vector<int64_t>{0})});
    part = c.node1("Reshape", {part, c.constant_i64(shape)});
    return c.node1("Gather", {part, gather_rows}, {Attr("axis", 0)});  // gate blocks in ONNX's order
  };
  auto stack_dirs = [&](std::vector<std::string> parts) {
    for (auto& p : parts) p = c.unsqueeze(p, {0});
    return parts.size() == 1 ? parts[0] : c.node1("Concat", parts, {Attr("axis", 0)});
  };
  // [batch, Sequence, I] (or [batch, I]: one-step sequences) -> [seq, batch, I]
  std::string x = dyn == 2 ? c.node1("Transpose", {c.input(kOperand)}, {Attr("perm", std::vector<int64_t>{1, 0, 2})})
                           : c.unsqueeze(c.input(kOperand), {0});
  const char* op = d.cell == kernels::RnnCell::Lstm ? "LSTM" : d.cell == kernels::RnnCell::LbrGru ? "GRU" : "RNN";
  for (int64_t l = 0; l < d.layers; ++l) {
    std::vector<std::string> W, R, B;
    for (int64_t k = 0; k < D; ++k) {
      const kernels::RnnBlockOffsets o = kernels::rnn_block_offsets(d, l, k);
      W.push_back(cut(o.w, {G * H, d.layer_input(l)}));
      R.push_back(cut(o.r, {G * H, H}));
      B.push_back(c.node1("Concat", {cut(o.bw, {G * H, 1}), cut(o.br, {G * H, 1})}, {Attr("axis", 0)}));
    }
    std::string b = c.node1("Reshape", {stack_dirs(B), c.constant_i64({D, 2 * G * H})});
    std::vector<Attr> attrs{Attr("hidden_size", H), Attr("direction", D == 2 ? "bidirectional" : "forward")};
    if (d.cell == kernels::RnnCell::LbrGru) attrs.emplace_back("linear_before_reset", int64_t(1));
    if (d.cell == kernels::RnnCell::RnnRelu)
      attrs.emplace_back("activations", std::vector<std::string>(size_t(D), "Relu"));
    std::string y = c.node1(op, {x, stack_dirs(W), stack_dirs(R), b}, attrs);
    // Y [seq, D, batch, H] -> [seq, batch, D*H]: each direction's [seq, batch, H] side by
    // side (no Reshape, which a reader keeping seq and batch free could not follow).
    std::vector<std::string> dirs;
    for (int64_t k = 0; k < D; ++k) {
      std::string yk = D == 1 ? y : c.node1("Gather", {y, c.constant_i64({k})}, {Attr("axis", 1)});
      dirs.push_back(c.opset() >= 13 ? c.node1("Squeeze", {yk, c.constant_i64({1})})
                                     : c.node1("Squeeze", {yk}, {Attr("axes", std::vector<int64_t>{1})}));
    }
    x = D == 1 ? dirs[0] : c.node1("Concat", dirs, {Attr("axis", 2)});
  }
  if (dyn == 2)
    c.node1("Transpose", {x}, {Attr("perm", std::vector<int64_t>{1, 0, 2})}, c.output(0));
  else
    c.node1("Reshape", {x, c.constant_i64({-1, D * H})}, {}, c.output(0));
}

}  // namespace

void register_rnn_stack_ops() {
  OpDef d;
  d.name = "OptimizedRNNStack";
  d.op_type = 49;
  d.inputs = {{"operand"}, {"weights"}};
  d.attrs = {{"recurrentOp", AttrType::String, "lstm"},
             {"hiddenSize", AttrType::Int, 0},
             {"numLayers", AttrType::Int, 1},
             {"bidirectional", AttrType::Bool, false},
             {"returnFullState", AttrType::Bool, false}};
  d.infer = rnn_stack_infer;
  d.forward = rnn_stack_forward;
  d.backward = rnn_stack_backward;
  d.output_count = [](const Dictionary& a) { return 1 + final_state_outputs(a); };
  register_op(std::move(d));
  set_onnx_export("OptimizedRNNStack", export_rnn_stack);
}

}  // namespace cntk
