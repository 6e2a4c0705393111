#include "kernels/cpu/rnn_stack.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cntk/common.h"
#include "cntk/switches.h"
#include "kernels/backend.h"
#include "kernels/cpu/matmul.h"

namespace cntk::kernels {

RnnCell rnn_cell_from_name(const std::string& name) {
  if (name == "lstm") return RnnCell::Lstm;
  if (name == "gru") return RnnCell::LbrGru;
  if (name == "rnnTanh") return RnnCell::RnnTanh;
  if (name == "rnnReLU") return RnnCell::RnnRelu;
  throw ValueError("OptimizedRNNStack: unknown recurrent_op '" + name +
                   "'; supported values are 'lstm', 'gru', 'rnnTanh', 'rnnReLU'");
}

int64_t RnnStackDims::weight_count() const {
  int64_t total = 0, G = gates();
  for (int64_t l = 0; l < layers; ++l) total += dirs() * G * hidden * (layer_input(l) + hidden + 2);
  return total;
}

RnnBlockOffsets rnn_block_offsets(const RnnStackDims& d, int64_t layer, int64_t dir) {
  const int64_t G = d.gates(), H = d.hidden;
  int64_t mat = 0, bias = 0;
  for (int64_t l = 0; l < d.layers; ++l) mat += d.dirs() * G * H * (d.layer_input(l) + H);
  RnnBlockOffsets o{};
  int64_t pos = 0;
  for (int64_t l = 0; l <= layer; ++l)
    for (int64_t k = 0; k < d.dirs(); ++k) {
      if (l == layer && k == dir) {
        o.w = pos;
        o.r = pos + G * H * d.layer_input(l);
        o.bw = mat + bias;
        o.br = mat + bias + G * H;
        return o;
      }
      pos += G * H * (d.layer_input(l) + H);
      bias += 2 * G * H;
    }
  return o;
}

struct RnnStackTape {
  virtual ~RnnStackTape() = default;
};

namespace {

template <class T>
DataType dtype_of() {
  return sizeof(T) == sizeof(double) ? DataType::Double : DataType::Float;
}

template <class T>
T sigmoid(T v) {
  return v >= 0 ? T(1) / (T(1) + std::exp(-v)) : std::exp(v) / (T(1) + std::exp(v));
}

// What one layer-direction keeps: post-activation gates [T*B, G*H], the state each step
// started from [T*B, H], and per cell: LSTM's cells (before and after the step), GRU's
// gated recurrent candidate term R_n h' + bR_n.
template <class T>
struct DirTape {
  std::vector<T> act, hprev, cprev, c, rn;
};

template <class T>
struct Tape : RnnStackTape {
  std::vector<std::vector<T>> layer_in;  // input of each layer [T*B, I_l] (layer 0: x)
  std::vector<std::vector<DirTape<T>>> dirs;
};

struct Geometry {
  int64_t T, B;
  std::vector<int64_t> len;
  // Row (t*B + b) of the step that sequence b processes at position s in direction dir.
  int64_t row(int64_t s, int64_t b, int64_t dir) const { return (dir == 0 ? s : len[size_t(b)] - 1 - s) * B + b; }
};

Geometry geometry(const NDArrayView& x, const std::vector<int64_t>& lengths) {
  Geometry g{x.shape()[0], x.shape()[1], lengths};
  if (g.len.empty()) g.len.assign(size_t(g.B), g.T);
  if (int64_t(g.len.size()) != g.B)
    throw Error("OptimizedRNNStack: " + std::to_string(g.len.size()) + " sequence lengths for a batch of " +
                std::to_string(g.B));
  for (auto& l : g.len)
    if (l < 0 || l > g.T) throw Error("OptimizedRNNStack: sequence length " + std::to_string(l) + " out of range");
  return g;
}

template <class T>
std::vector<T> to_vector(const NDArrayView& a) {
  NDArrayView c = (a.dtype() == dtype_of<T>() ? a : a.cast(dtype_of<T>())).contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

template <class T>
NDArrayView from_vector(const std::vector<T>& v, const NDShape& shape) {
  NDArrayView out(dtype_of<T>(), shape);
  std::copy(v.begin(), v.end(), out.data<T>());
  return out;
}

// One layer-direction forward: writes its H columns of y [T*B, D*H] (column offset
// `col`), and fills the tape.
template <class T>
void dir_forward(const RnnStackDims& d, const Geometry& g, const std::vector<T>& in, int64_t I, const T* w,
                 const RnnBlockOffsets& o, int64_t dir, std::vector<T>& y, int64_t col, DirTape<T>& tp, T* h_final,
                 T* c_final, int64_t unit, int64_t units) {
  const int64_t G = d.gates(), H = d.hidden, GH = G * H, TB = g.T * g.B, OD = d.output_size();
  const T* W = w + o.w;
  const T* R = w + o.r;
  const T* bW = w + o.bw;
  const T* bR = w + o.br;
  // Input contributions of every step at once: W x + bW.
  tp.act.assign(size_t(TB * GH), T(0));
  gemm<T>(false, true, TB, GH, I, T(1), in.data(), I, W, I, T(0), tp.act.data(), GH);
  for (int64_t r = 0; r < TB; ++r)
    for (int64_t k = 0; k < GH; ++k) tp.act[size_t(r * GH + k)] += bW[k];
  tp.hprev.assign(size_t(TB * H), T(0));
  if (d.cell == RnnCell::Lstm) {
    tp.cprev.assign(size_t(TB * H), T(0));
    tp.c.assign(size_t(TB * H), T(0));
  }
  if (d.cell == RnnCell::LbrGru) tp.rn.assign(size_t(TB * H), T(0));
  std::vector<T> h(size_t(g.B * H), T(0)), c(size_t(g.B * H), T(0)), rec(size_t(g.B * GH));
  int64_t steps = 0;
  for (auto l : g.len) steps = std::max(steps, l);
  for (int64_t s = 0; s < steps; ++s) {
    gemm<T>(false, true, g.B, GH, H, T(1), h.data(), H, R, H, T(0), rec.data(), GH);
    for (int64_t b = 0; b < g.B; ++b) {
      if (s >= g.len[size_t(b)]) continue;
      const int64_t row = g.row(s, b, dir);
      T* a = &tp.act[size_t(row * GH)];
      const T* rb = &rec[size_t(b * GH)];
      T* hb = &h[size_t(b * H)];
      T* cb = &c[size_t(b * H)];
      std::copy(hb, hb + H, &tp.hprev[size_t(row * H)]);
      T* yo = &y[size_t(row * OD + col)];
      switch (d.cell) {
        case RnnCell::Lstm:
          std::copy(cb, cb + H, &tp.cprev[size_t(row * H)]);
          for (int64_t j = 0; j < H; ++j) {
            T i = sigmoid(a[j] + rb[j] + bR[j]);
            T f = sigmoid(a[H + j] + rb[H + j] + bR[H + j]);
            T gg = std::tanh(a[2 * H + j] + rb[2 * H + j] + bR[2 * H + j]);
            T og = sigmoid(a[3 * H + j] + rb[3 * H + j] + bR[3 * H + j]);
            a[j] = i, a[H + j] = f, a[2 * H + j] = gg, a[3 * H + j] = og;
            cb[j] = f * cb[j] + i * gg;
            hb[j] = og * std::tanh(cb[j]);
          }
          std::copy(cb, cb + H, &tp.c[size_t(row * H)]);
          break;
        case RnnCell::LbrGru:
          for (int64_t j = 0; j < H; ++j) {
            T r = sigmoid(a[j] + rb[j] + bR[j]);
            T z = sigmoid(a[H + j] + rb[H + j] + bR[H + j]);
            T hn = rb[2 * H + j] + bR[2 * H + j];
            T n = std::tanh(a[2 * H + j] + r * hn);
            tp.rn[size_t(row * H + j)] = hn;
            a[j] = r, a[H + j] = z, a[2 * H + j] = n;
            hb[j] = (T(1) - z) * n + z * hb[j];
          }
          break;
        case RnnCell::RnnTanh:
        case RnnCell::RnnRelu:
          for (int64_t j = 0; j < H; ++j) {
            T v = a[j] + rb[j] + bR[j];
            v = d.cell == RnnCell::RnnTanh ? std::tanh(v) : std::max(v, T(0));
            a[j] = v;
            hb[j] = v;
          }
          break;
        default: throw NotImplementedError("OptimizedRNNStack: only LSTM, cuDNN GRU and tanh/ReLU RNN cells");
      }
      std::copy(hb, hb + H, yo);
    }
  }
  // A sequence's rows stop changing after its last step: h and c hold its final states.
  for (int64_t b = 0; b < g.B; ++b) {
    const size_t at = size_t((b * units + unit) * H);
    if (h_final) std::copy(&h[size_t(b * H)], &h[size_t((b + 1) * H)], h_final + at);
    if (c_final) std::copy(&c[size_t(b * H)], &c[size_t((b + 1) * H)], c_final + at);
  }
}

// One layer-direction backward: reads its H columns of dy [T*B, D*H] (padded rows zero),
// adds the input gradient into din [T*B, I] and the weight gradients into dw.
template <class T>
void dir_backward(const RnnStackDims& d, const Geometry& g, const std::vector<T>& in, int64_t I, const T* w,
                  const RnnBlockOffsets& o, int64_t dir, const std::vector<T>& dy, int64_t col, const DirTape<T>& tp,
                  std::vector<T>& din, T* dw, const T* dh_final, const T* dc_final, int64_t unit, int64_t units) {
  const int64_t G = d.gates(), H = d.hidden, GH = G * H, TB = g.T * g.B, OD = d.output_size();
  const T* W = w + o.w;
  const T* R = w + o.r;
  // Gradients of the pre-activations: through the input side (W x + bW) and through
  // the recurrent side (R h' + bR); they differ only in GRU's candidate gate.
  std::vector<T> dgx(size_t(TB * GH), T(0));
  std::vector<T> dgr_all(d.cell == RnnCell::LbrGru ? size_t(TB * GH) : 0, T(0));
  std::vector<T>& dgr = d.cell == RnnCell::LbrGru ? dgr_all : dgx;
  std::vector<T> dh(size_t(g.B * H), T(0)), dc(size_t(g.B * H), T(0)), step(size_t(g.B * GH), T(0));
  // The final states' gradients enter at each sequence's last step of this direction
  // (the rows of a sequence stay untouched until the reverse sweep reaches it).
  for (int64_t b = 0; b < g.B; ++b) {
    const size_t at = size_t((b * units + unit) * H);
    if (dh_final) std::copy(dh_final + at, dh_final + at + H, &dh[size_t(b * H)]);
    if (dc_final) std::copy(dc_final + at, dc_final + at + H, &dc[size_t(b * H)]);
  }
  int64_t steps = 0;
  for (auto l : g.len) steps = std::max(steps, l);
  for (int64_t s = steps - 1; s >= 0; --s) {
    std::fill(step.begin(), step.end(), T(0));
    for (int64_t b = 0; b < g.B; ++b) {
      if (s >= g.len[size_t(b)]) continue;
      const int64_t row = g.row(s, b, dir);
      const T* a = &tp.act[size_t(row * GH)];
      T* dhb = &dh[size_t(b * H)];
      T* dcb = &dc[size_t(b * H)];
      const T* dyo = &dy[size_t(row * OD + col)];
      T* gx = &dgx[size_t(row * GH)];
      T* gr = &dgr[size_t(row * GH)];
      const T* hp = &tp.hprev[size_t(row * H)];
      for (int64_t j = 0; j < H; ++j) dhb[j] += dyo[j];
      switch (d.cell) {
        case RnnCell::Lstm:
          for (int64_t j = 0; j < H; ++j) {
            T i = a[j], f = a[H + j], gg = a[2 * H + j], og = a[3 * H + j];
            T tc = std::tanh(tp.c[size_t(row * H + j)]);
            T dcell = dcb[j] + dhb[j] * og * (T(1) - tc * tc);
            gx[j] = dcell * gg * i * (T(1) - i);
            gx[H + j] = dcell * tp.cprev[size_t(row * H + j)] * f * (T(1) - f);
            gx[2 * H + j] = dcell * i * (T(1) - gg * gg);
            gx[3 * H + j] = dhb[j] * tc * og * (T(1) - og);
            dcb[j] = dcell * f;
            dhb[j] = 0;
          }
          break;
        case RnnCell::LbrGru:
          for (int64_t j = 0; j < H; ++j) {
            T r = a[j], z = a[H + j], n = a[2 * H + j];
            T dan = dhb[j] * (T(1) - z) * (T(1) - n * n);
            T daz = dhb[j] * (hp[j] - n) * z * (T(1) - z);
            T dar = dan * tp.rn[size_t(row * H + j)] * r * (T(1) - r);
            gx[j] = gr[j] = dar;
            gx[H + j] = gr[H + j] = daz;
            gx[2 * H + j] = dan;
            gr[2 * H + j] = dan * r;
            dhb[j] = dhb[j] * z;  // the direct path to the previous state
          }
          break;
        case RnnCell::RnnTanh:
        case RnnCell::RnnRelu:
          for (int64_t j = 0; j < H; ++j) {
            T v = a[j];
            gx[j] = dhb[j] * (d.cell == RnnCell::RnnTanh ? T(1) - v * v : (v > 0 ? T(1) : T(0)));
            dhb[j] = 0;
          }
          break;
        default: throw NotImplementedError("OptimizedRNNStack: only LSTM, cuDNN GRU and tanh/ReLU RNN cells");
      }
      std::copy(gr, gr + GH, &step[size_t(b * GH)]);
    }
    // dh' += dG_r R for the sequences active at this step (others have zero rows).
    gemm<T>(false, false, g.B, H, GH, T(1), step.data(), GH, R, H, T(1), dh.data(), H);
  }
  // Weight and input gradients over all steps at once (padded rows are zero).
  gemm<T>(true, false, GH, I, TB, T(1), dgx.data(), GH, in.data(), I, T(1), dw + o.w, I);
  gemm<T>(true, false, GH, H, TB, T(1), dgr.data(), GH, tp.hprev.data(), H, T(1), dw + o.r, H);
  for (int64_t r = 0; r < TB; ++r)
    for (int64_t k = 0; k < GH; ++k) {
      dw[o.bw + k] += dgx[size_t(r * GH + k)];
      dw[o.br + k] += dgr[size_t(r * GH + k)];
    }
  gemm<T>(false, false, TB, I, GH, T(1), dgx.data(), GH, W, I, T(1), din.data(), I);
}

void check_sizes(const RnnStackDims& d, const NDArrayView& x, const NDArrayView& weights) {
  if (x.rank() != 3 || x.shape()[2] != d.input_size)
    throw ValueError("OptimizedRNNStack: expected an input of shape [T, B, " + std::to_string(d.input_size) +
                     "], got " + x.shape().str());
  if (weights.numel() != d.weight_count())
    throw ValueError("OptimizedRNNStack: the weights have " + std::to_string(weights.numel()) +
                     " elements; this stack needs " + std::to_string(d.weight_count()));
}

// float32 on oneDNN's RNN primitives (kernels/cpu/rnn.h): the cuDNN-packed weights are
// repacked per layer and direction into oneDNN's ldigo layout, and the gradients back.

// oneDNN gate g is cuDNN gate kDnnlFromCudnn[g]: same order for LSTM (i, f, g, o) and
// plain RNNs; GRU: oneDNN (u, r, c~) from cuDNN (r, z, n).
int cudnn_gate(RnnCell cell, int64_t g) { return cell == RnnCell::LbrGru ? int(g == 0 ? 1 : g == 1 ? 0 : 2) : int(g); }

struct DnnlWeights {
  std::vector<std::vector<float>> wx, wh, bias;
};

DnnlWeights to_dnnl(const RnnStackDims& d, const float* w) {
  const int64_t G = d.gates(), H = d.hidden;
  DnnlWeights out;
  for (int64_t l = 0; l < d.layers; ++l)
    for (int64_t k = 0; k < d.dirs(); ++k) {
      const int64_t I = d.layer_input(l);
      RnnBlockOffsets o = rnn_block_offsets(d, l, k);
      std::vector<float> wx(size_t(I * G * H)), wh(size_t(H * G * H)), b(size_t(rnn_bias_gates(d.cell) * H));
      for (int64_t g = 0; g < G; ++g) {
        const int64_t src = cudnn_gate(d.cell, g) * H;
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t i = 0; i < I; ++i) wx[size_t((i * G + g) * H + h)] = w[o.w + (src + h) * I + i];
          for (int64_t j = 0; j < H; ++j) wh[size_t((j * G + g) * H + h)] = w[o.r + (src + h) * H + j];
          const bool split = d.cell == RnnCell::LbrGru && g == 2;  // the recurrent candidate bias stays apart
          b[size_t(g * H + h)] = w[o.bw + src + h] + (split ? 0.f : w[o.br + src + h]);
          if (split) b[size_t(3 * H + h)] = w[o.br + src + h];
        }
      }
      out.wx.push_back(std::move(wx));
      out.wh.push_back(std::move(wh));
      out.bias.push_back(std::move(b));
    }
  return out;
}

void from_dnnl_grads(const RnnStackDims& d, const DnnlWeights& g, float* dw) {
  const int64_t G = d.gates(), H = d.hidden;
  size_t idx = 0;
  for (int64_t l = 0; l < d.layers; ++l)
    for (int64_t k = 0; k < d.dirs(); ++k, ++idx) {
      const int64_t I = d.layer_input(l);
      RnnBlockOffsets o = rnn_block_offsets(d, l, k);
      const auto &wx = g.wx[idx], &wh = g.wh[idx], &b = g.bias[idx];
      for (int64_t gg = 0; gg < G; ++gg) {
        const int64_t dst = cudnn_gate(d.cell, gg) * H;
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t i = 0; i < I; ++i) dw[o.w + (dst + h) * I + i] = wx[size_t((i * G + gg) * H + h)];
          for (int64_t j = 0; j < H; ++j) dw[o.r + (dst + h) * H + j] = wh[size_t((j * G + gg) * H + h)];
          const bool split = d.cell == RnnCell::LbrGru && gg == 2;
          dw[o.bw + dst + h] = b[size_t(gg * H + h)];
          dw[o.br + dst + h] = split ? b[size_t(3 * H + h)] : b[size_t(gg * H + h)];
        }
      }
    }
}

