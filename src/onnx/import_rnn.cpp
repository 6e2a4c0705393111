// ONNX LSTM, GRU and RNN read as the engine's primitives.
//
// How the time axis is read: X is [seq, batch, input] (layout 0) and ONNX's Y is
// [seq, directions, batch, hidden]: the nodes downstream (Squeeze, Transpose, the next layer)
// index seq as a static axis, so the reader keeps X and Y static tensors and chooses the loop
// by X's seq dimension:
// - static (what torch.onnx.export writes by default): the loop is unrolled, step t reads
//   Slice(X, t), the steps' outputs are spliced back along axis 0; W/R/B stay the model's
//   parameters, shared by the steps;
// - free (a symbolic dimension, e.g. the Sequence dimension OpenCNTK writes): the seq
//   dimension becomes a sequence axis (ToBatchAxis, ToSequence with sequence_lens as the
//   lengths), the cell runs over it as a recurrence with PastValue/FutureValue (the engine
//   fuses it where the cell allows), and the outputs are unpacked to the static layout again.
//
// sequence_lens: step t of sample b counts only while t < sequence_lens[b]; past that the
// state is held and Y is 0, as ONNX defines (a reverse direction then starts at the last
// valid step of each sample).
#include <algorithm>
#include <optional>

#include "onnx/export_block.h"
#include "onnx/import_control.h"
#include "onnx/import.h"

namespace cntk::onnx_io {

namespace {

enum class Cell { LSTM, GRU, RNN };

struct RnnBuilder {
  ImportContext& c;
  Cell cell;
  int64_t H = 0;  // hidden size
  int gates = 1;

  Variable op(const std::string& name, std::vector<Variable> in, Dictionary attrs = {}) {
    return c.primitive(name, std::move(in), std::move(attrs))->output();
  }
  Variable slice(const Variable& x, int axis, int64_t b, int64_t e) {
    return op("Slice", {x}, {{"axis", Axis(axis)}, {"beginIndex", b}, {"endIndex", e}});
  }
  Variable reshape(const Variable& x, const std::vector<int64_t>& dims) {
    return op("Reshape", {x}, {{"newShape", NDShape(dims)}});
  }
  Variable add(const Variable& a, const Variable& b) { return op("Plus", {a, b}); }
  Variable mul(const Variable& a, const Variable& b) { return op("ElementTimes", {a, b}); }
  Variable times(const Variable& a, const Variable& b) { return op("Times", {a, b}); }
  Variable add_opt(const Variable& a, const std::optional<Variable>& b) { return b ? add(a, *b) : a; }

  // An ONNX activation by name (alpha/beta from the node's activation_alpha/beta lists).
  Variable activate(const std::string& f, const Variable& x, size_t k) {
    auto alpha = c.attr_floats("activation_alpha", std::vector<float>{});
    auto beta = c.attr_floats("activation_beta", std::vector<float>{});
    auto scalar = [&](float v) { return Variable::constant(NDArrayView::scalar(x.dtype(), v), ""); };
    if (f == "Sigmoid") return op("StableSigmoid", {x});
    if (f == "Tanh") return op("Tanh", {x});
    if (f == "Relu") return op("ReLU", {x});
    if (f == "Affine" && k < alpha.size() && k < beta.size()) return add(mul(x, scalar(alpha[k])), scalar(beta[k]));
    if (f == "ScaledTanh" && k < alpha.size() && k < beta.size())
      return mul(op("Tanh", {mul(x, scalar(beta[k]))}), scalar(alpha[k]));
    c.fail("the activation '" + f + "' is not read yet");
  }

