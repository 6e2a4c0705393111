// ONNX Attention (opsets 23 to 25): scaled dot-product attention over static [batch, heads,
// seq, head size] tensors (or [batch, seq, heads * head size] with q_num_heads/kv_num_heads),
// built from the engine's primitives: batched products as broadcast products summed over
// the contracted axis, Softmax over the last axis. Grouped key/value heads are repeated for
// their query heads; past keys/values are prepended and returned as the present ones. The
// masks (attn_mask, causality, the sliding window, nonpad_kv_seqlen's key padding) become
// one additive bias; the order of soft cap, bias and softmax and the zero rows where every
// key is masked follow ONNX's reference. RotaryEmbedding, the positional rotation that
// precedes attention in such models, is here too, with the other ops of attention-family
// decoders: FlexAttention (attention with score/probability subgraphs), LinearAttention (its
// recurrent state form), CausalConvWithState (their short convolution) and TensorScatter (the
// key/value cache update).
#include <cmath>
#include <limits>

#include "onnx/import.h"
#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;
Variable out(const FunctionPtr& f) { return f->output(); }

Variable reshape(ImportContext& c, const Variable& x, std::vector<int64_t> dims) {
  return out(c.primitive("Reshape", {x}, Dictionary{{"newShape", NDShape(std::move(dims))}}));
}
Variable swap(ImportContext& c, const Variable& x, int a, int b) {
  return out(c.primitive("TransposeAxes", {x}, Dictionary{{"axis1", Axis(a)}, {"axis2", Axis(b)}}));
}
Variable scalar(ImportContext& c, const Variable& like, double v) {
  return Variable::constant(NDShape{}, like.dtype(), v, c.name() + "/const");
}

// a [..., M, K] times b [..., K, N] (equal leading dims) -> [..., M, N]. float16 operands are
// multiplied and summed in float32 and rounded once, as NumPy's float16 matmul (ONNX's
// reference) does: products rounded to float16 one by one drift by an ulp.
Variable batched_product(ImportContext& c, const Variable& a, const Variable& b) {
  const bool half = a.dtype() == DataType::Float16;
  auto wide = [&](const Variable& x) {
    return half ? out(c.primitive("Cast", {x}, Dictionary{{"newDataType", int64_t(DataType::Float)}})) : x;
  };
  std::vector<int64_t> da = a.shape().dims(), db = b.shape().dims();
  da.push_back(1);
  db.insert(db.end() - 2, 1);
  Variable p = out(c.primitive("ElementTimes", {reshape(c, wide(a), da), reshape(c, wide(b), db)}));
  Variable y = out(c.primitive(
      "ReduceElements", {p},
      Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(-2)}}));
  return half ? out(c.primitive("Cast", {y}, Dictionary{{"newDataType", int64_t(DataType::Float16)}})) : y;
}

// [B, S, H*D] -> [B, H, S, D]; a 4-D input as it is.
Variable heads_first(ImportContext& c, const Variable& x, const char* heads_attr) {
  const auto d = x.shape().dims();
  if (d.size() == 4) return x;
  if (d.size() != 3) c.fail("Q, K and V must have rank 3 or 4");
  const int64_t h = c.attr_int(heads_attr, 0);
  if (h <= 0 || d[2] % h) c.fail(std::string("3-D inputs need ") + heads_attr + " dividing their last dimension");
  return swap(c, reshape(c, x, {d[0], d[1], h, d[2] / h}), 1, 2);
}

Variable times(ImportContext& c, const Variable& a, const Variable& b) {
  return out(c.primitive("ElementTimes", {a, b}));
}
Variable cast(ImportContext& c, const Variable& x, DataType to) {
  return x.dtype() == to ? x : out(c.primitive("Cast", {x}, Dictionary{{"newDataType", int64_t(to)}}));
}
// Select with a condition of the values' type (comparisons and boolean inputs are float32).
Variable select(ImportContext& c, const Variable& cond, const Variable& a, const Variable& b) {
  return out(c.primitive("Select", {cast(c, cond, a.dtype()), a, b}));
}
Variable index_constant(ImportContext& c, std::vector<int64_t> dims, const std::string& what) {
  NDShape shape(dims);
  NDArrayView v(DataType::Float, shape);
  for (int64_t i = 0; i < int64_t(shape.total_size()); ++i) v.data<float>()[i] = float(i);
  return Variable::constant(v, c.name() + "/" + what);
}

