// Op family: losses and evaluation criteria that are not exact composites of
// other ops, or whose fused kernel is much cheaper than the composite:
//   CrossEntropyWithSoftmax  log-sum-exp minus the target-weighted logits, gradient softmax - target
//   Logistic                 binary cross entropy (optionally weighted), finite at saturated outputs
//   ClassificationError      top-N error along the last axis
//   LambdaRank, NDCG         ranking criteria over groups of consecutive samples of the minibatch
//   NCE                      noise contrastive estimation with negatives shared across the minibatch
// Every criterion gives one value per sample (shape (1,) or the reduced shape),
// except CNTK's minibatch-wide criteria (LambdaRank, NDCG): one scalar for the
// whole minibatch, without dynamic axes, as CNTK's.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "cntk/ops.h"
#include "cntk/random.h"
#include "onnx/export.h"
#include "ops/op.h"
#include "ops/sampling.h"

namespace cntk {
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements below which loops stay on one thread

// Calls f(T{}) for the runtime float type (a function, not a macro, so that the
// kernels inside may carry OpenMP pragmas).
template <class F>
void dispatch(DataType t, F&& f) {
  if (t == DataType::Float)
    f(float{});
  else if (t == DataType::Double)
    f(double{});
  else
    throw NotImplementedError(std::string("loss ops compute in float32 or float64, not ") + to_string(t));
}

// The common static shape of inputs a and b (equal up to inferred/free dims);
// inferred dims of parameters and constants are filled in.
NDShape merge_static(InferContext& ctx, size_t a, size_t b, const char* what) {
  const NDShape &sa = ctx.shape(a), &sb = ctx.shape(b);
  if (sa.rank() != sb.rank()) ctx.fail(std::string(what) + " must have the same shape");
  std::vector<int64_t> d(sa.rank());
  for (size_t k = 0; k < sa.rank(); ++k) {
    int64_t x = sa[k], y = sb[k];
    if (x == y || y == NDShape::kInferredDimension)
      d[k] = x;
    else if (x == NDShape::kInferredDimension)
      d[k] = y;
    else if (x == NDShape::kFreeDimension)
      d[k] = y;
    else if (y == NDShape::kFreeDimension)
      d[k] = x;
    else
      ctx.fail(std::string(what) + " must have the same shape");
  }
  NDShape m(d);
  for (size_t i : {a, b}) {
    const NDShape& s = ctx.shape(i);
    if (!s.has_inferred()) continue;
    std::vector<int64_t> f(s.dims());
    for (size_t k = 0; k < f.size(); ++k)
      if (f[k] == NDShape::kInferredDimension) f[k] = m[k];
    ctx.fill_inferred(i, NDShape(f));
  }
  return m;
}

bool has_sequence_axis(const Variable& v) {
  for (auto& a : v.dynamic_axes())
    if (a.is_sequence()) return true;
  return false;
}

void densify(ComputeContext& ctx) {
  for (auto& x : ctx.inputs)
    if (x.is_sparse()) x = x.to_dense();
}

// The runtime shape shared by inputs `which`: the output's dynamic dims (the
// largest over those inputs) followed by `stat`.
NDShape full_shape(const ComputeContext& ctx, std::initializer_list<size_t> which, const NDShape& stat) {
  std::vector<int64_t> dims(ctx.out_dyn, 1);
  for (size_t i : which) {
    NDShape a = ctx.aligned(i, ctx.inputs[i].rank() - ctx.in_dyn[i]).shape();
    for (int k = 0; k < ctx.out_dyn; ++k) dims[k] = std::max(dims[k], a[k]);
  }
  for (auto d : stat.dims()) dims.push_back(d);
  return NDShape(dims);
}

// Input i broadcast to `full` (dynamic dims, then static), contiguous.
NDArrayView expand(const ComputeContext& ctx, size_t i, const NDShape& full) {
  NDArrayView v = ctx.aligned(i, full.rank() - ctx.out_dyn);
  if (v.shape() != full) v = v.broadcast_to(full);
  return v.contiguous();
}

// ------------------------------------------------------------ CrossEntropyWithSoftmax

int ce_axis(const Dictionary& attrs, size_t rank, const std::string& op) {
  const Axis& a = schema_attr(find_op(op), op, attrs, "axis").as_axis();
  if (!a.is_static()) throw ValueError(op + ": the axis must be a static axis");
  return normalize_axis(a.static_index(), rank, op.c_str());
}

// Rows along one axis of a contiguous tensor: element (o, j, i) at o*n*inner + j*inner + i.
struct Rows {
  int64_t outer = 1, n = 1, inner = 1;
  Rows(const NDShape& full, size_t axis) {
    for (size_t k = 0; k < axis; ++k) outer *= full[k];
    n = full[axis];
    for (size_t k = axis + 1; k < full.rank(); ++k) inner *= full[k];
  }
  int64_t count() const { return outer * inner; }
  int64_t base(int64_t r) const { return (r / inner) * n * inner + r % inner; }
};

// One row of n elements, `stride` apart (Unit: stride 1, so the loops vectorize).
template <class T, bool Unit>
struct Row {
  T* p;
  int64_t stride;
  T& operator[](int64_t j) const { return p[Unit ? j : j * stride]; }
};

// log(sum(exp(x))) of a row. With `e`, also leaves exp(x - max) there and the max in *mx.
template <class T, bool Unit>
double row_lse(Row<const T, Unit> x, int64_t n, Row<T, Unit>* e = nullptr, T* mx = nullptr) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, x[j]);
  if (mx) *mx = m;
  if (std::isinf(m)) return double(m);
  double s = 0;
  for (int64_t j = 0; j < n; ++j) {
    T v = std::exp(x[j] - m);
    if (e) (*e)[j] = v;
    s += double(v);
  }
  return double(m) + std::log(s);
}

template <class T, bool Unit>
T ce_row_value(Row<const T, Unit> x, Row<const T, Unit> t, int64_t n) {
  double dot = 0;
  for (int64_t j = 0; j < n; ++j)
    if (t[j] != 0) dot += double(t[j]) * double(x[j]);
  return T(row_lse<T, Unit>(x, n) - dot);
}

// d/dx = g (softmax(x) - t), one exponential per element; d/dt = -g x.
template <class T, bool Unit>
void ce_row_grad(Row<const T, Unit> x, Row<const T, Unit> t, Row<T, Unit> d, int64_t n, double g, size_t which) {
  if (which == 0) {
    T mx;
    double lse = row_lse<T, Unit>(x, n, &d, &mx);
    T gg = T(g);
    if (std::isinf(lse)) {  // all -inf (or +inf): no finite softmax
      for (int64_t j = 0; j < n; ++j) d[j] = std::numeric_limits<T>::quiet_NaN();
      return;
    }
    T k = T(std::exp(double(mx) - lse));  // exp(x - max) * k = exp(x - lse)
    for (int64_t j = 0; j < n; ++j) d[j] = gg * (d[j] * k - t[j]);
  } else {
    T gg = T(-g);
    for (int64_t j = 0; j < n; ++j) d[j] = gg * x[j];
  }
}

