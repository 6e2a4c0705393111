// Op family: lattice-based sequence training, CNTK's LatticeSequenceWithSoftmax
// (SequenceWithSoftmaxNode fed by the lattice stream of LatticeDeserializer).
//
// Inputs: label (one-hot senone per frame, a sequence), prediction (unnormalized senone
// scores, same layout), loglikelihood (the scaled log-likelihoods the lattice is scored with,
// same layout) and lattice (per utterance, its serialized lattice as float32 samples of shape
// (1,) on a sequence axis of its own; see lattice_format.h). The i-th lattice sequence of the
// minibatch belongs to the i-th label sequence.
//
// Per utterance, as CNTK does (latticeforwardbackward.cpp, latticefunctionskernels.h):
// 1. Each edge's units (mapped to HMMs through the symbol list) are Viterbi-aligned to the
//    loglikelihood frames of the edge: a hard senone per frame and the edge's acoustic score.
// 2. Edge score = (lm * lmf + wp + ac) / amf - bMMI * (frames where the edge's senone is the
//    label's), with lm taken as 0 when below -200 (CNTK's start-of-sentence workaround). A
//    log-domain forward-backward over the edges gives the edge posteriors and log Z.
// 3. MMI: gamma(s, t) = sum of the posteriors of the edges aligned to senone s at frame t.
//    sMBR: c(e) = expected correct frames of the paths through e, cbar = over all paths;
//    gamma(s, t) = sum over edges aligned to s at t of pp(e) * (c(e) - cbar) / amf.
// 4. Value: sum over utterances of sum_t loglikelihood(label_t, t) / amf - log Z (MMI), or
//    - cbar in place of log Z (sMBR); one scalar for the minibatch.
// Gradient to prediction: g * ((1 - h) * softmax(prediction) + h * gamma - label), h =
// hSmoothingWeight, then frames whose gamma at the label's senone is below frameDropThresh are
// zeroed. This is the GPU kernel's sign (GPUMatrixCUDAKernels.cuh _AssignSequenceError and
// _DropFrame), the one CNTK's tests run: it is the gradient of -value when loglikelihood is
// log_softmax(prediction), h = 1 and amf = 1. CNTK's CPU code has the opposite sign and zeroes
// every frame in DropFrame; we follow the GPU. Silence frames are counted as correct like any
// other (the GPU's silence exclusion is tied to one 9304-senone model). No gradient flows to
// loglikelihood (as in CNTK), label or lattice.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "ops/lattice_format.h"
#include "ops/lattice_model.h"
#include "ops/op.h"
#include "ops/sequence.h"