struct DnnlTape : RnnStackTape {
  std::shared_ptr<const DnnlWeights> weights;          // the forward records refer to them (RnnForwardArgs::keep)
  std::shared_ptr<RnnSaved> saved;                     // the whole stack in one call
  std::vector<std::shared_ptr<RnnSaved>> layer_saved;  // or one call per layer (final states)
};

RnnDims dnnl_dims(const RnnStackDims& d, const Geometry& g) {
  RnnDims r;
  r.cell = d.cell;
  r.direction = d.bidirectional ? RnnDirection::Bidirectional : RnnDirection::Forward;
  r.layers = d.layers;
  r.input = d.input_size;
  r.hidden = d.hidden;
  r.steps = g.T;
  r.batch = g.B;
  return r;
}

std::vector<RnnLayerWeights> layer_weights(const DnnlWeights& w) {
  std::vector<RnnLayerWeights> out;
  for (size_t i = 0; i < w.wx.size(); ++i) out.push_back({w.wx[i].data(), w.wh[i].data(), w.bias[i].data()});
  return out;
}

NDArrayView forward_dnnl(const RnnStackDims& d, const NDArrayView& x_view, const std::vector<int64_t>& lengths,
                         const NDArrayView& weights, std::shared_ptr<RnnStackTape>* tape_out) {
  check_sizes(d, x_view, weights);
  Geometry g = geometry(x_view, lengths);
  NDArrayView x = x_view.contiguous(), w = weights.contiguous();
  auto tape = std::make_shared<DnnlTape>();
  tape->weights = std::make_shared<const DnnlWeights>(to_dnnl(d, w.data<float>()));
  NDArrayView y(DataType::Float, NDShape{g.T, g.B, d.output_size()});
  RnnForwardArgs a;
  a.x = x.data<float>();
  a.lengths = g.len.data();
  a.weights = layer_weights(*tape->weights);
  a.keep = tape->weights;
  a.y = y.data<float>();
  a.training = tape_out != nullptr;
  tape->saved = rnn_forward(dnnl_dims(d, g), a);
  if (tape_out) *tape_out = tape;
  return y;
}

