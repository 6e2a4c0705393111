#include "kernels/cpu/rnn.h"
#include "kernels/cpu/dnnl_context.h"
#include "kernels/cpu/primitive_cache.h"
#include "kernels/cpu/rnn_saved.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <string>
#include <type_traits>
#include <oneapi/dnnl/dnnl.hpp>

#include "cntk/common.h"
#include "cntk/switches.h"

namespace cntk::kernels {

int rnn_gates(RnnCell cell) {
  switch (cell) {
    case RnnCell::Lstm: return 4;
    case RnnCell::Gru:
    case RnnCell::LbrGru: return 3;
    default: return 1;
  }
}

int rnn_bias_gates(RnnCell cell) { return cell == RnnCell::LbrGru ? 4 : rnn_gates(cell); }

const char* to_string(RnnCell cell) {
  switch (cell) {
    case RnnCell::Lstm: return "lstm";
    case RnnCell::Gru: return "gru";
    case RnnCell::LbrGru: return "lbr_gru";
    case RnnCell::RnnTanh: return "rnn_tanh";
    case RnnCell::RnnRelu: return "rnn_relu";
    case RnnCell::RnnSigmoid: return "rnn_sigmoid";
  }
  return "?";
}

namespace {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// One direction of one layer, always run left to right (the kernel reverses the valid
// part of each sequence for right-to-left), so every primitive is L = 1, D = 1.
struct CellShape {
  RnnCell cell;
  int64_t T, B, C, H;
  bool bf16 = false;  // the bfloat16 math mode: the layer and iteration states and the weights in bfloat16
  std::string key(bool training) const {
    return std::to_string(int(cell)) + (training ? "t" : "i") + (bf16 ? "b" : "") + std::to_string(T) + "," +
           std::to_string(B) + "," + std::to_string(C) + "," + std::to_string(H);
  }
};

// What a cell's primitives read and write. In float32, or under the bfloat16 math mode
// with the layer and iteration states (h) and the weights in bfloat16; the cell states
// (LSTM's c), the bias and every gradient (diff_*) stay float32.
struct CellMds {
  md src_layer, src_iter, src_iter_c, w_layer, w_iter, bias, dst_layer, dst_iter, dst_iter_c;
  md w_layer_plain, w_iter_plain;  // the user's float32 weights
  md diff_src_layer, diff_src_iter, diff_w_layer, diff_w_iter, diff_dst_layer, diff_dst_iter;
};

CellMds cell_mds(const CellShape& s) {
  const int64_t G = rnn_gates(s.cell), Gb = rnn_bias_gates(s.cell);
  const dt t = s.bf16 ? dt::bf16 : dt::f32;
  CellMds m;
  m.src_layer = md({s.T, s.B, s.C}, t, tag::tnc);
  m.dst_layer = md({s.T, s.B, s.H}, t, tag::tnc);
  m.src_iter = md({1, 1, s.B, s.H}, t, tag::ldnc);
  m.dst_iter = m.src_iter;
  if (s.cell == RnnCell::Lstm) m.src_iter_c = m.dst_iter_c = md({1, 1, s.B, s.H}, dt::f32, tag::ldnc);
  m.w_layer = md({1, 1, s.C, G, s.H}, t, tag::any);
  m.w_iter = md({1, 1, s.H, G, s.H}, t, tag::any);
  m.w_layer_plain = md({1, 1, s.C, G, s.H}, dt::f32, tag::ldigo);
  m.w_iter_plain = md({1, 1, s.H, G, s.H}, dt::f32, tag::ldigo);
  m.bias = md({1, 1, Gb, s.H}, dt::f32, tag::ldgo);
  m.diff_src_layer = md({s.T, s.B, s.C}, dt::f32, tag::tnc);
  m.diff_dst_layer = md({s.T, s.B, s.H}, dt::f32, tag::tnc);
  m.diff_src_iter = m.diff_dst_iter = md({1, 1, s.B, s.H}, dt::f32, tag::ldnc);
  m.diff_w_layer = md({1, 1, s.C, G, s.H}, dt::f32, tag::any);
  m.diff_w_iter = md({1, 1, s.H, G, s.H}, dt::f32, tag::any);
  return m;
}

dnnl::algorithm vanilla_activation(RnnCell c) {
  switch (c) {
    case RnnCell::RnnRelu: return dnnl::algorithm::eltwise_relu;
    case RnnCell::RnnSigmoid: return dnnl::algorithm::eltwise_logistic;
    default: return dnnl::algorithm::eltwise_tanh;
  }
}

// Primitives are cached and shared by every thread; each execution brings its own
// scratchpad (a per-thread buffer), since a library-held one would be shared by
// concurrent executions of one primitive.
dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

// The primitives for one cell shape, with their primitive descriptors for memory queries.
struct CellPrims {
  dnnl::primitive fwd, bwd;
  dnnl::primitive_desc fwd_pd, bwd_pd;
};

// GRU and linear-before-reset GRU take the same descriptors; only the primitive types differ.
template <class Fwd, class Bwd>
void make_gru_prims(const CellMds& m, dnnl::prop_kind prop, bool training, dnnl::engine& e, CellPrims& p) {
  const auto dir = dnnl::rnn_direction::unidirectional_left2right;
  typename Fwd::desc fd(prop, dir, m.src_layer, m.src_iter, m.w_layer, m.w_iter, m.bias, m.dst_layer, m.dst_iter);
  typename Fwd::primitive_desc fpd(fd, user_scratchpad(), e);
  p.fwd = Fwd(fpd);
  p.fwd_pd = fpd;
  if (!training) return;
  typename Bwd::desc bd(dnnl::prop_kind::backward, dir, m.src_layer, m.src_iter, m.w_layer, m.w_iter, m.bias,
                        m.dst_layer, m.dst_iter, m.diff_src_layer, m.diff_src_iter, m.diff_w_layer, m.diff_w_iter,
                        m.bias, m.diff_dst_layer, m.diff_dst_iter);
  typename Bwd::primitive_desc bpd(bd, user_scratchpad(), e, fpd);
  p.bwd = Bwd(bpd);
  p.bwd_pd = bpd;
}

CellPrims make_prims(const CellShape& s, bool training) {
  const CellMds m = cell_mds(s);
  const auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const auto dir = dnnl::rnn_direction::unidirectional_left2right;
  const auto bprop = dnnl::prop_kind::backward;
  CellPrims p;
  auto& e = dnnl_engine();
  switch (s.cell) {
    case RnnCell::Lstm: {
      dnnl::lstm_forward::desc fd(prop, dir, m.src_layer, m.src_iter, m.src_iter_c, m.w_layer, m.w_iter, m.bias,
                                  m.dst_layer, m.dst_iter, m.dst_iter_c);
      dnnl::lstm_forward::primitive_desc fpd(fd, user_scratchpad(), e);
      p.fwd = dnnl::lstm_forward(fpd);
      p.fwd_pd = fpd;
      if (training) {
        dnnl::lstm_backward::desc bd(bprop, dir, m.src_layer, m.src_iter, m.src_iter_c, m.w_layer, m.w_iter, m.bias,
                                     m.dst_layer, m.dst_iter, m.dst_iter_c, m.diff_src_layer, m.diff_src_iter,
                                     m.src_iter_c, m.diff_w_layer, m.diff_w_iter, m.bias, m.diff_dst_layer,
                                     m.diff_dst_iter, m.dst_iter_c);
        dnnl::lstm_backward::primitive_desc bpd(bd, user_scratchpad(), e, fpd);
        p.bwd = dnnl::lstm_backward(bpd);
        p.bwd_pd = bpd;
      }
      break;
    }
    case RnnCell::Gru: make_gru_prims<dnnl::gru_forward, dnnl::gru_backward>(m, prop, training, e, p); break;
    case RnnCell::LbrGru: make_gru_prims<dnnl::lbr_gru_forward, dnnl::lbr_gru_backward>(m, prop, training, e, p); break;
    default: {
      const auto act = vanilla_activation(s.cell);
      dnnl::vanilla_rnn_forward::desc fd(prop, act, dir, m.src_layer, m.src_iter, m.w_layer, m.w_iter, m.bias,
                                         m.dst_layer, m.dst_iter);
      dnnl::vanilla_rnn_forward::primitive_desc fpd(fd, user_scratchpad(), e);
      p.fwd = dnnl::vanilla_rnn_forward(fpd);
      p.fwd_pd = fpd;
      if (training) {
        dnnl::vanilla_rnn_backward::desc bd(bprop, act, dir, m.src_layer, m.src_iter, m.w_layer, m.w_iter, m.bias,
                                            m.dst_layer, m.dst_iter, m.diff_src_layer, m.diff_src_iter, m.diff_w_layer,
                                            m.diff_w_iter, m.bias, m.diff_dst_layer, m.diff_dst_iter);
        dnnl::vanilla_rnn_backward::primitive_desc bpd(bd, user_scratchpad(), e, fpd);
        p.bwd = dnnl::vanilla_rnn_backward(bpd);
        p.bwd_pd = bpd;
      }
      break;
    }
  }
  return p;
}

CellPrims cell_prims(const CellShape& s, bool training) {
  // Sequence lengths vary per minibatch, and each is its own primitive: hence the bound.
  static auto* cache = new PrimitiveCache<std::string, CellPrims>(512);
  return cache->get(s.key(training), [&] { return make_prims(s, training); });
}

md arg_md(const dnnl::primitive_desc& pd, int arg) { return pd.query_md(dnnl::query::exec_arg_md, arg); }

size_t floats_of(const md& m) { return (m.get_size() + sizeof(float) - 1) / sizeof(float); }

dnnl::memory wrap(const md& m, const float* p) { return dnnl::memory(m, dnnl_engine(), const_cast<float*>(p)); }

// Whether a layout has no padding: its size is that of its elements.
bool unpadded(const md& m) {
  size_t n = m.data_type() == dt::bf16 ? 2 : sizeof(float);
  for (int64_t d : m.dims()) n *= size_t(d);
  return m.get_size() == n;
}

// `src` (laid out as `plain`) as a memory in layout `want`: the buffer itself when the
// layouts agree, else a reorder into `buf` (which writes every element; only a padded
// layout's padding needs zeros first).
dnnl::memory in_layout(const md& plain, const float* src, const md& want, std::vector<float>& buf) {
  if (want == plain) return wrap(plain, src);
  if (unpadded(want))
    buf.resize(floats_of(want));
  else
    buf.assign(floats_of(want), 0.f);
  dnnl::memory out = wrap(want, buf.data());
  dnnl::memory in = wrap(plain, src);
  dnnl::reorder(in, out).execute(dnnl_stream(), in, out);
  dnnl_stream().wait();
  return out;
}

// bfloat16 storage (the bfloat16 math mode's states): float32's upper half, rounded to
// nearest even; a NaN stays a (quiet) NaN.
struct Bf16 {
  uint16_t bits;
};

inline Bf16 to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return Bf16{uint16_t((u >> 16) | 0x40u)};
  return Bf16{uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};
}

inline float to_float(Bf16 x) {
  const uint32_t u = uint32_t(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

template <class T>
T stored(float x) {
  if constexpr (std::is_same_v<T, Bf16>)
    return to_bf16(x);
  else
    return x;
}

inline float loaded(float x) { return x; }
inline float loaded(Bf16 x) { return to_float(x); }

// f(p) with the state buffer p as its elements' type: float, or Bf16 under the bfloat16
// math mode.
template <class F>
void as_states(bool bf16, float* p, F&& f) {
  if (bf16)
    f(reinterpret_cast<Bf16*>(p));
  else
    f(p);
}

// n float values into `dst`, in the data type of m (float32 or bfloat16); and back.
void store_as(const md& m, const float* src, void* dst, int64_t n) {
  if (m.data_type() == dt::bf16)
    std::transform(src, src + n, static_cast<Bf16*>(dst), to_bf16);
  else
    std::copy(src, src + n, static_cast<float*>(dst));
}

void load_from(const md& m, const void* src, float* dst, int64_t n) {
  if (m.data_type() == dt::bf16)
    std::transform(static_cast<const Bf16*>(src), static_cast<const Bf16*>(src) + n, dst, to_float);
  else
    std::copy(static_cast<const float*>(src), static_cast<const float*>(src) + n, dst);
}

// Copies x [T, B, C] to dst in the order one direction reads it: forward keeps each
// sequence's steps in place, backward reverses the valid part; padding becomes zero.
// Out: float, or Bf16 under the bfloat16 math mode.
template <class Out>
void to_direction(const float* src, Out* dst, int64_t T, int64_t B, int64_t C, const std::vector<int64_t>& len,
                  bool reverse, int64_t src_stride, int64_t src_offset) {
#pragma omp parallel for schedule(static) if (T * B * C > 65536)
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      Out* o = dst + (t * B + b) * C;
      const int64_t n = len[size_t(b)];
      if (t >= n) {
        std::fill(o, o + C, stored<Out>(0.f));
        continue;
      }
      const int64_t ts = reverse ? n - 1 - t : t;
      const float* i = src + (ts * B + b) * src_stride + src_offset;
      std::transform(i, i + C, o, stored<Out>);
    }
}

// The inverse of to_direction into a wider [T, B, dst_stride] buffer at dst_offset;
// accumulate adds instead of writing. Padding is written as zero (not touched when
// accumulating). In: float, or Bf16 under the bfloat16 math mode.
template <class In>
void from_direction(const In* src, float* dst, int64_t T, int64_t B, int64_t C, const std::vector<int64_t>& len,
                    bool reverse, int64_t dst_stride, int64_t dst_offset, bool accumulate) {
#pragma omp parallel for schedule(static) if (T * B * C > 65536)
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      float* o = dst + (t * B + b) * dst_stride + dst_offset;
      const int64_t n = len[size_t(b)];
      if (t >= n) {
        if (!accumulate) std::fill(o, o + C, 0.f);
        continue;
      }
      const int64_t ts = reverse ? n - 1 - t : t;
      const In* i = src + (ts * B + b) * C;
      if (accumulate)
        for (int64_t k = 0; k < C; ++k) o[k] += loaded(i[k]);
      else
        std::transform(i, i + C, o, [](In x) { return loaded(x); });
    }
}

}  // namespace

