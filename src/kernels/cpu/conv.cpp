#include "kernels/cpu/conv.h"
#include "kernels/backend.h"
#include "kernels/cpu/dnnl_context.h"
#include "kernels/cpu/primitive_cache.h"
#include "kernels/cpu/dnnl_value.h"
#include "cntk/evaluation.h"
#include "cntk/switches.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>

namespace cntk::kernels {

// ------------------------------------------------------------------ Window

namespace {

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (auto x : v) p *= x;
  return p;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s += std::to_string(x) + ",";
  return s;
}

}  // namespace

int64_t Window::in_size() const { return product(in); }
int64_t Window::out_size() const { return product(out); }
int64_t Window::kernel_size() const { return product(kernel); }

std::string Window::key() const {
  return join(in) + "|" + join(out) + "|" + join(kernel) + "|" + join(stride) + "|" + join(dilation) + "|" +
         join(pad_lo) + "|" + join(pad_hi);
}

namespace {

// For each (output position, kernel position): the flat input index it reads, or -1
// where the window lies in the padding. Row-major over out (rows) and kernel (columns).
std::vector<int64_t> window_table(const Window& w) {
  const size_t r = w.rank();
  const int64_t OS = w.out_size(), KS = w.kernel_size();
  std::vector<int64_t> tab(size_t(OS * KS), 0);
  if (r == 0) return tab;  // no spatial axes: one position reading element 0
  std::vector<int64_t> in_stride(r), o(r, 0), k(r, 0);
  int64_t acc = 1;
  for (size_t j = 0; j < r; ++j) {
    in_stride[r - 1 - j] = acc;
    acc *= w.in[r - 1 - j];
  }
  for (int64_t os = 0; os < OS; ++os) {
    std::fill(k.begin(), k.end(), 0);
    for (int64_t ks = 0; ks < KS; ++ks) {
      int64_t idx = 0;
      for (size_t i = 0; i < r && idx >= 0; ++i) {
        int64_t p = o[i] * w.stride[i] - w.pad_lo[i] + k[i] * w.dilation[i];
        idx = (p < 0 || p >= w.in[i]) ? -1 : idx + p * in_stride[i];
      }
      tab[size_t(os * KS + ks)] = idx;
      for (size_t i = r; i-- > 0;) {
        if (++k[i] < w.kernel[i]) break;
        k[i] = 0;
      }
    }
    for (size_t i = r; i-- > 0;) {
      if (++o[i] < w.out[i]) break;
      o[i] = 0;
    }
  }
  return tab;
}

void check_dense(const NDArrayView& v, const char* what) {
  if (v.dtype() != DataType::Float && v.dtype() != DataType::Double)
    throw NotImplementedError(std::string("convolution: ") + what + " in " + to_string(v.dtype()) +
                              " is not supported (float32 and float64 are)");
}

// ------------------------------------------------------- reference convolution

template <class T>
void ref_conv_forward(const T* x, const T* w, T* y, const ConvDims& d, const std::vector<int64_t>& tab) {
  const int64_t N = d.batch, C = d.in_channels, O = d.out_channels, G = d.groups;
  const int64_t Cg = C / G, Og = O / G, IS = d.win.in_size(), OS = d.win.out_size(), KS = d.win.kernel_size();
#pragma omp parallel for schedule(static)
  for (int64_t no = 0; no < N * O; ++no) {
    const int64_t n = no / O, oc = no % O, g = oc / Og;
    T* yr = y + no * OS;
    std::fill(yr, yr + OS, T(0));
    for (int64_t ic = 0; ic < Cg; ++ic) {
      const T* xc = x + (n * C + g * Cg + ic) * IS;
      const T* wc = w + (oc * Cg + ic) * KS;
      for (int64_t os = 0; os < OS; ++os) {
        const int64_t* t = tab.data() + os * KS;
        T acc = 0;
        for (int64_t ks = 0; ks < KS; ++ks)
          if (t[ks] >= 0) acc += xc[t[ks]] * wc[ks];
        yr[os] += acc;
      }
    }
  }
}

template <class T>
void ref_conv_backward_data(const T* dy, const T* w, T* dx, const ConvDims& d, const std::vector<int64_t>& tab) {
  const int64_t N = d.batch, C = d.in_channels, O = d.out_channels, G = d.groups;
  const int64_t Cg = C / G, Og = O / G, IS = d.win.in_size(), OS = d.win.out_size(), KS = d.win.kernel_size();
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < N * C; ++nc) {
    const int64_t n = nc / C, ci = nc % C, g = ci / Cg, ic = ci % Cg;
    T* dxc = dx + nc * IS;
    std::fill(dxc, dxc + IS, T(0));
    for (int64_t oc = g * Og; oc < (g + 1) * Og; ++oc) {
      const T* dyr = dy + (n * O + oc) * OS;
      const T* wc = w + (oc * Cg + ic) * KS;
      for (int64_t os = 0; os < OS; ++os) {
        const int64_t* t = tab.data() + os * KS;
        const T v = dyr[os];
        for (int64_t ks = 0; ks < KS; ++ks)
          if (t[ks] >= 0) dxc[t[ks]] += v * wc[ks];
      }
    }
  }
}

template <class T>
void ref_conv_backward_weights(const T* x, const T* dy, T* dw, const ConvDims& d, const std::vector<int64_t>& tab) {
  const int64_t N = d.batch, C = d.in_channels, O = d.out_channels, G = d.groups;
  const int64_t Cg = C / G, Og = O / G, IS = d.win.in_size(), OS = d.win.out_size(), KS = d.win.kernel_size();
#pragma omp parallel for schedule(static)
  for (int64_t oi = 0; oi < O * Cg; ++oi) {
    const int64_t oc = oi / Cg, ic = oi % Cg, g = oc / Og;
    T* dwc = dw + oi * KS;
    std::fill(dwc, dwc + KS, T(0));
    for (int64_t n = 0; n < N; ++n) {
      const T* xc = x + (n * C + g * Cg + ic) * IS;
      const T* dyr = dy + (n * O + oc) * OS;
      for (int64_t os = 0; os < OS; ++os) {
        const int64_t* t = tab.data() + os * KS;
        const T v = dyr[os];
        for (int64_t ks = 0; ks < KS; ++ks)
          if (t[ks] >= 0) dwc[ks] += v * xc[t[ks]];
      }
    }
  }
}

std::vector<int64_t> dims_of(int64_t a, int64_t b, const std::vector<int64_t>& rest) {
  std::vector<int64_t> d{a, b};
  d.insert(d.end(), rest.begin(), rest.end());
  return d;
}

// ------------------------------------------------------------ oneDNN convolution

