// The fused RNN kernels (oneDNN's primitives and, for LSTMs, the step-by-step kernel)
// against a plain double-precision reference of the equations documented in rnn.h:
// forward values, and gradients against central differences of the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "cntk/common.h"
#include "kernels/cpu/rnn.h"

namespace {

using namespace cntk::kernels;

struct Case {
  RnnDims d;
  std::vector<int64_t> len;
  std::vector<std::vector<float>> wx, wh, bias;  // per (layer, direction)
  std::vector<float> x, h0, c0, dy;
  RnnKernel kernel = RnnKernel::Auto;
};

double sig(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Reference forward; returns y [T, B, D*H]. Parameters as doubles so the finite
// differences below are accurate.
std::vector<double> reference(const RnnDims& d, const std::vector<int64_t>& len,
                              const std::vector<std::vector<double>>& wx, const std::vector<std::vector<double>>& wh,
                              const std::vector<std::vector<double>>& bias, const std::vector<double>& x,
                              const std::vector<double>& h0, const std::vector<double>& c0) {
  const int64_t T = d.steps, B = d.batch, H = d.hidden, D = d.directions(), G = rnn_gates(d.cell);
  std::vector<double> in = x, out;
  for (int64_t l = 0; l < d.layers; ++l) {
    const int64_t C = d.layer_input(l);
    out.assign(size_t(T * B * D * H), 0.0);
    for (int64_t dir = 0; dir < D; ++dir) {
      const bool rev = d.direction == RnnDirection::Backward || dir == 1;
      const int64_t u = l * D + dir;
      const auto &Wx = wx[size_t(u)], &Wh = wh[size_t(u)], &bb = bias[size_t(u)];
      for (int64_t b = 0; b < B; ++b) {
        const size_t Hs = static_cast<size_t>(H), GHs = static_cast<size_t>(G * H);
        std::vector<double> h(Hs), c(Hs), g(GHs), hg(GHs), nh(Hs);
        for (int64_t j = 0; j < H; ++j) {
          h[size_t(j)] = h0.empty() ? 0.0 : h0[size_t((u * B + b) * H + j)];
          c[size_t(j)] = c0.empty() ? 0.0 : c0[size_t((u * B + b) * H + j)];
        }
        const int64_t n = len[size_t(b)];
        for (int64_t k = 0; k < n; ++k) {
          const int64_t t = rev ? n - 1 - k : k;
          const double* xt = &in[size_t((t * B + b) * C)];
          for (int64_t q = 0; q < G * H; ++q) {
            double sx = 0, sh = 0;
            for (int64_t i = 0; i < C; ++i) sx += xt[i] * Wx[size_t(i * G * H + q)];
            for (int64_t i = 0; i < H; ++i) sh += h[size_t(i)] * Wh[size_t(i * G * H + q)];
            g[size_t(q)] = sx + bb[size_t(q)];
            hg[size_t(q)] = sh;
          }
          for (int64_t j = 0; j < H; ++j) {
            auto at = [&](const std::vector<double>& v, int64_t gate) { return v[size_t(gate * H + j)]; };
            switch (d.cell) {
              case RnnCell::Lstm: {
                double i = sig(at(g, 0) + at(hg, 0)), f = sig(at(g, 1) + at(hg, 1));
                double cc = std::tanh(at(g, 2) + at(hg, 2)), o = sig(at(g, 3) + at(hg, 3));
                c[size_t(j)] = f * c[size_t(j)] + i * cc;
                nh[size_t(j)] = o * std::tanh(c[size_t(j)]);
                break;
              }
              case RnnCell::Gru: {
                // c~ needs (r*h) Wh_c: computed below for all j at once
                break;
              }
              case RnnCell::LbrGru: {
                double uu = sig(at(g, 0) + at(hg, 0)), r = sig(at(g, 1) + at(hg, 1));
                double cc = std::tanh(at(g, 2) + r * (at(hg, 2) + bb[size_t(3 * H + j)]));
                nh[size_t(j)] = uu * h[size_t(j)] + (1 - uu) * cc;
                break;
              }
              case RnnCell::RnnTanh: nh[size_t(j)] = std::tanh(at(g, 0) + at(hg, 0)); break;
              case RnnCell::RnnRelu: nh[size_t(j)] = std::max(0.0, at(g, 0) + at(hg, 0)); break;
              case RnnCell::RnnSigmoid: nh[size_t(j)] = sig(at(g, 0) + at(hg, 0)); break;
            }
          }
          if (d.cell == RnnCell::Gru) {
            std::vector<double> rh(Hs);
            for (int64_t j = 0; j < H; ++j) rh[size_t(j)] = sig(g[size_t(H + j)] + hg[size_t(H + j)]) * h[size_t(j)];
            for (int64_t j = 0; j < H; ++j) {
              double s = 0;
              for (int64_t i = 0; i < H; ++i) s += rh[size_t(i)] * Wh[size_t(i * G * H + 2 * H + j)];
              double uu = sig(g[size_t(j)] + hg[size_t(j)]);
              double cc = std::tanh(g[size_t(2 * H + j)] + s);
              nh[size_t(j)] = uu * h[size_t(j)] + (1 - uu) * cc;
            }
          }
          h = nh;
          for (int64_t j = 0; j < H; ++j) out[size_t((t * B + b) * D * H + dir * H + j)] = h[size_t(j)];
        }
      }
    }
    in = out;
  }
  return in;
}

std::vector<double> to_d(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

Case make_case(RnnCell cell, RnnDirection dir, int64_t layers, int64_t C, int64_t H, int64_t T,
               std::vector<int64_t> len, bool states, unsigned seed) {
  Case c;
  c.d = RnnDims{cell, dir, layers, C, H, T, int64_t(len.size())};
  c.len = std::move(len);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uni(-0.5f, 0.5f);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& e : v) e = uni(gen);
    return v;
  };
  const int64_t D = c.d.directions(), G = rnn_gates(cell), Gb = rnn_bias_gates(cell), B = c.d.batch;
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t k = 0; k < D; ++k) {
      c.wx.push_back(fill(size_t(c.d.layer_input(l) * G * H)));
      c.wh.push_back(fill(size_t(H * G * H)));
      c.bias.push_back(fill(size_t(Gb * H)));
    }
  c.x = fill(size_t(T * B * C));
  if (states) {
    c.h0 = fill(size_t(layers * D * B * H));
    if (cell == RnnCell::Lstm) c.c0 = fill(size_t(layers * D * B * H));
  }
  c.dy = fill(size_t(T * B * D * H));
  return c;
}