// A target of lower rank than the output stands for every leading index of the
// output (CNTK builds this loss as log-sum-exp minus transpose(target) x output,
// which pairs a target (N,) with each row of an output (M, N)).
NDShape ce_merge(InferContext& ctx) {
  const NDShape &so = ctx.shape(0), &st = ctx.shape(1);
  if (st.rank() >= so.rank()) return merge_static(ctx, 0, 1, "the output and target vectors");
  size_t lead = so.rank() - st.rank();
  std::vector<int64_t> d(so.dims()), t(st.dims());
  for (size_t k = 0; k < t.size(); ++k) {
    int64_t &x = d[lead + k], &y = t[k];
    if (x == NDShape::kInferredDimension || x == NDShape::kFreeDimension)
      x = y;
    else if (y == NDShape::kInferredDimension || y == NDShape::kFreeDimension)
      y = x;
    else if (x != y)
      ctx.fail("the target vector must match the trailing axes of the output vector");
  }
  if (so.has_inferred()) ctx.fill_inferred(0, NDShape(d));
  if (st.has_inferred()) ctx.fill_inferred(1, NDShape(t));
  return NDShape(d);
}

std::vector<OutputInfo> ce_infer(InferContext& ctx) {
  ctx.expect_inputs(2);
  NDShape s = ce_merge(ctx);
  if (s.rank() == 0) ctx.fail("needs operands of rank 1 or more");
  int ax = ce_axis(ctx.attrs(), s.rank(), ctx.op());
  std::vector<int64_t> d(s.dims());
  d[ax] = 1;
  return ctx.one(NDShape(d));
}

struct CeGeometry {
  NDShape full;
  size_t axis;  // the reduced axis in the runtime layout
  Rows rows;
  NDArrayView x, t;
};

CeGeometry ce_geometry(ComputeContext& ctx) {
  densify(ctx);
  NDShape stat = ctx.static_shape(0);
  size_t ax = size_t(ctx.out_dyn + ce_axis(ctx.attr(), stat.rank(), "CrossEntropyWithSoftmax"));
  NDShape full = full_shape(ctx, {0, 1}, stat);
  return {full, ax, Rows(full, ax), expand(ctx, 0, full), expand(ctx, 1, full)};
}

template <class T>
void ce_forward_kernel(const CeGeometry& g, NDArrayView& out) {
  const T *x = g.x.data<T>(), *t = g.t.data<T>();
  T* o = out.data<T>();
  const Rows& R = g.rows;
  int64_t rows = R.count();
#pragma omp parallel for if (rows * R.n > kGrain)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t b = R.base(r);
    if (R.inner == 1)
      o[r] = ce_row_value<T, true>({x + b, 1}, {t + b, 1}, R.n);
    else
      o[r] = ce_row_value<T, false>({x + b, R.inner}, {t + b, R.inner}, R.n);
  }
}

template <class T>
void ce_backward_kernel(const CeGeometry& g, const NDArrayView& go, NDArrayView& grad, size_t which) {
  const T *x = g.x.data<T>(), *t = g.t.data<T>(), *gp = go.data<T>();
  T* d = grad.data<T>();
  const Rows& R = g.rows;
  int64_t rows = R.count();
#pragma omp parallel for if (rows * R.n > kGrain)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t b = R.base(r);
    if (R.inner == 1)
      ce_row_grad<T, true>({x + b, 1}, {t + b, 1}, {d + b, 1}, R.n, double(gp[r]), which);
    else
      ce_row_grad<T, false>({x + b, R.inner}, {t + b, R.inner}, {d + b, R.inner}, R.n, double(gp[r]), which);
  }
}

std::vector<NDArrayView> ce_forward(ComputeContext& ctx) {
  CeGeometry g = ce_geometry(ctx);
  std::vector<int64_t> od(g.full.dims());
  od[g.axis] = 1;
  NDArrayView out(g.x.dtype(), NDShape(od));
  dispatch(g.x.dtype(), [&](auto tag) { ce_forward_kernel<decltype(tag)>(g, out); });
  return {out};
}

NDArrayView ce_backward(ComputeContext& ctx, size_t which) {
  CeGeometry g = ce_geometry(ctx);
  NDArrayView go = ctx.grad_outputs[0].contiguous();
  NDArrayView grad(g.x.dtype(), g.full);
  dispatch(g.x.dtype(), [&](auto tag) { ce_backward_kernel<decltype(tag)>(g, go, grad, which); });
  return ctx.reduce_to_input(which, grad);
}

// ------------------------------------------------------------ Logistic

// One value per sample: the sum over the static axes. A term whose coefficient
// is zero contributes nothing (so a saturated output gives a finite loss for a
// 0/1 target, as CNTK's log(t*p + (1-t)*(1-p)) form does).
std::vector<OutputInfo> logistic_infer(InferContext& ctx) {
  if (ctx.num_inputs() != 2 && ctx.num_inputs() != 3) ctx.fail("expects 2 or 3 inputs (output, target[, weight])");
  NDShape s = merge_static(ctx, 0, 1, "the output and target");
  if (ctx.num_inputs() == 3) {
    const NDShape& w = ctx.shape(2);
    if (w.rank() > s.rank()) ctx.fail("the weight must not have more axes than the output");
    for (size_t k = 0; k < w.rank(); ++k) {
      int64_t a = w[k], b = s[s.rank() - w.rank() + k];
      if (a != 1 && a != b && a >= 0 && b >= 0)
        ctx.fail("the weight must have the output's shape (or broadcast to it)");
    }
  }
  return ctx.one(NDShape{1});
}

template <class T>
inline double bce_term(T p, T t) {  // t*log(p) + (1-t)*log(1-p)
  double v = 0, pt = double(p), tt = double(t);
  if (tt != 0) v += tt * std::log(pt);
  if (tt != 1) v += (1 - tt) * std::log(1 - pt);
  return v;
}

struct LogisticGeometry {
  NDShape full;
  int64_t samples, per;
  NDArrayView p, t, w;  // w undefined without weights
};

LogisticGeometry logistic_geometry(ComputeContext& ctx) {
  densify(ctx);
  NDShape stat = ctx.static_shape(0);
  bool weighted = ctx.inputs.size() == 3;
  NDShape full = weighted ? full_shape(ctx, {0, 1, 2}, stat) : full_shape(ctx, {0, 1}, stat);
  LogisticGeometry g{full, 1, 1, expand(ctx, 0, full), expand(ctx, 1, full), NDArrayView()};
  for (int k = 0; k < ctx.out_dyn; ++k) g.samples *= full[k];
  for (size_t k = ctx.out_dyn; k < full.rank(); ++k) g.per *= full[k];
  if (weighted) g.w = expand(ctx, 2, full);
  return g;
}