enum class ConvPass { Forward, BackwardData, BackwardWeights };

// One cached primitive with the memory layouts it chose for its two inputs and its output.
struct DnnlConv {
  dnnl::primitive prim;
  dnnl::memory::desc a_md, b_md, out_md;  // forward: src, weights, dst; backward data: diff_dst, weights,
                                          // diff_src; backward weights: src, diff_dst, diff_weights
};

struct DnnlPads {
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
};

// oneDNN needs non-negative paddings whose sizes agree with its own output-size rule;
// returns false where CNTK's geometry cannot be expressed that way (the reference runs).
bool dnnl_pads(const ConvDims& d, DnnlPads& p) {
  const Window& w = d.win;
  for (size_t i = 0; i < w.rank(); ++i) {
    int64_t ke = (w.kernel[i] - 1) * w.dilation[i] + 1;
    int64_t lo = w.pad_lo[i];
    int64_t hi = (w.out[i] - 1) * w.stride[i] + ke - w.in[i] - lo;
    if (lo < 0) return false;
    hi = std::max<int64_t>(hi, 0);
    if ((w.in[i] - ke + lo + hi) / w.stride[i] + 1 != w.out[i]) return false;
    p.strides.push_back(w.stride[i]);
    p.dilates.push_back(w.dilation[i] - 1);
    p.pad_l.push_back(lo);
    p.pad_r.push_back(hi);
  }
  return true;
}

bool dnnl_usable(const ConvDims& d, DataType t) {
  return t == DataType::Float && d.win.rank() >= 1 && d.win.rank() <= 3 && d.batch > 0 && primitives_enabled();
}

dnnl::memory::format_tag plain_tag(size_t rank) {
  using tag = dnnl::memory::format_tag;
  switch (rank) {
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    default: return tag::abcdef;
  }
}

struct ConvMds {
  dnnl::memory::desc src, wei, dst;  // plain float32 layouts of the user's buffers
  // "any" (the primitive picks the layout): the operands a pass reads, in float32 or, under
  // the bfloat16 math mode, in bfloat16; and the results it writes, in float32.
  dnnl::memory::desc src_in, wei_in, dst_in;
  dnnl::memory::desc src_out, wei_out, dst_out;
};

ConvMds conv_mds(const ConvDims& d, bool bf16) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const Window& w = d.win;
  dnnl::memory::dims src = dims_of(d.batch, d.in_channels, w.in), dst = dims_of(d.batch, d.out_channels, w.out);
  dnnl::memory::dims wei;
  if (d.groups > 1) wei.push_back(d.groups);
  wei.push_back(d.out_channels / d.groups);
  wei.push_back(d.in_channels / d.groups);
  wei.insert(wei.end(), w.kernel.begin(), w.kernel.end());
  ConvMds m;
  m.src = dnnl::memory::desc(src, dt::f32, plain_tag(src.size()));
  m.dst = dnnl::memory::desc(dst, dt::f32, plain_tag(dst.size()));
  m.wei = dnnl::memory::desc(wei, dt::f32, plain_tag(wei.size()));
  const dt in = bf16 ? dt::bf16 : dt::f32;
  m.src_in = dnnl::memory::desc(src, in, tag::any);
  m.dst_in = dnnl::memory::desc(dst, in, tag::any);
  m.wei_in = dnnl::memory::desc(wei, in, tag::any);
  m.src_out = dnnl::memory::desc(src, dt::f32, tag::any);
  m.dst_out = dnnl::memory::desc(dst, dt::f32, tag::any);
  m.wei_out = dnnl::memory::desc(wei, dt::f32, tag::any);
  return m;
}

PrimitiveCache<std::string, DnnlConv>& conv_cache() {
  static auto* c = new PrimitiveCache<std::string, DnnlConv>(1024);
  return *c;
}

std::atomic<size_t> g_primitives_created{0};

dnnl::memory::desc bias_md(const ConvDims& d) {
  return dnnl::memory::desc({d.out_channels}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
}

// `post` applies to the forward pass only (the backward passes take the plain forward as hint).
// bf16: the pass reads its operands in bfloat16 (the bfloat16 math mode); results stay float32.
DnnlConv make_dnnl_conv(const ConvDims& d, ConvPass pass, const DnnlPads& p, const ConvPostOps& post, bool bf16) {
  ++g_primitives_created;
  ConvMds m = conv_mds(d, bf16);
  auto alg = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, alg, m.src_in, m.wei_in, m.dst_out, p.strides,
                                     p.dilates, p.pad_l, p.pad_r);
  dnnl::convolution_forward::primitive_desc fpd(fd, dnnl_engine());
  DnnlConv c;
  switch (pass) {
    case ConvPass::Forward: {
      if (post.bias || post.eltwise != Eltwise::None) {
        dnnl::convolution_forward::desc fused =
            post.bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, m.src_in, m.wei_in,
                                                        bias_md(d), m.dst_out, p.strides, p.dilates, p.pad_l, p.pad_r)
                      : fd;
        dnnl::primitive_attr attr;
        if (post.eltwise != Eltwise::None) {
          dnnl::post_ops ops;
          ops.append_eltwise(1.f, dnnl::algorithm(dnnl_eltwise_alg(post.eltwise)), post.alpha, 0.f);
          attr.set_post_ops(ops);
        }
        fpd = dnnl::convolution_forward::primitive_desc(fused, attr, dnnl_engine());
      }
      c.prim = dnnl::convolution_forward(fpd);
      c.a_md = fpd.src_desc();
      c.b_md = fpd.weights_desc();
      c.out_md = fpd.dst_desc();
      break;
    }
    case ConvPass::BackwardData: {
      dnnl::convolution_backward_data::desc bd(alg, m.src_out, m.wei_in, m.dst_in, p.strides, p.dilates, p.pad_l,
                                               p.pad_r);
      dnnl::convolution_backward_data::primitive_desc bpd(bd, dnnl_engine(), fpd);
      c.prim = dnnl::convolution_backward_data(bpd);
      c.a_md = bpd.diff_dst_desc();
      c.b_md = bpd.weights_desc();
      c.out_md = bpd.diff_src_desc();
      break;
    }
    case ConvPass::BackwardWeights: {
      // post.bias here: the pass also computes the bias gradient (of a fused convolution).
      dnnl::convolution_backward_weights::desc bd =
          post.bias ? dnnl::convolution_backward_weights::desc(alg, m.src_in, m.wei_out, bias_md(d), m.dst_in,
                                                               p.strides, p.dilates, p.pad_l, p.pad_r)
                    : dnnl::convolution_backward_weights::desc(alg, m.src_in, m.wei_out, m.dst_in, p.strides, p.dilates,
                                                               p.pad_l, p.pad_r);
      dnnl::convolution_backward_weights::primitive_desc bpd(bd, dnnl_engine(), fpd);
      c.prim = dnnl::convolution_backward_weights(bpd);
      c.a_md = bpd.src_desc();
      c.b_md = bpd.diff_dst_desc();
      c.out_md = bpd.diff_weights_desc();
      break;
    }
  }
  return c;
}