std::vector<float> run_forward(const Case& c, std::shared_ptr<RnnSaved>* saved,
                               std::shared_ptr<const void> keep = nullptr) {
  RnnForwardArgs a;
  a.kernel = c.kernel;
  a.keep = std::move(keep);
  a.x = c.x.data();
  a.lengths = c.len.data();
  for (size_t u = 0; u < c.wx.size(); ++u) a.weights.push_back({c.wx[u].data(), c.wh[u].data(), c.bias[u].data()});
  a.h0 = c.h0.empty() ? nullptr : c.h0.data();
  a.c0 = c.c0.empty() ? nullptr : c.c0.data();
  std::vector<float> y(size_t(c.d.steps * c.d.batch * c.d.output()), -7.f);
  a.y = y.data();
  a.training = saved != nullptr;
  auto s = rnn_forward(c.d, a);
  if (saved) *saved = s;
  return y;
}

double loss(const Case& c, const std::vector<std::vector<double>>& wx, const std::vector<std::vector<double>>& wh,
            const std::vector<std::vector<double>>& bias, const std::vector<double>& x, const std::vector<double>& h0,
            const std::vector<double>& c0) {
  auto y = reference(c.d, c.len, wx, wh, bias, x, h0, c0);
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * c.dy[i];
  return s;
}