NDShape per_sample_shape(const NDShape& full, int out_dyn) {
  std::vector<int64_t> d(full.dims().begin(), full.dims().begin() + out_dyn);
  d.push_back(1);
  return NDShape(d);
}

std::vector<NDArrayView> logistic_forward(ComputeContext& ctx) {
  LogisticGeometry g = logistic_geometry(ctx);
  NDArrayView out(g.p.dtype(), per_sample_shape(g.full, ctx.out_dyn));
  dispatch(g.p.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *p = g.p.data<T>(), *t = g.t.data<T>(), *w = g.w.defined() ? g.w.data<T>() : nullptr;
    T* o = out.data<T>();
#pragma omp parallel for if (g.samples * g.per > kGrain)
    for (int64_t s = 0; s < g.samples; ++s) {
      double acc = 0;
      for (int64_t k = s * g.per; k < (s + 1) * g.per; ++k) acc += (w ? double(w[k]) : 1.0) * bce_term(p[k], t[k]);
      o[s] = T(-acc);
    }
  });
  return {out};
}

NDArrayView logistic_backward(ComputeContext& ctx, size_t which) {
  LogisticGeometry g = logistic_geometry(ctx);
  NDArrayView go = ctx.grad_outputs[0].contiguous();
  NDArrayView grad(g.p.dtype(), g.full);
  dispatch(g.p.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *p = g.p.data<T>(), *t = g.t.data<T>(), *w = g.w.defined() ? g.w.data<T>() : nullptr, *gp = go.data<T>();
    T* d = grad.data<T>();
    int64_t n = g.samples * g.per;
#pragma omp parallel for if (n > kGrain)
    for (int64_t k = 0; k < n; ++k) {
      double gw = -double(gp[k / g.per]), pk = double(p[k]), tk = double(t[k]);
      double wk = w ? double(w[k]) : 1.0, v = 0;
      if (which == 0) {
        if (tk != 0) v += tk / pk;
        if (tk != 1) v -= (1 - tk) / (1 - pk);
        v *= wk;
      } else if (which == 1) {
        v = wk * (std::log(pk) - std::log(1 - pk));
      } else {
        v = bce_term(p[k], t[k]);
      }
      d[k] = T(gw * v);
    }
  });
  return ctx.reduce_to_input(which, grad);
}

// ------------------------------------------------------------ ClassificationError

// Along the last axis. With two inputs: 1 - target[argmax(output)] (the first
// maximum wins, as CNTK's hardmax). With a third input, a scalar constant N: 1
// unless the target's class (its first maximum) is among the N best outputs;
// ties are ranked by position, the earlier class first, which is what N = 1 does.
int64_t top_n_of(const Variable& v, const InferContext& ctx) {
  if (!v.is_constant() || v.shape().is_unknown() || !v.shape().is_known() || v.shape().total_size() != 1)
    ctx.fail("the topN input must be a scalar constant");
  double n = v.value().item();
  if (!(n >= 1) || n != std::floor(n)) ctx.fail("topN must be a positive integer, not " + std::to_string(n));
  return int64_t(n);
}

// Output and target of different ranks broadcast against each other (CNTK computes the top-1 error
// as 1 - target . hardmax(output), so an output of shape (1, N) goes with a target of shape (N,)).
NDShape ce_error_static(const NDShape& a, const NDShape& b) {
  std::vector<int64_t> d(std::max(a.rank(), b.rank()), 1);
  for (size_t k = 0; k < d.size(); ++k) {
    int64_t x = k < a.rank() ? a[a.rank() - 1 - k] : 1, y = k < b.rank() ? b[b.rank() - 1 - k] : 1;
    d[d.size() - 1 - k] = std::max(x, y);
  }
  return NDShape(d);
}

std::vector<OutputInfo> ce_error_infer(InferContext& ctx) {
  if (ctx.num_inputs() != 2 && ctx.num_inputs() != 3) ctx.fail("expects 2 or 3 inputs (output, target[, topN])");
  const NDShape &so = ctx.shape(0), &st = ctx.shape(1);
  NDShape s;
  if (so.rank() == st.rank() || so.rank() == 0 || st.rank() == 0) {
    s = merge_static(ctx, 0, 1, "the output and target vectors");
  } else {
    if (so[so.rank() - 1] != st[st.rank() - 1])
      ctx.fail("the output and target vectors must have the same number of classes (last axis)");
    s = broadcast_shapes(ctx, {so, st});
  }
  if (s.rank() == 0) ctx.fail("needs operands of rank 1 or more");
  if (ctx.num_inputs() == 3) {
    int64_t n = top_n_of(ctx.input(2), ctx);
    int64_t classes = s[s.rank() - 1];
    if (classes >= 0 && n > classes)
      ctx.fail("topN (" + std::to_string(n) + ") must not exceed the number of classes (" + std::to_string(classes) +
               ")");
  }
  std::vector<int64_t> d(s.dims());
  d.back() = 1;
  return ctx.one(NDShape(d));
}

std::vector<NDArrayView> ce_error_forward(ComputeContext& ctx) {
  densify(ctx);
  NDShape stat = ce_error_static(ctx.static_shape(0), ctx.static_shape(1));
  NDShape full = full_shape(ctx, {0, 1}, stat);
  NDArrayView x = expand(ctx, 0, full), t = expand(ctx, 1, full);
  int64_t top = ctx.inputs.size() == 3 ? int64_t(std::llround(ctx.inputs[2].item())) : 1;
  bool by_label = ctx.inputs.size() == 3;
  int64_t n = full[full.rank() - 1], rows = full.total_size() / std::max<int64_t>(n, 1);
  std::vector<int64_t> od(full.dims());
  od.back() = 1;
  NDArrayView out(x.dtype(), NDShape(od));
  dispatch(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *xp = x.data<T>(), *tp = t.data<T>();
    T* o = out.data<T>();
#pragma omp parallel for if (rows * n > kGrain)
    for (int64_t r = 0; r < rows; ++r) {
      const T *xr = xp + r * n, *tr = tp + r * n;
      if (!by_label) {
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j)
          if (xr[best] < xr[j]) best = j;
        o[r] = T(1) - tr[best];
      } else {
        int64_t c = 0;
        for (int64_t j = 1; j < n; ++j)
          if (tr[c] < tr[j]) c = j;
        int64_t ahead = 0;
        for (int64_t j = 0; j < n; ++j) ahead += xr[j] > xr[c] || (xr[j] == xr[c] && j < c);
        o[r] = T(ahead < top ? 0 : 1);
      }
    }
  });
  return {out};
}