DnnlConv dnnl_conv(const ConvDims& d, ConvPass pass, const DnnlPads& p, const ConvPostOps& post) {
  const bool bf16 = bf16_math_active();
  std::string key = std::string(bf16 ? "bf16#" : "") + std::to_string(int(pass)) + "#" + std::to_string(d.batch) + "," +
                    std::to_string(d.in_channels) + "," + std::to_string(d.out_channels) + "," +
                    std::to_string(d.groups) + "#" + d.win.key();
  if (post.bias || post.eltwise != Eltwise::None)
    key += "#post" + std::to_string(int(post.bias)) + "," + std::to_string(int(post.eltwise)) + "," +
           std::to_string(post.alpha);
  return conv_cache().get(key, [&] { return make_dnnl_conv(d, pass, p, post, bf16); });
}

// A buffer in the layout `want`: the buffer itself, or a reordered copy (counted as a
// reorder of weights or of an activation / gradient).
dnnl::memory as_layout(const dnnl::memory& user, const dnnl::memory::desc& want, bool weights) {
  if (user.get_desc() == want) return user;
  dnnl::memory m(want, dnnl_engine());
  count_dnnl_reorder(weights);
  dnnl::reorder(user, m).execute(dnnl_stream(), const_cast<dnnl::memory&>(user), m);
  return m;
}

}  // namespace

struct ConvReuse {
  // The plain tensors the entries were made from (undefined where the forward's source
  // came in a oneDNN layout: that entry is the source itself, kept alive by the memory).
  NDArrayView src_user, dy_user, wei_user;
  dnnl::memory src, dy, wei;  // them in a primitive's layout
};

std::shared_ptr<ConvReuse> make_conv_reuse() { return std::make_shared<ConvReuse>(); }
void release_source(ConvReuse& r) {
  r.src_user = NDArrayView();
  r.src = dnnl::memory();
}
void release_output_gradient(ConvReuse& r) {
  r.dy_user = NDArrayView();
  r.dy = dnnl::memory();
  r.wei_user = NDArrayView();
  r.wei = dnnl::memory();
}
bool conv_reuse_has_source(const ConvReuse& r) { return bool(r.src); }

namespace {

// The input (the plain tensor `view`, or `blocked` when it came in a oneDNN layout) in the
// layout `want`, through the entry (held, held_view) of a ConvReuse: reused when it was
// made from the same tensor, else made and kept. A held entry made from a oneDNN layout
// (held_view undefined) stands for the step's own input, which is all it is used for.
dnnl::memory reused_layout(const dnnl::memory::desc& plain, const NDArrayView& view, const dnnl::memory* blocked,
                           const dnnl::memory::desc& want, dnnl::memory* held, NDArrayView* held_view, bool weights) {
  if (held && *held) {
    // No view given: the caller means the held one (the weight gradient's source).
    bool same = !held_view->defined() || !view.defined() || held_view->raw_data() == view.raw_data();
    if (same) return held->get_desc() == want ? *held : as_layout(*held, want, weights);
  }
  if (!blocked && !view.defined()) throw Error("convolution: an input is missing");
  dnnl::memory m;
  if (blocked)
    m = as_layout(*blocked, want, weights);
  else
    m = as_layout(dnnl::memory(plain, dnnl_engine(), const_cast<void*>(view.raw_data())), want, weights);
  if (held) {
    *held = m;
    *held_view = blocked ? NDArrayView() : view;
  }
  return m;
}

// Runs one pass: a, b are the two inputs (plain layouts), out the plain output buffer;
// `bias` (O values) is read by a forward pass whose post-ops add one. With `reuse`, the
// source (forward and backward weights), the output gradient (both backward passes) and
// the weights (forward and backward data) are reordered once for all passes. With `io`,
// the activation input a may come in a oneDNN layout (io->in) and the output may stay
// in the primitive's layout (io->keep_out; `out` is then unused).
void run_dnnl_conv(const ConvDims& d, ConvPass pass, const DnnlPads& p, const NDArrayView& a, const NDArrayView& b,
                   void* out, const ConvPostOps& post = {}, const void* bias = nullptr, ConvReuse* reuse = nullptr,
                   ConvLayoutIO* io = nullptr) {
  DnnlConv c = dnnl_conv(d, pass, p, post);
  ConvMds m = conv_mds(d, false);
  dnnl::memory::desc a_plain, b_plain, out_plain;
  int a_arg, b_arg, out_arg;
  dnnl::memory *a_held = nullptr, *b_held = nullptr;
  NDArrayView *a_view = nullptr, *b_view = nullptr;
  bool b_weights = true;
  switch (pass) {
    case ConvPass::Forward:
      a_plain = m.src, b_plain = m.wei, out_plain = m.dst;
      a_arg = DNNL_ARG_SRC, b_arg = DNNL_ARG_WEIGHTS, out_arg = DNNL_ARG_DST;
      if (reuse) a_held = &reuse->src, a_view = &reuse->src_user, b_held = &reuse->wei, b_view = &reuse->wei_user;
      break;
    case ConvPass::BackwardData:
      a_plain = m.dst, b_plain = m.wei, out_plain = m.src;
      a_arg = DNNL_ARG_DIFF_DST, b_arg = DNNL_ARG_WEIGHTS, out_arg = DNNL_ARG_DIFF_SRC;
      if (reuse) a_held = &reuse->dy, a_view = &reuse->dy_user, b_held = &reuse->wei, b_view = &reuse->wei_user;
      break;
    default:
      a_plain = m.src, b_plain = m.dst, out_plain = m.wei;
      a_arg = DNNL_ARG_SRC, b_arg = DNNL_ARG_DIFF_DST, out_arg = DNNL_ARG_DIFF_WEIGHTS;
      b_weights = false;
      if (reuse) a_held = &reuse->src, a_view = &reuse->src_user, b_held = &reuse->dy, b_view = &reuse->dy_user;
      break;
  }
  const dnnl::memory* a_blocked = io && io->in ? &mem_of(*io->in) : nullptr;
  const dnnl::memory* b_blocked = io && io->in_b ? &mem_of(*io->in_b) : nullptr;
  dnnl::memory am = reused_layout(a_plain, a, a_blocked, c.a_md, a_held, a_view, false);
  dnnl::memory bm = reused_layout(b_plain, b, b_blocked, c.b_md, b_held, b_view, b_weights);
  // The source reordered into the primitive's layout is handed on as a kept float32 value;
  // a bfloat16 copy (the bfloat16 math mode) is not.
  if (io && !a_blocked && pass == ConvPass::Forward && am.get_desc() != a_plain &&
      am.get_desc().data_type() == dnnl::memory::data_type::f32) {
    io->made = dnnl_value(am);
  }
  const bool keep = io && io->keep_out;
  dnnl::memory out_user = keep ? dnnl::memory() : dnnl::memory(out_plain, dnnl_engine(), out);
  dnnl::memory om = !keep && c.out_md == out_plain ? out_user : dnnl::memory(c.out_md, dnnl_engine());
  std::unordered_map<int, dnnl::memory> args{{a_arg, am}, {b_arg, bm}, {out_arg, om}};
  if (post.bias)
    args.emplace(pass == ConvPass::BackwardWeights ? DNNL_ARG_DIFF_BIAS : DNNL_ARG_BIAS,
                 dnnl::memory(bias_md(d), dnnl_engine(), const_cast<void*>(bias)));
  c.prim.execute(dnnl_stream(), args);
  if (keep) {
    auto v = std::make_shared<DnnlValue>();
    v->mem = om;
    io->out = v;
  } else if (om != out_user) {
    count_dnnl_reorder(pass == ConvPass::BackwardWeights);
    dnnl::reorder(om, out_user).execute(dnnl_stream(), om, out_user);
  }
  dnnl_stream().wait();
}

NDShape shape_of(const std::vector<int64_t>& d) { return NDShape(d); }

NDShape weights_shape(const ConvDims& d) {
  return shape_of(dims_of(d.out_channels, d.in_channels / d.groups, d.win.kernel));
}

void check_conv(const ConvDims& d) {
  if (d.groups < 1 || d.in_channels % d.groups || d.out_channels % d.groups)
    throw ValueError("convolution: channels (" + std::to_string(d.in_channels) + " in, " +
                     std::to_string(d.out_channels) + " out) are not divisible by groups=" + std::to_string(d.groups));
}

}  // namespace