  // A parameter's slice for direction d with the direction axis dropped: [rest...].
  Variable dir_slice(const Variable& w, int64_t d, int64_t num_dirs) {
    auto dims = w.shape().dims();
    if (dims.empty() || dims[0] != num_dirs)
      c.fail("the direction axis of '" + w.name() + "' must have size " + std::to_string(num_dirs));
    std::vector<int64_t> rest(dims.begin() + 1, dims.end());
    return reshape(num_dirs == 1 ? w : slice(w, 0, d, d + 1), rest);
  }
};

// Per direction: the weights as Times takes them and the activations.
struct DirWeights {
  Variable WT, RT;             // [F, G*H], [H, G*H]
  std::optional<Variable> Wb;  // [G*H] input bias
  std::optional<Variable> Rb;  // [G*H] recurrent bias
  std::optional<Variable> P;   // LSTM peepholes [3H] (i, o, f)
  std::vector<std::string> act;
  size_t act_base = 0;  // index into activation_alpha/beta
};

// One step: x [.., F], h/cs the previous state (absent: zero). Returns {h, c}.
std::pair<Variable, std::optional<Variable>> step(RnnBuilder& b, const DirWeights& w, const Variable& x,
                                                  const std::optional<Variable>& h, const std::optional<Variable>& cs) {
  const int64_t H = b.H;
  auto gate = [&](const Variable& v, int k) { return b.slice(v, -1, k * H, (k + 1) * H); };
  auto f = [&](size_t k, const Variable& v) { return b.activate(w.act[k], v, w.act_base + k); };
  Variable xw = b.add_opt(b.times(x, w.WT), w.Wb);
  std::optional<Variable> hr;
  if (h)
    hr = b.add_opt(b.times(*h, w.RT), w.Rb);
  else if (w.Rb && b.cell != Cell::GRU)
    hr = *w.Rb;
  if (b.cell == Cell::RNN) return {f(0, b.add_opt(xw, hr)), std::nullopt};
  if (b.cell == Cell::LSTM) {
    Variable g = b.add_opt(xw, hr);
    auto peep = [&](int k, const std::optional<Variable>& state) -> std::optional<Variable> {
      if (!w.P || !state) return std::nullopt;
      return b.mul(b.slice(*w.P, 0, k * H, (k + 1) * H), *state);
    };
    Variable i = f(0, b.add_opt(gate(g, 0), peep(0, cs)));
    Variable fg = f(0, b.add_opt(gate(g, 2), peep(2, cs)));
    Variable cand = f(1, gate(g, 3));
    Variable c_new = b.add_opt(b.mul(i, cand), cs ? std::optional<Variable>(b.mul(fg, *cs)) : std::nullopt);
    Variable o = f(0, b.add_opt(gate(g, 1), peep(1, c_new)));
    return {b.mul(o, f(2, c_new)), c_new};
  }
  // GRU (z, r, h gate order).
  const bool lbr = b.c.attr_int("linear_before_reset", 0) != 0;
  std::optional<Variable> rb_h = w.Rb ? std::optional<Variable>(b.slice(*w.Rb, 0, 2 * H, 3 * H)) : std::nullopt;
  std::optional<Variable> rb_zr = w.Rb ? std::optional<Variable>(b.slice(*w.Rb, 0, 0, 2 * H)) : std::nullopt;
  // The z and r gates: x and h parts over the first 2H columns.
  std::optional<Variable> hzr;
  if (h)
    hzr = b.add_opt(b.times(*h, b.slice(w.RT, 1, 0, 2 * H)), rb_zr);
  else
    hzr = rb_zr;
  Variable z = f(0, b.add_opt(gate(xw, 0), hzr ? std::optional<Variable>(gate(*hzr, 0)) : std::nullopt));
  Variable r = f(0, b.add_opt(gate(xw, 1), hzr ? std::optional<Variable>(gate(*hzr, 1)) : std::nullopt));
  Variable rh_w = b.slice(w.RT, 1, 2 * H, 3 * H);
  std::optional<Variable> rec;
  if (lbr) {
    std::optional<Variable> hh = h ? std::optional<Variable>(b.add_opt(b.times(*h, rh_w), rb_h)) : rb_h;
    if (hh) rec = b.mul(r, *hh);
  } else {
    if (h) rec = b.times(b.mul(r, *h), rh_w);
    rec = rec ? std::optional<Variable>(b.add_opt(*rec, rb_h)) : rb_h;
  }
  Variable cand = f(1, b.add_opt(gate(xw, 2), rec));
  // h' = (1 - z) * cand + z * h, in this order (as the GRU layer computes it: a model
  // written by the layers reads back with the same rounding).
  Variable one = Variable::constant(NDArrayView::scalar(z.dtype(), 1.0), "");
  Variable out = b.mul(b.op("Minus", {one, z}), cand);
  if (h) out = b.add(out, b.mul(z, *h));
  return {out, std::nullopt};
}

// The recurrence of a free seq dimension in the form of the engine's own layers (the step a
// block over (h, [c,] x) reading weights in CNTK's layout as parameters, wired as the cell
// oneDNN computes), so that the engine fuses it as it fuses Recurrence(LSTM/GRU/RNNStep)
// (src/exec/fused_rnn.h). Possible where the node's weights are known while reading and
// the cell is one the layers compute: default activations (RNN: Tanh, Relu or Sigmoid), no
// peepholes, GRU with linear_before_reset=0 (its recurrent biases then add to the input
// ones). The parameters become CNTK's (W [F, G*H], H [H, G*H] (GRU: [H, 2H] and H1 [H, H]),
// b = Wb + Rb in CNTK's gate order); the node's W, R, B are computed back from them, so
// that the node written again holds the trained values.
struct LayerForm {
  std::vector<int> perm;  // CNTK gate k is ONNX gate perm[k]
  std::string rnn_act;    // RNN: the engine op of its activation
  struct Dir {
    Variable W, H, H1, b;
  };
  std::vector<Dir> dirs;
  Variable W_onnx, R_onnx, B_onnx;  // the node's inputs computed from the parameters
};

std::optional<LayerForm> layer_form(RnnBuilder& b, const std::vector<std::string>& acts, int64_t num_dirs, int64_t F) {
  ImportContext& c = b.c;
  const Cell cell = b.cell;
  const int64_t H = b.H, G = b.gates, GH = G * H;
  if (c.has_input(7) || (cell == Cell::GRU && c.attr_int("linear_before_reset", 0) != 0)) return std::nullopt;
  LayerForm lf;
  if (cell == Cell::RNN) {
    for (const auto& a : acts)
      if (a != acts[0]) return std::nullopt;
    const std::string a = acts.empty() ? "Tanh" : acts[0];
    lf.rnn_act = a == "Tanh" ? "Tanh" : a == "Relu" ? "ReLU" : a == "Sigmoid" ? "StableSigmoid" : "";
    if (lf.rnn_act.empty()) return std::nullopt;
  } else {
    const std::vector<std::string> defaults = cell == Cell::LSTM ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                                                 : std::vector<std::string>{"Sigmoid", "Tanh"};
    for (size_t k = 0; k < acts.size(); ++k)
      if (acts[k] != defaults[k % defaults.size()]) return std::nullopt;
  }
  auto W = c.constant_input(1), R = c.constant_input(2);
  if (!W || !R) return std::nullopt;
  std::optional<NDArrayView> B = c.has_input(3) ? c.constant_input(3) : std::nullopt;
  if (c.has_input(3) && !B) return std::nullopt;
  const DataType dt = c.input(0).dtype();
  if (W->shape() != NDShape({num_dirs, GH, F}) || R->shape() != NDShape({num_dirs, GH, H}) ||
      (B && B->shape() != NDShape({num_dirs, 2 * GH})))
    return std::nullopt;
  const NDArrayView w = W->cast(DataType::Double).contiguous(), r = R->cast(DataType::Double).contiguous();
  const std::optional<NDArrayView> bb =
      B ? std::optional<NDArrayView>(B->cast(DataType::Double).contiguous()) : std::nullopt;
  // LSTM: CNTK's (i, c, f, o) from ONNX's (i, o, f, c); GRU (z, r, h) and RNN alike.
  lf.perm = cell == Cell::LSTM  ? std::vector<int>{0, 3, 2, 1}
            : cell == Cell::GRU ? std::vector<int>{0, 1, 2}
                                : std::vector<int>{0};
  const std::string suffix[2] = {num_dirs > 1 ? "_forward" : "", "_backward"};
  auto param = [&](NDArrayView v, const std::string& name) {
    NDArrayView t = v.cast(dt);
    return Variable::parameter(t.shape(), dt, t, nullptr, name);
  };
  // rows x cols from the ONNX weight m (of direction d): entry [i][k*H + j] is m[d][perm[k]*H + j][i] for
  // the gates k in [k0, k1).
  auto cntk_weight = [&](const NDArrayView& m, int64_t d, int64_t rows, int k0, int k1) {
    NDArrayView out(DataType::Double, NDShape({rows, (k1 - k0) * H}));
    const double* src = m.data<double>() + d * GH * rows;
    double* dst = out.data<double>();
    for (int64_t i = 0; i < rows; ++i)
      for (int k = k0; k < k1; ++k)
        for (int64_t j = 0; j < H; ++j)
          dst[i * (k1 - k0) * H + (k - k0) * H + j] = src[(lf.perm[size_t(k)] * H + j) * rows + i];
    return out;
  };
  // The node's inputs again: gates back in ONNX's order, transposed, direction axis first.
  auto onnx_order = [&](const Variable& m, int k0, int k1) {
    std::vector<Variable> gates(size_t(k1 - k0));
    for (int k = k0; k < k1; ++k)
      gates[size_t(lf.perm[size_t(k)] - k0)] = b.slice(m, -1, (k - k0) * H, (k - k0 + 1) * H);
    return gates.size() == 1 ? gates[0] : b.op("Splice", gates, {{"axis", Axis(-1)}});
  };
  auto transposed = [&](const Variable& m) {
    return b.op("TransposeAxes", {m}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}});
  };
  auto lead = [&](const Variable& v) {
    auto dims = v.shape().dims();
    dims.insert(dims.begin(), 1);
    return b.reshape(v, dims);
  };
  const Variable no_rb = Variable::constant(NDArrayView::zeros(dt, NDShape({GH})), "");
  std::vector<Variable> Ws, Rs, Bs;
  for (int64_t d = 0; d < num_dirs; ++d) {
    LayerForm::Dir dir;
    const std::string& sfx = suffix[d];
    dir.W = param(cntk_weight(w, d, F, 0, G), c.node().input(1) + sfx);
    dir.H = param(cntk_weight(r, d, H, 0, cell == Cell::GRU ? 2 : G), c.node().input(2) + sfx);
    if (cell == Cell::GRU) dir.H1 = param(cntk_weight(r, d, H, 2, 3), c.node().input(2) + sfx + "_h");
    NDArrayView bias(DataType::Double, NDShape({GH}));
    for (int k = 0; k < G; ++k)
      for (int64_t j = 0; j < H; ++j) {
        const int64_t o = lf.perm[size_t(k)] * H + j;
        const double* bd = bb ? bb->data<double>() + d * 2 * GH : nullptr;
        bias.data<double>()[k * H + j] = bd ? bd[o] + bd[GH + o] : 0;
      }
    // Without B the node has no bias to train: a constant zero.
    dir.b = bb ? param(bias, c.node().input(3) + sfx) : Variable::constant(bias.cast(dt), "");
    Ws.push_back(lead(transposed(onnx_order(dir.W, 0, G))));
    Variable Rt = onnx_order(dir.H, 0, cell == Cell::GRU ? 2 : G);
    if (cell == Cell::GRU) Rt = b.op("Splice", {Rt, dir.H1}, {{"axis", Axis(-1)}});
    Rs.push_back(lead(transposed(Rt)));
    if (bb) Bs.push_back(lead(b.op("Splice", {onnx_order(dir.b, 0, G), no_rb}, {{"axis", Axis(0)}})));
    lf.dirs.push_back(dir);
  }
  auto cat = [&](const std::vector<Variable>& v) {
    return v.size() == 1 ? v[0] : b.op("Splice", v, {{"axis", Axis(0)}});
  };
  lf.W_onnx = cat(Ws);
  lf.R_onnx = cat(Rs);
  if (bb) lf.B_onnx = cat(Bs);
  return lf;
}