// [B, H, S, D] -> [B, H * g, S, D], each head repeated g times in place (np.repeat over the
// heads): grouped-query attention's key/value heads, each serving g query heads.
Variable repeat_heads(ImportContext& c, const Variable& x, int64_t g) {
  const auto d = x.shape().dims();
  Variable x5 = reshape(c, x, {d[0], d[1], 1, d[2], d[3]});
  return reshape(c, out(c.primitive("Splice", std::vector<Variable>(size_t(g), x5), Dictionary{{"axis", Axis(2)}})),
                 {d[0], d[1] * g, d[2], d[3]});
}

// The additive bias of the scores s [B, H, sq, skv] (undefined where nothing masks): the
// mask (booleans: 0 where true, -inf where false) padded with -inf up to skv keys; causality
// and the sliding window, aligned to each query's position after the past (past_key's
// length, or nonpad_kv_seqlen[b] - sq for an external cache); and the keys past
// nonpad_kv_seqlen[b].
Variable attention_bias(ImportContext& c, const Variable& s, int64_t sq, int64_t skv, int64_t past) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  Variable zero = scalar(c, s, 0), minus_inf = scalar(c, s, neg_inf);
  auto add = [&](const Variable& a, const Variable& b) { return a.defined() ? out(c.primitive("Plus", {a, b})) : b; };
  Variable bias;
  if (c.has_input(3)) {
    Variable m = c.input(3);
    m = c.input_elem_type(3) == ::onnx::TensorProto::BOOL ? select(c, m, zero, minus_inf) : cast(c, m, s.dtype());
    auto md = m.shape().dims();
    if (md.empty()) c.fail("attn_mask must have rank 1 or more");
    if (md.back() < skv) {
      auto pd = md;
      pd.back() = skv - md.back();
      m = out(c.primitive("Splice", {m, Variable::constant(NDShape(pd), s.dtype(), neg_inf, c.name() + "/mask_pad")},
                          Dictionary{{"axis", Axis(int(md.size()) - 1)}}));
    }
    bias = m;
  }
  const bool causal = c.attr_int("is_causal", 0) != 0;
  const int64_t left = c.attr_int("left_window_size", -1), right = c.attr_int("right_window_size", -1);
  Variable lengths;  // nonpad_kv_seqlen as [B, 1, 1, 1]
  if (c.has_input(6)) {
    if (past > 0) c.fail("nonpad_kv_seqlen with past_key and past_value");
    lengths = reshape(c, cast(c, c.input(6), DataType::Float), {c.input(6).shape().total_size(), 1, 1, 1});
  }
  if (causal || left >= 0 || right >= 0) {
    // diff = (query position + offset) - key position, [sq, skv] or [B, 1, sq, skv].
    Variable offset =
        lengths.defined()
            ? out(c.primitive("Minus",
                              {lengths, Variable::constant(NDShape{}, DataType::Float, double(sq), c.name() + "/sq")}))
            : Variable::constant(NDShape{}, DataType::Float, double(past), c.name() + "/past");
    Variable i = index_constant(c, {sq, 1}, "query_index"), j = index_constant(c, {1, skv}, "key_index");
    Variable diff = out(c.primitive("Minus", {out(c.primitive("Plus", {i, offset})), j}));
    auto f = [&](double v) { return Variable::constant(NDShape{}, DataType::Float, v, c.name() + "/window"); };
    Variable allowed;
    auto both = [&](const Variable& a) { allowed = allowed.defined() ? times(c, allowed, a) : a; };
    if (causal) both(out(c.primitive("GreaterEqual", {diff, f(0)})));
    if (left >= 0) both(out(c.primitive("LessEqual", {diff, f(double(left))})));
    if (right >= 0) both(out(c.primitive("GreaterEqual", {diff, f(-double(right))})));
    bias = add(bias, select(c, allowed, zero, minus_inf));
  }
  if (lengths.defined()) {
    Variable keys = index_constant(c, {1, 1, 1, skv}, "key_index");
    bias = add(bias, select(c, out(c.primitive("Less", {keys, lengths})), zero, minus_inf));
  }
  return bias;
}