NDArrayView conv_forward_reference(const NDArrayView& x_in, const NDArrayView& w_in, const ConvDims& d) {
  check_conv(d);
  NDArrayView x = x_in.to_dense().contiguous(), w = w_in.to_dense().contiguous();
  check_dense(x, "input");
  NDArrayView y(x.dtype(), shape_of(dims_of(d.batch, d.out_channels, d.win.out)));
  auto tab = window_table(d.win);
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { ref_conv_forward<T>(x.data<T>(), w.data<T>(), y.data<T>(), d, tab); });
  return y;
}

NDArrayView conv_backward_data_reference(const NDArrayView& dy_in, const NDArrayView& w_in, const ConvDims& d) {
  check_conv(d);
  NDArrayView dy = dy_in.to_dense().contiguous(), w = w_in.to_dense().contiguous();
  check_dense(dy, "gradient");
  NDArrayView dx(dy.dtype(), shape_of(dims_of(d.batch, d.in_channels, d.win.in)));
  auto tab = window_table(d.win);
  CNTK_DISPATCH_FLOAT(dy.dtype(), T,
                      [&] { ref_conv_backward_data<T>(dy.data<T>(), w.data<T>(), dx.data<T>(), d, tab); });
  return dx;
}

NDArrayView conv_backward_weights_reference(const NDArrayView& x_in, const NDArrayView& dy_in, const ConvDims& d) {
  check_conv(d);
  NDArrayView x = x_in.to_dense().contiguous(), dy = dy_in.to_dense().contiguous();
  check_dense(x, "input");
  NDArrayView dw(x.dtype(), weights_shape(d));
  auto tab = window_table(d.win);
  CNTK_DISPATCH_FLOAT(x.dtype(), T,
                      [&] { ref_conv_backward_weights<T>(x.data<T>(), dy.data<T>(), dw.data<T>(), d, tab); });
  return dw;
}

bool conv_runs_on_primitives(const ConvDims& d, DataType t) {
  DnnlPads p;
  return dnnl_usable(d, t) && dnnl_pads(d, p);
}

namespace {

// The plain input of a pass, or an undefined view where `io` brings it in a oneDNN layout.
NDArrayView plain_input(const NDArrayView& v, const ConvLayoutIO* io) {
  return io && io->in ? NDArrayView() : v.to_dense().contiguous();
}

}  // namespace

NDArrayView conv_forward(const NDArrayView& x_in, const NDArrayView& w_in, const ConvDims& d, ConvReuse* reuse,
                         ConvLayoutIO* io) {
  DnnlPads p;
  const bool x_float = (io && io->in) || x_in.dtype() == DataType::Float;
  if (!dnnl_usable(d, DataType::Float) || !x_float || !dnnl_pads(d, p)) {
    if (io && io->in) throw Error("convolution: a source in a oneDNN layout for a convolution oneDNN cannot run");
    return conv_forward_reference(x_in, w_in, d);
  }
  check_conv(d);
  NDArrayView x = plain_input(x_in, io), w = w_in.to_dense().contiguous();
  NDArrayView y = io && io->keep_out
                      ? NDArrayView()
                      : NDArrayView(DataType::Float, shape_of(dims_of(d.batch, d.out_channels, d.win.out)));
  run_dnnl_conv(d, ConvPass::Forward, p, x, w, y.defined() ? y.raw_data() : nullptr, {}, nullptr, reuse, io);
  return y;
}

NDArrayView conv_forward_fused(const NDArrayView& x_in, const NDArrayView& w_in, const NDArrayView& bias_in,
                               const ConvPostOps& post, const ConvDims& d, ConvReuse* reuse, ConvLayoutIO* io) {
  DnnlPads p;
  const bool x_float = (io && io->in) || x_in.dtype() == DataType::Float;
  if (!dnnl_usable(d, DataType::Float) || !x_float || w_in.dtype() != DataType::Float || !dnnl_pads(d, p)) return {};
  check_conv(d);
  NDArrayView bias;
  if (post.bias) {
    bias = bias_in.to_dense().contiguous();
    if (bias.dtype() != DataType::Float || bias.numel() != d.out_channels) return {};
  }
  NDArrayView x = plain_input(x_in, io), w = w_in.to_dense().contiguous();
  NDArrayView y = io && io->keep_out
                      ? NDArrayView()
                      : NDArrayView(DataType::Float, shape_of(dims_of(d.batch, d.out_channels, d.win.out)));
  run_dnnl_conv(d, ConvPass::Forward, p, x, w, y.defined() ? y.raw_data() : nullptr, post,
                post.bias ? bias.raw_data() : nullptr, reuse, io);
  return y;
}

