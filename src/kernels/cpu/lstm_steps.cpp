// The step-by-step LSTM (rnn.h's RnnKernel::Steps): float32, any number of layers and
// directions, oneDNN's equations and weight layouts (rnn.h).
//
// Per unit (layer, direction), forward:
//   P = x w_x over all steps at once (one product; for a sparse input nothing: each
//   row adds the w_x rows its entries pick), then per step t one product h_prev w_h
//   into the gates [B, 4H] and one pass computing the cell from them, P's row and the
//   bias.
// Backward, from the last step to the first: one pass giving the gates' gradients dG
// and the cell state's, then one product dG w_h^T for the previous step's output
// gradient. After the loop, with dG of every step at hand: w_h's and the bias's gradient
// [h_prev, 1]^T dG in one product, w_x's x^T dG (or the sparse rows' scatter), and the
// input's gradient dG w_x^T only when asked for.
//
// Everything a unit saves is indexed by the row r of the caller's order that step t of
// sequence b reads and writes: r = t*B + b left to right, r = (n-1-t)*B + b right to left
// over a sequence's n valid steps. So the input, the output and the saved rows stay in
// place, and the products after the loop run over all rows in one call.
//
// Padding steps (t >= n) carry the state on unchanged (so the final states are each
// sequence's own), write a zero output and have a zero gradient: dy there is ignored,
// and the gradient of a carried state passes through them unchanged (it is zero, since
// they come after every valid step of their sequence).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include <omp.h>

#include "cntk/common.h"
#include "cntk/profiler.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rnn_saved.h"