RnnStackGrads backward_dnnl(const RnnStackDims& d, const NDArrayView& x, const std::vector<int64_t>& lengths,
                            const NDArrayView& weights, const NDArrayView& dy_view, const DnnlTape& tape) {
  check_sizes(d, x, weights);
  Geometry g = geometry(x, lengths);
  NDArrayView dy = dy_view.contiguous();
  DnnlWeights grads = *tape.weights;  // same shapes; overwritten by the kernel
  RnnBackwardArgs a;
  a.dy = dy.data<float>();
  for (size_t i = 0; i < grads.wx.size(); ++i)
    a.grads.push_back({grads.wx[i].data(), grads.wh[i].data(), grads.bias[i].data()});
  RnnStackGrads out{NDArrayView(DataType::Float, x.shape()), NDArrayView(DataType::Float, weights.shape())};
  a.dx = out.dx.data<float>();
  rnn_backward(dnnl_dims(d, g), *tape.saved, a);
  from_dnnl_grads(d, grads, out.dw.data<float>());
  return out;
}

// Final states on oneDNN (cells without a cell state): oneDNN's dst_iter is the state
// after the padded batch's last step, so the stack runs one layer per call and each
// unit's final h is read from its layer's output, at the sequence's last step (forward
// direction) or first (backward); in backward, the final h's gradient is added to that
// layer's output gradient at the same step, which is exact since h there is that output.
// An LSTM's final c is not among the outputs: it runs on the reference loops.
bool dnnl_final_states(const RnnStackDims& d) { return d.cell != RnnCell::Lstm; }