namespace {

// Forward records are reused: one whose last reference is dropped (its backward pass
// done) goes back to a small pool with its buffers, so that a training loop maps no
// new memory per minibatch (the page faults of fresh buffers cost milliseconds).
struct SavedPool {
  std::mutex mu;
  std::vector<std::unique_ptr<RnnSaved>> free;
};

SavedPool& saved_pool() {
  static SavedPool* p = new SavedPool();  // never destroyed: records may be released during static teardown
  return *p;
}

std::shared_ptr<RnnSaved> acquire_saved() {
  auto& pool = saved_pool();
  std::unique_ptr<RnnSaved> r;
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    if (!pool.free.empty()) {
      r = std::move(pool.free.back());
      pool.free.pop_back();
    }
  }
  if (!r) r = std::make_unique<RnnSaved>();
  return std::shared_ptr<RnnSaved>(r.release(), [](RnnSaved* done) {
    std::unique_ptr<RnnSaved> own(done);
    own->weights_owner.reset();
    auto& pool = saved_pool();
    std::lock_guard<std::mutex> lock(pool.mu);
    if (pool.free.size() < 4) pool.free.push_back(std::move(own));
  });
}

// Per-thread working buffers of the passes (grow-only, like RawBuffer).
struct RnnScratch {
  RawBuffer layer[2], dyd, dsrc, dnext[2], scratchpad;
  std::vector<float> wbuf_x, wbuf_h, dwx, dwh, db, dsi, dsic, ddi, ddic, dense_x;
};