namespace cntk::kernels {

namespace {

// exp, sigmoid and tanh written so that a loop over them vectorizes (no library call;
// the file compiles with -fno-trapping-math, without which GCC does not if-convert the
// clamps next to the float-to-int conversion): exp as 2^n times a degree-6 polynomial on
// [-ln2/2, ln2/2]. Measured against double precision over [-90, 90] in steps of 1e-4: exp
// within 1.4 ulp (relative 8e-8), sigmoid within 9e-8 and tanh within 1.8e-7 (absolute).
inline float exp_approx(float x) {
  x = x < -87.f ? -87.f : x;
  x = x > 88.f ? 88.f : x;
  const float n = (x * 1.44269504f + 12582912.f) - 12582912.f;  // rounded to nearest by 1.5 * 2^23
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-6f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}

inline float sigmoid_approx(float x) { return 1.f / (1.f + exp_approx(-x)); }

inline float tanh_approx(float x) {
  const float far = 1.f - 2.f / (exp_approx(2.f * x) + 1.f);
  const float x2 = x * x;  // near zero the series keeps the relative precision
  const float near = x * (1.f + x2 * (-1.f / 3.f + x2 * (2.f / 15.f - x2 * (17.f / 315.f))));
  return std::abs(x) < 0.125f ? near : far;
}

// One row of one step: the gates' pre-activations g (bias not yet added) and the cell
// state c_prev give the activations a (in place of g at inference), c_prev again and
// tanh(c) for the backward pass (cp, tc), the new states c and h, and the output y.
void lstm_cell_row(const float* g, const float* __restrict bias, const float* __restrict c_prev, float* a,
                   float* __restrict cp, float* __restrict tc, float* __restrict c, float* __restrict h,
                   float* __restrict y, int64_t H) {
#pragma omp simd
  for (int64_t k = 0; k < H; ++k) {
    const float i = sigmoid_approx(g[k] + bias[k]);
    const float fg = sigmoid_approx(g[H + k] + bias[H + k]);
    const float cc = tanh_approx(g[2 * H + k] + bias[2 * H + k]);
    const float o = sigmoid_approx(g[3 * H + k] + bias[3 * H + k]);
    const float cv = fg * c_prev[k] + i * cc;
    const float t_c = tanh_approx(cv);
    const float hv = o * t_c;
    a[k] = i, a[H + k] = fg, a[2 * H + k] = cc, a[3 * H + k] = o;
    cp[k] = c_prev[k], tc[k] = t_c;
    c[k] = cv, h[k] = hv, y[k] = hv;
  }
}

// Steps worth a parallel pass: below this many elements a step runs on one thread.
constexpr int64_t kParallelStep = 512;

// Per-thread working buffers (grow-only).
struct StepsScratch {
  RawBuffer layer[2], dnext[2], proj, gates, discard, state[4], dgates, dstep, dstate[2], dwh, wh_t;
};

StepsScratch& steps_scratch() {
  thread_local StepsScratch s;
  return s;
}

// m [rows, cols] transposed into buf: panels of 8 rows, each read along its rows (the
// reads stream; m is usually out of cache).
const float* transposed(const float* m, int64_t rows, int64_t cols, RawBuffer& buf) {
  buf.reset(size_t(rows * cols));
  float* t = buf.data();
  for (int64_t i0 = 0; i0 < rows; i0 += 8) {
    const int64_t i1 = std::min(rows, i0 + 8);
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = i0; i < i1; ++i) t[j * rows + i] = m[i * cols + j];
  }
  return t;
}

// From this many rows per step on, the per-step product of the backward pass reads an
// explicit w_h^T: oneDNN's sgemm given w_h transposed packs it again on every call, which
// cost twice the product itself at B = 128 (and the one transposition does not pay for
// itself below about 16 rows).
constexpr int64_t kTransposeFromRows = 16;

// One unit's geometry and the row map of its direction.
struct Unit {
  int64_t T, B, C, H;
  const std::vector<int64_t>& len;
  bool reverse;
  int64_t row(int64_t t, int64_t b) const {
    const int64_t n = len[size_t(b)];
    return ((reverse && t < n) ? n - 1 - t : t) * B + b;
  }
  bool valid(int64_t t, int64_t b) const { return t < len[size_t(b)]; }
};

// A unit's input: dense rows [T*B, C] (padding zeroed), or sparse rows.
struct UnitInput {
  const float* dense = nullptr;
  const int64_t *starts = nullptr, *indices = nullptr;
  const float* values = nullptr;
};

// Copies x [T, B, C] with its padding rows zeroed (they may hold anything: checked mode
// fills them with NaN, and 0 * NaN would reach w_x's gradient).
void copy_input(const float* x, float* dst, const Unit& u) {
#pragma omp parallel for schedule(static) if (u.T * u.B * u.C > 65536)
  for (int64_t t = 0; t < u.T; ++t)
    for (int64_t b = 0; b < u.B; ++b) {
      float* o = dst + (t * u.B + b) * u.C;
      if (u.valid(t, b))
        std::copy(x + (t * u.B + b) * u.C, x + (t * u.B + b + 1) * u.C, o);
      else
        std::fill(o, o + u.C, 0.f);
    }
}

struct UnitForward {
  UnitInput in;
  const float *w_x, *w_h, *bias;
  const float *h0, *c0;  // [B, H] or nullptr (zero)
  float* y;              // row r's output at y + r*ldy
  int64_t ldy;
  float *h_final, *c_final;  // [B, H] or nullptr
  RnnUnitSaved* saved;       // nullptr: inference
};

void forward_unit(const Unit& u, const UnitForward& f) {
  const int64_t T = u.T, B = u.B, C = u.C, H = u.H, G = 4 * H;
  StepsScratch& sc = steps_scratch();
  if (f.in.dense) {
    sc.proj.reset(size_t(T * B * G));
    gemm<float>(false, false, T * B, G, C, 1.f, f.in.dense, C, f.w_x, G, 0.f, sc.proj.data(), G);
  }
  sc.gates.reset(size_t(B * G));
  for (auto& s : sc.state) s.reset(size_t(B * H));
  float *h = sc.state[0].data(), *c = sc.state[1].data(), *h_next = sc.state[2].data(), *c_next = sc.state[3].data();
  if (f.h0)
    std::copy(f.h0, f.h0 + B * H, h);
  else
    std::fill(h, h + B * H, 0.f);
  if (f.c0)
    std::copy(f.c0, f.c0 + B * H, c);
  else
    std::fill(c, c + B * H, 0.f);
  RnnUnitSaved* sv = f.saved;
  float* gates = sc.gates.data();
  if (!sv) sc.discard.reset(size_t(B * 2 * H));
  float* discard = sc.discard.data();
  for (int64_t t = 0; t < T; ++t) {
    if (t == 0 && !f.h0)
      std::fill(gates, gates + B * G, 0.f);
    else
      gemm<float>(false, false, B, G, H, 1.f, h, H, f.w_h, G, 0.f, gates, G);
#pragma omp parallel for schedule(static) if (B * H >= kParallelStep)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t r = u.row(t, b);
      const float *hb = h + b * H, *cb = c + b * H;
      float *hn = h_next + b * H, *cn = c_next + b * H, *yr = f.y + r * f.ldy;
      if (sv) {  // [h_prev, 1]: the bias's gradient comes with w_h's (backward_unit)
        float* hp = sv->h_prev.data() + r * (H + 1);
        std::copy(hb, hb + H, hp);
        hp[H] = 1.f;
      }
      if (!u.valid(t, b)) {
        std::copy(hb, hb + H, hn);
        std::copy(cb, cb + H, cn);
        std::fill(yr, yr + H, 0.f);
        continue;
      }
      float* g = gates + b * G;
      if (f.in.dense) {
        const float* p = sc.proj.data() + r * G;
#pragma omp simd
        for (int64_t k = 0; k < G; ++k) g[k] += p[k];
      } else {
        for (int64_t e = f.in.starts[r]; e < f.in.starts[r + 1]; ++e) {
          const float v = f.in.values[e], *w = f.w_x + f.in.indices[e] * G;
#pragma omp simd
          for (int64_t k = 0; k < G; ++k) g[k] += v * w[k];
        }
      }
      // What the backward pass reads; at inference the activations go in place and the
      // states to a scratch row (one loop body either way: it vectorizes).
      float* a = sv ? sv->gates.data() + r * G : g;
      float* cp = sv ? sv->c_prev.data() + r * H : discard + b * 2 * H;
      float* tc = sv ? sv->tanh_c.data() + r * H : discard + b * 2 * H + H;
      lstm_cell_row(g, f.bias, cb, a, cp, tc, cn, hn, yr, H);
    }
    std::swap(h, h_next);
    std::swap(c, c_next);
  }
  if (f.h_final) std::copy(h, h + B * H, f.h_final);
  if (f.c_final) std::copy(c, c + B * H, f.c_final);
}