// Row (t, b) and column offset of unit (layer, dir)'s final h in its layer's [T, B, D*H] output.
int64_t final_h_at(const RnnStackDims& d, const Geometry& g, int64_t b, int64_t dir) {
  const int64_t t = dir == 0 ? g.len[size_t(b)] - 1 : 0;
  return (t * g.B + b) * d.output_size() + dir * d.hidden;
}

NDArrayView forward_dnnl_by_layer(const RnnStackDims& d, const NDArrayView& x_view, const std::vector<int64_t>& lengths,
                                  const NDArrayView& weights, std::shared_ptr<RnnStackTape>* tape_out,
                                  RnnStackFinal& final_states) {
  check_sizes(d, x_view, weights);
  Geometry g = geometry(x_view, lengths);
  const int64_t D = d.dirs(), H = d.hidden, units = d.layers * D;
  NDArrayView in = x_view.contiguous(), w = weights.contiguous();
  auto tape = std::make_shared<DnnlTape>();
  tape->weights = std::make_shared<const DnnlWeights>(to_dnnl(d, w.data<float>()));
  const std::vector<RnnLayerWeights> all = layer_weights(*tape->weights);
  final_states.h = NDArrayView::zeros(DataType::Float, NDShape{g.B, units, H});
  final_states.c = NDArrayView();
  float* hf = final_states.h.data<float>();
  for (int64_t l = 0; l < d.layers; ++l) {
    RnnDims r = dnnl_dims(d, g);
    r.layers = 1;
    r.input = d.layer_input(l);
    NDArrayView y(DataType::Float, NDShape{g.T, g.B, d.output_size()});
    RnnForwardArgs a;
    a.x = in.data<float>();
    a.lengths = g.len.data();
    a.weights.assign(all.begin() + l * D, all.begin() + (l + 1) * D);
    a.keep = tape->weights;
    a.y = y.data<float>();
    a.training = tape_out != nullptr;
    std::shared_ptr<RnnSaved> saved = rnn_forward(r, a);
    if (tape_out) tape->layer_saved.push_back(std::move(saved));
    const float* yp = y.data<float>();
    for (int64_t b = 0; b < g.B; ++b) {
      if (g.len[size_t(b)] == 0) continue;
      for (int64_t k = 0; k < D; ++k) {
        const float* src = yp + final_h_at(d, g, b, k);
        std::copy(src, src + H, hf + (b * units + l * D + k) * H);
      }
    }
    in = y;
  }
  if (tape_out) *tape_out = tape;
  return in;
}