// The rules here build their tensors' shapes while reading: every input static and known.
void require_static(ImportContext& c) {
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i)) {
      const Variable v = c.input(i);
      if (!v.dynamic_axes().empty()) c.fail("inputs with dynamic axes are not supported");
      for (int64_t d : v.shape().dims())
        if (d < 0) c.fail("inputs must have known shapes");
    }
}

// Every output of the node in input `from`'s element type where that is not float32 (the
// engine's float32 integers stay declared as such).
void outputs_typed_as(ImportContext& c, size_t from) {
  if (c.input_elem_type(from) != ::onnx::TensorProto::FLOAT)
    for (int i = 0; i < c.node().output_size(); ++i) c.set_output_elem_type(size_t(i), c.input_elem_type(from));
}

Vars attention(ImportContext& c) {
  require_static(c);
  // softmax_precision is not read: the softmax runs in the inputs' type.
  const bool three_d = c.input(0).shape().rank() == 3;
  Variable q = heads_first(c, c.input(0), "q_num_heads");
  Variable k = heads_first(c, c.input(1), "kv_num_heads");
  Variable v = heads_first(c, c.input(2), "kv_num_heads");
  if (c.has_input(4) != c.has_input(5)) c.fail("past_key and past_value go together");
  if (c.has_input(4)) {
    k = out(c.primitive("Splice", {c.input(4), k}, Dictionary{{"axis", Axis(2)}}));
    v = out(c.primitive("Splice", {c.input(5), v}, Dictionary{{"axis", Axis(2)}}));
  }
  const int64_t past = c.has_input(4) ? c.input(4).shape()[2] : 0;
  Variable present_k = k, present_v = v;
  const auto qd = q.shape().dims(), kd = k.shape().dims(), vd = v.shape().dims();
  const int64_t hq = qd[1], hkv = kd[1], sq = qd[2], skv = kd[2], head = qd[3];
  if (hq % hkv) c.fail("the query heads must be a multiple of the key/value heads");
  if (hq != hkv) {  // grouped-query attention: each key/value head serves hq/hkv query heads
    k = repeat_heads(c, k, hq / hkv);
    v = repeat_heads(c, v, hq / hkv);
  }
  // Q and K are each scaled by sqrt(scale) in their own type, as ONNX's reference and function
  // body do (it matters for float16).
  const double scale = c.has_attr("scale") ? double(c.attr_float("scale")) : 1.0 / std::sqrt(double(head));
  Variable root = scalar(c, q, std::sqrt(scale));
  Variable s = batched_product(c, times(c, q, root), swap(c, times(c, k, root), 2, 3));
  // The soft cap comes before the mask, so masked scores stay -inf.
  const double cap = c.has_attr("softcap") ? double(c.attr_float("softcap")) : 0.0;
  if (cap > 0) s = times(c, out(c.primitive("Tanh", {times(c, s, scalar(c, s, 1 / cap))})), scalar(c, s, cap));
  const int mode = int(c.attr_int("qk_matmul_output_mode", 0));
  Variable qk_out = s;  // modes 0 and 1: the (capped) scores without the bias
  Variable bias = attention_bias(c, s, sq, skv, past);
  if (bias.defined()) s = out(c.primitive("Plus", {s, bias}));
  if (mode == 2) qk_out = s;
  // softmax_precision: the softmax in that float type, its result cast back.
  const DataType dt = s.dtype();
  if (c.has_attr("softmax_precision")) {
    const int64_t sp = c.attr_int("softmax_precision");
    const DataType want = sp == ::onnx::TensorProto::FLOAT    ? DataType::Float
                          : sp == ::onnx::TensorProto::DOUBLE ? DataType::Double
                                                              : dt;
    s = cast(c, s, want);
  }
  Variable p;
  if (s.dtype() == DataType::Float16) {
    p = float16_softmax(c, s, Axis(-1));
  } else {
    p = cast(c, out(c.primitive("Softmax", {s}, Dictionary{{"axis", Axis(-1)}})), dt);
  }
  if (bias.defined()) {
    // A query row whose bias masks every key attends to nothing: its probabilities are 0
    // (the softmax of all -inf is NaN).
    Variable row_max = out(c.primitive(
        "ReduceElements", {bias},
        Dictionary{{"reductionOpName", std::string("Max")}, {"reductionKeepDimensions", true}, {"axis", Axis(-1)}}));
    Variable none = out(c.primitive("Equal", {row_max, scalar(c, row_max, -std::numeric_limits<double>::infinity())}));
    p = select(c, none, scalar(c, p, 0), p);
  }
  if (mode == 3) qk_out = p;
  Variable y = batched_product(c, p, v);
  if (three_d) {
    const auto yd = y.shape().dims();
    y = reshape(c, swap(c, y, 1, 2), {yd[0], yd[2], yd[1] * yd[3]});
  }
  outputs_typed_as(c, 0);
  Vars outs{y};
  if (c.node().output_size() > 1) outs.push_back(present_k);
  if (c.node().output_size() > 2) outs.push_back(present_v);
  if (c.node().output_size() > 3) outs.push_back(qk_out);
  return outs;
}