namespace cntk {
namespace {

using lattice::kLogZero;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr const char* kOp = "LatticeSequenceWithSoftmax";

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

struct Settings {
  double h, drop, amf, lmf, wp, bmmi;
  bool smbr;
};

Settings settings_of(const Dictionary& a) {
  auto num = [&](const char* k) { return op_attr_double(kOp, a, k); };
  return {num("HSmoothingWeight"),
          num("FrameDropThresh"),
          num("SeqGammarAMF"),
          num("SeqGammarLMF"),
          num("SeqGammarWordPen"),
          num("SeqGammarBMMIFactor"),
          op_attr_bool(kOp, a, "SeqGammarUsesMBR")};
}

std::shared_ptr<const lattice::SequenceTrainingModel> model_of(const Dictionary& a) {
  auto path = [&](const char* k) { return op_attr_string(kOp, a, k); };
  return lattice::sequence_training_model(path("SymListPath"), path("PhonePath"), path("StateListPath"),
                                          path("TransProbPath"), path("LatticeConfigPath"));
}

// Viterbi alignment of an edge's units to frames [0, T) of `ll` (frame t's senone s at ll[t * C + s]).
// Returns the path score (kNegInf when no path exists) and the senone of each frame in `align`.
double align_edge(const std::vector<const lattice::Hmm*>& units, const std::vector<uint32_t>& frames,
                  const lattice::SenoneHmmSet& set, const double* ll, int64_t C, std::vector<uint32_t>& align) {
  struct Cell {
    double score;
    int back;  // previous global state index, -1 = start, -2 = none
  };
  size_t total_states = 0, T = 0;
  for (size_t k = 0; k < units.size(); ++k) total_states += units[k]->num_states, T += frames[k];
  std::vector<Cell> cells(total_states * T, Cell{kNegInf, -2});
  auto at = [&](size_t j, size_t t) -> Cell& { return cells[t * total_states + j]; };
  double fw = 0.0;
  int fw_back = -1;
  size_t ts = 0, js = 0;
  for (size_t k = 0; k < units.size(); ++k) {
    const lattice::Hmm& h = *units[k];
    const lattice::TransitionMatrix& tp = set.transitions[h.transition];
    size_t n = h.num_states, te = ts + frames[k];
    for (size_t t = ts; t < te; ++t)
      for (size_t to = 0; to < n; ++to) {
        Cell c{kNegInf, -2};
        if (t == ts) {
          c = {fw + tp(-1, to), fw_back};
        } else {
          for (size_t from = 0; from < n; ++from) {
            double s = at(js + from, t - 1).score + tp(int(from), to);
            if (s > c.score) c = {s, int(js + from)};
          }
        }
        c.score += ll[int64_t(t) * C + h.senones[to]];
        at(js + to, t) = c;
      }
    double exit = kNegInf;
    int exit_back = -2;
    if (te == ts) {
      exit = fw + tp(-1, n), exit_back = fw_back;
    } else {
      for (size_t from = 0; from < n; ++from) {
        double s = at(js + from, te - 1).score + tp(int(from), n);
        if (s > exit) exit = s, exit_back = int(js + from);
      }
    }
    fw = exit, fw_back = exit_back;
    ts = te, js += n;
  }
  align.assign(T, 0);
  if (!(fw > kLogZero / 2) || fw_back == -2) return kNegInf;
  // trace back, unit by unit from the end
  int j = fw_back;
  size_t te = T, je = total_states;
  for (size_t k = units.size(); k-- > 0;) {
    size_t n = units[k]->num_states, t0 = te - frames[k], j0 = je - n;
    for (size_t t = te; t-- > t0;) {
      if (j < int(j0) || j >= int(je)) return kNegInf;  // cannot happen for a finite score
      align[t] = units[k]->senones[size_t(j) - j0];
      j = at(size_t(j), t).back;
    }
    te = t0, je = j0;
  }
  return fw;
}

struct Utterance {
  double value = 0;
  std::vector<double> gamma;  // [T, C]
};

Utterance score_utterance(const lattice::Lattice& lat, const lattice::SequenceTrainingModel& model, const double* ll,
                          const std::vector<int64_t>& uids, int64_t C, const Settings& st, const std::string& which) {
  const int64_t T = int64_t(uids.size());
  if (int64_t(lat.num_frames) != T)
    throw ValueError(std::string(kOp) + ": " + which + " has " + std::to_string(T) +
                     " label frames but its lattice has " + std::to_string(lat.num_frames));
  const auto& set = model.hmms;
  size_t nE = lat.edges.size(), nN = lat.node_times.size();
  std::vector<double> edge_score(nE), correct(nE, 0.0);
  std::vector<std::vector<uint32_t>> align(nE);
  for (size_t e = 0; e < nE; ++e) {
    const auto& edge = lat.edges[e];
    size_t t0 = lat.node_times[edge.S], t1 = lat.node_times[edge.E];
    double ac = 0.0;
    if (t1 > t0) {
      std::vector<const lattice::Hmm*> units;
      std::vector<uint32_t> frames;
      for (const auto& u : edge.units) {
        if (u.unit >= model.symbol_map.size())
          throw ValueError(std::string(kOp) + ": " + which + ": lattice edge " + std::to_string(e) + " has unit " +
                           std::to_string(u.unit) + " but the symbol list has " +
                           std::to_string(model.symbol_map.size()) + " entries (with the implied /sp/)");
        const lattice::Hmm& h = set.hmms[model.symbol_map[u.unit]];
        for (size_t s = 0; s < h.num_states; ++s)
          if (int64_t(h.senones[s]) >= C)
            throw ValueError(std::string(kOp) + ": unit '" + h.name + "' uses senone " + std::to_string(h.senones[s]) +
                             " but the prediction has " + std::to_string(C) + " classes");
        units.push_back(&h);
        frames.push_back(u.frames);
      }
      ac = align_edge(units, frames, set, ll + int64_t(t0) * C, C, align[e]);
      for (size_t t = t0; t < t1; ++t) correct[e] += int64_t(align[e][t - t0]) == uids[t] ? 1.0 : 0.0;
    }
    double lm = edge.lm < -200.0f ? 0.0 : double(edge.lm);
    edge_score[e] = ac == kNegInf ? kNegInf : (lm * st.lmf + st.wp + ac) / st.amf;
    if (st.bmmi != 0.0 && edge_score[e] != kNegInf) edge_score[e] -= st.bmmi * correct[e];
  }
  std::vector<double> alpha(nN, kNegInf), beta(nN, kNegInf);
  alpha[0] = 0.0;
  for (size_t e = 0; e < nE; ++e)
    alpha[lat.edges[e].E] = log_add(alpha[lat.edges[e].E], alpha[lat.edges[e].S] + edge_score[e]);
  beta[nN - 1] = 0.0;
  for (size_t e = nE; e-- > 0;)
    beta[lat.edges[e].S] = log_add(beta[lat.edges[e].S], beta[lat.edges[e].E] + edge_score[e]);
  double logZ = alpha[nN - 1];
  if (logZ == kNegInf)
    throw ValueError(std::string(kOp) + ": " + which + ": no path through the lattice has a finite score");
  std::vector<double> pp(nE);
  for (size_t e = 0; e < nE; ++e) {
    const auto& edge = lat.edges[e];
    pp[e] = std::min(1.0, std::exp(alpha[edge.S] + edge_score[e] + beta[edge.E] - logZ));
  }
  Utterance u;
  u.gamma.assign(size_t(T * C), 0.0);
  double numer = 0.0;
  for (int64_t t = 0; t < T; ++t) numer += ll[t * C + uids[size_t(t)]] / st.amf;
  if (!st.smbr) {
    for (size_t e = 0; e < nE; ++e) {
      size_t t0 = lat.node_times[lat.edges[e].S];
      for (size_t i = 0; i < align[e].size(); ++i) u.gamma[(t0 + i) * size_t(C) + align[e][i]] += pp[e];
    }
    u.value = numer - logZ;
  } else {
    // expected correct frames: acc_alpha[i] over paths from the start to node i, acc_beta to the end
    std::vector<double> acc_alpha(nN, 0.0), acc_beta(nN, 0.0);
    for (size_t e = 0; e < nE; ++e) {
      const auto& edge = lat.edges[e];
      if (edge_score[e] == kNegInf) continue;
      acc_alpha[edge.E] += (acc_alpha[edge.S] + correct[e]) * std::exp(alpha[edge.S] + edge_score[e] - alpha[edge.E]);
    }
    for (size_t e = nE; e-- > 0;) {
      const auto& edge = lat.edges[e];
      if (edge_score[e] == kNegInf || beta[edge.S] == kNegInf) continue;
      acc_beta[edge.S] += (acc_beta[edge.E] + correct[e]) * std::exp(beta[edge.E] + edge_score[e] - beta[edge.S]);
    }
    double cbar = acc_alpha[nN - 1];
    for (size_t e = 0; e < nE; ++e) {
      const auto& edge = lat.edges[e];
      double c = acc_alpha[edge.S] + acc_beta[edge.E] + correct[e];
      size_t t0 = lat.node_times[edge.S];
      for (size_t i = 0; i < align[e].size(); ++i)
        u.gamma[(t0 + i) * size_t(C) + align[e][i]] += pp[e] * (c - cbar) / st.amf;
    }
    u.value = numer - cbar;
  }
  return u;
}

struct Batch {
  double value = 0;
  NDArrayView gamma;  // [T, B, C] double, zero at padding
  NDArrayView label;  // [T, B, C] double
  std::vector<int64_t> lengths;
};

std::vector<uint8_t> lattice_bytes(const ComputeContext& ctx, int64_t b, int64_t B) {
  const NDArrayView& x = ctx.inputs[3];
  if (x.dtype() != DataType::Float)
    throw TypeError(std::string(kOp) + ": the lattice input must hold float32 samples (the lattice bytes)");
  NDArrayView c = x.to_dense().contiguous();
  int64_t T = c.shape()[0];
  int64_t n = ctx.in_lengths[3].empty() ? T : ctx.in_lengths[3][size_t(b)];
  std::vector<uint8_t> bytes(size_t(n) * 4);
  const float* p = c.data<float>();
  for (int64_t t = 0; t < n; ++t) std::memcpy(bytes.data() + t * 4, p + t * B + b, 4);
  return bytes;
}

Batch run(const ComputeContext& ctx) {
  Settings st = settings_of(ctx.attr());
  auto model = model_of(ctx.attr());
  NDArrayView label = ctx.inputs[0].to_dense().cast(DataType::Double).contiguous();
  NDArrayView ll = ctx.inputs[2].to_dense().cast(DataType::Double).contiguous();
  int64_t T = label.shape()[0], B = label.shape()[1], C = label.shape()[label.rank() - 1];
  if (ctx.inputs[3].shape()[1] != B)
    throw ValueError(std::string(kOp) + ": the minibatch has " + std::to_string(B) + " label sequences but " +
                     std::to_string(ctx.inputs[3].shape()[1]) + " lattices");
  Batch out;
  out.lengths = ctx.in_lengths[0];
  if (out.lengths.empty()) out.lengths.assign(size_t(B), T);
  out.gamma = NDArrayView::zeros(DataType::Double, label.shape());
  out.label = label;
  const double *pl = label.data<double>(), *pll = ll.data<double>();
  double* pg = out.gamma.data<double>();
  for (int64_t b = 0; b < B; ++b) {
    int64_t L = out.lengths[size_t(b)];
    std::string which = "sequence " + std::to_string(b);
    std::vector<uint8_t> bytes = lattice_bytes(ctx, b, B);
    lattice::Lattice lat =
        lattice::decode_lattice(bytes.data(), bytes.size(), std::string(kOp) + ": the lattice of " + which);
    std::vector<int64_t> uids(static_cast<size_t>(L), 0);
    std::vector<double> frames(size_t(L * C));
    for (int64_t t = 0; t < L; ++t) {
      const double* row = pl + (t * B + b) * C;
      uids[size_t(t)] = std::max_element(row, row + C) - row;
      std::copy(pll + (t * B + b) * C, pll + (t * B + b + 1) * C, frames.begin() + t * C);
    }
    Utterance u = score_utterance(lat, *model, frames.data(), uids, C, st, which);
    out.value += u.value;
    for (int64_t t = 0; t < L; ++t)
      std::copy(u.gamma.begin() + t * C, u.gamma.begin() + (t + 1) * C, pg + (t * B + b) * C);
  }
  return out;
}

void check_attributes(const InferContext& ctx) {
  const Dictionary& a = ctx.attrs();
  for (const char* k : {"SymListPath", "PhonePath", "StateListPath", "TransProbPath"})
    if (ctx.attr_string(k).empty())
      ctx.fail("symListPath, phonePath, stateListPath and transProbPath must all be given (" + std::string(k) +
               " is empty)");
  if (ctx.attr_bool("DoReferenceAlign"))
    throw NotImplementedError(std::string(kOp) +
                              ": doReferenceAlign (sequence training against a reference alignment) "
                              "is not supported, as in CNTK 2.7");
  Settings st = settings_of(a);
  if (!(st.amf > 0)) ctx.fail("seqGammarAMF must be positive, got " + std::to_string(st.amf));
  if (!std::isfinite(st.lmf) || !std::isfinite(st.wp) || !std::isfinite(st.bmmi) || !std::isfinite(st.h) ||
      !std::isfinite(st.drop))
    ctx.fail(
        "hSmoothingWeight, frameDropThresh, seqGammarLMF, seqGammarWordPen and seqGammarBMMIFactor "
        "must be finite");
}

void register_lattice_sequence_with_softmax() {
  OpDef d;
  d.name = kOp;
  d.op_type = 90;
  d.inputs = {
      {"labels", Gradient::Zero}, {"prediction"}, {"loglikelihood", Gradient::Zero}, {"lattice", Gradient::None}};
  for (const char* k : {"SymListPath", "PhonePath", "StateListPath", "TransProbPath", "LatticeConfigPath"})
    d.attrs.push_back({k, AttrType::String, ""});
  d.attrs.insert(d.attrs.end(), {{"HSmoothingWeight", AttrType::Double, 0.95},
                                 {"FrameDropThresh", AttrType::Double, 1e-10},
                                 {"SeqGammarAMF", AttrType::Double, 14.0},
                                 {"SeqGammarLMF", AttrType::Double, 14.0},
                                 {"SeqGammarWordPen", AttrType::Double, 0.0},
                                 {"SeqGammarBMMIFactor", AttrType::Double, 0.0},
                                 {"SeqGammarUsesMBR", AttrType::Bool, false},
                                 {"DoReferenceAlign", AttrType::Bool, false}});
  d.own_input_types = true;  // the lattice's float32 samples are bytes
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(4);
    for (size_t i = 0; i < 4; ++i)
      if (!sequence_axis_of(ctx.input(i)))
        ctx.fail("label, prediction, loglikelihood and lattice must all be sequences");
    if (ctx.input(0).dynamic_axes() != ctx.input(1).dynamic_axes() ||
        ctx.input(0).dynamic_axes() != ctx.input(2).dynamic_axes())
      ctx.fail("label, prediction and loglikelihood must have the same dynamic axes");
    if (ctx.shape(1).rank() != 1 || ctx.shape(0) != ctx.shape(1) || ctx.shape(2) != ctx.shape(1))
      ctx.fail("label, prediction and loglikelihood must be vectors of the same dimension (one entry per senone)");
    if (ctx.shape(3) != NDShape{1})
      ctx.fail("the lattice must be a sequence of shape (1,) (its bytes as float32 samples)");
    if (ctx.dtype(3) != DataType::Float) ctx.fail_type("the lattice must be float32 (it carries the lattice's bytes)");
    check_attributes(ctx);
    auto model = model_of(ctx.attrs());
    int64_t C = ctx.shape(1)[0];
    if (C >= 0 && int64_t(model->hmms.senone_names.size()) > C)
      ctx.fail("the state list has " + std::to_string(model->hmms.senone_names.size()) +
               " senones but the prediction has " + std::to_string(C) + " classes");
    DataType t = ctx.dtype(1);
    if (ctx.dtype(0) != t || ctx.dtype(2) != t)
      ctx.fail_type("label, prediction and loglikelihood must have one data type");
    return std::vector<OutputInfo>{{NDShape{}, t, {}}};
  };
  d.forward = [](ComputeContext& ctx) {
    auto batch = std::make_shared<Batch>(run(ctx));
    double value = batch->value;
    if (ctx.training) ctx.state = batch;
    return std::vector<NDArrayView>{NDArrayView::scalar(DataType::Double, value).cast(ctx.inputs[1].dtype())};
  };
  d.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    if (i != 1) return {};  // no gradient to the label, the loglikelihood (as in CNTK) or the lattice
    std::shared_ptr<Batch> batch = std::static_pointer_cast<Batch>(ctx.state);
    if (!batch) batch = std::make_shared<Batch>(run(ctx));
    Settings st = settings_of(ctx.attr());
    NDArrayView x = ctx.inputs[1].to_dense().cast(DataType::Double).contiguous();
    int64_t T = x.shape()[0], B = x.shape()[1], C = x.shape()[x.rank() - 1];
    double go = ctx.grad_outputs[0].item();
    NDArrayView grad = NDArrayView::zeros(DataType::Double, x.shape());
    double* pg = grad.data<double>();
    const double *px = x.data<double>(), *pgam = batch->gamma.data<double>(), *pl = batch->label.data<double>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < batch->lengths[size_t(b)] && t < T; ++t) {
        int64_t o = (t * B + b) * C;
        const double* r = px + o;
        double m = *std::max_element(r, r + C), z = 0;
        for (int64_t c = 0; c < C; ++c) z += std::exp(r[c] - m);
        int64_t uid = std::max_element(pl + o, pl + o + C) - (pl + o);
        if (pgam[o + uid] < st.drop) continue;  // frame dropped
        for (int64_t c = 0; c < C; ++c)
          pg[o + c] = go * ((1 - st.h) * std::exp(r[c] - m) / z + st.h * pgam[o + c] - pl[o + c]);
      }
    return grad.cast(ctx.inputs[1].dtype());
  };
  register_op(std::move(d));
}

}  // namespace

void register_lattice_ops() { register_lattice_sequence_with_softmax(); }

}  // namespace cntk