size_t dnnl_conv_primitives_created() { return g_primitives_created; }

NDArrayView conv_backward_data(const NDArrayView& dy_in, const NDArrayView& w_in, const ConvDims& d, ConvReuse* reuse,
                               ConvLayoutIO* io) {
  DnnlPads p;
  const bool dy_float = (io && io->in) || dy_in.dtype() == DataType::Float;
  if (!dnnl_usable(d, DataType::Float) || !dy_float || !dnnl_pads(d, p)) {
    if (io && io->in) throw Error("convolution: a gradient in a oneDNN layout for a convolution oneDNN cannot run");
    return conv_backward_data_reference(dy_in, w_in, d);
  }
  check_conv(d);
  NDArrayView dy = plain_input(dy_in, io), w = w_in.to_dense().contiguous();
  if (w.dtype() != DataType::Float) w = w.cast(DataType::Float);
  NDArrayView dx = io && io->keep_out
                       ? NDArrayView()
                       : NDArrayView(DataType::Float, shape_of(dims_of(d.batch, d.in_channels, d.win.in)));
  run_dnnl_conv(d, ConvPass::BackwardData, p, dy, w, dx.defined() ? dx.raw_data() : nullptr, {}, nullptr, reuse, io);
  return dx;
}

NDArrayView conv_backward_weights(const NDArrayView& x_in, const NDArrayView& dy_in, const ConvDims& d,
                                  ConvReuse* reuse, ConvLayoutIO* io, NDArrayView* dbias) {
  DnnlPads p;
  const bool held_source = !x_in.defined() && reuse && conv_reuse_has_source(*reuse);
  const bool dy_float = (io && io->in_b) || dy_in.dtype() == DataType::Float;
  if (!dnnl_usable(d, DataType::Float) || !dy_float || !dnnl_pads(d, p) ||
      (!held_source && x_in.dtype() != DataType::Float)) {
    if (io && io->in_b) throw Error("convolution: a gradient in a oneDNN layout for a convolution oneDNN cannot run");
    if (dbias) *dbias = NDArrayView();
    return conv_backward_weights_reference(x_in, dy_in, d);
  }
  check_conv(d);
  NDArrayView x = held_source ? NDArrayView() : x_in.to_dense().contiguous();
  NDArrayView dy = io && io->in_b ? NDArrayView() : dy_in.to_dense().contiguous();
  NDArrayView dw(DataType::Float, weights_shape(d));
  ConvPostOps post;
  if (dbias) {
    post.bias = true;
    *dbias = NDArrayView(DataType::Float, NDShape{d.out_channels});
  }
  run_dnnl_conv(d, ConvPass::BackwardWeights, p, x, dy, dw.raw_data(), post, dbias ? dbias->raw_data() : nullptr, reuse,
                io);
  return dw;
}

// ------------------------------------------------------------------ pooling

namespace {

// Per output position: how many window positions lie inside the input padded by
// pad_lo below and pad_hi above (include_pad's divisor).
std::vector<int64_t> padded_counts(const Window& w) {
  const size_t r = w.rank();
  std::vector<int64_t> counts(size_t(w.out_size()));
  std::vector<int64_t> o(r, 0);
  for (auto& c : counts) {
    int64_t n = 1;
    for (size_t i = 0; i < r; ++i) {
      int64_t lo = -w.pad_lo[i], hi = w.in[i] + w.pad_hi[i], cnt = 0;
      for (int64_t j = 0; j < w.kernel[i]; ++j) {
        int64_t p = o[i] * w.stride[i] - w.pad_lo[i] + j * w.dilation[i];
        cnt += (p >= lo && p < hi);
      }
      n *= cnt;
    }
    c = n;
    for (size_t i = r; i-- > 0;) {
      if (++o[i] < w.out[i]) break;
      o[i] = 0;
    }
  }
  return counts;
}

// Flat input index of the first maximum of window os (-1 if the window is all padding).
template <class T>
int64_t first_max(const T* xc, const int64_t* t, int64_t KS) {
  int64_t best = -1;
  for (int64_t ks = 0; ks < KS; ++ks) {
    int64_t idx = t[ks];
    if (idx < 0) continue;
    if (best < 0 || xc[idx] > xc[best] || (std::isnan(xc[idx]) && !std::isnan(xc[best]))) best = idx;
  }
  return best;
}

template <class T>
void pool_fwd(const T* x, T* y, const PoolDims& d, const std::vector<int64_t>& tab, const std::vector<int64_t>& cnt) {
  const int64_t NC = d.batch * d.channels, IS = d.win.in_size(), OS = d.win.out_size(), KS = d.win.kernel_size();
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < NC; ++nc) {
    const T* xc = x + nc * IS;
    T* yc = y + nc * OS;
    for (int64_t os = 0; os < OS; ++os) {
      const int64_t* t = tab.data() + os * KS;
      if (d.kind == PoolKind::Max) {
        int64_t b = first_max(xc, t, KS);
        yc[os] = b < 0 ? T(0) : xc[b];
      } else {
        T s = 0;
        int64_t n = 0;
        for (int64_t ks = 0; ks < KS; ++ks)
          if (t[ks] >= 0) s += xc[t[ks]], ++n;
        if (d.include_pad) n = cnt[size_t(os)];
        yc[os] = n > 0 ? s / T(n) : T(0);
      }
    }
  }
}

template <class T>
void pool_bwd(const T* x, const T* dy, T* dx, const PoolDims& d, const std::vector<int64_t>& tab,
              const std::vector<int64_t>& cnt) {
  const int64_t NC = d.batch * d.channels, IS = d.win.in_size(), OS = d.win.out_size(), KS = d.win.kernel_size();
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < NC; ++nc) {
    const T* xc = x + nc * IS;
    const T* dyc = dy + nc * OS;
    T* dxc = dx + nc * IS;
    std::fill(dxc, dxc + IS, T(0));
    for (int64_t os = 0; os < OS; ++os) {
      const int64_t* t = tab.data() + os * KS;
      if (d.kind == PoolKind::Max) {
        int64_t b = first_max(xc, t, KS);
        if (b >= 0) dxc[b] += dyc[os];
      } else {
        int64_t n = 0;
        for (int64_t ks = 0; ks < KS; ++ks) n += t[ks] >= 0;
        if (d.include_pad) n = cnt[size_t(os)];
        if (n == 0) continue;
        T g = dyc[os] / T(n);
        for (int64_t ks = 0; ks < KS; ++ks)
          if (t[ks] >= 0) dxc[t[ks]] += g;
      }
    }
  }
}