Variable slice(ImportContext& c, const Variable& x, int axis, int64_t b, int64_t e) {
  return out(c.primitive("Slice", {x}, Dictionary{{"axis", Axis(axis)}, {"beginIndex", b}, {"endIndex", e}}));
}
Variable slice_last(ImportContext& c, const Variable& x, int64_t b, int64_t e) {
  return slice(c, x, int(x.shape().rank()) - 1, b, e);
}
Variable sum_over(ImportContext& c, const Variable& x, int axis, bool keep) {
  return out(c.primitive(
      "ReduceElements", {x},
      Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", keep}, {"axis", Axis(axis)}}));
}
Variable plus(ImportContext& c, const Variable& a, const Variable& b) { return out(c.primitive("Plus", {a, b})); }

// FlexAttention (ai.onnx.preview, opset 1): scaled dot-product attention over [B, H, L, E]
// tensors whose scores pass through the score_mod subgraph before the softmax and whose
// probabilities pass through prob_mod after it, both read inline over the node's values.
// float16 scores are widened to float32 for the subgraphs, the softmax and the product with V
// (softmax_precision names another type), and the result is cast back, as ONNX's reference does.
Vars flex_attention(ImportContext& c) {
  require_static(c);
  Variable q = c.input(0), k = c.input(1), v = c.input(2);
  if (q.shape().rank() != 4 || k.shape().rank() != 4 || v.shape().rank() != 4) c.fail("Q, K and V must have rank 4");
  const int64_t hq = q.shape()[1], hkv = k.shape()[1], e = q.shape()[3];
  if (v.shape()[1] != hkv || v.shape()[2] != k.shape()[2] || k.shape()[3] != e)
    c.fail("K and V must share heads and length, Q and K their head size");
  if (hq % hkv) c.fail("the query heads must be a multiple of the key/value heads");
  if (hq != hkv) {
    k = repeat_heads(c, k, hq / hkv);
    v = repeat_heads(c, v, hq / hkv);
  }
  // sqrt(scale) in float32 (then the inputs' type) scales Q and K each, as the reference does.
  const double scale = c.has_attr("scale") ? double(c.attr_float("scale")) : 1.0 / std::sqrt(double(e));
  Variable root = scalar(c, q, double(std::sqrt(float(scale))));
  Variable s = batched_product(c, times(c, q, root), swap(c, times(c, k, root), 2, 3));
  DataType dt = q.dtype() == DataType::Float16 ? DataType::Float : q.dtype();
  if (c.has_attr("softmax_precision")) {
    const int64_t sp = c.attr_int("softmax_precision");
    if (sp == ::onnx::TensorProto::FLOAT)
      dt = DataType::Float;
    else if (sp == ::onnx::TensorProto::DOUBLE)
      dt = DataType::Double;
    else if (sp == ::onnx::TensorProto::FLOAT16)
      dt = DataType::Float16;
    else
      c.fail("softmax_precision must be float16, float or double (bfloat16 is not supported)");
  }
  auto mod = [&](const char* attr, const Variable& x) {
    if (!c.has_attr(attr)) return x;
    const Vars o = c.read_subgraph(c.attr_graph(attr), {x});
    if (o.size() != 1) c.fail(std::string(attr) + " must have one output");
    return cast(c, o[0], dt);
  };
  s = mod("score_mod", cast(c, s, dt));
  Variable p = mod("prob_mod", out(c.primitive("Softmax", {s}, Dictionary{{"axis", Axis(-1)}})));
  Variable y = cast(c, batched_product(c, p, cast(c, v, dt)), v.dtype());
  outputs_typed_as(c, 2);
  return {y};
}

// LinearAttention (opset 27): the recurrent form of linear attention over [B, T, H * D] inputs,
// unrolled over the T steps, with a [B, H_kv, d_k, d_v] state (past_state, else zeros) kept in
// float32: each step decays the state by exp(decay) (gated rules), replaces the value by
// beta * (v - S^T k) (delta rules), adds k v^T, and reads scale * q^T S with each key/value head
// serving q_num_heads / kv_num_heads query heads. Outputs: [B, T, H_q * d_v] in the query's
// type and the final state in past_state's type (the query's without one).
Vars linear_attention(ImportContext& c) {
  require_static(c);
  const std::string rule = c.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    c.fail("update_rule must be linear, gated, delta or gated_delta, not '" + rule + "'");
  const bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gating != c.has_input(4)) c.fail("update_rule '" + rule + (gating ? "' needs" : "' takes no") + " decay input");
  if (delta != c.has_input(5)) c.fail("update_rule '" + rule + (delta ? "' needs" : "' takes no") + " beta input");
  const int64_t hq = c.attr_int("q_num_heads", 0), hkv = c.attr_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv) c.fail("q_num_heads must be a positive multiple of kv_num_heads");
  for (size_t i : {0, 1, 2, 4, 5})
    if (c.has_input(i) && c.input(i).shape().rank() != 3) c.fail("query, key, value, decay and beta must have rank 3");
  auto wide = [&](size_t i) { return cast(c, c.input(i), DataType::Float); };
  Variable q = wide(0), k = wide(1), v = wide(2);
  const auto qd = q.shape().dims();
  const int64_t b = qd[0], t = qd[1], dk = qd[2] / hq, dv = v.shape()[2] / hkv, g = hq / hkv;
  if (qd[2] % hq || v.shape()[2] % hkv || k.shape()[2] != hkv * dk)
    c.fail("the heads must divide the query's, key's and value's last dimensions, with one head size for Q and K");
  int64_t decay_width = 0, beta_heads = 0;
  if (gating) {
    const int64_t n = c.input(4).shape()[2];
    if (n != hkv && n != hkv * dk) c.fail("decay's last dimension must be kv_num_heads or kv_num_heads * d_k");
    decay_width = n / hkv;
  }
  if (delta) {
    beta_heads = c.input(5).shape()[2];
    if (beta_heads != hkv && beta_heads != 1) c.fail("beta's last dimension must be kv_num_heads or 1");
  }
  const std::vector<int64_t> state_dims{b, hkv, dk, dv};
  if (c.has_input(3) && c.input(3).shape().dims() != state_dims)
    c.fail("past_state must be [B, kv_num_heads, d_k, d_v]");
  Variable state =
      c.has_input(3) ? wide(3) : Variable::constant(NDShape(state_dims), DataType::Float, 0.0, c.name() + "/state");
  const double given = c.has_attr("scale") ? double(c.attr_float("scale")) : 0.0;
  Variable scale = scalar(c, q, given != 0 ? given : 1.0 / std::sqrt(double(dk)));
  Variable decay = gating ? wide(4) : Variable(), beta = delta ? wide(5) : Variable();
  auto at = [&](const Variable& x, int64_t i, std::vector<int64_t> dims) {
    return reshape(c, slice(c, x, 1, i, i + 1), std::move(dims));
  };
  Vars ys;
  for (int64_t i = 0; i < t; ++i) {
    if (gating) state = times(c, state, out(c.primitive("Exp", {at(decay, i, {b, hkv, decay_width, 1})})));
    Variable kt = at(k, i, {b, hkv, dk, 1}), vt = at(v, i, {b, hkv, 1, dv});
    if (delta) {
      Variable retrieved = sum_over(c, times(c, state, kt), -2, true);  // S^T k: [B, H_kv, 1, d_v]
      vt = times(c, at(beta, i, {b, beta_heads, 1, 1}), out(c.primitive("Minus", {vt, retrieved})));
    }
    state = plus(c, state, times(c, kt, vt));
    Variable read =
        sum_over(c, times(c, at(q, i, {b, hkv, g, dk, 1}), reshape(c, state, {b, hkv, 1, dk, dv})), -2, false);
    ys.push_back(reshape(c, times(c, read, scale), {b, 1, hq * dv}));
  }
  Variable y = ys.size() == 1 ? ys[0] : out(c.primitive("Splice", ys, Dictionary{{"axis", Axis(1)}}));
  const size_t state_from = c.has_input(3) ? 3 : 0;
  y = cast(c, y, c.input(0).dtype());
  state = cast(c, state, c.input(state_from).dtype());
  if (c.input_elem_type(0) != ::onnx::TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  if (c.input_elem_type(state_from) != ::onnx::TensorProto::FLOAT)
    c.set_output_elem_type(1, c.input_elem_type(state_from));
  return {y, state};
}

// CausalConvWithState (opset 27): a depthwise causal 1-D convolution over [B, C, L] (weight
// [C, 1, k]) whose left context is past_state [B, C, k - 1] (zeros without one), as the sum of
// the k shifted slices times their taps, in float32 rounded once to the input's type; then
// SiLU (activation silu or swish). present_state: the last k - 1 steps of context and input.
Vars causal_conv_with_state(ImportContext& c) {
  require_static(c);
  const std::string act = c.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    c.fail("activation must be none, silu or swish, not '" + act + "'");
  Variable x = c.input(0), w = c.input(1);
  if (x.shape().rank() != 3 || w.shape().rank() != 3) c.fail("input and weight must have rank 3");
  const int64_t b = x.shape()[0], ch = x.shape()[1], l = x.shape()[2], kk = w.shape()[2];
  if (w.shape()[0] != ch || w.shape()[1] != 1) c.fail("weight must be [channels, 1, k]");
  const DataType dt = x.dtype();
  Variable padded = x;
  if (kk > 1) {
    Variable past =
        c.has_input(3) ? c.input(3) : Variable::constant(NDShape({b, ch, kk - 1}), dt, 0.0, c.name() + "/past_state");
    if (past.shape().dims() != std::vector<int64_t>{b, ch, kk - 1}) c.fail("past_state must be [B, channels, k - 1]");
    padded = out(c.primitive("Splice", {cast(c, past, dt), x}, Dictionary{{"axis", Axis(2)}}));
  }
  Variable wf = reshape(c, cast(c, w, DataType::Float), {ch, kk}), pf = cast(c, padded, DataType::Float);
  Variable y;
  for (int64_t j = 0; j < kk; ++j) {
    Variable term = times(c, slice(c, wf, 1, j, j + 1), slice(c, pf, 2, j, j + l));
    y = y.defined() ? plus(c, y, term) : term;
  }
  if (c.has_input(2)) y = plus(c, y, reshape(c, cast(c, c.input(2), DataType::Float), {ch, 1}));
  y = cast(c, y, dt);
  if (act != "none") {
    Variable yf = cast(c, y, DataType::Float);
    y = cast(c, times(c, yf, out(c.primitive("StableSigmoid", {yf}))), dt);
  }
  // With k = 1 there is no context to keep: an empty state.
  Variable present = kk > 1 ? slice(c, padded, 2, l, l + kk - 1)
                            : Variable::constant(NDShape({b, ch, 0}), dt, 0.0, c.name() + "/present_state");
  outputs_typed_as(c, 0);
  return {y, present};
}

// TensorScatter (opset 24): a cache updated in place along `axis` (not the batch axis): the
// update's rows s go to positions write_indices[b] + s (modulo the cache's length in circular
// mode). Built as a one-hot placement [B, L, S] applied to the update and its complement to
// the cache, so that gradients reach both.
Vars tensor_scatter(ImportContext& c) {
  require_static(c);
  const std::string mode = c.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") c.fail("mode must be linear or circular, not '" + mode + "'");
  Variable past = c.input(0), upd = c.input(1);
  const auto pd = past.shape().dims(), ud = upd.shape().dims();
  const int64_t r = int64_t(pd.size());
  int64_t axis = c.attr_int("axis", -2);
  if (axis < 0) axis += r;
  if (axis < 1 || axis >= r) c.fail("axis must be a non-batch axis of the cache");
  if (ud.size() != pd.size()) c.fail("the update must have the cache's rank");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) {
    if (i != axis && ud[size_t(i)] != pd[size_t(i)]) c.fail("the update must match the cache outside axis");
    if (i > 0 && i < axis) outer *= pd[size_t(i)];
    if (i > axis) inner *= pd[size_t(i)];
  }
  const int64_t b = pd[0], len = pd[size_t(axis)], rows = ud[size_t(axis)];
  if (rows > len) c.fail("the update is longer than the cache along axis");
  Variable start = c.has_input(2) ? reshape(c, cast(c, c.input(2), DataType::Float), {b, 1, 1})
                                  : Variable::constant(NDShape({b, 1, 1}), DataType::Float, 0.0, c.name() + "/start");
  Variable pos = plus(c, start, index_constant(c, {1, 1, rows}, "update_rows"));  // [B, 1, S]
  if (mode == "circular") {
    Variable n = Variable::constant(NDShape{}, DataType::Float, double(len), c.name() + "/length");
    Variable wraps = out(c.primitive("Floor", {out(c.primitive("ElementDivide", {pos, n}))}));
    pos = out(c.primitive("Minus", {pos, times(c, wraps, n)}));
  }
  Variable place =
      cast(c, out(c.primitive("Equal", {pos, index_constant(c, {1, len, 1}, "cache_rows")})), past.dtype());
  Variable placed = sum_over(
      c, times(c, reshape(c, place, {b, 1, len, rows, 1}), reshape(c, upd, {b, outer, 1, rows, inner})), -2, false);
  Variable kept = out(c.primitive("Minus", {scalar(c, place, 1), sum_over(c, place, -1, true)}));  // [B, L, 1]
  Variable y = plus(c, times(c, reshape(c, past, {b, outer, len, inner}), reshape(c, kept, {b, 1, len, 1})), placed);
  outputs_typed_as(c, 0);
  return {reshape(c, y, pd)};
}

