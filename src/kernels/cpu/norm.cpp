// Batch normalization and LRN: own loops for every type (the reference), oneDNN's
// batch normalization (inference) and LRN (forward) primitives for float32, cached
// per shape, and both in training over values in oneDNN layouts.
//
// Over plain values, training statistics and gradients run on the own loops:
// single-threaded they ran as fast as oneDNN 2.6's ncsp kernels (measured at
// 128x32x28x28), and they have no barriers between passes, which made oneDNN's
// multi-pass training kernels 10-30x slower on a loaded 2-core machine. Over a value in
// a oneDNN layout (a convolution's output), the statistics are read in place by an own
// pass and oneDNN's primitives normalize and differentiate in that layout, which saves
// the reorders around the step.
#include "kernels/cpu/norm.h"
#include "kernels/backend.h"
#include "kernels/cpu/dnnl_context.h"
#include "kernels/cpu/primitive_cache.h"
#include "kernels/cpu/dnnl_value.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>

namespace cntk::kernels {
namespace {

bool row_valid(const std::vector<uint8_t>* valid, int64_t n) { return !valid || (*valid)[size_t(n)]; }

// Features are processed in blocks, one block per task: single features when each has
// S > 1 contiguous positions, runs of 256 adjacent features when S == 1 (plain
// [N, C] data), so the innermost loop always walks contiguous memory.
int64_t feature_block(const BatchNormDims& d) { return d.S == 1 ? 256 : 1; }

template <typename T>
void moments_impl(const T* x, BatchNormDims d, const std::vector<uint8_t>* valid, double* mean, double* var) {
  const int64_t N = d.N, C = d.C, S = d.S, FB = feature_block(d), blocks = (C + FB - 1) / FB;
  double count = 0;
  for (int64_t n = 0; n < N; ++n) count += row_valid(valid, n) ? double(S) : 0.0;
#pragma omp parallel for schedule(static) if (N * C * S > 32768)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * FB, c1 = std::min(C, c0 + FB);
    for (int64_t c = c0; c < c1; ++c) mean[c] = var[c] = 0;
    for (int64_t n = 0; n < N; ++n) {
      if (!row_valid(valid, n)) continue;
      for (int64_t c = c0; c < c1; ++c) {
        const T* p = x + (n * C + c) * S;
        double acc = 0;
        for (int64_t s = 0; s < S; ++s) acc += double(p[s]);
        mean[c] += acc;
      }
    }
    for (int64_t c = c0; c < c1; ++c) mean[c] = count > 0 ? mean[c] / count : 0.0;
    for (int64_t n = 0; n < N; ++n) {
      if (!row_valid(valid, n)) continue;
      for (int64_t c = c0; c < c1; ++c) {
        const T* p = x + (n * C + c) * S;
        const double mu = mean[c];
        double acc = 0;
        for (int64_t s = 0; s < S; ++s) {
          double e = double(p[s]) - mu;
          acc += e * e;
        }
        var[c] += acc;
      }
    }
    for (int64_t c = c0; c < c1; ++c) var[c] = count > 0 ? var[c] / count : 0.0;
  }
}

template <typename T>
void apply_impl(const T* x, T* y, BatchNormDims d, const T* scale, const T* bias, const double* mean,
                const double* inv_std) {
  const int64_t N = d.N, C = d.C, S = d.S;
#pragma omp parallel for collapse(2) schedule(static) if (N * C * S > 32768)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const T a = T(double(scale[c]) * inv_std[c]);
      const T b = T(double(bias[c]) - double(scale[c]) * inv_std[c] * mean[c]);
      const T* p = x + (n * C + c) * S;
      T* q = y + (n * C + c) * S;
#pragma omp simd
      for (int64_t s = 0; s < S; ++s) q[s] = a * p[s] + b;
    }
}