template <class T>
void unpool_fwd(const T* x, const T* pin, T* y, const PoolDims& d, const std::vector<int64_t>& tab) {
  const int64_t NC = d.batch * d.channels, IS = d.win.in_size(), OS = d.win.out_size(), KS = d.win.kernel_size();
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < NC; ++nc) {
    const T* pc = pin + nc * IS;
    const T* xc = x + nc * OS;
    T* yc = y + nc * IS;
    std::fill(yc, yc + IS, T(0));
    for (int64_t os = 0; os < OS; ++os) {
      int64_t b = first_max(pc, tab.data() + os * KS, KS);
      if (b >= 0) yc[b] = xc[os];
    }
  }
}

template <class T>
void unpool_bwd(const T* dy, const T* pin, T* dx, const PoolDims& d, const std::vector<int64_t>& tab) {
  const int64_t NC = d.batch * d.channels, IS = d.win.in_size(), OS = d.win.out_size(), KS = d.win.kernel_size();
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < NC; ++nc) {
    const T* pc = pin + nc * IS;
    const T* dyc = dy + nc * IS;
    T* dxc = dx + nc * OS;
    for (int64_t os = 0; os < OS; ++os) {
      int64_t b = first_max(pc, tab.data() + os * KS, KS);
      dxc[os] = b >= 0 ? dyc[b] : T(0);
    }
  }
}

NDShape pooled_shape(const PoolDims& d, bool out) {
  return NDShape(dims_of(d.batch, d.channels, out ? d.win.out : d.win.in));
}

}  // namespace

// ------------------------------------------------------------- oneDNN pooling

namespace {

struct DnnlPool {
  dnnl::pooling_forward::primitive_desc fwd_pd;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward bwd;  // empty for forward-only entries
};

PrimitiveCache<std::string, DnnlPool>& pool_cache() {
  static auto* c = new PrimitiveCache<std::string, DnnlPool>(1024);
  return *c;
}

// oneDNN runs float32 pooling over 1 to 3 spatial axes whose paddings it can express.
// Its include-padding average divides by the whole window, so that case needs every
// window inside the given padding; otherwise the own loops run.
bool dnnl_pool_pads(const PoolDims& d, DataType t, DnnlPads& p) {
  const Window& w = d.win;
  if (t != DataType::Float || w.rank() < 1 || w.rank() > 3 || d.batch * d.channels == 0 || !primitives_enabled())
    return false;
  for (size_t i = 0; i < w.rank(); ++i) {
    int64_t lo = w.pad_lo[i], hi = (w.out[i] - 1) * w.stride[i] + w.kernel[i] - w.in[i] - lo;
    if (lo < 0) return false;
    if (d.include_pad && d.kind == PoolKind::Average && hi > w.pad_hi[i]) return false;
    hi = std::max<int64_t>(hi, 0);
    if ((w.in[i] - w.kernel[i] + lo + hi) / w.stride[i] + 1 != w.out[i]) return false;
    p.strides.push_back(w.stride[i]);
    p.dilates.push_back(w.kernel[i]);  // the window
    p.pad_l.push_back(lo);
    p.pad_r.push_back(hi);
  }
  return true;
}

// `src_layout` (forward only): the layout the source comes in; the output takes the one
// oneDNN picks for it. Null: plain source and output.
DnnlPool make_dnnl_pool(const PoolDims& d, const DnnlPads& p, bool backward, const dnnl::memory::desc* src_layout);

DnnlPool dnnl_pool(const PoolDims& d, const DnnlPads& p, bool backward,
                   const dnnl::memory::desc* src_layout = nullptr) {
  std::string key = std::to_string(int(backward)) + std::to_string(int(d.kind)) + std::to_string(int(d.include_pad)) +
                    "#" + std::to_string(d.batch) + "," + std::to_string(d.channels) + "#" + d.win.key();
  if (src_layout) key += "#" + dnnl_desc_key(*src_layout);
  return pool_cache().get(key, [&] { return make_dnnl_pool(d, p, backward, src_layout); });
}

DnnlPool make_dnnl_pool(const PoolDims& d, const DnnlPads& p, bool backward, const dnnl::memory::desc* src_layout) {
  ++g_primitives_created;
  using dt = dnnl::memory::data_type;
  dnnl::memory::dims src = dims_of(d.batch, d.channels, d.win.in), dst = dims_of(d.batch, d.channels, d.win.out);
  dnnl::memory::desc src_md(src, dt::f32, plain_tag(src.size())), dst_md(dst, dt::f32, plain_tag(dst.size()));
  if (src_layout) {
    src_md = *src_layout;
    dst_md = dnnl::memory::desc(dst, dt::f32, dnnl::memory::format_tag::any);
  }
  auto alg = d.kind == PoolKind::Max ? dnnl::algorithm::pooling_max
                                     : (d.include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                      : dnnl::algorithm::pooling_avg_exclude_padding);
  auto prop = backward ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::pooling_forward::desc fd(prop, alg, src_md, dst_md, p.strides, p.dilates, p.pad_l, p.pad_r);
  DnnlPool e{dnnl::pooling_forward::primitive_desc(fd, dnnl_engine()), {}, {}};
  e.fwd = dnnl::pooling_forward(e.fwd_pd);
  if (backward) {
    if (src_layout) dst_md = e.fwd_pd.dst_desc();
    dnnl::pooling_backward::desc bd(alg, src_md, dst_md, p.strides, p.dilates, p.pad_l, p.pad_r);
    e.bwd = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(bd, dnnl_engine(), e.fwd_pd));
  }
  return e;
}

dnnl::memory::desc pool_md(const PoolDims& d, bool out) {
  dnnl::memory::dims dims = dims_of(d.batch, d.channels, out ? d.win.out : d.win.in);
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, plain_tag(dims.size()));
}

std::atomic<size_t> g_workspaces_recomputed{0};

}  // namespace

struct PoolSaved {
  dnnl::memory ws;
};

std::shared_ptr<PoolSaved> make_pool_saved() { return std::make_shared<PoolSaved>(); }

size_t max_pool_workspaces_recomputed() { return g_workspaces_recomputed; }