RnnStackGrads backward_dnnl_by_layer(const RnnStackDims& d, const NDArrayView& x, const std::vector<int64_t>& lengths,
                                     const NDArrayView& weights, const NDArrayView& dy_view, const DnnlTape& tape,
                                     const RnnStackFinal* d_final) {
  check_sizes(d, x, weights);
  Geometry g = geometry(x, lengths);
  const int64_t D = d.dirs(), H = d.hidden, units = d.layers * D, TB = g.T * g.B;
  if (int64_t(tape.layer_saved.size()) != d.layers)
    throw Error("OptimizedRNNStack: backward got the tape of a different forward pass");
  NDArrayView dy_c = dy_view.contiguous();
  std::vector<float> dcur(dy_c.data<float>(), dy_c.data<float>() + dy_c.numel()), dnext;
  NDArrayView dhf_view;
  if (d_final && d_final->h.defined()) {
    if (d_final->h.numel() != g.B * units * H)
      throw Error("OptimizedRNNStack: the gradient of the final h states has shape " + d_final->h.shape().str());
    dhf_view = (d_final->h.dtype() == DataType::Float ? d_final->h : d_final->h.cast(DataType::Float)).contiguous();
  }
  const float* dhf = dhf_view.defined() ? dhf_view.data<float>() : nullptr;
  DnnlWeights grads = *tape.weights;  // same shapes; overwritten by the kernel
  for (int64_t l = d.layers - 1; l >= 0; --l) {
    if (dhf)
      for (int64_t b = 0; b < g.B; ++b) {
        if (g.len[size_t(b)] == 0) continue;
        for (int64_t k = 0; k < D; ++k) {
          float* dst = dcur.data() + final_h_at(d, g, b, k);
          const float* src = dhf + (b * units + l * D + k) * H;
          for (int64_t j = 0; j < H; ++j) dst[j] += src[j];
        }
      }
    RnnDims r = dnnl_dims(d, g);
    r.layers = 1;
    r.input = d.layer_input(l);
    dnext.assign(size_t(TB * r.input), 0.f);
    RnnBackwardArgs a;
    a.dy = dcur.data();
    for (int64_t k = 0; k < D; ++k) {
      const size_t u = size_t(l * D + k);
      a.grads.push_back({grads.wx[u].data(), grads.wh[u].data(), grads.bias[u].data()});
    }
    a.dx = dnext.data();
    rnn_backward(r, *tape.layer_saved[size_t(l)], a);
    dcur.swap(dnext);
  }
  RnnStackGrads out{NDArrayView(DataType::Float, x.shape()), NDArrayView(DataType::Float, weights.shape())};
  std::copy(dcur.begin(), dcur.end(), out.dx.data<float>());
  from_dnnl_grads(d, grads, out.dw.data<float>());
  return out;
}

