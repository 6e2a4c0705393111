// Recurrences written as ONNX's recurrent ops. A Recurrence over an LSTM, GRU or RNNStep
// step block is recognized by the same structural matcher that fuses it for execution
// (exec/fused_rnn.h): what it finds (cell, direction, CNTK's weights, initial states) is
// all an ONNX LSTM/GRU/RNN node needs, so the step block and the delays feeding its state
// back become one node.
//
// Weights: CNTK's x W products take W as [input, gates * hidden]; ONNX's W is
// [directions, gates * hidden, input] (and R likewise), so each weight is transposed and
// given a direction axis. Gate orders: CNTK's LSTM stacks (input, candidate, forget,
// output), ONNX's (input, output, forget, candidate), so the LSTM's rows are gathered in
// that order; the GRU's (update, reset, candidate) match ONNX's zrh, and its reset gate
// scales h before the candidate's weight as linear_before_reset=0 does. CNTK's cells carry
// one bias (on the input projection): ONNX's recurrent bias is 0.
//
// Layout: inside the written graph a value with batch and sequence axes is [batch,
// Sequence, ...] (see export.cpp); ONNX's recurrent ops take [seq, batch, input] and
// write Y as [seq, directions, batch, hidden], hence a Transpose on each side.
#include "cntk/evaluation.h"
#include "cntk/value.h"
#include "exec/fused_rnn.h"
#include "kernels/cpu/rnn.h"
#include "onnx/export_block.h"
#include "onnx.pb.h"