// Every gradient of a backward pass over `saved` (each buffer prefilled with 99, so
// that one left unwritten shows).
struct Grads {
  std::vector<std::vector<float>> wx, wh, bias;  // per (layer, direction)
  std::vector<float> dx, dh0, dc0;
  bool operator==(const Grads& o) const {
    return wx == o.wx && wh == o.wh && bias == o.bias && dx == o.dx && dh0 == o.dh0 && dc0 == o.dc0;
  }
};

Grads run_backward(const Case& c, const RnnSaved& saved) {
  const size_t LD = size_t(c.d.layers * c.d.directions()), BH = size_t(c.d.batch * c.d.hidden);
  Grads g;
  RnnBackwardArgs ba;
  ba.dy = c.dy.data();
  for (size_t u = 0; u < LD; ++u) {
    g.wx.emplace_back(c.wx[u].size(), 99.f);
    g.wh.emplace_back(c.wh[u].size(), 99.f);
    g.bias.emplace_back(c.bias[u].size(), 99.f);
  }
  for (size_t u = 0; u < LD; ++u) ba.grads.push_back({g.wx[u].data(), g.wh[u].data(), g.bias[u].data()});
  g.dx.assign(c.x.size(), 99.f);
  g.dh0.assign(LD * BH, 99.f);
  ba.dx = g.dx.data();
  ba.dh0 = g.dh0.data();
  if (c.d.cell == RnnCell::Lstm) {
    g.dc0.assign(LD * BH, 99.f);
    ba.dc0 = g.dc0.data();
  }
  rnn_backward(c.d, saved, ba);
  return g;
}

// The kernels that run `c`: an LSTM on each of the two, other cells on oneDNN's.
std::vector<RnnKernel> kernels_of(const Case& c) {
  if (c.d.cell == RnnCell::Lstm) return {RnnKernel::OneDnn, RnnKernel::Steps};
  return {RnnKernel::Auto};
}

void check_one(const Case& c);

void check_case(const Case& c) {
  for (RnnKernel k : kernels_of(c)) {
    SCOPED_TRACE("kernel " + std::to_string(int(k)));
    Case on = c;
    on.kernel = k;
    check_one(on);
  }
}

void check_one(const Case& c) {
  SCOPED_TRACE(std::string(to_string(c.d.cell)) + " dir " + std::to_string(int(c.d.direction)) + " layers " +
               std::to_string(c.d.layers));
  std::vector<std::vector<double>> wx, wh, bias;
  for (size_t u = 0; u < c.wx.size(); ++u) {
    wx.push_back(to_d(c.wx[u]));
    wh.push_back(to_d(c.wh[u]));
    bias.push_back(to_d(c.bias[u]));
  }
  auto x = to_d(c.x), h0 = to_d(c.h0), c0 = to_d(c.c0);
  // forward, inference and training
  auto ref = reference(c.d, c.len, wx, wh, bias, x, h0, c0);
  std::shared_ptr<RnnSaved> saved;
  auto y = run_forward(c, &saved);
  auto yi = run_forward(c, nullptr);
  ASSERT_EQ(y.size(), ref.size());
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_NEAR(y[i], ref[i], 1e-5) << "y at " << i;
    ASSERT_NEAR(yi[i], ref[i], 1e-5) << "inference y at " << i;
  }
  const Grads g = run_backward(c, *saved);
  const double eps = 1e-5;
  auto fd_check = [&](std::vector<double>& p, const std::vector<float>& got, const char* what) {
    ASSERT_EQ(p.size(), got.size()) << what;
    for (size_t i = 0; i < p.size(); ++i) {
      const double keep = p[i];
      p[i] = keep + eps;
      double lp = loss(c, wx, wh, bias, x, h0, c0);
      p[i] = keep - eps;
      double lm = loss(c, wx, wh, bias, x, h0, c0);
      p[i] = keep;
      const double fd = (lp - lm) / (2 * eps);
      ASSERT_NEAR(got[i], fd, 1e-4 + 1e-4 * std::abs(fd)) << what << " at " << i;
    }
  };
  for (size_t u = 0; u < wx.size(); ++u) {
    fd_check(wx[u], g.wx[u], "w_x");
    fd_check(wh[u], g.wh[u], "w_h");
    fd_check(bias[u], g.bias[u], "bias");
  }
  fd_check(x, g.dx, "x");
  if (!h0.empty()) fd_check(h0, g.dh0, "h0");
  if (!c0.empty()) fd_check(c0, g.dc0, "c0");
}