RnnScratch& scratch() {
  thread_local RnnScratch s;
  return s;
}

// The scratchpad a primitive asks for, in `buf`.
dnnl::memory scratchpad_of(const dnnl::primitive_desc& pd, RawBuffer& buf) {
  const md want = pd.scratchpad_desc();
  buf.reset(floats_of(want) + 1);
  return wrap(want, buf.data());
}

void check_dims(const RnnDims& d) {
  if (d.layers < 1 || d.input < 1 || d.hidden < 1 || d.steps < 0 || d.batch < 0)
    throw ValueError("rnn: invalid dims (layers " + std::to_string(d.layers) + ", input " + std::to_string(d.input) +
                     ", hidden " + std::to_string(d.hidden) + ", steps " + std::to_string(d.steps) + ", batch " +
                     std::to_string(d.batch) + ")");
}

void lengths_of(const RnnDims& d, const int64_t* lengths, std::vector<int64_t>& len) {
  len.assign(size_t(d.batch), d.steps);
  if (lengths)
    for (int64_t b = 0; b < d.batch; ++b) {
      if (lengths[b] < 0 || lengths[b] > d.steps)
        throw ValueError("rnn: sequence " + std::to_string(b) + " has length " + std::to_string(lengths[b]) +
                         ", outside [0, " + std::to_string(d.steps) + "]");
      len[size_t(b)] = lengths[b];
    }
}

