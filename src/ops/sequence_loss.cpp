// Op family: criteria that look across steps or samples.
//
// ForwardBackward / LabelsToGraph: Connectionist Temporal Classification as CNTK
// spells it: LabelsToGraph turns per-frame labels into the graph ForwardBackward
// scores (here the labels themselves: the graph of a label sequence is implicit),
// and ForwardBackward gives -log p(labels | features) summed over the sequences.
//
// Labels are one-hot rows aligned with the feature frames: a 2 marks the first
// frame of a token, a 1 its continuation, so the token sequence is the argmax of
// every frame holding a 2. Features are unnormalized scores; the op applies
// log-softmax itself, so its gradient is softmax(features) - posteriors.
//
// delayConstraint D >= 0 (CNTK's gammacalculation.h / CPUMatrix AssignCTCScore)
// limits how late an alignment may emit a token relative to the reference
// frames the labels mark: with f_k the frame of token k's 2 and f_{K+1} = T,
// the path may be on token k (k < K) up to frame f_{k+1} + D and on the blank
// before it up to f_{k+1} + D - 1; later frames get zero alpha and beta there.
// The last token and the blanks around it are not constrained. D = -1: none.
// (CNTK looks up the final blank's bound one entry past the end of its boundary
// list, reading whatever lies there; here that blank is unconstrained, as the
// end-of-sequence bound T it would naturally have leaves it.)
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/op.h"
#include "ops/sequence.h"