// One step of the layer form as a block over (h, [c,] x), as the layers bind a step.
std::pair<Variable, std::optional<Variable>> layer_step(RnnBuilder& b, const LayerForm& lf, const LayerForm::Dir& w,
                                                        const Variable& x, const Variable& h_prev,
                                                        const std::optional<Variable>& c_prev) {
  const int64_t H = b.H;
  auto ph = [&](const Variable& like, int64_t n) {
    Variable p = Variable::placeholder(NDShape({n}), like.dynamic_axes(), "");
    p.impl()->dtype = like.dtype();
    return p;
  };
  Variable h = ph(x, H), xp = ph(x, x.shape().dims().back());
  std::optional<Variable> cs;
  if (c_prev) cs = ph(x, H);
  auto gate = [&](const Variable& v, int k) { return b.slice(v, -1, k * H, (k + 1) * H); };
  auto sig = [&](const Variable& v) { return b.op("StableSigmoid", {v}); };
  auto tanh = [&](const Variable& v) { return b.op("Tanh", {v}); };
  std::vector<Variable> outs;
  std::string op;
  if (b.cell == Cell::LSTM) {
    Variable P = b.add(b.add(w.b, b.times(xp, w.W)), b.times(h, w.H));
    Variable c_new = b.add(b.mul(sig(gate(P, 2)), *cs), b.mul(sig(gate(P, 0)), tanh(gate(P, 1))));
    outs = {b.mul(sig(gate(P, 3)), tanh(c_new)), c_new};
    op = "LSTM";
  } else if (b.cell == Cell::GRU) {
    Variable Px = b.add(w.b, b.times(xp, w.W)), Ph = b.times(h, w.H);
    Variable z = sig(b.add(gate(Px, 0), gate(Ph, 0)));
    Variable r = sig(b.add(gate(Px, 1), gate(Ph, 1)));
    Variable cand = tanh(b.add(gate(Px, 2), b.times(b.mul(h, r), w.H1)));
    Variable one = Variable::constant(NDArrayView::scalar(z.dtype(), 1.0), "");
    outs = {b.add(b.mul(z, h), b.mul(b.op("Minus", {one, z}), cand))};
    op = "GRU";
  } else {
    outs = {b.op(lf.rnn_act, {b.add(b.add(w.b, b.times(xp, w.W)), b.times(h, w.H))})};
    op = "RNNStep";
  }
  std::vector<std::pair<Variable, Variable>> args{{h, h_prev}};
  if (cs) args.emplace_back(*cs, *c_prev);
  args.emplace_back(xp, x);
  FunctionPtr step = Function::block(Function::combine(outs), args, op, b.c.name());
  auto so = step->outputs();
  return {so[0], so.size() > 1 ? std::optional<Variable>(so[1]) : std::nullopt};
}