const RnnCell kCells[] = {RnnCell::Lstm,    RnnCell::Gru,     RnnCell::LbrGru,
                          RnnCell::RnnTanh, RnnCell::RnnRelu, RnnCell::RnnSigmoid};

TEST(RnnKernel, OneLayerEachCellAndDirection) {
  unsigned seed = 1;
  for (RnnCell cell : kCells)
    for (RnnDirection dir : {RnnDirection::Forward, RnnDirection::Backward, RnnDirection::Bidirectional})
      check_case(make_case(cell, dir, 1, 3, 5, 4, {4, 2, 3}, false, seed++));
}

TEST(RnnKernel, InitialStates) {
  unsigned seed = 100;
  for (RnnCell cell : {RnnCell::Lstm, RnnCell::Gru, RnnCell::RnnTanh})
    for (RnnDirection dir : {RnnDirection::Forward, RnnDirection::Backward})
      check_case(make_case(cell, dir, 1, 2, 3, 3, {3, 1}, true, seed++));
}

TEST(RnnKernel, StackedBidirectional) {
  check_case(make_case(RnnCell::Lstm, RnnDirection::Bidirectional, 2, 3, 4, 4, {4, 3, 1}, true, 200));
  check_case(make_case(RnnCell::LbrGru, RnnDirection::Bidirectional, 2, 2, 3, 3, {2, 3}, false, 201));
  check_case(make_case(RnnCell::RnnRelu, RnnDirection::Forward, 3, 4, 3, 3, {3}, false, 202));
}

TEST(RnnKernel, EmptyAndZeroLengthSequences) {
  check_case(make_case(RnnCell::Gru, RnnDirection::Backward, 1, 2, 3, 3, {0, 3, 0}, false, 300));
  check_case(make_case(RnnCell::Lstm, RnnDirection::Bidirectional, 1, 2, 3, 3, {0, 3, 0}, true, 302));
  Case c = make_case(RnnCell::Lstm, RnnDirection::Forward, 1, 2, 3, 0, {}, false, 301);
  std::shared_ptr<RnnSaved> saved;
  auto y = run_forward(c, &saved);
  EXPECT_TRUE(y.empty());
}

// Without `keep` the forward record copies the weights (the caller may change its own
// afterwards); with it, the record refers to the kept weights and holds their owner,
// which may then be the only one left. Both backward passes give the same gradients.
void check_kept_weights(const Case& c) {
  Case changed = c;
  std::shared_ptr<RnnSaved> copied;
  run_forward(changed, &copied);
  for (auto* ws : {&changed.wx, &changed.wh, &changed.bias})
    for (auto& w : *ws) std::fill(w.begin(), w.end(), 1e3f);
  const Grads want = run_backward(c, *copied);

  auto owner = std::make_shared<Case>(c);
  std::shared_ptr<RnnSaved> kept;
  run_forward(*owner, &kept, owner);
  std::weak_ptr<Case> alive = owner;
  owner.reset();
  ASSERT_FALSE(alive.expired());  // the record holds the weights' owner
  EXPECT_TRUE(run_backward(c, *kept) == want);
  kept.reset();
  EXPECT_TRUE(alive.expired());  // and lets go of it with the record
}

TEST(RnnKernel, KeptWeightsAreReferredToAndHeld) {
  for (RnnKernel k : {RnnKernel::OneDnn, RnnKernel::Steps}) {
    SCOPED_TRACE("kernel " + std::to_string(int(k)));
    Case c = make_case(RnnCell::Lstm, RnnDirection::Bidirectional, 2, 3, 4, 4, {4, 3, 1}, true, 500);
    c.kernel = k;
    check_kept_weights(c);
  }
}