namespace {

// Where a forward pass keeps a workspace (max pooling in a training step): `saved`, else null.
PoolSaved* workspace_keeper(const PoolDims& d, PoolSaved* saved) { return d.kind == PoolKind::Max ? saved : nullptr; }

// The forward pass of entry e (made with its backward pass where `keep` is given: its
// workspace goes there).
void run_pool_forward(const DnnlPool& e, const dnnl::memory& src, const dnnl::memory& dst, PoolSaved* keep) {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  if (keep) {
    keep->ws = dnnl::memory(e.fwd_pd.workspace_desc(), dnnl_engine());
    args.emplace(DNNL_ARG_WORKSPACE, keep->ws);
  }
  e.fwd.execute(dnnl_stream(), args);
}

// Max pooling's workspace for a backward pass of e: the forward pass's, where it has the
// layout e reads, else recomputed by a forward pass.
dnnl::memory max_pool_workspace(const DnnlPool& e, const dnnl::memory& src, const PoolSaved* saved) {
  if (saved && saved->ws && saved->ws.get_desc() == e.fwd_pd.workspace_desc()) return saved->ws;
  ++g_workspaces_recomputed;
  dnnl::memory ws(e.fwd_pd.workspace_desc(), dnnl_engine()), y(e.fwd_pd.dst_desc(), dnnl_engine());
  e.fwd.execute(dnnl_stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, y}, {DNNL_ARG_WORKSPACE, ws}});
  return ws;
}

}  // namespace

NDArrayView pool_forward(const NDArrayView& x_in, const PoolDims& d, PoolSaved* saved) {
  NDArrayView x = x_in.to_dense().contiguous();
  check_dense(x, "pooling input");
  NDArrayView y(x.dtype(), pooled_shape(d, true));
  DnnlPads p;
  if (dnnl_pool_pads(d, x.dtype(), p)) {
    PoolSaved* keep = workspace_keeper(d, saved);
    DnnlPool e = dnnl_pool(d, p, keep != nullptr);
    dnnl::memory src(pool_md(d, false), dnnl_engine(), x.raw_data()),
        dst(pool_md(d, true), dnnl_engine(), y.raw_data());
    run_pool_forward(e, src, dst, keep);
    dnnl_stream().wait();
    return y;
  }
  auto tab = window_table(d.win);
  auto cnt = d.include_pad ? padded_counts(d.win) : std::vector<int64_t>();
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { pool_fwd<T>(x.data<T>(), y.data<T>(), d, tab, cnt); });
  return y;
}

bool pool_forward_layout(const LayoutValue& x, const PoolDims& d, bool keep_out, NDArrayView& y,
                         std::shared_ptr<LayoutValue>& yb, PoolSaved* saved) {
  DnnlPads p;
  if (x.dtype != DataType::Float || !dnnl_pool_pads(d, DataType::Float, p)) return false;
  const dnnl::memory::desc src_md = mem_of(x).get_desc();
  if (src_md.dims() != dims_of(d.batch, d.channels, d.win.in)) return false;
  PoolSaved* keep = workspace_keeper(d, saved);
  DnnlPool e = dnnl_pool(d, p, keep != nullptr, &src_md);
  dnnl::memory dst(e.fwd_pd.dst_desc(), dnnl_engine());
  run_pool_forward(e, mem_of(x), dst, keep);
  if (keep_out) {
    yb = dnnl_value(dst);
    dnnl_stream().wait();
    return true;
  }
  y = NDArrayView(DataType::Float, pooled_shape(d, true));
  dnnl::memory plain(pool_md(d, true), dnnl_engine(), y.raw_data());
  if (dst.get_desc() != plain.get_desc()) count_dnnl_reorder(false);
  dnnl::reorder(dst, plain).execute(dnnl_stream(), dst, plain);
  dnnl_stream().wait();
  return true;
}

bool pool_backward_layout(const LayoutValue& x, const LayoutValue* dyb, const NDArrayView& dy_in, const PoolDims& d,
                          bool keep_out, NDArrayView& dx, std::shared_ptr<LayoutValue>& dxb, const PoolSaved* saved) {
  DnnlPads p;
  if (x.dtype != DataType::Float || !dnnl_pool_pads(d, DataType::Float, p)) return false;
  const dnnl::memory::desc src_md = mem_of(x).get_desc();
  if (src_md.dims() != dims_of(d.batch, d.channels, d.win.in)) return false;
  DnnlPool e = dnnl_pool(d, p, true, &src_md);
  const dnnl::memory::desc dst_md = e.fwd_pd.dst_desc();
  // The output gradient in the layout of the forward's output (g keeps a plain one alive).
  NDArrayView g;
  dnnl::memory dy;
  if (dyb) {
    dy = as_layout(mem_of(*dyb), dst_md, false);
  } else {
    g = dy_in.to_dense().contiguous();
    if (g.dtype() != DataType::Float) g = g.cast(DataType::Float);
    dy = as_layout(dnnl::memory(pool_md(d, true), dnnl_engine(), g.raw_data()), dst_md, false);
  }
  dnnl::memory diff_src(src_md, dnnl_engine());
  std::unordered_map<int, dnnl::memory> bargs{{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, diff_src}};
  if (d.kind == PoolKind::Max) bargs.emplace(DNNL_ARG_WORKSPACE, max_pool_workspace(e, mem_of(x), saved));
  e.bwd.execute(dnnl_stream(), bargs);
  if (keep_out) {
    dxb = dnnl_value(diff_src);
  } else {
    dx = NDArrayView(DataType::Float, pooled_shape(d, false));
    dnnl::memory plain(pool_md(d, false), dnnl_engine(), dx.raw_data());
    if (src_md != plain.get_desc()) count_dnnl_reorder(false);
    dnnl::reorder(diff_src, plain).execute(dnnl_stream(), diff_src, plain);
  }
  dnnl_stream().wait();
  return true;
}

NDArrayView pool_backward(const NDArrayView& x_in, const NDArrayView& dy_in, const PoolDims& d,
                          const PoolSaved* saved) {
  NDArrayView x = x_in.to_dense().contiguous(), dy = dy_in.to_dense().contiguous();
  check_dense(x, "pooling input");
  NDArrayView dx(x.dtype(), pooled_shape(d, false));
  DnnlPads p;
  if (dnnl_pool_pads(d, x.dtype(), p)) {
    DnnlPool e = dnnl_pool(d, p, true);
    dnnl::memory src(pool_md(d, false), dnnl_engine(), x.raw_data()),
        diff_src(pool_md(d, false), dnnl_engine(), dx.raw_data());
    dnnl::memory diff_dst(pool_md(d, true), dnnl_engine(), dy.raw_data());
    std::unordered_map<int, dnnl::memory> bargs{{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}};
    if (d.kind == PoolKind::Max) bargs.emplace(DNNL_ARG_WORKSPACE, max_pool_workspace(e, src, saved));
    e.bwd.execute(dnnl_stream(), bargs);
    dnnl_stream().wait();
    return dx;
  }
  auto tab = window_table(d.win);
  auto cnt = d.include_pad ? padded_counts(d.win) : std::vector<int64_t>();
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { pool_bwd<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), d, tab, cnt); });
  return dx;
}