struct UnitBackward {
  UnitInput in;
  const float *w_x, *w_h;
  const float* dy;  // row r's output gradient at dy + r*lddy
  int64_t lddy;
  float *g_wx, *g_wh, *g_bias;  // or nullptr: not wanted
  float* dx;                    // [T*B, C] or nullptr: not wanted
  bool accumulate_dx;           // add into dx (the second direction)
  float *dh0, *dc0;             // [B, H] or nullptr
};

void backward_unit(const Unit& u, const RnnUnitSaved& sv, const UnitBackward& bw) {
  const int64_t T = u.T, B = u.B, C = u.C, H = u.H, G = 4 * H, R = T * B;
  StepsScratch& sc = steps_scratch();
  sc.dgates.reset(size_t(R * G));
  sc.dstep.reset(size_t(B * G));
  for (auto& s : sc.dstate) s.reset(size_t(B * H));
  float *dg_all = sc.dgates.data(), *dstep = sc.dstep.data();
  float *dh = sc.dstate[0].data(), *dc = sc.dstate[1].data();
  const float* wh_t = B >= kTransposeFromRows ? transposed(bw.w_h, H, G, sc.wh_t) : nullptr;
  std::fill(dh, dh + B * H, 0.f);
  std::fill(dc, dc + B * H, 0.f);
  for (int64_t t = T; t-- > 0;) {
#pragma omp parallel for schedule(static) if (B * H >= kParallelStep)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t r = u.row(t, b);
      float *ds = dstep + b * G, *dgr = dg_all + r * G;
      if (!u.valid(t, b)) {  // the carried state's gradient passes through unchanged
        std::fill(ds, ds + G, 0.f);
        std::fill(dgr, dgr + G, 0.f);
        continue;
      }
      const float *a = sv.gates.data() + r * G, *cp = sv.c_prev.data() + r * H, *tc = sv.tanh_c.data() + r * H;
      const float* dyr = bw.dy + r * bw.lddy;
      float *dhb = dh + b * H, *dcb = dc + b * H;
#pragma omp simd
      for (int64_t k = 0; k < H; ++k) {
        const float i = a[k], fg = a[H + k], cc = a[2 * H + k], o = a[3 * H + k], t_c = tc[k];
        const float dhv = dyr[k] + dhb[k];
        const float dcv = dcb[k] + dhv * o * (1.f - t_c * t_c);
        const float di = dcv * cc * i * (1.f - i);
        const float df = dcv * cp[k] * fg * (1.f - fg);
        const float dcc = dcv * i * (1.f - cc * cc);
        const float d_o = dhv * t_c * o * (1.f - o);
        dcb[k] = dcv * fg;
        ds[k] = dgr[k] = di;
        ds[H + k] = dgr[H + k] = df;
        ds[2 * H + k] = dgr[2 * H + k] = dcc;
        ds[3 * H + k] = dgr[3 * H + k] = d_o;
      }
    }
    // The previous step's output gradient (at t = 0: h0's).
    if (t == 0 && !bw.dh0) continue;
    if (wh_t)
      gemm<float>(false, false, B, H, G, 1.f, dstep, G, wh_t, H, 0.f, dh, H);
    else
      gemm<float>(false, true, B, H, G, 1.f, dstep, G, bw.w_h, G, 0.f, dh, H);
  }
  if (bw.dh0) std::copy(dh, dh + B * H, bw.dh0);
  if (bw.dc0) std::copy(dc, dc + B * H, bw.dc0);
  // [w_h; bias] gradient in one product: h_prev carries a column of ones.
  if (bw.g_wh || bw.g_bias) {
    sc.dwh.reset(size_t((H + 1) * G));
    float* dwh = sc.dwh.data();
    gemm<float>(true, false, H + 1, G, R, 1.f, sv.h_prev.data(), H + 1, dg_all, G, 0.f, dwh, G);
    if (bw.g_wh) std::copy(dwh, dwh + H * G, bw.g_wh);
    if (bw.g_bias) std::copy(dwh + H * G, dwh + (H + 1) * G, bw.g_bias);
  }
  if (bw.g_wx) {
    if (bw.in.dense) {
      gemm<float>(true, false, C, G, R, 1.f, bw.in.dense, C, dg_all, G, 0.f, bw.g_wx, G);
    } else {  // the rows the entries picked, in row order; each thread its share of the columns
      float* gw = bw.g_wx;
      std::fill(gw, gw + C * G, 0.f);
#pragma omp parallel if (R * G > 65536)
      {
        const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
        const int64_t k0 = G * id / nt, k1 = G * (id + 1) / nt;
        for (int64_t r = 0; r < R; ++r) {
          const float* dgr = dg_all + r * G;
          for (int64_t e = bw.in.starts[r]; e < bw.in.starts[r + 1]; ++e) {
            const float v = bw.in.values[e];
            float* w = gw + bw.in.indices[e] * G;
#pragma omp simd
            for (int64_t k = k0; k < k1; ++k) w[k] += v * dgr[k];
          }
        }
      }
    }
  }
  if (bw.dx) gemm<float>(false, true, R, C, G, 1.f, dg_all, G, bw.w_x, G, bw.accumulate_dx ? 1.f : 0.f, bw.dx, C);
}

}  // namespace