TEST(RnnKernel, BadArgumentsThrow) {
  Case c = make_case(RnnCell::Lstm, RnnDirection::Forward, 1, 2, 3, 3, {3, 5}, false, 400);
  EXPECT_THROW(run_forward(c, nullptr), cntk::ValueError);  // length 5 > T = 3
  c.len = {3, 2};
  c.wx.pop_back();
  c.wh.pop_back();
  c.bias.pop_back();
  EXPECT_THROW(run_forward(c, nullptr), cntk::ValueError);  // no weight set
  RnnDims bad{RnnCell::Gru, RnnDirection::Forward, 0, 2, 3, 3, 1};
  RnnForwardArgs a;
  EXPECT_THROW(rnn_forward(bad, a), cntk::ValueError);
}

TEST(RnnKernel, WeightLayoutHelpers) {
  const int64_t H = 2;
  std::vector<float> cntk(3 * 4 * H), dnnl(cntk.size()), back(cntk.size());
  for (size_t i = 0; i < cntk.size(); ++i) cntk[i] = float(i);
  lstm_gates_cntk_to_fused(cntk.data(), dnnl.data(), 3, H);
  // row 0: cntk blocks i=[0,1] c~=[2,3] f=[4,5] o=[6,7] -> dnnl i, f, c~, o
  EXPECT_EQ(dnnl[0], 0.f);
  EXPECT_EQ(dnnl[2], 4.f);
  EXPECT_EQ(dnnl[4], 2.f);
  EXPECT_EQ(dnnl[6], 6.f);
  EXPECT_EQ(dnnl[8 + 2], 12.f);
  lstm_gates_fused_to_cntk(dnnl.data(), back.data(), 3, H);
  EXPECT_EQ(back, cntk);
  std::vector<double> Hm{1, 2, 3, 4, 5, 6, 7, 8}, H1{10, 11, 12, 13}, wh(12), H2(8), H12(4);
  gru_iter_cntk_to_fused(Hm.data(), H1.data(), wh.data(), H);
  EXPECT_EQ(wh, (std::vector<double>{1, 2, 3, 4, 10, 11, 5, 6, 7, 8, 12, 13}));
  gru_iter_fused_to_cntk(wh.data(), H2.data(), H12.data(), H);
  EXPECT_EQ(H2, Hm);
  EXPECT_EQ(H12, H1);
}

}  // namespace

namespace {

// Forward of `c` over steps [t0, t1) of its input (every sequence of full length),
// from h0/c0, returning y and writing the final states.
std::vector<float> forward_steps(const Case& c, int64_t t0, int64_t t1, const std::vector<float>& h0,
                                 const std::vector<float>& c0, std::vector<float>& h_final, std::vector<float>& c_final,
                                 bool training) {
  RnnDims d = c.d;
  d.steps = t1 - t0;
  const int64_t B = d.batch, C = d.input, H = d.hidden;
  std::vector<float> x(c.x.begin() + t0 * B * C, c.x.begin() + t1 * B * C), y(size_t(d.steps * B * H), -7.f);
  std::vector<int64_t> len(size_t(B), d.steps);
  RnnForwardArgs a;
  a.kernel = c.kernel;
  a.x = x.data();
  a.lengths = len.data();
  a.weights.push_back({c.wx[0].data(), c.wh[0].data(), c.bias[0].data()});
  a.h0 = h0.data();
  a.c0 = d.cell == RnnCell::Lstm ? c0.data() : nullptr;
  a.y = y.data();
  h_final.assign(size_t(B * H), -7.f);
  c_final.assign(size_t(B * H), -7.f);
  a.h_final = h_final.data();
  a.c_final = d.cell == RnnCell::Lstm ? c_final.data() : nullptr;
  a.training = training;
  auto saved = rnn_forward(d, a);
  EXPECT_EQ(saved != nullptr, training);
  return y;
}

}  // namespace