// The node's graph over `in` (the node's inputs, as placeholders of the block below). Where
// the graph reads the node's W, R, B from parameters of its own (LayerForm), it sets
// actual[1..3] to the values the node's inputs are computed from.
std::vector<Variable> read_rnn(ImportContext& c, Cell cell, const std::vector<Variable>& in,
                               std::vector<Variable>& actual) {
  RnnBuilder b{c, cell};
  b.gates = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  const std::string direction = c.attr_string("direction", "forward");
  const int64_t num_dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail("unknown direction '" + direction + "'");
  if (c.has_attr("clip")) c.fail("the 'clip' attribute is not read yet");
  if (c.attr_int("input_forget", 0) != 0) c.fail("input_forget=1 is not read yet");
  const int64_t layout = c.attr_int("layout", 0);
  Variable X = in[0], W = in[1], R = in[2];
  const auto rdims = R.shape().dims();
  if (rdims.size() != 3) c.fail("R must have rank 3, not " + std::to_string(rdims.size()));
  b.H = c.attr_int("hidden_size", rdims[2]);
  const int64_t H = b.H, GH = b.gates * H;

  std::vector<std::string> defaults = cell == Cell::LSTM  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                      : cell == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Tanh"};
  std::vector<std::string> acts;
  for (const auto& a : c.node().attribute())
    if (a.name() == "activations")
      for (const auto& v : a.strings()) acts.push_back(v);
  const size_t per_dir = defaults.size();
  if (!acts.empty() && acts.size() != per_dir * size_t(num_dirs))
    c.fail("expected " + std::to_string(per_dir * num_dirs) + " activations, got " + std::to_string(acts.size()));

  std::vector<DirWeights> dirs;
  for (int64_t d = 0; d < num_dirs; ++d) {
    DirWeights w;
    Variable Wd = b.dir_slice(W, d, num_dirs), Rd = b.dir_slice(R, d, num_dirs);  // [GH, F], [GH, H]
    w.WT = b.op("TransposeAxes", {Wd}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}});
    w.RT = b.op("TransposeAxes", {Rd}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}});
    if (c.has_input(3)) {
      Variable Bd = b.dir_slice(in[3], d, num_dirs);  // [2 GH]
      w.Wb = b.slice(Bd, 0, 0, GH);
      w.Rb = b.slice(Bd, 0, GH, 2 * GH);
    }
    if (cell == Cell::LSTM && c.has_input(7)) w.P = b.dir_slice(in[7], d, num_dirs);
    for (size_t k = 0; k < per_dir; ++k) w.act.push_back(acts.empty() ? defaults[k] : acts[d * per_dir + k]);
    w.act_base = size_t(d) * per_dir;
    dirs.push_back(std::move(w));
  }
  const size_t h0_in = 5, c0_in = 6;
  const bool has_h0 = c.has_input(h0_in), has_c0 = cell == Cell::LSTM && c.has_input(c0_in);

  if (!X.dynamic_axes().empty()) c.fail("X with dynamic axes is not read: ONNX's X is [seq, batch, input]");
  if (layout == 1) X = b.op("TransposeAxes", {X}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}});
  const auto xd = X.shape().dims();
  if (xd.size() != 3) c.fail("X must have rank 3 ([seq, batch, input]), not " + X.shape().str());
  const int64_t S = xd[0], B = xd[1];

  auto finish = [&](Variable Y, Variable Y_h, std::optional<Variable> Y_c) {
    if (layout == 1) {
      Y = b.op("TransposeAxes", {Y}, {{"axisVec", DictValue::List{Axis(2), Axis(0), Axis(1), Axis(3)}}});
      Y_h = b.op("TransposeAxes", {Y_h}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}});
      if (Y_c) Y_c = b.op("TransposeAxes", {*Y_c}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}});
    }
    std::vector<Variable> out{Y, Y_h};
    if (Y_c) out.push_back(*Y_c);
    out.resize(std::min(out.size(), size_t(c.node().output_size())));
    return out;
  };

  // ------------------------------------------------ free seq dimension: a recurrence
  // The seq dimension becomes a sequence axis (batch -> batch axis, seq -> sequence axis,
  // with sequence_lens as the lengths), the cell runs over it with PastValue/FutureValue,
  // and the outputs are unpacked to ONNX's static layout again (0 past each length).
  if (S < 0) {
    auto stack = [&](const std::vector<Variable>& v) {
      return b.op("Splice", v, {{"axis", Axis::new_leading_axis()}});
    };
    std::vector<Variable> seq_in{
        b.op("ToBatchAxis", {b.op("TransposeAxes", {X}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}})})};
    if (c.has_input(4)) seq_in.push_back(b.op("ToBatchAxis", {in[4]}));
    Variable Xs = b.op("ToSequence", seq_in);
    std::optional<LayerForm> lf = layer_form(b, acts, num_dirs, xd[2]);
    if (lf) {
      actual[1] = lf->W_onnx;
      actual[2] = lf->R_onnx;
      if (c.has_input(3)) actual[3] = lf->B_onnx;
    }
    std::vector<Variable> ys, hs, cs;
    for (int64_t d = 0; d < num_dirs; ++d) {
      const bool reverse = direction == "reverse" || d == 1;
      auto initial = [&](bool has, size_t slot) {
        return has ? b.op("ToBatchAxis", {b.dir_slice(in[slot], d, num_dirs)})
                   : Variable::constant(NDArrayView::scalar(X.dtype(), 0.0), "");
      };
      Variable hp = Variable::placeholder(NDShape({H}), Xs.dynamic_axes(), "");
      Variable cp = Variable::placeholder(NDShape({H}), Xs.dynamic_axes(), "");
      hp.impl()->dtype = cp.impl()->dtype = X.dtype();  // placeholders are float32 unless told
      const char* delay = reverse ? "FutureValue" : "PastValue";
      Variable h_prev = b.op(delay, {hp, initial(has_h0, h0_in)}, {{"offset", int64_t(1)}});
      std::optional<Variable> c_prev;
      if (cell == Cell::LSTM) c_prev = b.op(delay, {cp, initial(has_c0, c0_in)}, {{"offset", int64_t(1)}});
      auto [h, cn] =
          lf ? layer_step(b, *lf, lf->dirs[size_t(d)], Xs, h_prev, c_prev) : step(b, dirs[d], Xs, h_prev, c_prev);
      std::unordered_map<VariableImpl*, Variable> map{{hp.impl().get(), h}};
      if (cn) map[cp.impl().get()] = *cn;
      Function::combine(cn ? std::vector<Variable>{h, *cn} : std::vector<Variable>{h})->replace_placeholders(map);
      // The final state: the last step (the first, running backward).
      auto final_state = [&](const Variable& v) {
        Variable one = b.op("SequenceSlice", {v},
                            {{"beginIndex", int64_t(reverse ? 0 : -1)}, {"endIndex", int64_t(reverse ? 1 : 0)}});
        return b.op("UnpackBatchAxis", {b.op("ReduceElements", {one},
                                             {{"reductionOpName", std::string("Sum")},
                                              {"axis", Axis::operand_sequence_axis()},
                                              {"reductionKeepDimensions", false}})});
      };
      ys.push_back(
          b.op("UnpackBatchAxis", {b.op("UnpackSequence", {h}, {{"suppressMaskOutput", true}})}));  // [B, S, H]
      hs.push_back(final_state(h));
      if (cn) cs.push_back(final_state(*cn));
    }
    Variable Y = b.op("TransposeAxes", {stack(ys)}, {{"axisVec", DictValue::List{Axis(2), Axis(0), Axis(1), Axis(3)}}});
    return finish(Y, stack(hs), cs.empty() ? std::nullopt : std::optional<Variable>(stack(cs)));
  }

  // ------------------------------------------------ static seq dimension: unrolled
  if (B < 0) c.fail("a free batch dimension with a static seq dimension is not read");
  std::optional<Variable> lens;
  if (c.has_input(4)) lens = b.reshape(in[4], {1, B, 1});

  std::vector<Variable> Yh, Yc;
  std::vector<std::vector<Variable>> per_dir_y(num_dirs);
  for (int64_t d = 0; d < num_dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    std::optional<Variable> h, cs;
    if (has_h0) h = b.reshape(b.dir_slice(in[h0_in], d, num_dirs), {1, B, H});
    if (has_c0) cs = b.reshape(b.dir_slice(in[c0_in], d, num_dirs), {1, B, H});
    std::vector<Variable> ys(S, X);
    for (int64_t k = 0; k < S; ++k) {
      const int64_t t = reverse ? S - 1 - k : k;
      Variable xt = b.slice(X, 0, t, t + 1);  // [1, B, F]
      auto [hn, cn] = step(b, dirs[d], xt, h, cs);
      if (lens) {
        // m = t < len: the step counts; past the length the state holds and Y is 0.
        auto tconst = Variable::constant(NDArrayView::scalar(X.dtype(), double(t)), "");
        Variable m = b.op("Less", {tconst, *lens});
        Variable y = b.mul(hn, m);
        auto hold = [&](const Variable& nv, const std::optional<Variable>& old) {
          return old ? b.add(b.mul(nv, m), b.op("Minus", {*old, b.mul(*old, m)})) : b.mul(nv, m);
        };
        hn = hold(hn, h);
        if (cn) cn = hold(*cn, cs);
        ys[t] = y;
      } else {
        ys[t] = hn;
      }
      h = hn;
      cs = cn;
    }
    per_dir_y[d] = ys;
    Yh.push_back(*h);
    if (cs) Yc.push_back(*cs);
  }
  // Y: [S, dirs, B, H]; each step's [1, B, H] gets its direction axis, then steps are spliced.
  std::vector<Variable> steps;
  for (int64_t t = 0; t < S; ++t) {
    std::vector<Variable> at;
    for (int64_t d = 0; d < num_dirs; ++d) at.push_back(b.reshape(per_dir_y[d][t], {1, 1, B, H}));
    steps.push_back(at.size() == 1 ? at[0] : b.op("Splice", at, {{"axis", Axis(1)}}));
  }
  Variable Y = steps.size() == 1 ? steps[0] : b.op("Splice", steps, {{"axis", Axis(0)}});
  auto cat0 = [&](const std::vector<Variable>& v) {
    return v.size() == 1 ? v[0] : b.op("Splice", v, {{"axis", Axis(0)}});
  };
  return finish(Y, cat0(Yh), Yc.empty() ? std::nullopt : std::optional<Variable>(cat0(Yc)));
}