namespace cntk {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

// One sequence: T frames of C scores (row-major in `x`, frame stride `stride`).
struct CtcSequence {
  std::vector<int64_t> ext;         // labels with blanks between and around: blank, l1, blank, ..., blank
  std::vector<double> logp;         // [T, C] log-softmax of the scores
  std::vector<double> alpha, beta;  // [T, S] in log space; alpha includes frame t's emission, beta does not
  double log_likelihood = kNegInf;
};

// The tokens and the frames that mark them (the 2s).
void tokens_of(const double* labels, int64_t T, int64_t C, int64_t stride, std::vector<int64_t>& tokens,
               std::vector<int64_t>& frames) {
  for (int64_t t = 0; t < T; ++t) {
    const double* row = labels + t * stride;
    int64_t k = std::max_element(row, row + C) - row;
    if (row[k] >= 1.5) {
      tokens.push_back(k);
      frames.push_back(t);
    }
  }
}

// The last frame at which the alignment may sit on extended label s, or T - 1
// when s is free. Token k (s = 2k - 1, k = 1..K) and the blank before it
// (s = 2k - 2) are bounded by the next token's reference frame f_{k+1} (T for
// the last token), as CNTK bounds label s by the boundary two labels on.
std::vector<int64_t> ctc_last_frames(const std::vector<int64_t>& frames, int64_t T, int64_t delay) {
  const int64_t K = int64_t(frames.size()), S = 2 * K + 1;
  std::vector<int64_t> last(size_t(S), T - 1);
  if (delay < 0) return last;
  for (int64_t k = 1; k < K; ++k) {
    const int64_t next = frames[size_t(k)];  // f_{k+1}, 0-based index k
    last[size_t(2 * k - 1)] = std::min(T - 1, next + delay);
    last[size_t(2 * k - 2)] = std::min(T - 1, next + delay - 1);
  }
  return last;
}

void ctc_sequence(CtcSequence& q, const double* x, const double* labels, int64_t T, int64_t C, int64_t stride,
                  int64_t blank, int64_t delay, int64_t b) {
  std::vector<int64_t> tokens, frames;
  tokens_of(labels, T, C, stride, tokens, frames);
  q.ext.assign(1, blank);
  for (auto k : tokens) {
    if (k == blank)
      throw ValueError("ForwardBackward: sequence " + std::to_string(b) + " has the blank token " +
                       std::to_string(blank) + " as a label");
    q.ext.push_back(k);
    q.ext.push_back(blank);
  }
  int64_t S = int64_t(q.ext.size());
  q.logp.assign(size_t(T * C), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const double* r = x + t * stride;
    double m = *std::max_element(r, r + C), z = 0;
    for (int64_t c = 0; c < C; ++c) z += std::exp(r[c] - m);
    for (int64_t c = 0; c < C; ++c) q.logp[size_t(t * C + c)] = r[c] - m - std::log(z);
  }
  auto y = [&](int64_t t, int64_t s) { return q.logp[size_t(t * C + q.ext[size_t(s)])]; };
  auto skip_ok = [&](int64_t s) {
    return s >= 2 && q.ext[size_t(s)] != blank && q.ext[size_t(s)] != q.ext[size_t(s - 2)];
  };
  q.alpha.assign(size_t(T * S), kNegInf);
  q.beta.assign(size_t(T * S), kNegInf);
  if (T == 0) throw ValueError("ForwardBackward: sequence " + std::to_string(b) + " is empty");
  // The reference frames only bound positions before the last token, whose
  // limits are at least frame 1 (f_2 >= 1), so frame 0 is never cut.
  const std::vector<int64_t> last = ctc_last_frames(frames, T, delay);
  auto allowed = [&](int64_t t, int64_t s) { return t <= last[size_t(s)]; };
  q.alpha[0] = y(0, 0);
  if (S > 1) q.alpha[1] = y(0, 1);
  for (int64_t t = 1; t < T; ++t)
    for (int64_t s = 0; s < S; ++s) {
      if (!allowed(t, s)) continue;
      double a = q.alpha[size_t((t - 1) * S + s)];
      if (s >= 1) a = log_add(a, q.alpha[size_t((t - 1) * S + s - 1)]);
      if (skip_ok(s)) a = log_add(a, q.alpha[size_t((t - 1) * S + s - 2)]);
      q.alpha[size_t(t * S + s)] = a == kNegInf ? kNegInf : a + y(t, s);
    }
  q.beta[size_t((T - 1) * S + S - 1)] = 0;
  if (S > 1) q.beta[size_t((T - 1) * S + S - 2)] = 0;
  for (int64_t t = T - 2; t >= 0; --t)
    for (int64_t s = 0; s < S; ++s) {
      if (!allowed(t, s)) continue;
      double v = q.beta[size_t((t + 1) * S + s)] + y(t + 1, s);
      if (s + 1 < S) v = log_add(v, q.beta[size_t((t + 1) * S + s + 1)] + y(t + 1, s + 1));
      if (s + 2 < S && skip_ok(s + 2)) v = log_add(v, q.beta[size_t((t + 1) * S + s + 2)] + y(t + 1, s + 2));
      q.beta[size_t(t * S + s)] = v;
    }
  q.log_likelihood = q.alpha[size_t((T - 1) * S + S - 1)];
  if (S > 1) q.log_likelihood = log_add(q.log_likelihood, q.alpha[size_t((T - 1) * S + S - 2)]);
  if (q.log_likelihood == kNegInf)
    throw ValueError("ForwardBackward: sequence " + std::to_string(b) + " has " + std::to_string(tokens.size()) +
                     " labels, which cannot be aligned to its " + std::to_string(T) + " frames" +
                     (delay >= 0 ? " within delayConstraint " + std::to_string(delay) : std::string()));
}

struct CtcBatch {
  std::vector<CtcSequence> seqs;
  double loss = 0;
};

CtcBatch run_ctc(const ComputeContext& ctx) {
  const int64_t delay = ctx.attr_int("delayConstraint");
  if (delay < -1)
    throw ValueError("ForwardBackward: delayConstraint must be -1 (none) or >= 0, not " + std::to_string(delay));
  NDArrayView g = ctx.inputs[0].to_dense().cast(DataType::Double).contiguous();
  NDArrayView x = ctx.inputs[1].to_dense().cast(DataType::Double).contiguous();
  if (g.shape() != x.shape())
    throw ValueError("ForwardBackward: the label graph " + g.shape().str() + " and the features " + x.shape().str() +
                     " differ in shape; labels must have one row per feature frame");
  int64_t T = x.shape()[0], B = x.shape()[1], C = x.shape()[x.rank() - 1];
  int64_t blank = ctx.attr_int("blankTokenId");
  std::vector<int64_t> lens = ctx.in_lengths[1];
  if (lens.empty()) lens.assign(size_t(B), T);
  CtcBatch out;
  out.seqs.resize(size_t(B));
  for (int64_t b = 0; b < B; ++b) {
    ctc_sequence(out.seqs[size_t(b)], x.data<double>() + b * C, g.data<double>() + b * C, lens[size_t(b)], C, B * C,
                 blank, delay, b);
    out.loss -= out.seqs[size_t(b)].log_likelihood;
  }
  return out;
}

void register_forward_backward() {
  OpDef d;
  d.name = "ForwardBackward";
  d.op_type = 66;
  d.inputs = {{"graph", Gradient::Zero}, {"features"}};
  d.attrs = {{"blankTokenId", AttrType::Int, 0, AxisOrder::None, "BlankTokenId"},
             {"delayConstraint", AttrType::Int, -1, AxisOrder::None, "DelayConstraint"}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    if (!sequence_axis_of(ctx.input(0)) || !sequence_axis_of(ctx.input(1)))
      ctx.fail("the label graph and the features must be sequences");
    if (ctx.input(0).dynamic_axes() != ctx.input(1).dynamic_axes())
      ctx.fail("the label graph and the features must have the same dynamic axes");
    if (ctx.shape(1).rank() != 1) ctx.fail("the features must be one vector of class scores per frame");
    if (ctx.shape(0) != ctx.shape(1)) ctx.fail("the label graph and the features must have the same shape");
    int64_t blank = ctx.attr_int("blankTokenId");
    if (ctx.shape(1)[0] >= 0 && (blank < 0 || blank >= ctx.shape(1)[0]))
      ctx.fail("blankTokenId " + std::to_string(blank) + " is not one of the " + std::to_string(ctx.shape(1)[0]) +
               " classes");
    const int64_t delay = ctx.attr_int("delayConstraint");
    if (delay < -1) ctx.fail("delayConstraint must be -1 (none) or >= 0, not " + std::to_string(delay));
    return std::vector<OutputInfo>{{NDShape{}, ctx.dtype(1), {}}};
  };
  d.forward = [](ComputeContext& ctx) {
    CtcBatch r = run_ctc(ctx);
    return std::vector<NDArrayView>{NDArrayView::scalar(DataType::Double, r.loss).cast(ctx.inputs[1].dtype())};
  };
  d.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    if (i == 0) return {};  // the labels get no gradient
    CtcBatch r = run_ctc(ctx);
    const NDArrayView& x = ctx.inputs[1];
    int64_t T = x.shape()[0], B = x.shape()[1], C = x.shape()[x.rank() - 1];
    double go = ctx.grad_outputs[0].item();
    NDArrayView grad = NDArrayView::zeros(DataType::Double, x.shape());
    double* pg = grad.data<double>();
    for (int64_t b = 0; b < B; ++b) {
      const CtcSequence& q = r.seqs[size_t(b)];
      int64_t S = int64_t(q.ext.size()), L = int64_t(q.logp.size()) / std::max<int64_t>(C, 1);
      for (int64_t t = 0; t < L && t < T; ++t) {
        double* row = pg + (t * B + b) * C;
        for (int64_t c = 0; c < C; ++c) row[c] = std::exp(q.logp[size_t(t * C + c)]);
        for (int64_t s = 0; s < S; ++s)
          row[q.ext[size_t(s)]] -= std::exp(q.alpha[size_t(t * S + s)] + q.beta[size_t(t * S + s)] - q.log_likelihood);
        for (int64_t c = 0; c < C; ++c) row[c] *= go;
      }
    }
    return grad.cast(x.dtype());
  };
  register_op(std::move(d));