template <typename T>
void backward_impl(const T* x, const T* dy, T* dx, T* dscale, T* dbias, BatchNormDims d, const T* scale,
                   const double* mean, const double* inv_std, double w, const std::vector<uint8_t>* valid) {
  const int64_t N = d.N, C = d.C, S = d.S, FB = feature_block(d), blocks = (C + FB - 1) / FB;
  double m = 0;
  for (int64_t n = 0; n < N; ++n) m += row_valid(valid, n) ? double(S) : 0.0;
  const double wm = m > 0 ? w / m : 0.0;
#pragma omp parallel for schedule(static) if (N * C * S > 32768)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * FB, c1 = std::min(C, c0 + FB);
    std::vector<double> db(size_t(c1 - c0), 0.0), ds(size_t(c1 - c0), 0.0);
    for (int64_t n = 0; n < N; ++n) {
      if (!row_valid(valid, n)) continue;
      for (int64_t c = c0; c < c1; ++c) {
        const T *p = x + (n * C + c) * S, *g = dy + (n * C + c) * S;
        const double mu = mean[c];
        double a = 0, b = 0;
        for (int64_t s = 0; s < S; ++s) {
          a += double(g[s]);
          b += double(g[s]) * (double(p[s]) - mu);
        }
        db[size_t(c - c0)] += a;
        ds[size_t(c - c0)] += b * inv_std[c];
      }
    }
    for (int64_t c = c0; c < c1; ++c) {
      dbias[c] = T(db[size_t(c - c0)]);
      dscale[c] = T(ds[size_t(c - c0)]);
    }
    for (int64_t n = 0; n < N; ++n) {
      const bool ok = row_valid(valid, n);
      for (int64_t c = c0; c < c1; ++c) {
        const T *p = x + (n * C + c) * S, *g = dy + (n * C + c) * S;
        T* q = dx + (n * C + c) * S;
        if (!ok) {
          for (int64_t s = 0; s < S; ++s) q[s] = T(0);
          continue;
        }
        // dx = k * (dy - wm * (xhat * ds + db)) with xhat = (x - mean) * inv_std
        const double k = double(scale[c]) * inv_std[c], mu = mean[c], is = inv_std[c];
        const double u = wm * ds[size_t(c - c0)] * is, v = wm * db[size_t(c - c0)];
        for (int64_t s = 0; s < S; ++s) q[s] = T(k * (double(g[s]) - u * (double(p[s]) - mu) - v));
      }
    }
  }
}

// ---- float32 through oneDNN's batch normalization primitive.

// [N, C, S] as a 4-D NCHW tensor (H = 1): oneDNN's JIT kernels cover 4-D plain layouts.
dnnl::memory::desc ncs_desc(const BatchNormDims& d) {
  return dnnl::memory::desc({d.N, d.C, 1, d.S}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw);
}

using BnKey = std::tuple<int64_t, int64_t, int64_t, float>;  // N, C, S, epsilon

dnnl::batch_normalization_forward dnnl_bn_inference(const BatchNormDims& d, float eps) {
  static auto* cache = new PrimitiveCache<BnKey, dnnl::batch_normalization_forward>(1024);
  return cache->get(BnKey{d.N, d.C, d.S, eps}, [&] {
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift |
                 dnnl::normalization_flags::use_global_stats;
    dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, ncs_desc(d), eps, flags);
    return dnnl::batch_normalization_forward(dnnl::batch_normalization_forward::primitive_desc(desc, dnnl_engine()));
  });
}

dnnl::memory vec_mem(const float* p, int64_t n) {
  return dnnl::memory({{n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a}, dnnl_engine(),
                      const_cast<float*>(p));
}

bool dnnl_usable(const NDArrayView& x, const BatchNormDims& d) {
  return x.dtype() == DataType::Float && d.N > 0 && d.C > 0 && d.S > 0 && d.N * d.S > 1 && primitives_enabled();
}

}  // namespace