// set_rnn_fusion(false) (or CNTK_RNN_FUSION=0) keeps float32 on the reference loops (as it
// keeps Recurrence off the fused kernel), for comparisons and debugging.
NDArrayView as_float(const NDArrayView& a) { return a.dtype() == DataType::Float ? a : a.cast(DataType::Float); }

bool use_dnnl(const NDArrayView& x) { return x.dtype() == DataType::Float && cpu_backend().fuses_recurrences(); }

template <class T>
NDArrayView forward_impl(const RnnStackDims& d, const NDArrayView& x, const std::vector<int64_t>& lengths,
                         const NDArrayView& weights, std::shared_ptr<RnnStackTape>* tape_out,
                         RnnStackFinal* final_states) {
  check_sizes(d, x, weights);
  Geometry g = geometry(x, lengths);
  const int64_t TB = g.T * g.B, OD = d.output_size(), units = d.layers * d.dirs();
  auto tape = std::make_shared<Tape<T>>();
  std::vector<T> w = to_vector<T>(weights);
  std::vector<T> in = to_vector<T>(x), y;
  T *h_final = nullptr, *c_final = nullptr;
  if (final_states) {
    const NDShape shape{g.B, units, d.hidden};
    final_states->h = NDArrayView::zeros(dtype_of<T>(), shape);
    h_final = final_states->h.template data<T>();
    final_states->c = NDArrayView();
    if (d.cell == RnnCell::Lstm) {
      final_states->c = NDArrayView::zeros(dtype_of<T>(), shape);
      c_final = final_states->c.template data<T>();
    }
  }
  for (int64_t l = 0; l < d.layers; ++l) {
    y.assign(size_t(TB * OD), T(0));
    tape->dirs.emplace_back(size_t(d.dirs()));
    for (int64_t k = 0; k < d.dirs(); ++k)
      dir_forward<T>(d, g, in, d.layer_input(l), w.data(), rnn_block_offsets(d, l, k), k, y, k * d.hidden,
                     tape->dirs.back()[size_t(k)], h_final, c_final, l * d.dirs() + k, units);
    tape->layer_in.push_back(std::move(in));
    in = y;
  }
  if (tape_out) *tape_out = tape;
  return from_vector<T>(y, NDShape{g.T, g.B, OD});
}