// CNTK builds the top-1 error as 1 - target . hardmax(output), so the target gets
// -hardmax(output) times the incoming gradient and the output (through hardmax)
// nothing. The top-N error is a primitive without a gradient: zero for both.
NDArrayView ce_error_backward(ComputeContext& ctx, size_t which) {
  densify(ctx);
  NDShape full = full_shape(ctx, {0, 1}, ce_error_static(ctx.static_shape(0), ctx.static_shape(1)));
  NDArrayView grad = NDArrayView::zeros(ctx.inputs[0].dtype(), full);
  if (which == 1 && ctx.inputs.size() == 2) {
    NDArrayView x = expand(ctx, 0, full), go = ctx.grad_outputs[0].contiguous();
    int64_t n = full[full.rank() - 1], rows = full.total_size() / std::max<int64_t>(n, 1);
    dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T *xp = x.data<T>(), *gp = go.data<T>();
      T* d = grad.data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        const T* xr = xp + r * n;
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j)
          if (xr[best] < xr[j]) best = j;
        d[r * n + best] = -gp[r];
      }
    });
  }
  return ctx.reduce_to_input(which, grad);
}

// ------------------------------------------------------------ LambdaRank, NDCG

// Inputs (score, gain, group), one number per sample. Samples of one group are
// consecutive and sorted by decreasing gain; a change of group id starts a new group.
std::vector<OutputInfo> rank_infer(InferContext& ctx) {
  ctx.expect_inputs(3);
  const char* names[] = {"score (output)", "gain", "group"};
  for (size_t i = 0; i < 3; ++i) {
    const NDShape& s = ctx.shape(i);
    bool one = true;
    for (auto d : s.dims()) one = one && (d == 1 || d == NDShape::kInferredDimension || d == NDShape::kFreeDimension);
    if (!one) ctx.fail(std::string("the ") + names[i] + " must hold one number per sample (shape (1,))");
    if (has_sequence_axis(ctx.input(i))) ctx.fail("inputs with a sequence axis are not supported");
  }
  if (ctx.unified_dynamic_axes().empty())
    ctx.fail("needs inputs with a batch axis (groups are formed over the minibatch)");
  // As in CNTK, one value for the whole minibatch: a scalar without dynamic axes.
  return {{NDShape{}, ctx.common_dtype(), {}}};
}

struct Url {
  int64_t id, rank0, rank = 0;
  double score, gain;
};

struct Query {
  std::vector<Url> urls;
  double ideal = 0, metric = 0;
};

// Groups, ranks (by decreasing score; ties and NaNs put the smaller gain first)
// and the DCG of the current and of the ideal order of each group.
std::vector<Query> rank_queries(const std::vector<double>& score, const std::vector<double>& gain,
                                const std::vector<double>& group) {
  std::vector<Query> qs;
  int64_t prev = 0;
  for (size_t i = 0; i < score.size(); ++i) {
    int64_t id = int64_t(group[i]);
    if (i == 0 || id != prev) qs.emplace_back();
    prev = id;
    Query& q = qs.back();
    q.urls.push_back(Url{int64_t(i), int64_t(q.urls.size()), 0, score[i], gain[i]});
  }
  for (auto& q : qs) {
    std::vector<Url> sorted = q.urls;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Url& a, const Url& b) {
      if (a.score == b.score || std::isnan(a.score) || std::isnan(b.score)) return a.gain < b.gain;
      return a.score > b.score;
    });
    for (size_t r = 0; r < sorted.size(); ++r) q.urls[sorted[r].rank0].rank = int64_t(r);
    for (auto& u : q.urls) {
      q.ideal += u.gain / std::log(2.0 + double(u.rank0));
      q.metric += u.gain / std::log(2.0 + double(u.rank));
    }
  }
  return qs;
}

std::vector<double> column(const NDArrayView& v) {
  NDArrayView c = v.contiguous().cast(DataType::Double);
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.numel());
}

struct RankData {
  std::vector<double> score, gain, group;  // one number per sample of the minibatch
};

// The inputs have a batch axis (or none: broadcast over the minibatch) and one
// number per sample; the output has no dynamic axes, so the batch size comes
// from the inputs.
RankData rank_data(ComputeContext& ctx) {
  densify(ctx);
  int64_t batch = 1;
  for (size_t i = 0; i < 3; ++i)
    if (ctx.in_dyn[i] == 1) batch = std::max(batch, ctx.inputs[i].shape()[0]);
  auto flat = [&](size_t i) {
    std::vector<double> c = column(ctx.inputs[i]);
    if (c.size() == 1 && batch != 1) c.assign(size_t(batch), c[0]);
    return c;
  };
  return {flat(0), flat(1), flat(2)};
}

std::vector<NDArrayView> lambda_rank_forward(ComputeContext& ctx) {
  RankData d = rank_data(ctx);
  auto qs = rank_queries(d.score, d.gain, d.group);
  double sum = 0;
  for (auto& q : qs)
    if (q.ideal != 0) sum += q.metric / q.ideal;
  // CNTK's value: 100 * (1 - mean NDCG over the groups), times the number of samples.
  double value = qs.empty() ? 0 : (1.0 - sum / double(qs.size())) * 100.0 * double(d.score.size());
  return {NDArrayView::full(ctx.inputs[0].dtype(), NDShape{}, value)};
}

// The LambdaRank gradient (sigma = 1) for pairs (i, j), i before j in a group
// with gain(i) > gain(j) and gain(i) above the group's smallest gain:
// lambda = -|delta NDCG(i, j)| / (1 + exp(s_i - s_j)), added to i and subtracted
// from j. CNTK's node takes each pair's score difference from a list that
// skips equal-gain pairs inconsistently; here each pair uses its own difference.
NDArrayView lambda_rank_backward(ComputeContext& ctx, size_t which) {
  if (which != 0) return NDArrayView();  // gains and groups get no gradient
  RankData d = rank_data(ctx);
  auto qs = rank_queries(d.score, d.gain, d.group);
  std::vector<double> lam(d.score.size(), 0.0);
  for (auto& q : qs) {
    auto& u = q.urls;
    double min_gain = u.back().gain;
    for (size_t i = 0; i < u.size(); ++i) {
      if (!(u[i].gain > min_gain)) continue;
      double di = std::log(2.0 + double(u[i].rank));
      for (size_t j = i + 1; j < u.size(); ++j) {
        if (std::abs(u[i].gain - u[j].gain) < 1e-7) continue;
        double dj = std::log(2.0 + double(u[j].rank));
        double delta = (u[i].gain - u[j].gain) * (di - dj) / (di * dj);
        delta = q.ideal == 0 ? 0.0 : std::abs(delta / q.ideal);
        double l = -delta / (1.0 + std::exp(u[i].score - u[j].score));
        lam[u[i].id] += l;
        lam[u[j].id] -= l;
      }
    }
  }
  double go = column(ctx.grad_outputs[0])[0];
  if (ctx.in_dyn[0] == 0) lam.assign(1, std::accumulate(lam.begin(), lam.end(), 0.0));  // one score for all samples
  NDArrayView out(DataType::Double, NDShape{int64_t(lam.size())});
  double* p = out.data<double>();
  for (size_t i = 0; i < lam.size(); ++i) p[i] = lam[i] * go;
  return out.cast(ctx.inputs[0].dtype()).reshape(ctx.inputs[0].shape());
}