void check_sparse_rows(const RnnDims& d, const RnnSparseRows& s) {
  if (!s.indices || !s.values) throw ValueError("rnn: sparse x lacks its indices or values");
  const int64_t nnz = s.starts[d.steps * d.batch];
  for (int64_t e = 0; e < nnz; ++e)
    if (s.indices[e] < 0 || s.indices[e] >= d.input)
      throw ValueError("rnn: sparse x has index " + std::to_string(s.indices[e]) + ", outside [0, " +
                       std::to_string(d.input) + ")");
}

// x [T, B, input] from its sparse rows.
void densify_rows(const RnnDims& d, const RnnSparseRows& s, std::vector<float>& x) {
  const int64_t R = d.steps * d.batch;
  x.assign(size_t(R * d.input), 0.f);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t e = s.starts[r]; e < s.starts[r + 1]; ++e) x[size_t(r * d.input + s.indices[e])] += s.values[e];
}

// Whether the step-by-step LSTM runs this stack (RnnKernel).
bool steps_kernel(const RnnDims& d, RnnKernel k, bool bf16) {
  if (k == RnnKernel::Steps) {
    if (d.cell != RnnCell::Lstm)
      throw ValueError("rnn: the step-by-step kernel runs LSTMs only, not " + std::string(to_string(d.cell)));
    return true;
  }
  return k == RnnKernel::Auto && d.cell == RnnCell::Lstm && !bf16 && lstm_steps_enabled();
}

}  // namespace