  OpDef l;
  l.name = "LabelsToGraph";
  l.op_type = 63;
  l.inputs = {{"labels", Gradient::Zero}};
  l.classes = kSameShape;
  l.infer = infer_same_shape;
  l.forward = [](ComputeContext& ctx) { return std::vector<NDArrayView>{ctx.inputs[0]}; };
  l.gradient = Gradient::Zero;  // labels
  register_op(std::move(l));
}

// --------------------------------------------- CosDistanceWithNegativeSamples
//
// For sample j: the cosine similarity of x_j and y_j, then of x_j and the samples
// shift, shift + 1, ... after j (cyclically) as negatives: output (1 + n,) per sample.
// Samples are the valid entries of the runtime layout in time-major order, which is
// CNTK's column order for a batch or for sequences of equal length.

struct CosineSamples {
  std::vector<int64_t> pos;  // runtime offsets (in samples) of the valid entries
  int64_t D = 0;
};

CosineSamples cosine_samples(const ComputeContext& ctx) {
  const NDArrayView& x = ctx.inputs[0];
  CosineSamples c;
  int nd = ctx.in_dyn[0];
  c.D = 1;
  for (size_t i = size_t(nd); i < x.rank(); ++i) c.D *= x.shape()[i];
  if (nd == 2) {
    int64_t T = x.shape()[0], B = x.shape()[1];
    const auto& lens = ctx.in_lengths[0];
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        if (lens.empty() || t < lens[size_t(b)]) c.pos.push_back(t * B + b);
  } else {
    int64_t n = nd == 1 ? x.shape()[0] : 1;
    for (int64_t j = 0; j < n; ++j) c.pos.push_back(j);
  }
  return c;
}