std::vector<NDArrayView> ndcg_forward(ComputeContext& ctx) {
  RankData d = rank_data(ctx);
  auto qs = rank_queries(d.score, d.gain, d.group);
  double sum = 0;
  for (auto& q : qs) {
    double ideal = q.urls.front().gain / std::log(2.0);
    if (ideal == 0) continue;
    for (auto& u : q.urls)
      if (u.rank == 0) sum += (u.gain / std::log(2.0)) / ideal;
  }
  // CNTK's value: 100 * the mean NDCG@1 over the groups, times the number of samples.
  double value = qs.empty() ? 0 : sum / double(qs.size()) * 100.0 * double(d.score.size());
  return {NDArrayView::full(ctx.inputs[0].dtype(), NDShape{}, value)};
}

// ------------------------------------------------------------ NCE

// Inputs: weights (C, D), biases (C, 1), inputs (D,), labels (C,), and three
// constants over the C classes: the normalized noise distribution q, the log of
// the unnormalized noise prior log(k q), and the importance weight of each class.
// Each forward pass draws k classes from q (shared by the whole minibatch).
enum NceInput { kW = 0, kB, kX, kLabels, kNoise, kLogPrior, kImportance };

std::vector<OutputInfo> nce_infer(InferContext& ctx) {
  ctx.expect_inputs(7);
  const NDShape& q = ctx.shape(kNoise);
  if (q.rank() != 1 || q[0] < 1) ctx.fail("the noise distribution must be a vector");
  int64_t C = q[0];
  for (int i : {kLogPrior, kImportance})
    if (ctx.shape(i) != q) ctx.fail("internal noise constants must match the noise distribution");
  const NDShape& x = ctx.shape(kX);
  if (x.rank() != 1) ctx.fail("the inputs must be a vector");
  const NDShape& w = ctx.shape(kW);
  if (w.rank() != 2) ctx.fail("the weights must have two axes (classes, input dimension)");
  if (w[0] != C && w[0] != NDShape::kInferredDimension)
    ctx.fail("the first axis of the weights has length " + std::to_string(w[0]) + " but the noise distribution has " +
             std::to_string(C) + " classes");
  if (w[1] == NDShape::kInferredDimension && x[0] >= 0)
    ctx.fill_inferred(kW, NDShape{C, x[0]});
  else if (w[0] == NDShape::kInferredDimension)
    ctx.fill_inferred(kW, NDShape{C, w[1]});
  if (ctx.shape(kW)[1] != x[0] && x[0] >= 0 && ctx.shape(kW)[1] >= 0)
    ctx.fail("the second axis of the weights has length " + std::to_string(ctx.shape(kW)[1]) +
             " but the inputs have dimension " + std::to_string(x[0]));
  const NDShape& b = ctx.shape(kB);
  if (!(b == NDShape{C, 1} || b == NDShape{C})) ctx.fail("the biases must have shape (" + std::to_string(C) + ", 1)");
  const NDShape& l = ctx.shape(kLabels);
  if (l.rank() != 1 || (l[0] != C && l[0] >= 0))
    ctx.fail("the labels must be vectors of the " + std::to_string(C) + " classes");
  for (int i : {kW, kB, kNoise, kLogPrior, kImportance})
    if (!ctx.input(i).dynamic_axes().empty()) ctx.fail("the weights, biases and noise must not have dynamic axes");
  if (ctx.input(kX).dynamic_axes().empty() || ctx.input(kLabels).dynamic_axes().empty())
    ctx.fail("the inputs and labels must have a batch axis");
  int64_t k = ctx.attr_int("numSamples");
  if (k < 1) ctx.fail("the number of samples must be positive");
  if (!ctx.attr_bool("allowDuplicates") && k >= C)
    ctx.fail("sampling without duplicates needs fewer samples (" + std::to_string(k) + ") than classes (" +
             std::to_string(C) + ")");
  // One scalar per sample, as CNTK's.
  return {{NDShape{}, ctx.common_dtype(), ctx.unified_dynamic_axes()}};
}

// The noise classes of one forward pass, drawn as CNTK's RandomSample draws them from
// the op's generator (ComputeContext::random, seeded like every random op's). They are
// the pass's state, which backward reads.
std::vector<int64_t> nce_draw(ComputeContext& ctx) {
  std::vector<double> q = column(ctx.inputs[kNoise]);
  std::vector<double> cum(q.size());
  double total = 0;
  int64_t positive = 0;
  for (size_t c = 0; c < q.size(); ++c) {
    if (q[c] < 0) throw ValueError("NCE: the noise distribution has a negative entry");
    total += q[c];
    positive += q[c] > 0;
    cum[c] = total;
  }
  int64_t k = ctx.attr_int("numSamples");
  bool dup = ctx.attr_bool("allowDuplicates");
  if (!(total > 0)) throw ValueError("NCE: the noise distribution has no positive entry");
  if (!dup && positive <= k)
    throw ValueError("NCE: sampling " + std::to_string(k) +
                     " distinct classes needs more classes with a positive noise weight");
  auto samples = std::make_shared<std::vector<int64_t>>(rng::weighted_samples(ctx.random().engine(), cum, k, dup));
  ctx.state = samples;
  return *samples;
}

struct NceData {
  NDShape full;  // dynamic dims + (1,)
  int64_t B, C, D;
  NDArrayView W, bias, x, labels, logp, imp;
};

NceData nce_data(ComputeContext& ctx) {
  densify(ctx);
  NceData d;
  d.C = ctx.inputs[kNoise].numel();
  d.D = ctx.inputs[kW].numel() / d.C;
  NDShape fx = full_shape(ctx, {size_t(kX), size_t(kLabels)}, NDShape{d.D});
  NDShape fl = full_shape(ctx, {size_t(kX), size_t(kLabels)}, NDShape{d.C});
  d.full = NDShape(std::vector<int64_t>(fx.dims().begin(), fx.dims().begin() + ctx.out_dyn));  // a scalar per sample
  d.B = fx.total_size() / d.D;
  d.W = ctx.inputs[kW].contiguous();
  d.bias = ctx.inputs[kB].contiguous();
  d.x = expand(ctx, kX, fx);
  d.labels = expand(ctx, kLabels, fl);
  d.logp = ctx.inputs[kLogPrior].contiguous();
  d.imp = ctx.inputs[kImportance].contiguous();
  return d;
}