void batch_norm_moments(const NDArrayView& xin, BatchNormDims d, const std::vector<uint8_t>* valid,
                        std::vector<double>& mean, std::vector<double>& variance) {
  NDArrayView x = xin.to_dense().contiguous();
  mean.assign(size_t(d.C), 0.0);
  variance.assign(size_t(d.C), 0.0);
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { moments_impl<T>(x.data<T>(), d, valid, mean.data(), variance.data()); });
}

NDArrayView batch_norm_apply(const NDArrayView& xin, BatchNormDims d, const NDArrayView& sc, const NDArrayView& bi,
                             const std::vector<double>& mean, const std::vector<double>& inv_std) {
  NDArrayView x = xin.to_dense().contiguous(), scale = sc.to_dense().contiguous(), bias = bi.to_dense().contiguous();
  NDArrayView y(x.dtype(), x.shape());
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
    apply_impl<T>(x.data<T>(), y.data<T>(), d, scale.data<T>(), bias.data<T>(), mean.data(), inv_std.data());
  });
  return y;
}

bool batch_norm_infer_primitive(const NDArrayView& xin, BatchNormDims d, const NDArrayView& sc, const NDArrayView& bi,
                                const NDArrayView& mn, const NDArrayView& vr, double epsilon, NDArrayView& y) {
  if (!dnnl_usable(xin, d) || sc.dtype() != DataType::Float || mn.dtype() != DataType::Float ||
      vr.dtype() != DataType::Float)
    return false;
  NDArrayView x = xin.to_dense().contiguous(), scale = sc.to_dense().contiguous(), bias = bi.to_dense().contiguous();
  NDArrayView mean = mn.to_dense().contiguous(), var = vr.to_dense().contiguous();
  y = NDArrayView(x.dtype(), x.shape());
  try {
    auto md = ncs_desc(d);
    auto& e = dnnl_engine();
    dnnl::memory src(md, e, const_cast<void*>(x.raw_data())), dst(md, e, y.raw_data());
    dnnl_bn_inference(d, float(epsilon))
        .execute(dnnl_stream(), {{DNNL_ARG_SRC, src},
                                 {DNNL_ARG_DST, dst},
                                 {DNNL_ARG_SCALE, vec_mem(scale.data<float>(), d.C)},
                                 {DNNL_ARG_SHIFT, vec_mem(bias.data<float>(), d.C)},
                                 {DNNL_ARG_MEAN, vec_mem(mean.data<float>(), d.C)},
                                 {DNNL_ARG_VARIANCE, vec_mem(var.data<float>(), d.C)}});
    dnnl_stream().wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

std::shared_ptr<LayoutValue> batch_norm_infer_layout(const LayoutValue& x, BatchNormDims d, const NDArrayView& sc,
                                                     const NDArrayView& bi, const NDArrayView& mn,
                                                     const NDArrayView& vr, double epsilon) {
  const dnnl::memory::desc md = mem_of(x).get_desc();
  const dnnl::memory::dims dims = md.dims();
  if (x.dtype != DataType::Float || sc.dtype() != DataType::Float || bi.dtype() != DataType::Float ||
      mn.dtype() != DataType::Float || vr.dtype() != DataType::Float || dims.size() < 2 || dims[0] != d.N ||
      dims[1] != d.C || d.N * d.S <= 1)
    return nullptr;
  NDArrayView scale = sc.to_dense().contiguous(), bias = bi.to_dense().contiguous();
  NDArrayView mean = mn.to_dense().contiguous(), var = vr.to_dense().contiguous();
  static auto* cache = new PrimitiveCache<std::string, dnnl::batch_normalization_forward>(1024);
  dnnl::batch_normalization_forward prim;
  try {
    prim = cache->get(dnnl_desc_key(md) + "#" + std::to_string(epsilon), [&] {
      auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift |
                   dnnl::normalization_flags::use_global_stats;
      dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, md, float(epsilon), flags);
      return dnnl::batch_normalization_forward(dnnl::batch_normalization_forward::primitive_desc(desc, dnnl_engine()));
    });
  } catch (const dnnl::error&) {
    return nullptr;
  }
  auto y = std::make_shared<DnnlValue>();
  y->mem = dnnl::memory(md, dnnl_engine());
  y->shape = x.shape;
  prim.execute(dnnl_stream(), {{DNNL_ARG_SRC, const_cast<dnnl::memory&>(mem_of(x))},
                               {DNNL_ARG_DST, y->mem},
                               {DNNL_ARG_SCALE, vec_mem(scale.data<float>(), d.C)},
                               {DNNL_ARG_SHIFT, vec_mem(bias.data<float>(), d.C)},
                               {DNNL_ARG_MEAN, vec_mem(mean.data<float>(), d.C)},
                               {DNNL_ARG_VARIANCE, vec_mem(var.data<float>(), d.C)}});
  dnnl_stream().wait();
  return y;
}

BatchNormGrads batch_norm_backward(const NDArrayView& xin, const NDArrayView& dyin, BatchNormDims d,
                                   const NDArrayView& sc, const std::vector<double>& mean,
                                   const std::vector<double>& inv_std, double stats_weight,
                                   const std::vector<uint8_t>* valid) {
  NDArrayView x = xin.to_dense().contiguous(), dy = dyin.to_dense().contiguous();
  NDArrayView scale = sc.to_dense().contiguous();
  if (dy.dtype() != x.dtype()) dy = dy.cast(x.dtype());
  if (scale.dtype() != x.dtype()) scale = scale.cast(x.dtype());
  BatchNormGrads g{NDArrayView(x.dtype(), x.shape()), NDArrayView(x.dtype(), scale.shape()),
                   NDArrayView(x.dtype(), scale.shape())};
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
    backward_impl<T>(x.data<T>(), dy.data<T>(), g.dx.data<T>(), g.dscale.data<T>(), g.dbias.data<T>(), d,
                     scale.data<T>(), mean.data(), inv_std.data(), stats_weight, valid);
  });
  return g;
}