namespace cntk::onnx_io {

namespace {

using kernels::RnnCell;

// Whether v is 0 everywhere: a constant, or computed from constants alone (the layers
// write the initial state as 0 times a constant).
bool zero_constant(const Variable& v) {
  NDArrayView a;
  if (v.is_constant()) {
    a = v.value();
  } else if (FunctionPtr f = v.owner(); f && v.dynamic_axes().empty() && v.shape().is_known() &&
                                        f->arguments().empty() && f->parameters().empty()) {
    std::vector<Value> vals;
    forward(Function::composite(f), {}, {v}, vals, false);
    a = vals.at(0).data();
  } else {
    return false;
  }
  const NDArrayView d = a.cast(DataType::Double).contiguous();
  for (int64_t i = 0; i < d.numel(); ++i)
    if (d.data<double>()[i] != 0.0) return false;
  return true;
}

// `pair`: a forward and a backward recurrence over the same input, written as one
// bidirectional node; the inputs are then x and each direction's weights (no initial states).
void write_recurrence(ExportContext& c, const SetStrings& set_strings, RnnCell cell, bool backward, bool pair = false) {
  const bool lstm = cell == RnnCell::Lstm, gru = cell == RnnCell::Gru;
  const int64_t H = c.output_var(0).shape()[0];
  const int64_t G = lstm ? 4 : gru ? 3 : 1;
  // Inputs as match_fused_rnn lists them: x, W, H, [H1,] b, initial h, [initial c].
  const size_t iw = 1, ih = 2, ih1 = 3, ib = gru ? 4 : 3, ih0 = ib + 1;
  if (c.input_dyn(0) != 2) c.unsupported("a recurrence over an input without batch and sequence axes");

  // ONNX's row order of the stacked gates, as indices into CNTK's.
  std::vector<int64_t> rows;
  const std::vector<int64_t> order = lstm ? std::vector<int64_t>{0, 3, 2, 1} : std::vector<int64_t>{0, 1, 2};
  for (int64_t g : lstm ? order : std::vector<int64_t>(order.begin(), order.begin() + G))
    for (int64_t r = 0; r < H; ++r) rows.push_back(g * H + r);
  auto reorder = [&](const std::string& v) {
    return lstm ? c.node1("Gather", {v, c.constant_i64(rows)}, {Attr("axis", 0)}) : v;
  };
  auto onnx_weight = [&](const std::string& w) {
    return c.unsqueeze(reorder(c.node1("Transpose", {w}, {Attr("perm", std::vector<int64_t>{1, 0})})), {0});
  };
  std::string zeros = c.constant(NDArrayView::zeros(c.input_var(ib).dtype(), NDShape{G * H}));
  std::vector<std::string> Ws, Rs, Bs;
  for (size_t d = 0, at = 0; d < (pair ? 2u : 1u); ++d, at = ib) {  // the second direction's follow the first's b
    Ws.push_back(onnx_weight(c.input(at + iw)));
    Rs.push_back(gru ? onnx_weight(c.node1("Concat", {c.input(at + ih), c.input(at + ih1)}, {Attr("axis", 1)}))
                     : onnx_weight(c.input(at + ih)));
    Bs.push_back(c.unsqueeze(c.node1("Concat", {reorder(c.input(at + ib)), zeros}, {Attr("axis", 0)}), {0}));
  }
  auto stack = [&](const std::vector<std::string>& v) {
    return v.size() == 1 ? v[0] : c.node1("Concat", v, {Attr("axis", 0)});
  };
  std::string W = stack(Ws), R = stack(Rs), B = stack(Bs);

  std::vector<Attr> attrs{Attr("hidden_size", H), Attr("direction", pair       ? "bidirectional"
                                                                    : backward ? "reverse"
                                                                               : "forward")};
  if (gru) attrs.emplace_back("linear_before_reset", int64_t(0));
  std::string X = c.node1("Transpose", {c.input(0)}, {Attr("perm", std::vector<int64_t>{1, 0, 2})});
  const char* op = lstm ? "LSTM" : gru ? "GRU" : "RNN";
  // Initial states other than 0 (a constant, or a parameter) broadcast to [1, batch, hidden]:
  // added to zeros of that shape made from X summed over time times a zero [input, hidden]
  // matrix (no Shape node: a reader that keeps the batch dimension free can follow it).
  std::vector<std::string> ins{X, W, R, B};
  bool initial = false;
  for (size_t k = ih0; !pair && k < c.num_inputs(); ++k) initial = initial || !zero_constant(c.input_var(k));
  if (initial) {
    const int64_t F = c.input_var(0).shape()[0];
    std::string summed = c.opset() >= 13 ? c.node1("ReduceSum", {X, c.constant_i64({0})}, {Attr("keepdims", 1)})
                                         : c.node1("ReduceSum", {X}, {Attr("axes", std::vector<int64_t>{0})});
    std::string zeros =
        c.node1("MatMul", {summed, c.constant(NDArrayView::zeros(c.input_var(0).dtype(), NDShape{F, H}))});
    ins.push_back("");  // sequence_lens: each sequence's own length is the tensor's
    for (size_t k = ih0; k < c.num_inputs(); ++k) ins.push_back(c.node1("Add", {zeros, c.input(k)}));
  }
  std::string Y = c.node(op, ins, attrs, {}, 1)[0];
  if (!lstm && !gru)
    set_strings(Y, "activations",
                std::vector<std::string>(pair ? 2 : 1, cell == RnnCell::RnnRelu      ? "Relu"
                                                       : cell == RnnCell::RnnSigmoid ? "Sigmoid"
                                                                                     : "Tanh"));
  // [S, D, B, H] -> each direction's [S, B, H] -> [B, S, H]
  for (int64_t d = 0; d < (pair ? 2 : 1); ++d) {
    std::string Yd = pair ? c.node1("Gather", {Y, c.constant_i64({d})}, {Attr("axis", 1)}) : Y;
    std::string Ys = c.opset() >= 13 ? c.node1("Squeeze", {Yd, c.constant_i64({1})})
                                     : c.node1("Squeeze", {Yd}, {Attr("axes", std::vector<int64_t>{1})});
    c.node1("Transpose", {Ys}, {Attr("perm", std::vector<int64_t>{1, 0, 2})}, c.output(size_t(d)));
  }
}

// The backward recurrence to write with forward `block` (match m) as one bidirectional node:
// the only other matched step of the graph over the same input with the same cell and size,
// both starting from 0 (a single forward and a single backward one, as splice(fwd(x), bwd(x))).
FunctionPtr backward_partner(const FunctionPtr& block, const FusedRnnMatch& m, const FunctionPtr& root,
                             const VariableUses& uses) {
  auto zero_start = [](const FusedRnnMatch& r, size_t from) {
    for (size_t k = from; k < r.inputs.size(); ++k)
      if (!zero_constant(r.inputs[k])) return false;
    return true;
  };
  const size_t ih0 = m.cell == RnnCell::Gru ? 5 : 4;
  if (m.backward || !zero_start(m, ih0)) return nullptr;
  FunctionPtr found;
  int forward = 0;
  for (const FunctionPtr& f : root->topological_order()) {
    FusedRnnMatch r;
    if (!f->is_block() || !match_fused_rnn(f, uses, r, true) || r.cell != m.cell ||
        r.inputs[0].get() != m.inputs[0].get() || f->outputs()[0].shape() != block->outputs()[0].shape() ||
        !zero_start(r, ih0))
      continue;
    if (!r.backward) {
      ++forward;
    } else {
      if (found) return nullptr;
      found = f;
    }
  }
  return forward == 1 ? found : nullptr;
}

}  // namespace

// A block read from an ONNX LSTM/GRU/RNN node: the node again, over the block's inputs.
void write_onnx_node(ExportContext& c, const SetStrings& set_strings, const ::onnx::NodeProto& n) {
  std::vector<std::string> ins;
  size_t k = 0;
  for (const auto& name : n.input()) ins.push_back(name.empty() ? "" : c.input(k++));
  std::vector<Attr> attrs;
  std::vector<std::pair<std::string, std::vector<std::string>>> strings;
  for (const auto& a : n.attribute()) {
    using A = ::onnx::AttributeProto;
    switch (a.type()) {
      case A::INT: attrs.emplace_back(a.name(), int64_t(a.i())); break;
      case A::FLOAT: attrs.emplace_back(a.name(), a.f()); break;
      case A::STRING: attrs.emplace_back(a.name(), a.s()); break;
      case A::FLOATS: attrs.emplace_back(a.name(), std::vector<float>(a.floats().begin(), a.floats().end())); break;
      case A::INTS: attrs.emplace_back(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end())); break;
      case A::STRINGS:
        strings.emplace_back(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
        break;
      default: c.unsupported("the attribute '" + a.name() + "' of the " + n.op_type() + " node");
    }
  }
  std::vector<std::string> outs;
  for (size_t o = 0; o < c.num_outputs(); ++o) outs.push_back(c.output(o));
  c.node(n.op_type(), ins, attrs, outs);
  for (auto& [name, values] : strings) set_strings(outs[0], name, values);
}

std::optional<BlockClaim> claim_block_export(const FunctionPtr& block, const FunctionPtr& root) {
  if (auto claim = claim_image_block(block)) return claim;
  if (auto it = block->attributes().find(kOnnxNodeKey); it != block->attributes().end()) {
    auto node = std::make_shared<::onnx::NodeProto>();
    if (!node->ParseFromString(it->second.as_string())) return std::nullopt;
    BlockClaim claim;
    for (const auto& [placeholder, actual] : block->block_arguments_mapping()) claim.inputs.push_back(actual);
    claim.write = [node](ExportContext& c, const SetStrings& set_strings) { write_onnx_node(c, set_strings, *node); };
    return claim;
  }
  VariableUses uses = count_variable_uses(root, root->outputs());
  FusedRnnMatch m;
  if (!match_fused_rnn(block, uses, m, true)) return std::nullopt;
  BlockClaim claim;
  claim.inputs = m.inputs;
  auto absorb_delays = [&](const FunctionPtr& b) {
    const auto& args = b->block_arguments_mapping();
    for (size_t k = 0; k + 1 < args.size(); ++k) claim.absorbed.push_back(args[k].second.owner().get());
  };
  absorb_delays(block);
  const RnnCell cell = m.cell;
  const bool backward = m.backward;
  if (FunctionPtr partner = backward_partner(block, m, root, uses)) {
    FusedRnnMatch pm;
    match_fused_rnn(partner, uses, pm, true);
    const size_t weights = m.cell == RnnCell::Gru ? 5 : 4;  // x, W, H, [H1,] b
    claim.inputs.resize(weights);
    claim.inputs.insert(claim.inputs.end(), pm.inputs.begin() + 1, pm.inputs.begin() + weights);
    claim.absorbed.push_back(partner.get());
    absorb_delays(partner);
    claim.outputs = {block->outputs()[0], partner->outputs()[0]};
    claim.write = [cell](ExportContext& c, const SetStrings& set_strings) {
      write_recurrence(c, set_strings, cell, false, true);
    };
    return claim;
  }
  claim.write = [cell, backward](ExportContext& c, const SetStrings& set_strings) {
    write_recurrence(c, set_strings, cell, backward);
  };
  return claim;
}

}  // namespace cntk::onnx_io