void lstm_steps_forward(const RnnDims& d, const RnnForwardArgs& a, RnnSaved& saved) {
  CNTK_PROFILE_SCOPE("LSTM steps");  // in the profiler's detail log: which kernel ran
  const int64_t D = d.directions(), T = d.steps, B = d.batch, H = d.hidden, L = d.layers, G = 4 * H;
  const auto& len = saved.lengths;
  saved.steps = true;
  saved.sparse_input = !a.x;
  StepsScratch& sc = steps_scratch();
  const float* layer_in = a.x;  // layer l's input, [T, B, layer_input(l)]
  for (int64_t l = 0; l < L; ++l) {
    const int64_t C = d.layer_input(l);
    float* layer_out = a.y;
    if (l < L - 1) {
      sc.layer[l % 2].reset(size_t(T * B * D * H));
      layer_out = sc.layer[l % 2].data();
    }
    for (int64_t dir = 0; dir < D; ++dir) {
      const Unit u{T, B, C, H, len, d.direction == RnnDirection::Backward || dir == 1};
      const int64_t n = l * D + dir;
      const RnnLayerWeights& w = a.weights[size_t(n)];
      RnnUnitSaved& us = saved.units[size_t(n)];
      UnitForward f{};
      if (l == 0 && saved.sparse_input) {
        const RnnSparseRows& s = a.x_sparse;
        f.in = {nullptr, s.starts, s.indices, s.values};
        if (a.training && dir == 0) {  // both directions read the same rows: kept on unit 0
          const int64_t nnz = s.starts[T * B];
          us.sparse_starts.assign(s.starts, s.starts + T * B + 1);
          us.sparse_indices.assign(s.indices, s.indices + nnz);
          us.sparse_values.assign(s.values, s.values + nnz);
        }
      } else if (a.training) {  // kept with its padding zeroed: w_x's gradient reads every row
        us.src_layer.reset(size_t(T * B * C));
        copy_input(layer_in, us.src_layer.data(), u);
        f.in.dense = us.src_layer.data();
      } else {  // padding rows are never read
        f.in.dense = layer_in;
      }
      f.w_x = w.w_x, f.w_h = w.w_h, f.bias = w.bias;
      f.h0 = a.h0 ? a.h0 + n * B * H : nullptr;
      f.c0 = a.c0 ? a.c0 + n * B * H : nullptr;
      f.y = layer_out + dir * H;
      f.ldy = D * H;
      f.h_final = a.h_final ? a.h_final + n * B * H : nullptr;
      f.c_final = a.c_final ? a.c_final + n * B * H : nullptr;
      if (a.training) {
        us.gates.reset(size_t(T * B * G));
        us.c_prev.reset(size_t(T * B * H));
        us.tanh_c.reset(size_t(T * B * H));
        us.h_prev.reset(size_t(T * B * (H + 1)));
        us.hold_weights(w, a.keep != nullptr, C, 4, 4, H);
        f.saved = &us;
      }
      forward_unit(u, f);
    }
    layer_in = layer_out;
  }
}