void register_cosine_negative() {
  OpDef d;
  d.name = "CosDistanceWithNegativeSamples";
  d.op_type = 67;
  d.inputs = {{"x"}, {"y"}};
  d.attrs = {{"shiftWindow", AttrType::Int, 1}, {"numberOfNegativeSamples", AttrType::Int, 1}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    if (ctx.shape(0) != ctx.shape(1)) ctx.fail("x and y must have the same shape");
    if (ctx.input(0).dynamic_axes() != ctx.input(1).dynamic_axes()) ctx.fail("x and y must have the same dynamic axes");
    int64_t shift = ctx.attr_int("shiftWindow"), n = ctx.attr_int("numberOfNegativeSamples");
    if (shift < 1) ctx.fail("shift must be a positive integer, got " + std::to_string(shift));
    if (n < 1) ctx.fail("num_negative_samples must be a positive integer, got " + std::to_string(n));
    return std::vector<OutputInfo>{{NDShape{n + 1}, ctx.common_dtype(), ctx.input(0).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    CosineSamples c = cosine_samples(ctx);
    int64_t shift = ctx.attr_int("shiftWindow"), n = ctx.attr_int("numberOfNegativeSamples");
    NDArrayView x = ctx.inputs[0].to_dense().cast(DataType::Double).contiguous();
    NDArrayView y = ctx.inputs[1].to_dense().cast(DataType::Double).contiguous();
    NDShape dyn = x.shape().sub(0, size_t(ctx.in_dyn[0]));
    NDArrayView out = NDArrayView::zeros(DataType::Double, dyn.concat(NDShape{n + 1}));
    const double *px = x.data<double>(), *py = y.data<double>();
    double* po = out.data<double>();
    int64_t N = int64_t(c.pos.size()), D = c.D;
    auto norm = [D](const double* v) {
      double s = 0;
      for (int64_t k = 0; k < D; ++k) s += v[k] * v[k];
      return std::sqrt(s);
    };
    for (int64_t j = 0; j < N; ++j) {
      const double* a = px + c.pos[size_t(j)] * D;
      double na = norm(a);
      for (int64_t k = 0; k <= n; ++k) {
        int64_t m = k == 0 ? j : (j + shift + k - 1) % N;
        const double* b = py + c.pos[size_t(m)] * D;
        double nb = norm(b), dot = 0;
        for (int64_t e = 0; e < D; ++e) dot += a[e] * b[e];
        po[c.pos[size_t(j)] * (n + 1) + k] = na > 0 && nb > 0 ? dot / (na * nb) : 0.0;
      }
    }
    return std::vector<NDArrayView>{out.cast(ctx.inputs[0].dtype())};
  };
  d.backward = [](ComputeContext& ctx, size_t which) -> NDArrayView {
    CosineSamples c = cosine_samples(ctx);
    int64_t shift = ctx.attr_int("shiftWindow"), n = ctx.attr_int("numberOfNegativeSamples");
    NDArrayView x = ctx.inputs[0].to_dense().cast(DataType::Double).contiguous();
    NDArrayView y = ctx.inputs[1].to_dense().cast(DataType::Double).contiguous();
    NDArrayView g = ctx.grad_outputs[0].cast(DataType::Double).contiguous();
    NDArrayView grad = NDArrayView::zeros(DataType::Double, ctx.inputs[which].shape());
    const double *px = x.data<double>(), *py = y.data<double>(), *pg = g.data<double>();
    double* pd = grad.data<double>();
    int64_t N = int64_t(c.pos.size()), D = c.D;
    for (int64_t j = 0; j < N; ++j) {
      const double* a = px + c.pos[size_t(j)] * D;
      double na2 = 0;
      for (int64_t e = 0; e < D; ++e) na2 += a[e] * a[e];
      for (int64_t k = 0; k <= n; ++k) {
        int64_t m = k == 0 ? j : (j + shift + k - 1) % N;
        const double* b = py + c.pos[size_t(m)] * D;
        double nb2 = 0, dot = 0;
        for (int64_t e = 0; e < D; ++e) {
          nb2 += b[e] * b[e];
          dot += a[e] * b[e];
        }
        if (na2 == 0 || nb2 == 0) continue;
        double inv = 1.0 / std::sqrt(na2 * nb2), cosv = dot * inv, gk = pg[c.pos[size_t(j)] * (n + 1) + k];
        if (which == 0) {
          double* out = pd + c.pos[size_t(j)] * D;
          for (int64_t e = 0; e < D; ++e) out[e] += gk * (b[e] * inv - cosv * a[e] / na2);
        } else {
          double* out = pd + c.pos[size_t(m)] * D;
          for (int64_t e = 0; e < D; ++e) out[e] += gk * (a[e] * inv - cosv * b[e] / nb2);
        }
      }
    }
    return grad.cast(ctx.inputs[which].dtype());
  };
  register_op(std::move(d));
}

// -------------------------------------------------------- EditDistanceError
//
// Per sequence, the argmax labels of both inputs (repeats merged when squashInputs,
// tokensToIgnore dropped) are aligned by the penalty-weighted edit distance; the
// insertions, deletions and substitutions of that alignment are counted. The value
// is errors * frames / labels of the second input, so that averaging it over the
// frames, as the trainer does for metrics, gives the error rate per label of the
// second input (the reference): CNTK's node divides by the second input's labels in
// its V2 library, which CNTK's tests check. Ties prefer substitution, then deletion,
// as CNTK does.

std::vector<int64_t> label_sequence(const double* x, int64_t L, int64_t C, int64_t stride, bool squash,
                                    const std::vector<int64_t>& ignore) {
  std::vector<int64_t> out;
  auto ignored = [&](int64_t k) { return std::find(ignore.begin(), ignore.end(), k) != ignore.end(); };
  int64_t last = -1;
  for (int64_t t = 0; t < L; ++t) {
    const double* row = x + t * stride;
    int64_t k = std::max_element(row, row + C) - row;
    if (t > 0 && squash && k == last) continue;
    last = k;
    if (!ignored(k)) out.push_back(k);
  }
  return out;
}

// The number of edits on the cheapest alignment of a to b.
double count_edits(const std::vector<int64_t>& a, const std::vector<int64_t>& b, double sub_pen, double del_pen,
                   double ins_pen) {
  size_t n = a.size(), m = b.size();
  std::vector<double> cost((n + 1) * (m + 1)), edits((n + 1) * (m + 1));
  auto at = [m](size_t i, size_t j) { return i * (m + 1) + j; };
  for (size_t i = 0; i <= n; ++i) cost[at(i, 0)] = double(i) * del_pen, edits[at(i, 0)] = double(i);
  for (size_t j = 0; j <= m; ++j) cost[at(0, j)] = double(j) * ins_pen, edits[at(0, j)] = double(j);
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      if (a[i - 1] == b[j - 1]) {
        cost[at(i, j)] = cost[at(i - 1, j - 1)];
        edits[at(i, j)] = edits[at(i - 1, j - 1)];
        continue;
      }
      double del = cost[at(i - 1, j)] + del_pen, ins = cost[at(i, j - 1)] + ins_pen,
             sub = cost[at(i - 1, j - 1)] + sub_pen;
      if (sub <= del && sub <= ins) {
        cost[at(i, j)] = sub;
        edits[at(i, j)] = edits[at(i - 1, j - 1)] + 1;
      } else if (del < ins) {
        cost[at(i, j)] = del;
        edits[at(i, j)] = edits[at(i - 1, j)] + 1;
      } else {
        cost[at(i, j)] = ins;
        edits[at(i, j)] = edits[at(i, j - 1)] + 1;
      }
    }
  return edits[at(n, m)];
}

void register_edit_distance() {
  OpDef d;
  d.name = "EditDistanceError";
  d.op_type = 61;
  d.inputs = {{"prediction", Gradient::None}, {"labels", Gradient::None}};
  d.attrs = {{"subPen", AttrType::Double, 1.0, AxisOrder::None, "SubstitutionPenalty"},
             {"delPen", AttrType::Double, 1.0, AxisOrder::None, "DeletionPenalty"},
             {"insPen", AttrType::Double, 1.0, AxisOrder::None, "InsertionPenalty"},
             {"squashInputs", AttrType::Bool, false, AxisOrder::None, "SquashInputs"},
             {"tokensToIgnore", AttrType::IntList, {}, AxisOrder::None, "TokensToIgnore"}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    if (ctx.shape(0) != ctx.shape(1)) ctx.fail("both inputs must have the same shape");
    if (ctx.input(0).dynamic_axes() != ctx.input(1).dynamic_axes())
      ctx.fail("both inputs must have the same dynamic axes");
    if (ctx.input(0).dynamic_axes().empty()) ctx.fail("the inputs must have a batch or sequence axis");
    return std::vector<OutputInfo>{{NDShape{}, ctx.common_dtype(), {}}};
  };
  d.forward = [](ComputeContext& ctx) {
    NDArrayView a = ctx.inputs[0].to_dense().cast(DataType::Double).contiguous();
    NDArrayView b = ctx.inputs[1].to_dense().cast(DataType::Double).contiguous();
    if (a.shape() != b.shape())
      throw ValueError("EditDistanceError: the inputs have different layouts " + a.shape().str() + " and " +
                       b.shape().str());
    const Dictionary& at = ctx.attr();
    double sub = ctx.attr_double("subPen"), del = ctx.attr_double("delPen"), ins = ctx.attr_double("insPen");
    bool squash = ctx.attr_bool("squashInputs");
    std::vector<int64_t> ignore;
    if (at.count("tokensToIgnore")) ignore = at.at("tokensToIgnore").as_int_list();
    int nd = ctx.in_dyn[0];
    int64_t T = nd == 2 ? a.shape()[0] : 1, B = a.shape()[size_t(nd - 1)];
    int64_t C = a.numel() / std::max<int64_t>(T * B, 1);
    std::vector<int64_t> lens = nd == 2 ? ctx.in_lengths[0] : std::vector<int64_t>();
    if (lens.empty()) lens.assign(size_t(B), T);
    double errors = 0, frames = 0, labels = 0;
    for (int64_t s = 0; s < B; ++s) {
      if (lens[size_t(s)] == 0) continue;
      auto la = label_sequence(a.data<double>() + s * C, lens[size_t(s)], C, B * C, squash, ignore);
      auto lb = label_sequence(b.data<double>() + s * C, lens[size_t(s)], C, B * C, squash, ignore);
      errors += count_edits(la, lb, sub, del, ins);
      frames += double(lens[size_t(s)]);
      labels += double(lb.size());
    }
    double value = errors == 0 ? 0.0 : errors * frames / std::max(labels, 1.0);
    return std::vector<NDArrayView>{NDArrayView::scalar(DataType::Double, value).cast(ctx.inputs[0].dtype())};
  };
  d.gradient = Gradient::None;  // an evaluation criterion, as in CNTK
  register_op(std::move(d));
}

}  // namespace

void register_sequence_criterion_ops() {
  register_forward_backward();
  register_cosine_negative();
  register_edit_distance();
}

}  // namespace cntk