std::shared_ptr<RnnSaved> rnn_forward(const RnnDims& d, const RnnForwardArgs& a) {
  check_dims(d);
  const int64_t D = d.directions(), T = d.steps, B = d.batch, H = d.hidden, L = d.layers;
  const int64_t G = rnn_gates(d.cell), Gb = rnn_bias_gates(d.cell);
  const bool lstm = d.cell == RnnCell::Lstm;
  if (int64_t(a.weights.size()) != L * D)
    throw ValueError("rnn: expected " + std::to_string(L * D) + " weight sets (layers x directions), got " +
                     std::to_string(a.weights.size()));
  if (T * B > 0 && ((!a.x && !a.x_sparse.starts) || !a.y)) throw ValueError("rnn: x and y must be given");
  for (auto& w : a.weights)
    if (!w.w_x || !w.w_h || !w.bias) throw ValueError("rnn: a weight set lacks w_x, w_h or bias");
  if (!a.x && a.x_sparse.starts) check_sparse_rows(d, a.x_sparse);
  // Inference keeps nothing, but takes a pooled record for its buffers all the same.
  auto saved = acquire_saved();
  saved->dims = d;
  if (a.training) saved->weights_owner = a.keep;
  saved->bf16 = bf16_math_active();
  saved->steps = saved->sparse_input = false;
  lengths_of(d, a.lengths, saved->lengths);
  saved->units.resize(size_t(L * D));
  const auto& len = saved->lengths;
  if (T == 0 || B == 0) {  // no step: the final states are the initial ones
    const int64_t n = L * D * B * H;
    auto initial = [n](const float* from, float* to) {
      if (!to) return;
      if (from)
        std::copy(from, from + n, to);
      else
        std::fill(to, to + n, 0.f);
    };
    initial(a.h0, a.h_final);
    if (lstm) initial(a.c0, a.c_final);
    return a.training ? saved : nullptr;
  }

  if (steps_kernel(d, a.kernel, saved->bf16)) {
    lstm_steps_forward(d, a, *saved);
    return a.training ? saved : nullptr;
  }
  RnnScratch& sc = scratch();
  const float* layer_in = a.x;  // layer l's input, [T, B, layer_input(l)]
  if (!layer_in) {              // oneDNN reads dense rows
    densify_rows(d, a.x_sparse, sc.dense_x);
    layer_in = sc.dense_x.data();
  }
  for (int64_t l = 0; l < L; ++l) {
    const int64_t C = d.layer_input(l);
    const CellShape s{d.cell, T, B, C, H, saved->bf16};
    const CellPrims p = cell_prims(s, a.training);
    const CellMds m = cell_mds(s);
    // The last layer writes y itself; the others alternate between two buffers.
    float* layer_out = a.y;
    if (l < L - 1) {
      sc.layer[l % 2].reset(size_t(T * B * D * H));
      layer_out = sc.layer[l % 2].data();
    }
    for (int64_t dir = 0; dir < D; ++dir) {
      const bool reverse = d.direction == RnnDirection::Backward || dir == 1;
      const int64_t u = l * D + dir;
      const RnnLayerWeights& w = a.weights[size_t(u)];
      RnnUnitSaved& us = saved->units[size_t(u)];
      us.src_layer.reset(floats_of(m.src_layer));
      as_states(s.bf16, us.src_layer.data(),
                [&](auto* states) { to_direction(layer_in, states, T, B, C, len, reverse, C, 0); });
      us.dst_layer.reset(floats_of(m.dst_layer));
      us.src_iter.assign(floats_of(m.src_iter), 0.f);
      if (a.h0) store_as(m.src_iter, a.h0 + u * B * H, us.src_iter.data(), B * H);
      us.dst_iter.reset(floats_of(m.dst_iter));
      if (lstm) {
        us.src_iter_c.assign(size_t(B * H), 0.f);
        if (a.c0) std::copy(a.c0 + u * B * H, a.c0 + (u + 1) * B * H, us.src_iter_c.begin());
        us.dst_iter_c.reset(size_t(B * H));
      }
      dnnl::memory wx = in_layout(m.w_layer_plain, w.w_x, arg_md(p.fwd_pd, DNNL_ARG_WEIGHTS_LAYER), sc.wbuf_x);
      dnnl::memory wh = in_layout(m.w_iter_plain, w.w_h, arg_md(p.fwd_pd, DNNL_ARG_WEIGHTS_ITER), sc.wbuf_h);
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC_LAYER, wrap(m.src_layer, us.src_layer.data())},
                                                 {DNNL_ARG_SRC_ITER, wrap(m.src_iter, us.src_iter.data())},
                                                 {DNNL_ARG_WEIGHTS_LAYER, wx},
                                                 {DNNL_ARG_WEIGHTS_ITER, wh},
                                                 {DNNL_ARG_BIAS, wrap(m.bias, w.bias)},
                                                 {DNNL_ARG_DST_LAYER, wrap(m.dst_layer, us.dst_layer.data())},
                                                 {DNNL_ARG_DST_ITER, wrap(m.dst_iter, us.dst_iter.data())}};
      if (lstm) {
        args[DNNL_ARG_SRC_ITER_C] = wrap(m.src_iter_c, us.src_iter_c.data());
        args[DNNL_ARG_DST_ITER_C] = wrap(m.dst_iter_c, us.dst_iter_c.data());
      }
      if (a.training) {
        const md ws = arg_md(p.fwd_pd, DNNL_ARG_WORKSPACE);
        us.workspace.reset(floats_of(ws));
        args[DNNL_ARG_WORKSPACE] = wrap(ws, us.workspace.data());
        us.hold_weights(w, a.keep != nullptr, C, G, Gb, H);
      }
      args[DNNL_ARG_SCRATCHPAD] = scratchpad_of(p.fwd_pd, sc.scratchpad);
      p.fwd.execute(dnnl_stream(), args);
      dnnl_stream().wait();
      if (a.h_final) load_from(m.dst_iter, us.dst_iter.data(), a.h_final + u * B * H, B * H);
      if (lstm && a.c_final) std::copy(us.dst_iter_c.data(), us.dst_iter_c.data() + B * H, a.c_final + u * B * H);
      as_states(s.bf16, us.dst_layer.data(),
                [&](auto* states) { from_direction(states, layer_out, T, B, H, len, reverse, D * H, dir * H, false); });
    }
    layer_in = layer_out;
  }
  return a.training ? saved : nullptr;
}