inline double log_add_exp(double a, double b) {
  double m = std::max(a, b);
  if (std::isinf(m) && m < 0) return m;
  return m + std::log(std::exp(a - m) + std::exp(b - m));
}
inline double sigmoid(double v) { return v >= 0 ? 1 / (1 + std::exp(-v)) : std::exp(v) / (1 + std::exp(v)); }

// Per sample: the positive logit and noise log prior (label-weighted), and the logits of the samples.
template <class T>
void nce_logits(const NceData& d, const std::vector<int64_t>& s, int64_t b, double& zp, double& lp,
                std::vector<double>& zn) {
  const T *W = d.W.data<T>(), *bias = d.bias.data<T>(), *x = d.x.data<T>() + b * d.D, *l = d.labels.data<T>() + b * d.C,
          *logp = d.logp.data<T>();
  auto logit = [&](int64_t c) {
    double z = bias[c];
    for (int64_t i = 0; i < d.D; ++i) z += double(W[c * d.D + i]) * double(x[i]);
    return z;
  };
  zp = 0;
  lp = 0;
  for (int64_t c = 0; c < d.C; ++c)
    if (l[c] != 0) {
      zp += double(l[c]) * logit(c);
      lp += double(l[c]) * double(logp[c]);
    }
  zn.resize(s.size());
  for (size_t j = 0; j < s.size(); ++j) zn[j] = logit(s[j]);
}

std::vector<NDArrayView> nce_forward(ComputeContext& ctx) {
  std::vector<int64_t> s = nce_draw(ctx);
  NceData d = nce_data(ctx);
  double H = ctx.attr_double("noisePriorEntropy");
  double k = double(s.size());
  NDArrayView out(ctx.inputs[kX].dtype(), d.full);
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *logp = d.logp.data<T>(), *imp = d.imp.data<T>();
    T* o = out.data<T>();
#pragma omp parallel for if (d.B * (int64_t(s.size()) + 1) * d.D > kGrain)
    for (int64_t b = 0; b < d.B; ++b) {
      double zp, lp;
      std::vector<double> zn;
      nce_logits<T>(d, s, b, zp, lp, zn);
      double neg = 0;
      for (size_t j = 0; j < s.size(); ++j) neg += double(imp[s[j]]) * log_add_exp(zn[j], double(logp[s[j]]));
      o[b] = T(log_add_exp(zp, lp) - zp + k * neg - H);
    }
  });
  return {out};
}

// The rows (along the first axis) of a contiguous dense tensor marked in `keep`, as a
// sparse tensor of the same shape.
NDArrayView rows_as_sparse(const NDArrayView& dense, const std::vector<char>& keep) {
  const int64_t rows = dense.shape()[0], per_row = dense.numel() / std::max<int64_t>(rows, 1);
  const int64_t D = dense.shape()[dense.rank() - 1], lines = per_row / std::max<int64_t>(D, 1);
  std::vector<int64_t> starts{0}, indices;
  std::vector<char> bytes;
  const size_t es = dense.dtype() == DataType::Float ? sizeof(float) : sizeof(double);
  const char* src = static_cast<const char*>(dense.raw_data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t l = 0; l < lines; ++l) {
      if (keep[size_t(r)]) {
        for (int64_t j = 0; j < D; ++j) indices.push_back(j);
        const char* row = src + size_t((r * lines + l) * D) * es;
        bytes.insert(bytes.end(), row, row + size_t(D) * es);
      }
      starts.push_back(int64_t(indices.size()));
    }
  return NDArrayView::sparse(dense.dtype(), dense.shape(), std::move(starts), std::move(indices), bytes.data());
}

NDArrayView nce_backward(ComputeContext& ctx, size_t which) {
  if (which != kW && which != kB && which != kX) return NDArrayView();
  const auto* drawn = static_cast<const std::vector<int64_t>*>(ctx.state.get());
  if (!drawn) throw Error("NCE: backward without a forward pass");
  const std::vector<int64_t>& s = *drawn;
  NceData d = nce_data(ctx);
  double k = double(s.size());
  NDArrayView go = ctx.grad_outputs[0].contiguous();
  DataType dt = ctx.inputs[kX].dtype();
  NDArrayView grad = NDArrayView::zeros(dt, which == kX ? d.x.shape() : ctx.inputs[which].shape());
  dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    const T *W = d.W.data<T>(), *logp = d.logp.data<T>(), *imp = d.imp.data<T>(), *gp = go.data<T>();
    T* out = grad.data<T>();
    auto body = [&](int64_t b) {
      double zp, lp;
      std::vector<double> zn;
      nce_logits<T>(d, s, b, zp, lp, zn);
      const T *x = d.x.data<T>() + b * d.D, *l = d.labels.data<T>() + b * d.C;
      double g = double(gp[b]);
      double dpos = g * (sigmoid(zp - lp) - 1.0);  // d(logaddexp(z, lp) - z)/dz
      auto add = [&](int64_t c, double dz) {
        if (which == kX) {
          T* o = out + b * d.D;
          for (int64_t i = 0; i < d.D; ++i) o[i] += T(dz * double(W[c * d.D + i]));
        } else if (which == kW) {
          T* o = out + c * d.D;
          for (int64_t i = 0; i < d.D; ++i) o[i] += T(dz * double(x[i]));
        } else {
          out[c] += T(dz);
        }
      };
      for (int64_t c = 0; c < d.C; ++c)
        if (l[c] != 0) add(c, dpos * double(l[c]));
      for (size_t j = 0; j < s.size(); ++j) add(s[j], g * k * double(imp[s[j]]) * sigmoid(zn[j] - double(logp[s[j]])));
    };
    if (which == kX) {
#pragma omp parallel for if (d.B * (int64_t(s.size()) + 1) * d.D > kGrain)
      for (int64_t b = 0; b < d.B; ++b) body(b);
    } else {
      for (int64_t b = 0; b < d.B; ++b) body(b);  // rows of W and b are shared across samples
    }
  });
  if (which == kX) return ctx.reduce_to_input(kX, grad);
  // As CNTK, the weights and biases get sparse gradients: only the rows of the classes
  // used (the labels and the noise samples) are stored.
  std::vector<char> used(size_t(d.C), 0);
  for (auto c : s) used[size_t(c)] = 1;
  NDArrayView labels = d.labels.cast(DataType::Double);
  const double* lp = labels.data<double>();
  for (int64_t k = 0; k < d.B * d.C; ++k)
    if (lp[k] != 0) used[size_t(k % d.C)] = 1;
  return rows_as_sparse(grad, used);
}