TEST(RnnKernel, FinalStatesContinueTheSequences) {
  // Steps [0, 3) then [3, 5) from the first run's final states equal one run over [0, 5).
  unsigned seed = 500;
  for (RnnCell cell : {RnnCell::Lstm, RnnCell::Gru, RnnCell::RnnTanh})
    for (bool training : {false, true}) {
      SCOPED_TRACE(std::string(to_string(cell)) + (training ? " training" : " inference"));
      Case made = make_case(cell, RnnDirection::Forward, 1, 3, 4, 5, {5, 5}, true, seed++);
      for (RnnKernel k : kernels_of(made)) {
        SCOPED_TRACE("kernel " + std::to_string(int(k)));
        Case c = made;
        c.kernel = k;
        std::vector<float> c0 = c.c0.empty() ? std::vector<float>(c.h0.size(), 0.f) : c.c0;
        std::vector<float> hf, cf, hf2, cf2, hall, call;
        auto whole = forward_steps(c, 0, 5, c.h0, c0, hall, call, training);
        auto first = forward_steps(c, 0, 3, c.h0, c0, hf, cf, training);
        auto second = forward_steps(c, 3, 5, hf, cf, hf2, cf2, training);
        first.insert(first.end(), second.begin(), second.end());
        ASSERT_EQ(first.size(), whole.size());
        for (size_t i = 0; i < whole.size(); ++i) ASSERT_NEAR(first[i], whole[i], 1e-5) << "y at " << i;
        const size_t BH = hf.size();
        for (size_t i = 0; i < BH; ++i) {
          ASSERT_NEAR(hf2[i], hall[i], 1e-5);
          ASSERT_EQ(hall[i], whole[whole.size() - BH + i]);  // h after the last step is its output there
          if (cell == RnnCell::Lstm) ASSERT_NEAR(cf2[i], call[i], 1e-5);
        }
        // No step: the final states are the initial ones.
        auto none = forward_steps(c, 0, 0, c.h0, c0, hf, cf, training);
        EXPECT_TRUE(none.empty());
        EXPECT_EQ(hf, c.h0);
        if (cell == RnnCell::Lstm) EXPECT_EQ(cf, c0);
      }
    }
}

namespace {

// `c`'s input as sparse rows: entry j of row r kept where keep(r, j), else dropped (so
// rows with none, one and several entries occur); c.x becomes their dense form.
struct SparseCase {
  std::vector<int64_t> starts{0}, indices;
  std::vector<float> values;
};
SparseCase sparsify(Case& c) {
  SparseCase s;
  const int64_t R = c.d.steps * c.d.batch, C = c.d.input;
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t j = 0; j < C; ++j) {
      float& v = c.x[size_t(r * C + j)];
      if ((r + j) % 3 == 0 && r % 5 != 4) {
        s.indices.push_back(j);
        s.values.push_back(v);
      } else {
        v = 0.f;
      }
    }
    s.starts.push_back(int64_t(s.indices.size()));
  }
  return s;
}

}  // namespace