// The gradient of one kind of final state as T values laid out [B, L*D, H] (null: none).
template <class T>
std::vector<T> final_grad(const NDArrayView& g, const RnnStackDims& d, int64_t B, const char* what) {
  if (!g.defined()) return {};
  if (g.numel() != B * d.layers * d.dirs() * d.hidden)
    throw Error(std::string("OptimizedRNNStack: the gradient of the final ") + what + " states has shape " +
                g.shape().str());
  return to_vector<T>(g);
}

template <class T>
RnnStackGrads backward_impl(const RnnStackDims& d, const NDArrayView& x, const std::vector<int64_t>& lengths,
                            const NDArrayView& weights, const NDArrayView& dy_view, const RnnStackTape& tape_base,
                            const RnnStackFinal* d_final) {
  check_sizes(d, x, weights);
  auto* tape = dynamic_cast<const Tape<T>*>(&tape_base);
  if (!tape || int64_t(tape->dirs.size()) != d.layers)
    throw Error("OptimizedRNNStack: backward got the tape of a different forward pass");
  Geometry g = geometry(x, lengths);
  const int64_t TB = g.T * g.B, OD = d.output_size();
  std::vector<T> w = to_vector<T>(weights), dw(w.size(), T(0));
  std::vector<T> dy = to_vector<T>(dy_view);
  if (int64_t(dy.size()) != TB * OD) throw Error("OptimizedRNNStack: output gradient of the wrong size");
  for (int64_t t = 0; t < g.T; ++t)
    for (int64_t b = 0; b < g.B; ++b)
      if (t >= g.len[size_t(b)]) std::fill_n(&dy[size_t((t * g.B + b) * OD)], OD, T(0));
  const int64_t units = d.layers * d.dirs();
  std::vector<T> dh_final = d_final ? final_grad<T>(d_final->h, d, g.B, "h") : std::vector<T>();
  std::vector<T> dc_final =
      d_final && d.cell == RnnCell::Lstm ? final_grad<T>(d_final->c, d, g.B, "c") : std::vector<T>();
  for (int64_t l = d.layers - 1; l >= 0; --l) {
    const int64_t I = d.layer_input(l);
    std::vector<T> din(size_t(TB * I), T(0));
    for (int64_t k = 0; k < d.dirs(); ++k)
      dir_backward<T>(d, g, tape->layer_in[size_t(l)], I, w.data(), rnn_block_offsets(d, l, k), k, dy, k * d.hidden,
                      tape->dirs[size_t(l)][size_t(k)], din, dw.data(), dh_final.empty() ? nullptr : dh_final.data(),
                      dc_final.empty() ? nullptr : dc_final.data(), l * d.dirs() + k, units);
    dy = std::move(din);
  }
  return {from_vector<T>(dy, x.shape()), from_vector<T>(dw, weights.shape())};
}

}  // namespace