// The node as a block (op name LSTM/GRU/RNN) over its inputs, keeping the node itself in the
// block's attributes: the writer writes such a block back as the node (export_rnn.cpp), so
// an imported model saves as ONNX again unchanged.
std::vector<Variable> read_rnn_block(ImportContext& c, Cell cell) {
  std::vector<Variable> in(8), actual(8);
  for (size_t i = 0; i < in.size() && i < c.num_inputs(); ++i)
    if (c.has_input(i)) {
      actual[i] = c.input(i);
      in[i] = Variable::placeholder(actual[i].shape(), actual[i].dynamic_axes(), "");
      in[i].impl()->dtype = actual[i].dtype();
    }
  std::vector<Variable> outs = read_rnn(c, cell, in, actual);
  std::vector<std::pair<Variable, Variable>> mapping;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].defined()) mapping.emplace_back(in[i], actual[i]);
  // An input the node's graph does not read (R where one step starts from no state) still
  // is an input of the block: the node written back reads it.
  std::vector<Variable> unread{outs[0]};
  const auto read = Function::combine(outs)->placeholders();
  for (const auto& [ph, actual] : mapping)
    if (std::find(read.begin(), read.end(), ph) == read.end()) unread.push_back(ph);
  if (unread.size() > 1) outs[0] = c.primitive("DependsOn", unread)->output();
  FunctionPtr block = Function::block(Function::combine(outs), mapping, c.node().op_type(), c.name());
  block->mutable_attributes()[kOnnxNodeKey] = c.node().SerializeAsString();
  return block->outputs();
}