// A sparse input (one-hot rows, say) gives what its dense form gives, on both kernels
// (oneDNN's reads it densified); the step-by-step kernel computes its input gradient
// only when asked for.
TEST(RnnKernel, SparseInputRows) {
  unsigned seed = 600;
  for (RnnDirection dir : {RnnDirection::Forward, RnnDirection::Backward, RnnDirection::Bidirectional})
    for (RnnKernel k : {RnnKernel::OneDnn, RnnKernel::Steps}) {
      SCOPED_TRACE("dir " + std::to_string(int(dir)) + " kernel " + std::to_string(int(k)));
      Case c = make_case(RnnCell::Lstm, dir, 2, 5, 4, 4, {4, 2, 3}, true, seed++);
      c.kernel = k;
      const SparseCase sp = sparsify(c);
      std::shared_ptr<RnnSaved> dense_saved;
      const auto want_y = run_forward(c, &dense_saved);
      const Grads want = run_backward(c, *dense_saved);

      RnnForwardArgs a;
      a.kernel = k;
      a.x_sparse = {sp.starts.data(), sp.indices.data(), sp.values.data()};
      a.lengths = c.len.data();
      for (size_t u = 0; u < c.wx.size(); ++u) a.weights.push_back({c.wx[u].data(), c.wh[u].data(), c.bias[u].data()});
      a.h0 = c.h0.data();
      a.c0 = c.c0.data();
      std::vector<float> y(want_y.size(), -7.f);
      a.y = y.data();
      auto saved = rnn_forward(c.d, a);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want_y[i], 1e-6) << "y at " << i;
      const Grads got = run_backward(c, *saved);
      auto near = [](const std::vector<float>& g, const std::vector<float>& w, const char* what) {
        ASSERT_EQ(g.size(), w.size()) << what;
        for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-5) << what << " at " << i;
      };
      for (size_t u = 0; u < want.wx.size(); ++u) {
        near(got.wx[u], want.wx[u], "w_x");
        near(got.wh[u], want.wh[u], "w_h");
        near(got.bias[u], want.bias[u], "bias");
      }
      near(got.dx, want.dx, "dx");
      near(got.dh0, want.dh0, "dh0");
      near(got.dc0, want.dc0, "dc0");

      // Without dx: the other gradients unchanged, dx untouched.
      RnnBackwardArgs ba;
      ba.dy = c.dy.data();
      Grads none = want;
      for (size_t u = 0; u < c.wx.size(); ++u)
        ba.grads.push_back({none.wx[u].data(), none.wh[u].data(), none.bias[u].data()});
      ba.dh0 = none.dh0.data();
      ba.dc0 = none.dc0.data();
      rnn_backward(c.d, *saved, ba);
      for (size_t u = 0; u < want.wx.size(); ++u) near(none.wx[u], want.wx[u], "w_x without dx");
      near(none.dh0, want.dh0, "dh0 without dx");

      a.x_sparse.indices = nullptr;
      EXPECT_THROW(rnn_forward(c.d, a), cntk::ValueError);  // no indices
      std::vector<int64_t> bad = sp.indices;
      bad.back() = c.d.input;
      a.x_sparse.indices = bad.data();
      EXPECT_THROW(rnn_forward(c.d, a), cntk::ValueError);  // an index outside the input
    }
}

// The step-by-step kernel runs LSTMs only; its final states are each sequence's own
// (padding steps carry the state on), which oneDNN's are only for full-length ones.
TEST(RnnKernel, StepsKernelFinalStatesAndCells) {
  Case g = make_case(RnnCell::Gru, RnnDirection::Forward, 1, 2, 3, 3, {3}, false, 700);
  g.kernel = RnnKernel::Steps;
  EXPECT_THROW(run_forward(g, nullptr), cntk::ValueError);

  Case c = make_case(RnnCell::Lstm, RnnDirection::Forward, 1, 3, 4, 5, {5, 3, 0}, true, 701);
  c.kernel = RnnKernel::Steps;
  const int64_t B = c.d.batch, H = c.d.hidden;
  std::vector<float> hf(size_t(B * H)), cf(size_t(B * H)), y(size_t(5 * B * H));
  RnnForwardArgs a;
  a.kernel = RnnKernel::Steps;
  a.x = c.x.data();
  a.lengths = c.len.data();
  a.weights.push_back({c.wx[0].data(), c.wh[0].data(), c.bias[0].data()});
  a.h0 = c.h0.data();
  a.c0 = c.c0.data();
  a.y = y.data();
  a.h_final = hf.data();
  a.c_final = cf.data();
  a.training = false;
  rnn_forward(c.d, a);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      const int64_t n = c.len[size_t(b)];
      const float want = n > 0 ? y[size_t(((n - 1) * B + b) * H + j)] : c.h0[size_t(b * H + j)];
      ASSERT_EQ(hf[size_t(b * H + j)], want) << "sequence " << b;
    }
  for (int64_t j = 0; j < H; ++j) ASSERT_EQ(cf[size_t(2 * H + j)], c.c0[size_t(2 * H + j)]);  // no step
}