// RotaryEmbedding (opset 23): the first rotary_embedding_dim features of each head rotated
// pairwise by the cached angle of its position (halves, or interleaved pairs), in
// [B, S, H, D] order inside; the cache rows are picked by position_ids as a one-hot product.
Vars rotary_embedding(ImportContext& c) {
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i) && c.input_dyn(i) > 0) c.fail("inputs with dynamic axes are not supported");
  Variable x = c.input(0);
  const auto d = x.shape().dims();
  if (d.size() != 3 && d.size() != 4) c.fail("the input must have rank 3 or 4");
  const bool four = d.size() == 4;
  int64_t b = d[0], s, h, hd;
  if (four) {
    h = d[1], s = d[2], hd = d[3];
    x = swap(c, x, 1, 2);
  } else {
    s = d[1], h = c.attr_int("num_heads", 0);
    if (h <= 0 || d[2] % h) c.fail("a 3-D input needs num_heads dividing its last dimension");
    hd = d[2] / h;
    x = reshape(c, x, {b, s, h, hd});
  }
  int64_t rd = c.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) rd = hd;
  if (rd % 2 || rd > hd) c.fail("rotary_embedding_dim must be even and at most the head size");
  const int64_t half = rd / 2;
  const bool interleaved = c.attr_int("interleaved", 0) != 0;
  auto cache = [&](size_t i) {
    Variable v = c.input(i);
    if (v.shape().dims().back() != half) c.fail("the caches' last dimension must be rotary_embedding_dim / 2");
    if (c.has_input(3)) {
      // cache[position_ids]: one-hot rows of the positions times the cache.
      const int64_t n = v.shape()[0];
      Variable pos = reshape(c, cast(c, c.input(3), DataType::Float), {b, s, 1});
      Variable idx = index_constant(c, {n}, "positions");
      Variable onehot = cast(c, out(c.primitive("Equal", {pos, idx})), v.dtype());
      v = batched_product(c, reshape(c, onehot, {1, b * s, n}), reshape(c, v, {1, n, half}));
    }
    return reshape(c, v, {b, s, 1, half});
  };
  Variable cos = cache(1), sin = cache(2);
  Variable xr = rd == hd ? x : slice_last(c, x, 0, rd);
  Variable x1, x2;
  if (interleaved) {
    Variable pairs = reshape(c, xr, {b, s, h, half, 2});
    x1 = reshape(c, slice_last(c, pairs, 0, 1), {b, s, h, half});
    x2 = reshape(c, slice_last(c, pairs, 1, 2), {b, s, h, half});
  } else {
    x1 = slice_last(c, xr, 0, half);
    x2 = slice_last(c, xr, half, rd);
  }
  Variable real = out(c.primitive("Minus", {times(c, cos, x1), times(c, sin, x2)}));
  Variable imag = out(c.primitive("Plus", {times(c, sin, x1), times(c, cos, x2)}));
  Variable y;
  if (interleaved) {
    y = out(c.primitive("Splice", {reshape(c, real, {b, s, h, half, 1}), reshape(c, imag, {b, s, h, half, 1})},
                        Dictionary{{"axis", Axis(4)}}));
    y = reshape(c, y, {b, s, h, rd});
  } else {
    y = out(c.primitive("Splice", {real, imag}, Dictionary{{"axis", Axis(3)}}));
  }
  if (rd < hd) y = out(c.primitive("Splice", {y, slice_last(c, x, rd, hd)}, Dictionary{{"axis", Axis(3)}}));
  y = four ? swap(c, y, 1, 2) : reshape(c, y, d);
  return {y};
}

}  // namespace

void register_import_attention() {
  register_onnx_import("Attention", attention, 23);
  register_onnx_import("RotaryEmbedding", rotary_embedding, 23);
  register_onnx_import("TensorScatter", tensor_scatter, 24);
  register_onnx_import("LinearAttention", linear_attention, 27);
  register_onnx_import("CausalConvWithState", causal_conv_with_state, 27);
  register_onnx_import("FlexAttention", flex_attention, 1, "ai.onnx.preview");
}

}  // namespace cntk::onnx_io