NDArrayView max_unpool_forward(const NDArrayView& x_in, const NDArrayView& pin_in, const PoolDims& d) {
  NDArrayView x = x_in.to_dense().contiguous(), pin = pin_in.to_dense().contiguous();
  check_dense(x, "unpooling input");
  NDArrayView y(x.dtype(), pooled_shape(d, false));
  auto tab = window_table(d.win);
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { unpool_fwd<T>(x.data<T>(), pin.data<T>(), y.data<T>(), d, tab); });
  return y;
}

NDArrayView max_unpool_backward(const NDArrayView& dy_in, const NDArrayView& pin_in, const PoolDims& d) {
  NDArrayView dy = dy_in.to_dense().contiguous(), pin = pin_in.to_dense().contiguous();
  check_dense(dy, "unpooling gradient");
  NDArrayView dx(dy.dtype(), pooled_shape(d, true));
  auto tab = window_table(d.win);
  CNTK_DISPATCH_FLOAT(dy.dtype(), T, [&] { unpool_bwd<T>(dy.data<T>(), pin.data<T>(), dx.data<T>(), d, tab); });
  return dx;
}

// -------------------------------------------------------------- ROI pooling

namespace {

// The input window [h0, h1) x [w0, w1) of output cell (ph, pw) of one ROI, Caffe's way:
// corners rounded after scaling, every ROI at least 1x1, bins of fractional size.
struct RoiBin {
  int64_t h0, h1, w0, w1;
};

template <class T>
RoiBin roi_bin(const T* roi, double scale, int64_t H, int64_t W, int64_t PH, int64_t PW, int64_t ph, int64_t pw) {
  // Coordinates far outside the map (or NaN) are clamped before the integer conversion.
  auto pixel = [scale](T v) {
    double p = std::round(double(v) * scale);
    return std::isnan(p) ? int64_t(0) : int64_t(std::clamp(p, -1e9, 1e9));
  };
  int64_t x1 = pixel(roi[0]), y1 = pixel(roi[1]), x2 = pixel(roi[2]), y2 = pixel(roi[3]);
  double rh = double(std::max<int64_t>(y2 - y1 + 1, 1)), rw = double(std::max<int64_t>(x2 - x1 + 1, 1));
  double bh = rh / double(PH), bw = rw / double(PW);
  auto clamp = [](int64_t v, int64_t hi) { return std::min(std::max<int64_t>(v, 0), hi); };
  RoiBin b;
  b.h0 = clamp(int64_t(std::floor(double(ph) * bh)) + y1, H);
  b.h1 = clamp(int64_t(std::ceil(double(ph + 1) * bh)) + y1, H);
  b.w0 = clamp(int64_t(std::floor(double(pw) * bw)) + x1, W);
  b.w1 = clamp(int64_t(std::ceil(double(pw + 1) * bw)) + x1, W);
  return b;
}

template <class T>
void roi_pool(const T* x, const T* rois, const T* dy, T* out, int64_t N, int64_t R, int64_t C, int64_t H, int64_t W,
              int64_t PH, int64_t PW, double scale) {
  const bool backward = dy != nullptr;
  // Backward writes into dx [N, C, H, W]; ROIs of one image may overlap, so threads split images.
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    if (backward) std::fill(out + n * C * H * W, out + (n + 1) * C * H * W, T(0));
    for (int64_t r = 0; r < R; ++r) {
      const T* roi = rois + (n * R + r) * 4;
      for (int64_t c = 0; c < C; ++c) {
        const T* xc = x + (n * C + c) * H * W;
        for (int64_t ph = 0; ph < PH; ++ph)
          for (int64_t pw = 0; pw < PW; ++pw) {
            RoiBin b = roi_bin(roi, scale, H, W, PH, PW, ph, pw);
            int64_t best = -1;
            for (int64_t h = b.h0; h < b.h1; ++h)
              for (int64_t w = b.w0; w < b.w1; ++w)
                if (best < 0 || xc[h * W + w] > xc[best]) best = h * W + w;
            int64_t o = (((n * R + r) * C + c) * PH + ph) * PW + pw;
            if (!backward)
              out[o] = best < 0 ? T(0) : xc[best];
            else if (best >= 0)
              out[(n * C + c) * H * W + best] += dy[o];
          }
      }
    }
  }
}

void check_roi(const NDArrayView& x, const NDArrayView& rois) {
  if (x.rank() != 4 || rois.rank() != 3 || rois.shape()[2] != 4 || rois.shape()[0] != x.shape()[0])
    throw ShapeError("roipooling: expects features [N, C, H, W] and rois [N, R, 4], got " + x.shape().str() + " and " +
                     rois.shape().str());
}

}  // namespace

NDArrayView roi_pool_forward(const NDArrayView& x_in, const NDArrayView& rois_in, int64_t ph, int64_t pw,
                             double scale) {
  NDArrayView x = x_in.to_dense().contiguous(), rois = rois_in.to_dense().contiguous().cast(x_in.dtype());
  check_dense(x, "roipooling input");
  check_roi(x, rois);
  const auto& s = x.shape();
  int64_t R = rois.shape()[1];
  NDArrayView y(x.dtype(), NDShape{s[0], R, s[1], ph, pw});
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
    roi_pool<T>(x.data<T>(), rois.data<T>(), nullptr, y.data<T>(), s[0], R, s[1], s[2], s[3], ph, pw, scale);
  });
  return y;
}

NDArrayView roi_pool_backward(const NDArrayView& x_in, const NDArrayView& rois_in, const NDArrayView& dy_in, int64_t ph,
                              int64_t pw, double scale) {
  NDArrayView x = x_in.to_dense().contiguous(), rois = rois_in.to_dense().contiguous().cast(x_in.dtype());
  NDArrayView dy = dy_in.to_dense().contiguous();
  check_dense(x, "roipooling input");
  check_roi(x, rois);
  const auto& s = x.shape();
  NDArrayView dx(x.dtype(), s);
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
    roi_pool<T>(x.data<T>(), rois.data<T>(), dy.data<T>(), dx.data<T>(), s[0], rois.shape()[1], s[1], s[2], s[3], ph,
                pw, scale);
  });
  return dx;
}

}  // namespace cntk::kernels

namespace cntk {

// The public counter (cntk/evaluation.h).
size_t max_pool_workspaces_recomputed() { return kernels::max_pool_workspaces_recomputed(); }

}  // namespace cntk