// ---- float32 training over a value in a oneDNN layout.

namespace {

// The backward primitive of one layout and epsilon, cached (the forward applies given
// statistics: batch_norm_infer_layout's primitive). A copy (a shared handle): the cache
// may be cleared by another thread while it runs. Empty where oneDNN cannot run it.
dnnl::batch_normalization_backward dnnl_bn_backward(const dnnl::memory::desc& md, double epsilon) {
  static auto* cache = new PrimitiveCache<std::string, dnnl::batch_normalization_backward>(1024);
  return cache->get(dnnl_desc_key(md) + "#" + std::to_string(epsilon), [&]() -> dnnl::batch_normalization_backward {
    try {
      auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
      dnnl::batch_normalization_forward::desc fd(dnnl::prop_kind::forward_training, md, float(epsilon), flags);
      dnnl::batch_normalization_forward::primitive_desc fpd(fd, dnnl_engine());
      dnnl::batch_normalization_backward::desc bd(dnnl::prop_kind::backward, md, md, float(epsilon), flags);
      dnnl::batch_normalization_backward::primitive_desc bpd(bd, dnnl_engine(), fpd);
      // It must work in x's layout.
      if (bpd.diff_src_desc() != md || bpd.diff_dst_desc() != md) return {};
      return dnnl::batch_normalization_backward(bpd);
    } catch (const dnnl::error&) {
      return {};  // cached too: oneDNN cannot run this layout
    }
  });
}

// x's dims are [N, C, spatial...] with d's N, C and S.
bool bn_layout_fits(const LayoutValue& x, const BatchNormDims& d) {
  const dnnl::memory::dims dims = mem_of(x).get_desc().dims();
  if (x.dtype != DataType::Float || dims.size() < 2 || dims[0] != d.N || dims[1] != d.C || d.N * d.S <= 1) return false;
  int64_t S = 1;
  for (size_t k = 2; k < dims.size(); ++k) S *= dims[k];
  return S == d.S;
}

}  // namespace