NDArrayView rnn_stack_forward(const RnnStackDims& d, const NDArrayView& x, const std::vector<int64_t>& lengths,
                              const NDArrayView& weights, std::shared_ptr<RnnStackTape>* tape,
                              RnnStackFinal* final_states) {
  if (use_dnnl(x) && !final_states) return forward_dnnl(d, x, lengths, as_float(weights), tape);
  if (use_dnnl(x) && dnnl_final_states(d))
    return forward_dnnl_by_layer(d, x, lengths, as_float(weights), tape, *final_states);
  return CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { return forward_impl<T>(d, x, lengths, weights, tape, final_states); });
}

RnnStackGrads rnn_stack_backward(const RnnStackDims& d, const NDArrayView& x, const std::vector<int64_t>& lengths,
                                 const NDArrayView& weights, const NDArrayView& dy, const RnnStackTape& tape,
                                 const RnnStackFinal* d_final) {
  if (auto* fused = dynamic_cast<const DnnlTape*>(&tape)) {
    if (!fused->layer_saved.empty())
      return backward_dnnl_by_layer(d, x, lengths, as_float(weights), as_float(dy), *fused, d_final);
    if (d_final) throw Error("OptimizedRNNStack: final-state gradients need the tape of a forward that returned them");
    return backward_dnnl(d, x, lengths, as_float(weights), as_float(dy), *fused);
  }
  return CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { return backward_impl<T>(d, x, lengths, weights, dy, tape, d_final); });
}

}  // namespace cntk::kernels
