// ONNX Attention (opset 23): scaled dot-product attention over static [batch, heads, seq,
// head size] tensors (or [batch, seq, heads * head size] with q_num_heads/kv_num_heads),
// built from the engine's primitives: batched products as broadcast products summed over
// the contracted axis, Softmax over the last axis. Grouped key/value heads are repeated for
// their query heads; past keys/values are prepended and returned as the present ones.
#include <cmath>
#include <limits>

#include "onnx/import.h"

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

// a [..., M, K] times b [..., K, N] (equal leading dims) -> [..., M, N].
Variable batched_product(ImportContext& c, const Variable& a, const Variable& b) {
  std::vector<int64_t> da = a.shape().dims(), db = b.shape().dims();
  da.push_back(1);
  db.insert(db.end() - 2, 1);
  Variable p = out(c.primitive("ElementTimes", {reshape(c, a, da), reshape(c, b, db)}));
  return out(c.primitive(
      "ReduceElements", {p},
      Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(-2)}}));
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

Vars attention(ImportContext& c) {
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i)) {
      const Variable v = c.input(i);
      if (!v.dynamic_axes().empty()) c.fail("inputs with dynamic axes are not supported");
      for (int64_t d : v.shape().dims())
        if (d < 0) c.fail("inputs must have known shapes");
    }
  if (c.has_input(6)) c.fail("nonpad_kv_seqlen is not supported");
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
    const int64_t g = hq / hkv;
    auto repeat = [&](const Variable& x, const std::vector<int64_t>& d) {
      Variable x5 = reshape(c, x, {d[0], d[1], 1, d[2], d[3]});
      return reshape(c, out(c.primitive("Splice", std::vector<Variable>(size_t(g), x5), Dictionary{{"axis", Axis(2)}})),
                     {d[0], hq, d[2], d[3]});
    };
    k = repeat(k, kd);
    v = repeat(v, vd);
  }
  const double scale = c.has_attr("scale") ? double(c.attr_float("scale")) : 1.0 / std::sqrt(double(head));
  Variable s = batched_product(c, q, swap(c, k, 2, 3));
  s = out(c.primitive("ElementTimes", {s, scalar(c, s, scale)}));
  const int mode = int(c.attr_int("qk_matmul_output_mode", 0));
  Variable qk_out = s;
  // The mask: an additive float bias, or booleans (true: attend); then causality: query i
  // sees the past keys and the new keys up to its own position i.
  const double neg_inf = -std::numeric_limits<double>::infinity();
  Variable bias;
  if (c.has_input(3)) {
    Variable m = c.input(3);
    if (c.input_elem_type(3) == ::onnx::TensorProto::BOOL)
      m = out(c.primitive("Select", {m, scalar(c, s, 0), scalar(c, s, neg_inf)}));
    bias = m;
  }
  if (c.attr_int("is_causal", 0)) {
    NDArrayView cm = NDArrayView::zeros(DataType::Float, NDShape({sq, skv}));
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < skv; ++j)
        if (j > i + past) cm.data<float>()[i * skv + j] = -std::numeric_limits<float>::infinity();
    Variable cv = Variable::constant(s.dtype() == DataType::Float ? cm : cm.cast(s.dtype()), c.name() + "/causal");
    bias = bias.defined() ? out(c.primitive("Plus", {bias, cv})) : cv;
  }
  if (bias.defined()) s = out(c.primitive("Plus", {s, bias}));
  if (mode == 1) qk_out = s;
  if (c.has_attr("softcap") && c.attr_float("softcap") > 0) {
    const double cap = c.attr_float("softcap");
    s = out(c.primitive(
        "ElementTimes",
        {out(c.primitive("Tanh", {out(c.primitive("ElementTimes", {s, scalar(c, s, 1 / cap)}))})), scalar(c, s, cap)}));
  }
  if (mode == 2) qk_out = s;
  Variable p = out(c.primitive("Softmax", {s}, Dictionary{{"axis", Axis(-1)}}));
  if (mode == 3) qk_out = p;
  Variable y = batched_product(c, p, v);
  if (three_d) {
    const auto yd = y.shape().dims();
    y = reshape(c, swap(c, y, 1, 2), {yd[0], yd[2], yd[1] * yd[3]});
  }
  for (int i = 0; i < 4; ++i)
    if (c.input_elem_type(0) != ::onnx::TensorProto::FLOAT) c.set_output_elem_type(size_t(i), c.input_elem_type(0));
  Vars outs{y};
  if (c.node().output_size() > 1) outs.push_back(present_k);
  if (c.node().output_size() > 2) outs.push_back(present_v);
  if (c.node().output_size() > 3) outs.push_back(qk_out);
  return outs;
}

}  // namespace

void register_import_attention() { register_onnx_import("Attention", attention, 23); }

}  // namespace cntk::onnx_io