bool batch_norm_moments_layout(const LayoutValue& x, BatchNormDims d, std::vector<double>& mean,
                               std::vector<double>& variance) {
  if (!bn_layout_fits(x, d)) return false;
  const dnnl::memory::desc md = mem_of(x).get_desc();
  const dnnl_memory_desc_t& c = md.data;
  if (c.format_kind != dnnl_blocked || c.data_type != dnnl_f32) return false;
  const auto& blk = c.format_desc.blocking;
  // Plain strides, or one block of B channels innermost (nChw16c and the like).
  int64_t B = 1;
  if (blk.inner_nblks == 1 && blk.inner_idxs[0] == 1)
    B = blk.inner_blks[0];
  else if (blk.inner_nblks != 0)
    return false;
  const int nd = c.ndims;
  // Offsets of the spatial positions, in the plain layout's (row-major) order.
  std::vector<int64_t> soff(size_t(d.S), 0);
  {
    std::vector<int64_t> idx(size_t(nd), 0);
    for (int64_t s = 0; s < d.S; ++s) {
      int64_t off = 0;
      for (int k = 2; k < nd; ++k) off += idx[size_t(k)] * blk.strides[k];
      soff[size_t(s)] = off;
      for (int k = nd - 1; k >= 2; --k) {
        if (++idx[size_t(k)] < c.dims[k]) break;
        idx[size_t(k)] = 0;
      }
    }
  }
  const float* base = static_cast<const float*>(mem_of(x).get_data_handle()) + c.offset0;
  const int64_t N = d.N, C = d.C, S = d.S, blocks = (C + B - 1) / B;
  const double count = double(N) * double(S);
  mean.assign(size_t(C), 0.0);
  variance.assign(size_t(C), 0.0);
  double* mp = mean.data();
  double* vp = variance.data();
  // Per channel the same order of additions as batch_norm_moments (positions within a
  // sample, then samples), so the statistics are the plain path's to the last bit.
#pragma omp parallel for schedule(static) if (N * C * S > 32768)
  for (int64_t cb = 0; cb < blocks; ++cb) {
    const int64_t c0 = cb * B, nc = std::min(B, C - c0);
    std::vector<double> acc(static_cast<size_t>(B));
    for (int64_t n = 0; n < N; ++n) {
      const float* p = base + n * blk.strides[0] + cb * blk.strides[1];
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t s = 0; s < S; ++s)
        for (int64_t j = 0; j < nc; ++j) acc[size_t(j)] += double(p[soff[size_t(s)] + j]);
      for (int64_t j = 0; j < nc; ++j) mp[c0 + j] += acc[size_t(j)];
    }
    for (int64_t j = 0; j < nc; ++j) mp[c0 + j] = mp[c0 + j] / count;
    for (int64_t n = 0; n < N; ++n) {
      const float* p = base + n * blk.strides[0] + cb * blk.strides[1];
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t s = 0; s < S; ++s)
        for (int64_t j = 0; j < nc; ++j) {
          const double e = double(p[soff[size_t(s)] + j]) - mp[c0 + j];
          acc[size_t(j)] += e * e;
        }
      for (int64_t j = 0; j < nc; ++j) vp[c0 + j] += acc[size_t(j)];
    }
    for (int64_t j = 0; j < nc; ++j) vp[c0 + j] = vp[c0 + j] / count;
  }
  return true;
}

