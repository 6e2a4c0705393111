#include "kernels/cpu/eltwise.h"
#include "kernels/cpu/dnnl_context.h"
#include "kernels/cpu/primitive_cache.h"
#include "kernels/cpu/dnnl_value.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>

namespace cntk::kernels {
namespace {

using Key = std::tuple<int, float, float, int64_t, bool, std::string>;

PrimitiveCache<Key, dnnl::primitive>& cache() {
  static auto* c = new PrimitiveCache<Key, dnnl::primitive>(4096);
  return *c;
}

dnnl::memory::desc flat(int64_t n) {
  return dnnl::memory::desc({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
}

// `layout`: the memory desc of the data (a oneDNN layout); null: n contiguous values.
dnnl::primitive get(int alg, float alpha, float beta, int64_t n, bool backward,
                    const dnnl::memory::desc* layout = nullptr) {
  Key key{alg, alpha, beta, n, backward, layout ? dnnl_desc_key(*layout) : std::string()};
  return cache().get(key, [&] {
    auto md = layout ? *layout : flat(n);
    dnnl::primitive p;
    auto a = dnnl::algorithm(alg);
    dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, a, md, alpha, beta);
    dnnl::eltwise_forward::primitive_desc fpd(fd, dnnl_engine());
    if (!backward) {
      p = dnnl::eltwise_forward(fpd);
    } else {
      dnnl::eltwise_backward::desc bd(a, md, md, alpha, beta);
      p = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(bd, dnnl_engine(), fpd));
    }
    return p;
  });
}

bool usable(const NDArrayView& x) { return x.dtype() == DataType::Float && !x.is_sparse() && x.numel() > 0; }

NDArrayView dnnl_forward(int alg, float alpha, float beta, const NDArrayView& xin) {
  if (!alg || !usable(xin)) return {};
  NDArrayView x = xin.contiguous();
  NDArrayView y(DataType::Float, x.shape());
  auto md = flat(x.numel());
  dnnl::memory src(md, dnnl_engine(), const_cast<void*>(x.raw_data())), dst(md, dnnl_engine(), y.raw_data());
  get(alg, alpha, beta, x.numel(), false).execute(dnnl_stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  dnnl_stream().wait();
  return y;
}

NDArrayView dnnl_backward(int alg, float alpha, float beta, const NDArrayView& xy_in, const NDArrayView& dy_in) {
  if (!alg || !usable(xy_in) || !usable(dy_in) || xy_in.shape() != dy_in.shape()) return {};
  NDArrayView xy = xy_in.contiguous(), dy = dy_in.contiguous();
  NDArrayView dx(DataType::Float, xy.shape());
  auto md = flat(xy.numel());
  dnnl::memory data(md, dnnl_engine(), const_cast<void*>(xy.raw_data()));
  dnnl::memory diff_dst(md, dnnl_engine(), const_cast<void*>(dy.raw_data())),
      diff_src(md, dnnl_engine(), dx.raw_data());
  // Algorithms that differentiate from the output take it as DST, the others take the input as SRC.
  bool from_dst = alg >= dnnl_eltwise_relu_use_dst_for_bwd && alg <= dnnl_eltwise_clip_v2_use_dst_for_bwd;
  get(alg, alpha, beta, xy.numel(), true)
      .execute(dnnl_stream(), {{from_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, data},
                               {DNNL_ARG_DIFF_DST, diff_dst},
                               {DNNL_ARG_DIFF_SRC, diff_src}});
  dnnl_stream().wait();
  return dx;
}

std::shared_ptr<LayoutValue> dnnl_forward_layout(int alg, float alpha, float beta, const LayoutValue& x) {
  if (!alg || x.dtype != DataType::Float) return nullptr;
  dnnl::memory::desc md = mem_of(x).get_desc();
  auto y = std::make_shared<DnnlValue>();
  y->mem = dnnl::memory(md, dnnl_engine());
  y->shape = x.shape;
  get(alg, alpha, beta, 0, false, &md)
      .execute(dnnl_stream(), {{DNNL_ARG_SRC, const_cast<dnnl::memory&>(mem_of(x))}, {DNNL_ARG_DST, y->mem}});
  dnnl_stream().wait();
  return y;
}

std::shared_ptr<LayoutValue> dnnl_backward_layout(int alg, float alpha, float beta, const LayoutValue& xy,
                                                  const LayoutValue* dyb, const NDArrayView& dy_in,
                                                  bool unit_slope_at_zero) {
  if (!alg || xy.dtype != DataType::Float) return nullptr;
  dnnl::memory::desc md = mem_of(xy).get_desc();
  if (!dyb && (!dy_in.defined() || dy_in.numel() != xy.shape.total_size())) return nullptr;
  NDArrayView dy_plain;  // keeps a plain output gradient alive for the pass
  const dnnl::memory diff_dst = dnnl_grad_in_layout(dyb, dy_in, md, dy_plain);
  auto dx = std::make_shared<DnnlValue>();
  dx->mem = dnnl::memory(md, dnnl_engine());
  dx->shape = xy.shape;
  bool from_dst = alg >= dnnl_eltwise_relu_use_dst_for_bwd && alg <= dnnl_eltwise_clip_v2_use_dst_for_bwd;
  get(alg, alpha, beta, 0, true, &md)
      .execute(dnnl_stream(), {{from_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, const_cast<dnnl::memory&>(mem_of(xy))},
                               {DNNL_ARG_DIFF_DST, diff_dst},
                               {DNNL_ARG_DIFF_SRC, dx->mem}});
  dnnl_stream().wait();
  if (unit_slope_at_zero && !from_dst) {
    // x, dy and dx share one layout (padding included), so they line up element by element.
    const float* x = static_cast<const float*>(mem_of(xy).get_data_handle());
    const float* dy = static_cast<const float*>(diff_dst.get_data_handle());
    float* d = static_cast<float*>(dx->mem.get_data_handle());
    const int64_t n = int64_t(md.get_size() / sizeof(float));
    for (int64_t i = 0; i < n; ++i)
      if (x[i] == 0.f) d[i] = dy[i];
  }
  return dx;
}

}  // namespace

int dnnl_eltwise_alg(Eltwise f, bool from_output) {
  switch (f) {
    case Eltwise::None: return 0;
    case Eltwise::Logistic: return from_output ? dnnl_eltwise_logistic_use_dst_for_bwd : dnnl_eltwise_logistic;
    case Eltwise::Tanh: return from_output ? dnnl_eltwise_tanh_use_dst_for_bwd : dnnl_eltwise_tanh;
    case Eltwise::Relu: return from_output ? dnnl_eltwise_relu_use_dst_for_bwd : dnnl_eltwise_relu;
    case Eltwise::Exp: return from_output ? dnnl_eltwise_exp_use_dst_for_bwd : dnnl_eltwise_exp;
    case Eltwise::Elu: return from_output ? dnnl_eltwise_elu_use_dst_for_bwd : dnnl_eltwise_elu;
  }
  return 0;
}

NDArrayView eltwise_forward(Eltwise f, float alpha, const NDArrayView& x) {
  if (!primitives_enabled()) return {};
  return dnnl_forward(dnnl_eltwise_alg(f), alpha, 0.f, x);
}

NDArrayView eltwise_backward(Eltwise f, bool from_output, float alpha, const NDArrayView& x_or_y,
                             const NDArrayView& dy) {
  if (!primitives_enabled()) return {};
  return dnnl_backward(dnnl_eltwise_alg(f, from_output), alpha, 0.f, x_or_y, dy);
}

std::shared_ptr<LayoutValue> eltwise_forward_layout(Eltwise f, float alpha, const LayoutValue& x) {
  return dnnl_forward_layout(dnnl_eltwise_alg(f), alpha, 0.f, x);
}

std::shared_ptr<LayoutValue> eltwise_backward_layout(Eltwise f, bool from_output, float alpha, const LayoutValue& xy,
                                                     const LayoutValue* dyb, const NDArrayView& dy,
                                                     bool unit_slope_at_zero) {
  return dnnl_backward_layout(dnnl_eltwise_alg(f, from_output), alpha, 0.f, xy, dyb, dy, unit_slope_at_zero);
}

}  // namespace cntk::kernels