void rnn_backward(const RnnDims& d, const RnnSaved& saved, const RnnBackwardArgs& a) {
  check_dims(d);
  const RnnDims& f = saved.dims;
  if (f.cell != d.cell || f.direction != d.direction || f.layers != d.layers || f.input != d.input ||
      f.hidden != d.hidden || f.steps != d.steps || f.batch != d.batch)
    throw ValueError("rnn: backward dims differ from the forward pass's");
  const int64_t D = d.directions(), T = d.steps, B = d.batch, H = d.hidden, L = d.layers;
  const int64_t G = rnn_gates(d.cell), Gb = rnn_bias_gates(d.cell);
  const bool lstm = d.cell == RnnCell::Lstm;
  if (!a.grads.empty() && int64_t(a.grads.size()) != L * D)
    throw ValueError("rnn: expected " + std::to_string(L * D) + " gradient sets, got " +
                     std::to_string(a.grads.size()));
  const auto& len = saved.lengths;
  if (T == 0 || B == 0) {
    for (int64_t u = 0; u < int64_t(a.grads.size()); ++u) {
      const auto& g = a.grads[size_t(u)];
      const int64_t C = d.layer_input(u / D);
      if (g.w_x) std::fill(g.w_x, g.w_x + C * G * H, 0.f);
      if (g.w_h) std::fill(g.w_h, g.w_h + H * G * H, 0.f);
      if (g.bias) std::fill(g.bias, g.bias + Gb * H, 0.f);
    }
    if (a.dh0) std::fill(a.dh0, a.dh0 + L * D * B * H, 0.f);
    if (a.dc0) std::fill(a.dc0, a.dc0 + L * D * B * H, 0.f);
    return;
  }
  if (!a.dy) throw ValueError("rnn: backward needs dy");
  if (saved.steps) {
    lstm_steps_backward(d, saved, a);
    return;
  }

  RnnScratch& sc = scratch();
  sc.dyd.reset(size_t(T * B * H));
  sc.dsi.resize(size_t(B * H));
  sc.ddi.assign(size_t(B * H), 0.f);
  sc.db.resize(size_t(Gb * H));
  if (lstm) {
    sc.dsic.resize(size_t(B * H));
    sc.ddic.assign(size_t(B * H), 0.f);
  }
  const float* dcur = a.dy;  // the gradient of layer l's output, [T, B, D*H]
  for (int64_t l = L; l-- > 0;) {
    const int64_t C = d.layer_input(l);
    const CellShape s{d.cell, T, B, C, H, saved.bf16};
    const CellPrims p = cell_prims(s, true);
    const CellMds m = cell_mds(s);
    // Layer 0 writes dx itself (or nothing when it is not wanted); the others
    // alternate between two buffers. The directions add up (the first one writes).
    float* dnext = a.dx;
    if (l > 0) {
      sc.dnext[l % 2].reset(size_t(T * B * C));
      dnext = sc.dnext[l % 2].data();
    }
    sc.dsrc.reset(size_t(T * B * C));
    for (int64_t dir = 0; dir < D; ++dir) {
      const bool reverse = d.direction == RnnDirection::Backward || dir == 1;
      const int64_t u = l * D + dir;
      const RnnUnitSaved& us = saved.units[size_t(u)];
      to_direction(dcur, sc.dyd.data(), T, B, H, len, reverse, D * H, dir * H);
      const md bwx = arg_md(p.bwd_pd, DNNL_ARG_WEIGHTS_LAYER), bwh = arg_md(p.bwd_pd, DNNL_ARG_WEIGHTS_ITER);
      const md dwx_md = arg_md(p.bwd_pd, DNNL_ARG_DIFF_WEIGHTS_LAYER);
      const md dwh_md = arg_md(p.bwd_pd, DNNL_ARG_DIFF_WEIGHTS_ITER);
      dnnl::memory wx = in_layout(m.w_layer_plain, us.w_x, bwx, sc.wbuf_x);
      dnnl::memory wh = in_layout(m.w_iter_plain, us.w_h, bwh, sc.wbuf_h);
      // oneDNN accumulates weight gradients: into zeros, straight into the caller's
      // buffers where oneDNN's layout is the plain one.
      const RnnLayerGrads* g = a.grads.empty() ? nullptr : &a.grads[size_t(u)];
      auto diff_weights = [&](const md& have, const md& plain, float* dst, std::vector<float>& buf) {
        if (dst && have == plain) {
          std::fill(dst, dst + floats_of(have), 0.f);
          return wrap(have, dst);
        }
        buf.assign(floats_of(have), 0.f);
        return wrap(have, buf.data());
      };
      dnnl::memory dwx = diff_weights(dwx_md, m.w_layer_plain, g ? g->w_x : nullptr, sc.dwx);
      dnnl::memory dwh = diff_weights(dwh_md, m.w_iter_plain, g ? g->w_h : nullptr, sc.dwh);
      float* db = g && g->bias ? g->bias : sc.db.data();
      std::fill(db, db + Gb * H, 0.f);
      std::unordered_map<int, dnnl::memory> args{
          {DNNL_ARG_SRC_LAYER, wrap(m.src_layer, us.src_layer.data())},
          {DNNL_ARG_SRC_ITER, wrap(m.src_iter, us.src_iter.data())},
          {DNNL_ARG_WEIGHTS_LAYER, wx},
          {DNNL_ARG_WEIGHTS_ITER, wh},
          {DNNL_ARG_BIAS, wrap(m.bias, us.bias)},
          {DNNL_ARG_DST_LAYER, wrap(m.dst_layer, us.dst_layer.data())},
          {DNNL_ARG_DST_ITER, wrap(m.dst_iter, us.dst_iter.data())},
          {DNNL_ARG_WORKSPACE, wrap(arg_md(p.bwd_pd, DNNL_ARG_WORKSPACE), us.workspace.data())},
          {DNNL_ARG_DIFF_SRC_LAYER, wrap(m.diff_src_layer, sc.dsrc.data())},
          {DNNL_ARG_DIFF_SRC_ITER, wrap(m.diff_src_iter, sc.dsi.data())},
          {DNNL_ARG_DIFF_WEIGHTS_LAYER, dwx},
          {DNNL_ARG_DIFF_WEIGHTS_ITER, dwh},
          {DNNL_ARG_DIFF_BIAS, wrap(m.bias, db)},
          {DNNL_ARG_DIFF_DST_LAYER, wrap(m.diff_dst_layer, sc.dyd.data())},
          {DNNL_ARG_DIFF_DST_ITER, wrap(m.diff_dst_iter, sc.ddi.data())}};
      if (lstm) {
        args[DNNL_ARG_SRC_ITER_C] = wrap(m.src_iter_c, us.src_iter_c.data());
        args[DNNL_ARG_DST_ITER_C] = wrap(m.dst_iter_c, us.dst_iter_c.data());
        args[DNNL_ARG_DIFF_SRC_ITER_C] = wrap(m.src_iter_c, sc.dsic.data());
        args[DNNL_ARG_DIFF_DST_ITER_C] = wrap(m.dst_iter_c, sc.ddic.data());
      }
      args[DNNL_ARG_SCRATCHPAD] = scratchpad_of(p.bwd_pd, sc.scratchpad);
      p.bwd.execute(dnnl_stream(), args);
      dnnl_stream().wait();
      if (g) {  // the gradients oneDNN kept in its own layout, into the caller's plain ones
        auto out = [&](const md& have, dnnl::memory in, const md& plain, float* dst) {
          if (!dst || have == plain) return;
          dnnl::memory o = wrap(plain, dst);
          dnnl::reorder(in, o).execute(dnnl_stream(), in, o);
          dnnl_stream().wait();
        };
        out(dwx_md, dwx, m.w_layer_plain, g->w_x);
        out(dwh_md, dwh, m.w_iter_plain, g->w_h);
      }
      if (a.dh0) std::copy(sc.dsi.begin(), sc.dsi.end(), a.dh0 + u * B * H);
      if (lstm && a.dc0) std::copy(sc.dsic.begin(), sc.dsic.end(), a.dc0 + u * B * H);
      if (dnext) from_direction(sc.dsrc.data(), dnext, T, B, C, len, reverse, C, 0, dir > 0);
    }
    dcur = dnext;
  }
}