bool batch_norm_backward_layout(const LayoutValue& x, const LayoutValue* dyb, const NDArrayView& dy_in, BatchNormDims d,
                                const NDArrayView& sc, const std::vector<float>& mean,
                                const std::vector<float>& variance, double epsilon, std::shared_ptr<LayoutValue>& dx,
                                NDArrayView& dscale, NDArrayView& dbias) {
  if (!bn_layout_fits(x, d) || sc.dtype() != DataType::Float || int64_t(mean.size()) != d.C ||
      int64_t(variance.size()) != d.C)
    return false;
  const dnnl::memory::desc md = mem_of(x).get_desc();
  const dnnl::batch_normalization_backward p = dnnl_bn_backward(md, epsilon);
  if (!p) return false;
  NDArrayView scale = sc.to_dense().contiguous();
  NDArrayView g;  // keeps a plain output gradient alive while its memory is used
  const dnnl::memory diff_dst = dnnl_grad_in_layout(dyb, dy_in, md, g);
  // oneDNN 2.6 wants the shift among the backward's arguments though no gradient depends on it.
  const std::vector<float> no_shift(size_t(d.C), 0.f);
  dscale = NDArrayView(DataType::Float, scale.shape());
  dbias = NDArrayView(DataType::Float, scale.shape());
  auto dxv = dnnl_value(dnnl::memory(md, dnnl_engine()), x.shape);
  dx = dxv;
  p.execute(dnnl_stream(), {{DNNL_ARG_SRC, const_cast<dnnl::memory&>(mem_of(x))},
                            {DNNL_ARG_MEAN, vec_mem(mean.data(), d.C)},
                            {DNNL_ARG_VARIANCE, vec_mem(variance.data(), d.C)},
                            {DNNL_ARG_DIFF_DST, diff_dst},
                            {DNNL_ARG_SCALE, vec_mem(scale.data<float>(), d.C)},
                            {DNNL_ARG_SHIFT, vec_mem(no_shift.data(), d.C)},
                            {DNNL_ARG_DIFF_SRC, dxv->mem},
                            {DNNL_ARG_DIFF_SCALE, vec_mem(dscale.data<float>(), d.C)},
                            {DNNL_ARG_DIFF_SHIFT, vec_mem(dbias.data<float>(), d.C)}});
  dnnl_stream().wait();
  return true;
}

// ------------------------------------------------------------------ LRN

namespace {

// D[n, c, s] = bias + alpha / (2r+1) * sum over the window of x^2.
template <typename T>
void lrn_denominator(const T* x, double* D, int64_t N, int64_t C, int64_t S, int64_t r, double bias, double alpha) {
  const double a = alpha / double(2 * r + 1);
#pragma omp parallel for schedule(static) if (N * C * S > 32768)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      int64_t lo = std::max<int64_t>(0, c - r), hi = std::min<int64_t>(C - 1, c + r);
      double* q = D + (n * C + c) * S;
      for (int64_t s = 0; s < S; ++s) q[s] = 0;
      for (int64_t j = lo; j <= hi; ++j) {
        const T* p = x + (n * C + j) * S;
        for (int64_t s = 0; s < S; ++s) q[s] += double(p[s]) * double(p[s]);
      }
      for (int64_t s = 0; s < S; ++s) q[s] = bias + a * q[s];
    }
}

template <typename T>
void lrn_forward_impl(const T* x, T* y, int64_t N, int64_t C, int64_t S, int64_t r, double bias, double alpha,
                      double beta) {
  const int64_t total = N * C * S;
  std::vector<double> D(static_cast<size_t>(total));
  lrn_denominator<T>(x, D.data(), N, C, S, r, bias, alpha);
#pragma omp parallel for schedule(static) if (total > 32768)
  for (int64_t i = 0; i < total; ++i) y[i] = T(double(x[i]) * std::pow(D[size_t(i)], -beta));
}

// dx_i = dy_i * D_i^-beta - 2 beta alpha/(2r+1) x_i * sum_{c in window(i)} dy_c x_c D_c^(-beta-1)
template <typename T>
void lrn_backward_impl(const T* x, const T* dy, T* dx, int64_t N, int64_t C, int64_t S, int64_t r, double bias,
                       double alpha, double beta) {
  const int64_t total = N * C * S;
  std::vector<double> D(static_cast<size_t>(total)), t(static_cast<size_t>(total));
  lrn_denominator<T>(x, D.data(), N, C, S, r, bias, alpha);
#pragma omp parallel for schedule(static) if (total > 32768)
  for (int64_t i = 0; i < total; ++i) t[size_t(i)] = double(dy[i]) * double(x[i]) * std::pow(D[size_t(i)], -beta - 1);
  const double k = 2.0 * beta * alpha / double(2 * r + 1);
#pragma omp parallel for collapse(2) schedule(static) if (total > 32768)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      int64_t lo = std::max<int64_t>(0, c - r), hi = std::min<int64_t>(C - 1, c + r);
      for (int64_t s = 0; s < S; ++s) {
        double acc = 0;
        for (int64_t j = lo; j <= hi; ++j) acc += t[size_t((n * C + j) * S + s)];
        size_t i = size_t((n * C + c) * S + s);
        dx[i] = T(double(dy[i]) * std::pow(D[i], -beta) - k * double(x[i]) * acc);
      }
    }
}

}  // namespace