// Whether a Scan body input is one step of a value in the engine's layout, as OpenCNTK's
// writer declares it: [batch, 1, ...] with denotations DATA_BATCH and DATA_TIME.
bool engine_step(const ::onnx::ValueInfoProto& vi) {
  const auto& s = vi.type().tensor_type().shape();
  return s.dim_size() >= 2 && s.dim(0).denotation() == "DATA_BATCH" && s.dim(1).denotation() == "DATA_TIME";
}

}  // namespace

// A Scan written by OpenCNTK (every body input one step in the engine's layout, all scans in
// one direction over axis 0) is a recurrent loop again: the scan inputs [Sequence, batch, 1,
// ...] become sequences, the state variables PastValue (FutureValue, scanning in reverse) of
// placeholders closed over the body's new states, and the scan outputs and final states are
// unpacked to ONNX's static layout. Other Scans: nothing (import_control.cpp unrolls them).
std::optional<std::vector<Variable>> read_engine_scan(ImportContext& c) {
  RnnBuilder b{c, Cell::RNN};
  const auto& body = c.attr_graph("body");
  const int64_t M = c.attr_int("num_scan_inputs");
  const int64_t N = int64_t(c.num_inputs()) - M;
  const int64_t K = body.output_size() - N;
  if (N < 0 || K < 0 || body.input_size() != N + M) c.fail("the body's inputs and outputs do not match the Scan's");
  auto attr_list = [&](const char* name, int64_t n) {
    auto v = c.attr_ints(name, std::vector<int64_t>(size_t(n), 0));
    if (int64_t(v.size()) != n) c.fail(std::string(name) + " must have one entry per scan value");
    return v;
  };
  const auto in_dirs = attr_list("scan_input_directions", M), out_dirs = attr_list("scan_output_directions", K);
  const auto in_axes = attr_list("scan_input_axes", M), out_axes = attr_list("scan_output_axes", K);
  std::vector<Variable> in;
  for (size_t i = 0; i < c.num_inputs(); ++i) in.push_back(c.input(i));

  bool engine = M > 0;
  for (const auto& vi : body.input()) engine = engine && engine_step(vi);
  for (int64_t j = 0; j < M; ++j) engine = engine && in_axes[size_t(j)] == 0 && in_dirs[size_t(j)] == in_dirs[0];
  for (int64_t k = 0; k < K; ++k) engine = engine && out_axes[size_t(k)] == 0 && out_dirs[size_t(k)] == in_dirs[0];
  if (!engine) return std::nullopt;

  const bool reverse = in_dirs[0] == 1;
  auto step_dims = [](const Variable& v, size_t from) {
    const auto d = v.shape().dims();
    return std::vector<int64_t>(d.begin() + std::ptrdiff_t(from), d.end());
  };
  std::vector<Variable> bound;
  // [Sequence, batch, 1, ...] -> a sequence of [...] over the batch axis.
  std::vector<Variable> scanned;
  for (int64_t j = 0; j < M; ++j) {
    const Variable& x = in[size_t(N + j)];
    if (x.shape().rank() < 3) c.fail("scan input " + std::to_string(j) + " must be [Sequence, batch, 1, ...]");
    Variable s = b.op("ToSequence",
                      {b.op("ToBatchAxis", {b.op("TransposeAxes", {x}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}})})});
    scanned.push_back(b.reshape(s, step_dims(x, 3)));
  }
  const auto seq_axes = scanned[0].dynamic_axes();
  std::vector<Variable> holes;
  for (int64_t k = 0; k < N; ++k) {
    const Variable& init = in[size_t(k)];  // [batch, 1, ...]
    if (init.shape().rank() < 2) c.fail("state " + std::to_string(k) + " must be [batch, 1, ...]");
    const auto dims = step_dims(init, 2);
    Variable hole = Variable::placeholder(NDShape(dims), seq_axes, "");
    hole.impl()->dtype = init.dtype();
    holes.push_back(hole);
    Variable initial = b.reshape(b.op("ToBatchAxis", {init}), dims);
    bound.push_back(b.op(reverse ? "FutureValue" : "PastValue", {hole, initial}, {{"offset", int64_t(1)}}));
  }
  bound.insert(bound.end(), scanned.begin(), scanned.end());
  std::vector<Variable> outs = c.read_subgraph(body, bound);
  std::unordered_map<VariableImpl*, Variable> map;
  for (int64_t k = 0; k < N; ++k) map[holes[size_t(k)].impl().get()] = outs[size_t(k)];
  if (N > 0) Function::combine(std::vector<Variable>(outs.begin(), outs.begin() + N))->replace_placeholders(map);

  std::vector<Variable> result;
  for (int64_t k = 0; k < N; ++k) {  // the final states: the last step (the first, in reverse)
    const Variable& v = outs[size_t(k)];
    Variable one =
        b.op("SequenceSlice", {v}, {{"beginIndex", int64_t(reverse ? 0 : -1)}, {"endIndex", int64_t(reverse ? 1 : 0)}});
    Variable last = b.op("ReduceElements", {one},
                         {{"reductionOpName", std::string("Sum")},
                          {"axis", Axis::operand_sequence_axis()},
                          {"reductionKeepDimensions", false}});
    std::vector<int64_t> dims{1};
    for (int64_t d : v.shape().dims()) dims.push_back(d);
    result.push_back(b.op("UnpackBatchAxis", {b.reshape(last, dims)}));
  }
  for (int64_t k = 0; k < K; ++k) {  // [batch, Sequence, 1, ...] -> [Sequence, batch, 1, ...]
    const Variable& v = outs[size_t(N + k)];
    std::vector<int64_t> dims{1};
    for (int64_t d : v.shape().dims()) dims.push_back(d);
    Variable unpacked =
        b.op("UnpackBatchAxis", {b.op("UnpackSequence", {b.reshape(v, dims)}, {{"suppressMaskOutput", true}})});
    result.push_back(b.op("TransposeAxes", {unpacked}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}}));
  }
  return result;
}

void register_import_rnn() {
  register_onnx_import("LSTM", [](ImportContext& c) { return read_rnn_block(c, Cell::LSTM); });
  register_onnx_import("GRU", [](ImportContext& c) { return read_rnn_block(c, Cell::GRU); });
  register_onnx_import("RNN", [](ImportContext& c) { return read_rnn_block(c, Cell::RNN); });
}

}  // namespace cntk::onnx_io