// ---------------------------------------------------------------- weight layouts

template <class T>
void permute_gate_blocks(const T* src, T* dst, int64_t rows, int64_t hidden, const int* order, int gates) {
  const int64_t width = int64_t(gates) * hidden;
  for (int64_t r = 0; r < rows; ++r)
    for (int g = 0; g < gates; ++g) {
      const T* s = src + r * width + int64_t(order[g]) * hidden;
      std::copy(s, s + hidden, dst + r * width + int64_t(g) * hidden);
    }
}

namespace {
constexpr int kLstmCntkToDnnl[4] = {0, 2, 1, 3};  // dnnl i, f, c~, o from cntk i, c~, f, o (its own inverse)
}

template <class T>
void lstm_gates_cntk_to_fused(const T* src, T* dst, int64_t rows, int64_t hidden) {
  permute_gate_blocks(src, dst, rows, hidden, kLstmCntkToDnnl, 4);
}

template <class T>
void lstm_gates_fused_to_cntk(const T* src, T* dst, int64_t rows, int64_t hidden) {
  permute_gate_blocks(src, dst, rows, hidden, kLstmCntkToDnnl, 4);
}

template <class T>
void gru_iter_cntk_to_fused(const T* H, const T* H1, T* w_h, int64_t hidden) {
  for (int64_t r = 0; r < hidden; ++r) {
    std::copy(H + r * 2 * hidden, H + (r + 1) * 2 * hidden, w_h + r * 3 * hidden);
    std::copy(H1 + r * hidden, H1 + (r + 1) * hidden, w_h + r * 3 * hidden + 2 * hidden);
  }
}