namespace {

using LrnKey = std::tuple<int64_t, int64_t, int64_t, int64_t, float, float, float>;

// oneDNN's across-channel LRN divides alpha by the window size, as CNTK does.
bool lrn_forward_dnnl(const NDArrayView& x, NDArrayView& y, int64_t N, int64_t C, int64_t S, int64_t r, double bias,
                      double alpha, double beta) {
  if (x.dtype() != DataType::Float || N * C * S == 0 || bias <= 0 || !primitives_enabled()) return false;
  try {
    static auto* cache = new PrimitiveCache<LrnKey, dnnl::lrn_forward>(1024);
    auto md = ncs_desc({N, C, S});
    dnnl::lrn_forward prim = cache->get(LrnKey{N, C, S, r, float(bias), float(alpha), float(beta)}, [&] {
      dnnl::lrn_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::lrn_across_channels, md,
                                   dnnl::memory::dim(2 * r + 1), float(alpha), float(beta), float(bias));
      return dnnl::lrn_forward(dnnl::lrn_forward::primitive_desc(desc, dnnl_engine()));
    });
    auto& e = dnnl_engine();
    dnnl::memory src(md, e, const_cast<void*>(x.raw_data())), dst(md, e, y.raw_data());
    prim.execute(dnnl_stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    dnnl_stream().wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

NDArrayView lrn_forward(const NDArrayView& xin, int64_t N, int64_t C, int64_t S, int64_t radius, double bias,
                        double alpha, double beta) {
  NDArrayView x = xin.to_dense().contiguous();
  NDArrayView y(x.dtype(), x.shape());
  if (lrn_forward_dnnl(x, y, N, C, S, radius, bias, alpha, beta)) return y;
  CNTK_DISPATCH_FLOAT(x.dtype(), T,
                      [&] { lrn_forward_impl<T>(x.data<T>(), y.data<T>(), N, C, S, radius, bias, alpha, beta); });
  return y;
}

NDArrayView lrn_backward(const NDArrayView& xin, const NDArrayView& dyin, int64_t N, int64_t C, int64_t S,
                         int64_t radius, double bias, double alpha, double beta) {
  NDArrayView x = xin.to_dense().contiguous(), dy = dyin.to_dense().contiguous();
  if (dy.dtype() != x.dtype()) dy = dy.cast(x.dtype());
  NDArrayView dx(x.dtype(), x.shape());
  CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
    lrn_backward_impl<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), N, C, S, radius, bias, alpha, beta);
  });
  return dx;
}

// ---- LRN over a value in a oneDNN layout.