void reg(const char* name, int op_type, std::vector<InputSpec> inputs, std::vector<AttrSpec> attrs, InferFn infer,
         ForwardFn fwd, GradFn bwd, Gradient kind = Gradient::Rule, bool random = false) {
  OpDef d;
  d.name = name;
  d.op_type = op_type;
  d.inputs = std::move(inputs);
  d.attrs = std::move(attrs);
  d.infer = std::move(infer);
  d.forward = std::move(fwd);
  d.backward = std::move(bwd);
  d.gradient = kind;
  d.stateful_random = random;
  register_op(std::move(d));
}

// The constants an NCE loss reads over the C classes, computed at build time (as CNTK
// does) in the inputs' type T: q = w / sum(w), log(k q), the entropy of k q, and
// the importance weights q / (expected count of each class in a set of k draws).
template <class T>
void nce_constants(DataType t, const std::vector<double>& w, int64_t k, bool dup, uint64_t seed, std::vector<T>& q,
                   std::vector<T>& log_prior, std::vector<T>& importance, double& entropy) {
  const size_t C = w.size();
  double total = 0;
  for (double v : w) total += v;
  q.resize(C);
  log_prior.resize(C);
  importance.resize(C);
  for (size_t c = 0; c < C; ++c) q[c] = T(w[c] / total);
  NDArrayView qv(t, NDShape{int64_t(C)});
  std::copy(q.begin(), q.end(), qv.data<T>());
  rng::Engine g = rng::make_engine(seed, 0);  // a RandomSampleInclusionFrequency op's generator
  const std::vector<double> freq = inclusion_frequency(qv, k, dup, g, "nce_loss");
  double sum = 0;  // summed in double: a sequential sum of T over many classes drifts
  for (size_t c = 0; c < C; ++c) {
    const T prior = T(k) * q[c];
    log_prior[c] = std::log(prior);
    if (prior > 0) sum += double(prior * log_prior[c]);
    importance[c] = q[c] > 0 ? q[c] / T(freq[c]) : T(0);
  }
  entropy = sum;
}

}  // namespace

namespace ops {

FunctionPtr nce_loss(const Operand& weights, const Operand& biases, const Operand& inputs, const Operand& labels,
                     const NDArrayView& noise_weights, int64_t num_samples, bool allow_duplicates, int64_t seed,
                     const std::string& name) {
  auto fail = [](const std::string& m) -> void { throw ValueError("nce_loss: " + m); };
  if (noise_weights.rank() != 1 || noise_weights.numel() == 0)
    fail("noise_distribution must be a vector, got shape " + noise_weights.shape().str());
  NDArrayView nw = noise_weights.to_dense().cast(DataType::Double).contiguous();
  std::vector<double> w(nw.data<double>(), nw.data<double>() + nw.numel());
  double sum = 0;
  for (double v : w) {
    if (!(v >= 0) || !std::isfinite(v)) fail("noise_distribution must hold non-negative weights with a positive sum");
    sum += v;
  }
  if (!(sum > 0)) fail("noise_distribution must hold non-negative weights with a positive sum");
  if (num_samples < 1) fail("num_samples must be a positive integer, not " + std::to_string(num_samples));
  const int64_t C = int64_t(w.size());
  if (!allow_duplicates && num_samples >= C)
    fail("sampling without duplicates needs num_samples (" + std::to_string(num_samples) + ") < number of classes (" +
         std::to_string(C) + ")");
  const Variable& W = weights;
  const Variable& b = biases;
  const Variable& x = inputs;
  const Variable& y = labels;
  if (W.shape().rank() != 2 || W.shape()[0] != C)
    fail("weights must have shape (" + std::to_string(C) + ", input dimension), got " + W.shape().str());
  if (!(b.shape() == NDShape{C, 1} || b.shape() == NDShape{C}))
    fail("biases must have shape (" + std::to_string(C) + ", 1), got " + b.shape().str());
  if (x.shape().rank() != 1) fail("inputs must be a vector, got shape " + x.shape().str());
  if (y.shape().rank() != 1 || y.shape()[0] != C)
    fail("labels must be vectors of the " + std::to_string(C) + " classes, got shape " + y.shape().str());
  // An automatic seed gives the inclusion-frequency estimate and the loss's own draws a
  // seed each, in that order, as CNTK's two random ops took theirs.
  const uint64_t freq_seed = seed >= 0 ? uint64_t(seed) : next_random_seed();
  const uint64_t draw_seed = seed >= 0 ? uint64_t(seed) : next_random_seed();
  const DataType t = x.dtype() == DataType::Double ? DataType::Double : DataType::Float;
  std::vector<Variable> consts;
  double entropy = 0;
  CNTK_DISPATCH_FLOAT(t, T, [&] {
    std::vector<T> q, log_prior, importance;
    nce_constants<T>(t, w, num_samples, allow_duplicates, freq_seed, q, log_prior, importance, entropy);
    for (auto [values, const_name] : {std::pair{&q, "noise"}, std::pair{&log_prior, "logNoisePrior"},
                                      std::pair{&importance, "importanceWeights"}}) {
      NDArrayView v(t, NDShape{C});
      std::copy(values->begin(), values->end(), v.data<T>());
      consts.push_back(Variable::constant(v, const_name));
    }
  });
  Dictionary attrs{{"numSamples", num_samples},
                   {"allowDuplicates", allow_duplicates},
                   {"noisePriorEntropy", entropy},
                   {"rngSeed", int64_t(draw_seed)},
                   {"rngOffset", int64_t(0)}};
  std::vector<Variable> in{W, b, x, y};
  in.insert(in.end(), consts.begin(), consts.end());
  return apply("NCE", std::move(in), std::move(attrs), name);
}

}  // namespace ops