void lstm_steps_backward(const RnnDims& d, const RnnSaved& saved, const RnnBackwardArgs& a) {
  CNTK_PROFILE_SCOPE("LSTM steps (backward)");
  const int64_t D = d.directions(), T = d.steps, B = d.batch, H = d.hidden, L = d.layers;
  const auto& len = saved.lengths;
  StepsScratch& sc = steps_scratch();
  const float* dcur = a.dy;  // the gradient of layer l's output, [T, B, D*H]
  for (int64_t l = L; l-- > 0;) {
    const int64_t C = d.layer_input(l);
    // Layer 0 writes dx itself (or nothing when it is not wanted); the others
    // alternate between two buffers. The directions add up (the first one writes).
    float* dnext = a.dx;
    if (l > 0) {
      sc.dnext[l % 2].reset(size_t(T * B * C));
      dnext = sc.dnext[l % 2].data();
    }
    for (int64_t dir = 0; dir < D; ++dir) {
      const Unit u{T, B, C, H, len, d.direction == RnnDirection::Backward || dir == 1};
      const int64_t n = l * D + dir;
      const RnnUnitSaved& us = saved.units[size_t(n)];
      UnitBackward bw{};
      if (l == 0 && saved.sparse_input) {
        const RnnUnitSaved& s0 = saved.units[0];  // the rows both directions read
        bw.in = {nullptr, s0.sparse_starts.data(), s0.sparse_indices.data(), s0.sparse_values.data()};
      } else {
        bw.in.dense = us.src_layer.data();
      }
      bw.w_x = us.w_x, bw.w_h = us.w_h;
      bw.dy = dcur + dir * H;
      bw.lddy = D * H;
      if (!a.grads.empty()) {
        const RnnLayerGrads& g = a.grads[size_t(n)];
        bw.g_wx = g.w_x, bw.g_wh = g.w_h, bw.g_bias = g.bias;
      }
      bw.dx = dnext;
      bw.accumulate_dx = dir > 0;
      bw.dh0 = a.dh0 ? a.dh0 + n * B * H : nullptr;
      bw.dc0 = a.dc0 ? a.dc0 + n * B * H : nullptr;
      backward_unit(u, us, bw);
    }
    dcur = dnext;
  }
}

}  // namespace cntk::kernels