namespace {

struct DnnlLrnTrain {
  dnnl::lrn_forward::primitive_desc fpd;
  dnnl::lrn_forward fwd;
  dnnl::lrn_backward bwd;
};

// A copy (shared handles): the cache may be cleared by another thread while it runs.
// Empty (no fwd) where oneDNN cannot run it.
DnnlLrnTrain dnnl_lrn_train(const dnnl::memory::desc& md, int64_t r, double bias, double alpha, double beta) {
  if (bias <= 0 || r < 0) return {};
  static auto* cache = new PrimitiveCache<std::string, DnnlLrnTrain>(1024);
  const std::string key = dnnl_desc_key(md) + "#" + std::to_string(r) + "," + std::to_string(float(bias)) + "," +
                          std::to_string(float(alpha)) + "," + std::to_string(float(beta));
  return cache->get(key, [&]() -> DnnlLrnTrain {
    try {
      const auto alg = dnnl::algorithm::lrn_across_channels;
      const auto n = dnnl::memory::dim(2 * r + 1);
      dnnl::lrn_forward::desc fd(dnnl::prop_kind::forward_training, alg, md, n, float(alpha), float(beta), float(bias));
      dnnl::lrn_forward::primitive_desc fpd(fd, dnnl_engine());
      dnnl::lrn_backward::desc bd(alg, md, md, n, float(alpha), float(beta), float(bias));
      dnnl::lrn_backward::primitive_desc bpd(bd, dnnl_engine(), fpd);
      if (fpd.dst_desc() != md || bpd.diff_src_desc() != md || bpd.diff_dst_desc() != md) return {};
      return DnnlLrnTrain{fpd, dnnl::lrn_forward(fpd), dnnl::lrn_backward(bpd)};
    } catch (const dnnl::error&) {
      return {};  // cached too: oneDNN cannot run this layout
    }
  });
}

// Runs the training forward of p over x into y (and the workspace its backward reads).
void lrn_run_forward(const DnnlLrnTrain& p, const dnnl::memory& x, dnnl::memory& y, dnnl::memory& ws) {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, const_cast<dnnl::memory&>(x)}, {DNNL_ARG_DST, y}};
  if (p.fpd.workspace_desc().get_size() > 0) {
    ws = dnnl::memory(p.fpd.workspace_desc(), dnnl_engine());
    args.emplace(DNNL_ARG_WORKSPACE, ws);
  }
  p.fwd.execute(dnnl_stream(), args);
}

}  // namespace

std::shared_ptr<LayoutValue> lrn_forward_layout(const LayoutValue& x, int64_t radius, double bias, double alpha,
                                                double beta) {
  const dnnl::memory::desc md = mem_of(x).get_desc();
  if (x.dtype != DataType::Float || md.dims().size() < 2) return nullptr;
  const DnnlLrnTrain p = dnnl_lrn_train(md, radius, bias, alpha, beta);
  if (!p.fwd) return nullptr;
  auto y = std::make_shared<DnnlValue>();
  y->mem = dnnl::memory(md, dnnl_engine());
  y->shape = x.shape;
  dnnl::memory ws;
  lrn_run_forward(p, mem_of(x), y->mem, ws);
  dnnl_stream().wait();
  return y;
}

std::shared_ptr<LayoutValue> lrn_backward_layout(const LayoutValue& x, const LayoutValue* dyb, const NDArrayView& dy_in,
                                                 int64_t radius, double bias, double alpha, double beta) {
  const dnnl::memory::desc md = mem_of(x).get_desc();
  if (x.dtype != DataType::Float || md.dims().size() < 2) return nullptr;
  const DnnlLrnTrain p = dnnl_lrn_train(md, radius, bias, alpha, beta);
  if (!p.fwd) return nullptr;
  NDArrayView g;  // keeps a plain output gradient alive while its memory is used
  const dnnl::memory diff_dst = dnnl_grad_in_layout(dyb, dy_in, md, g);
  // The backward reads the forward's workspace: recomputed here (as pooling does).
  dnnl::memory y(md, dnnl_engine()), ws;
  lrn_run_forward(p, mem_of(x), y, ws);
  auto dx = std::make_shared<DnnlValue>();
  dx->mem = dnnl::memory(md, dnnl_engine());
  dx->shape = x.shape;
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, const_cast<dnnl::memory&>(mem_of(x))},
                                             {DNNL_ARG_DIFF_DST, diff_dst},
                                             {DNNL_ARG_DIFF_SRC, dx->mem}};
  if (ws) args.emplace(DNNL_ARG_WORKSPACE, ws);
  p.bwd.execute(dnnl_stream(), args);
  dnnl_stream().wait();
  return dx;
}

}  // namespace cntk::kernels