namespace {

// ------------------------------------------------------------------ ONNX forms
//
// CNTK 2.7 wrote none of the criteria; OpenCNTK writes the per-sample ones as subgraphs of
// ONNX ops (each sample's value, as the engine gives it) and refuses the minibatch-wide ones.

using onnx_io::Attr;
using onnx_io::ExportContext;

// ReduceSum/ReduceLogSumExp over `axes`: the axes are an input from opset 13 (ReduceSum) or
// 18 (the others), an attribute before.
std::string onnx_reduce(ExportContext& c, const std::string& op, const std::string& x, const std::vector<int64_t>& axes,
                        bool keep, const std::string& out = "") {
  std::vector<Attr> attrs{Attr("keepdims", int64_t(keep))};
  if (c.opset() >= (op == "ReduceSum" ? 13 : 18)) return c.node1(op, {x, c.constant_i64(axes)}, attrs, out);
  attrs.emplace_back("axes", axes);
  return c.node1(op, {x}, attrs, out);
}

// logsumexp(z) - sum(t * z) along the axis (CNTK's form: -sum(t * log softmax(z)) for a
// target summing to 1).
void cross_entropy_onnx(ExportContext& c) {
  const size_t rank = c.output_var().shape().rank();
  const int64_t axis = c.output_dyn() + ce_axis(c.function().attributes(), rank, "CrossEntropyWithSoftmax");
  const std::string z = c.aligned(0, rank), t = c.aligned(1, rank);
  const std::string lse = onnx_reduce(c, "ReduceLogSumExp", z, {axis}, true);
  c.node1("Sub", {lse, onnx_reduce(c, "ReduceSum", c.node1("Mul", {t, z}), {axis}, true)}, {}, c.output(0));
}

// 1 - t[argmax z] along the last axis (the first maximum); with topN, whether fewer than
// topN scores rank ahead of the label's (ties broken by position), as the kernel counts.
void classification_error_onnx(ExportContext& c) {
  if (c.opset() < 11) c.unsupported("classification error below opset 11 (it needs GatherElements)");
  const size_t rank = c.output_var().shape().rank();
  const DataType dt = c.output_var().dtype();
  const int64_t last = c.output_dyn() + int64_t(rank) - 1;
  const std::string z = c.aligned(0, rank), t = c.aligned(1, rank);
  const Attr axis("axis", last), keep("keepdims", int64_t(1));
  if (c.num_inputs() == 2) {
    const std::string hit = c.node1("GatherElements", {t, c.node1("ArgMax", {z}, {axis, keep})}, {axis});
    c.node1("Sub", {c.constant_f(1, dt), hit}, {}, c.output(0));
    return;
  }
  const NDShape zs = c.input_var(0).shape();
  const int64_t n = zs.rank() ? zs[zs.rank() - 1] : -1;
  if (n < 0) c.unsupported("top-N error over classes of free size");
  const std::string label = c.node1("ArgMax", {t}, {axis, keep});
  const std::string score = c.node1("GatherElements", {z, label}, {axis});
  std::vector<int64_t> positions(size_t(n), 0);
  std::iota(positions.begin(), positions.end(), int64_t(0));
  const std::string earlier = c.node1("Less", {c.constant_i64(positions), label});
  const std::string ahead =
      c.node1("Or", {c.node1("Greater", {z, score}), c.node1("And", {c.node1("Equal", {z, score}), earlier})});
  const Attr to("to", int64_t(onnx_io::elem_type_of(dt)));
  const std::string count = onnx_reduce(c, "ReduceSum", c.node1("Cast", {ahead}, {to}), {last}, true);
  const std::string top = c.node1("Cast", {c.input(2)}, {to});
  c.node1("Cast", {c.node1("Not", {c.node1("Less", {count, top})})}, {to}, c.output(0));
}

// -sum(w * (t log p + (1 - t) log(1 - p))) over the sample, a term left out where its
// weight t or 1 - t is 0 (finite at saturated p, as the kernel).
void logistic_onnx(ExportContext& c) {
  const size_t rank = std::max(c.input_var(0).shape().rank(), c.input_var(1).shape().rank());
  const DataType dt = c.output_var().dtype();
  const std::string p = c.aligned(0, rank), t = c.aligned(1, rank);
  const std::string zero = c.constant_f(0, dt), one = c.constant_f(1, dt);
  auto term = [&](const std::string& weight, const std::string& prob, const std::string& absent) {
    const std::string v = c.node1("Mul", {weight, c.node1("Log", {prob})});
    // Equal takes floats from opset 11; before, neither less nor greater.
    const std::string same =
        c.opset() >= 11
            ? c.node1("Equal", {t, absent})
            : c.node1("Not", {c.node1("Or", {c.node1("Less", {t, absent}), c.node1("Greater", {t, absent})})});
    return c.node1("Where", {same, zero, v});
  };
  std::string v = c.node1("Add", {term(t, p, zero), term(c.node1("Sub", {one, t}), c.node1("Sub", {one, p}), one)});
  if (c.num_inputs() == 3) v = c.node1("Mul", {v, c.aligned(2, rank)});
  const int64_t dyn = c.output_dyn();
  std::vector<int64_t> axes(rank), shape(size_t(dyn), 0);
  std::iota(axes.begin(), axes.end(), dyn);
  shape.push_back(1);
  const std::string sum = onnx_reduce(c, "ReduceSum", c.node1("Neg", {v}), axes, false);
  c.node1("Reshape", {sum, c.constant_i64(shape)}, {}, c.output(0));
}

void register_loss_onnx() {
  set_onnx_export("CrossEntropyWithSoftmax", cross_entropy_onnx);
  set_onnx_export("ClassificationError", classification_error_onnx);
  set_onnx_export("Logistic", logistic_onnx);
  for (const char* op : {"LambdaRank", "NDCG"})
    set_onnx_export(op, [](ExportContext& c) {
      c.unsupported("a criterion over groups of samples of the whole minibatch (ONNX has no such form)");
    });
  set_onnx_export("NCE", [](ExportContext& c) {
    c.unsupported("noise contrastive estimation (it samples while training; evaluate the model's scores instead)");
  });
}

}  // namespace

void register_loss_ops() {
  const AttrSpec axis{"axis", AttrType::Axis, Axis(-1), AxisOrder::NumPy};
  reg("CrossEntropyWithSoftmax", 35, {{"prediction"}, {"labels"}}, {axis}, ce_infer, ce_forward, ce_backward);
  reg("Logistic", 48, {{"prediction"}, {"labels"}, {"weights", Gradient::Rule, true}}, {}, logistic_infer,
      logistic_forward, logistic_backward);
  reg("ClassificationError", 36, {{"prediction", Gradient::Zero}, {"labels"}, {"topN", Gradient::None, true}}, {axis},
      ce_error_infer, ce_error_forward, ce_error_backward);
  reg("LambdaRank", 59, {{"output"}, {"gain", Gradient::Zero}, {"group", Gradient::Zero}}, {}, rank_infer,
      lambda_rank_forward, lambda_rank_backward);
  reg("NDCG", 60, {{"output", Gradient::Zero}, {"gain", Gradient::Zero}, {"group", Gradient::Zero}}, {}, rank_infer,
      ndcg_forward, nullptr, Gradient::Zero);
  // The noise distribution's constants are inputs, computed when the op is built (ops::nce_loss).
  reg("NCE", -1,
      {{"weights"},
       {"bias"},
       {"input"},
       {"labels", Gradient::Zero},
       {"noise", Gradient::None},
       {"logNoisePrior", Gradient::None},
       {"importanceWeights", Gradient::None}},
      {{"numSamples", AttrType::Int},
       {"allowDuplicates", AttrType::Bool, true},
       {"noisePriorEntropy", AttrType::Double, 0.0},
       {"rngSeed", AttrType::Int, 0},
       {"rngOffset", AttrType::Int, 0}},
      nce_infer, nce_forward, nce_backward, Gradient::Rule, true);
  register_loss_onnx();
}

}  // namespace cntk