template <class T>
void gru_iter_fused_to_cntk(const T* w_h, T* H, T* H1, int64_t hidden) {
  for (int64_t r = 0; r < hidden; ++r) {
    std::copy(w_h + r * 3 * hidden, w_h + r * 3 * hidden + 2 * hidden, H + r * 2 * hidden);
    std::copy(w_h + r * 3 * hidden + 2 * hidden, w_h + (r + 1) * 3 * hidden, H1 + r * hidden);
  }
}

#define CNTK_RNN_LAYOUT_INSTANTIATE(T)                                                   \
  template void permute_gate_blocks<T>(const T*, T*, int64_t, int64_t, const int*, int); \
  template void lstm_gates_cntk_to_fused<T>(const T*, T*, int64_t, int64_t);             \
  template void lstm_gates_fused_to_cntk<T>(const T*, T*, int64_t, int64_t);             \
  template void gru_iter_cntk_to_fused<T>(const T*, const T*, T*, int64_t);              \
  template void gru_iter_fused_to_cntk<T>(const T*, T*, T*, int64_t);
CNTK_RNN_LAYOUT_INSTANTIATE(float)
CNTK_RNN_LAYOUT_INSTANTIATE(double)
#undef CNTK_RNN_LAYOUT_INSTANTIATE

}  // namespace cntk::kernels
