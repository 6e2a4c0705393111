// Op family: normalization and image ops. BatchNormalization (with CNTK's running
// statistics), LocalResponseNormalization and Crop. The other image ops of this
// family (depth_to_space, space_to_depth, image_scaler, mean/variance
// normalizations) are compositions of reshape, transpose and elementwise ops and
// live in python/cntk/ops/_norm.py as blocks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/backend.h"
#include "kernels/cpu/norm.h"
#include "ops/eager.h"
#include "ops/op.h"
#include "onnx/export_batch.h"

namespace cntk {
namespace {

// ------------------------------------------------------- BatchNormalization

// Inputs, in CNTK's order.
enum BnInput : size_t { kData = 0, kScale, kBias, kRunMean, kRunVar, kRunCount };

// What training forward keeps for backward: the statistics it normalized with and
// the weight of the batch's own statistics in them (1 - blend factor).
struct BnState {
  std::vector<double> mean, inv_std;
  double stats_weight = 1.0;
  // Set when forward ran the backend's primitive on a backend layout: the batch statistics
  // it computed, which its backward primitive reads (mean/inv_std hold them too, for the
  // plain backward where x is not in that layout any more).
  bool in_layout = false;
  std::vector<float> layout_mean, layout_var;
};

// The gradients of one backward step, computed together: dx plain or in a oneDNN layout.
struct BnGrads {
  kernels::BatchNormGrads g;
  std::shared_ptr<LayoutValue> dxb;
};

kernels::BatchNormDims bn_dims(const ComputeContext& ctx) {
  const NDShape s = ctx.input_shape(kData);
  int64_t N = 1, F = 1;
  for (size_t k = 0; k < s.rank(); ++k) (int(k) < ctx.in_dyn[kData] ? N : F) *= s[k];
  int64_t C = ctx.inputs[kScale].numel();
  if (C <= 0 || F % C != 0)
    throw ValueError("BatchNormalization: the scale has " + std::to_string(C) +
                     " elements, which do not divide the sample's " + std::to_string(F));
  return {N, C, F / C};
}

// One flag per sample (row of N) when some are sequence padding; empty when all count.
std::vector<uint8_t> bn_valid_rows(const ComputeContext& ctx, int64_t& num_samples) {
  const NDShape shape = ctx.input_shape(kData);
  const auto& lens = ctx.in_lengths[kData];
  int64_t N = 1;
  for (int k = 0; k < ctx.in_dyn[kData]; ++k) N *= shape[size_t(k)];
  num_samples = N;
  if (lens.empty() || ctx.in_dyn[kData] != 2) return {};
  int64_t T = shape[0], B = shape[1];
  std::vector<uint8_t> valid(size_t(N), 1);
  num_samples = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      bool ok = b >= int64_t(lens.size()) || t < lens[size_t(b)];
      valid[size_t(t * B + b)] = ok;
      num_samples += ok;
    }
  if (num_samples == N) return {};
  return valid;
}

std::vector<double> as_doubles(const NDArrayView& a) {
  NDArrayView v = a.to_dense().contiguous();
  std::vector<double> out(size_t(v.numel()));
  CNTK_DISPATCH_FLOAT(v.dtype(), T, [&] {
    const T* p = v.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = double(p[i]);
  });
  return out;
}

// Replaces the value of the running-statistics input i with `vals` (a fresh buffer,
// so the values this pass already read stay as they were).
void write_running(ComputeContext& ctx, size_t i, const std::vector<double>& vals) {
  Variable v = ctx.fn->direct_inputs()[i];
  if (!(v.is_constant() || v.is_parameter()))
    throw ValueError("BatchNormalization: the running statistics (input " + std::to_string(i) +
                     ") must be Constants or Parameters, not " + v.str());
  NDArrayView nv(v.dtype(), v.shape());
  if (nv.numel() != int64_t(vals.size()))
    throw ValueError("BatchNormalization: the running statistic " + v.str() + " does not have " +
                     std::to_string(vals.size()) + " elements");
  CNTK_DISPATCH_FLOAT(nv.dtype(), T, [&] {
    T* p = nv.data<T>();
    for (size_t k = 0; k < vals.size(); ++k) p[k] = T(vals[k]);
  });
  v.impl()->value = nv;
  ++v.impl()->value_version;
}

// CNTK's weight of the current minibatch's statistics in the updated running
// statistics, from the normalization time constant (samples), the samples seen so
// far and the samples of this minibatch. T < 0 averages over the whole corpus;
// the first minibatch takes the batch statistics whatever T (as CNTK does).
double exp_avg_factor(double T, double count, double n) {
  if (T < 0) return n / (n + count);
  if (count == 0) return 1.0;
  if (std::isinf(T)) return 0.0;
  if (T > 0) return -std::expm1(-n / T);
  return 1.0;
}

// CNTK's weight of the running statistics when normalizing in training (the
// batch's own statistics get 1 - this).
double blend_factor(double B, double count, double n) {
  if (count == 0) return 0.0;
  if (std::isinf(B)) return 1.0;
  if (B > 0) return B / (B + n);
  return 0.0;
}

// Running statistics: exponential averages (weight f) of the batch mean and the
// unbiased batch variance (m / (m - 1) times the biased one; 0 for a single value),
// m the values per feature.
void update_running(double f, double m, const std::vector<double>& mu, const std::vector<double>& var,
                    std::vector<double>& run_mean, std::vector<double>& run_var) {
  if (f == 0) return;
  for (size_t c = 0; c < mu.size(); ++c) {
    double unbiased = m > 1 ? var[c] * m / (m - 1) : 0.0;
    run_mean[c] = f * mu[c] + (1 - f) * run_mean[c];
    run_var[c] = f * unbiased + (1 - f) * run_var[c];
  }
}

// Training over an operand in a oneDNN layout: oneDNN's primitive normalizes with the
// batch's own statistics in that layout, and the running statistics get the plain path's
// update from the statistics it computed. Only where the normalization uses the batch's
// statistics alone (no blending), every sample counts (no sequence padding) and oneDNN
// takes the layout; false otherwise (the plain path runs).
bool bn_train_layout(ComputeContext& ctx, const kernels::BatchNormDims& d, double eps, std::vector<NDArrayView>& out) {
  const LayoutValue* xb = ctx.layout_input(kData);
  if (!xb || !(ctx.may_keep_layout_output(0) || !ctx.inputs[kData].defined())) return false;
  for (size_t i = kScale; i < ctx.inputs.size(); ++i) ctx.input(i);
  int64_t n = 0;
  if (!bn_valid_rows(ctx, n).empty() || n == 0 || d.S == 0) return false;
  const double count = as_doubles(ctx.inputs[kRunCount]).at(0);
  const double f = exp_avg_factor(ctx.attr_double("normalizationTimeConstant"), count, double(n));
  const double b = blend_factor(ctx.attr_double("blendTimeConstant"), count, double(n));
  if (b != 0) return false;
  std::vector<double> run_mean = as_doubles(ctx.inputs[kRunMean]), run_var = as_doubles(ctx.inputs[kRunVar]);
  if (int64_t(run_mean.size()) != d.C || int64_t(run_var.size()) != d.C) return false;
  std::vector<double> mu, var;
  if (!kernels::batch_norm_moments_layout(*xb, d, mu, var)) return false;
  // oneDNN normalizes with these statistics (as float32); its backward takes the same.
  auto st = std::make_shared<BnState>();
  NDArrayView mean_f(DataType::Float, NDShape{d.C}), var_f(DataType::Float, NDShape{d.C});
  for (size_t c = 0; c < mu.size(); ++c) {
    st->layout_mean.push_back(float(mu[c]));
    st->layout_var.push_back(float(var[c]));
  }
  std::copy(st->layout_mean.begin(), st->layout_mean.end(), mean_f.data<float>());
  std::copy(st->layout_var.begin(), st->layout_var.end(), var_f.data<float>());
  auto y = kernels::batch_norm_infer_layout(*xb, d, ctx.inputs[kScale], ctx.inputs[kBias], mean_f, var_f, eps);
  if (!y) return false;
  update_running(f, double(n) * double(d.S), mu, var, run_mean, run_var);
  st->in_layout = true;
  st->stats_weight = 1;
  st->mean = mu;
  st->inv_std.resize(var.size());
  for (size_t c = 0; c < var.size(); ++c) st->inv_std[c] = 1.0 / std::sqrt(var[c] + eps);
  if (f != 0) {
    write_running(ctx, kRunMean, run_mean);
    write_running(ctx, kRunVar, run_var);
  }
  write_running(ctx, kRunCount, {count + double(n)});
  ctx.state = st;
  if (ctx.may_keep_layout_output(0)) {
    ctx.layout_outputs[0] = std::move(y);
    out = {NDArrayView()};
  } else {
    out = {kernels::to_plain(*y)};
  }
  return true;
}

std::vector<OutputInfo> bn_infer(InferContext& ctx) {
  if (ctx.num_inputs() != 6)
    ctx.fail("expects 6 inputs (operand, scale, bias, running mean, running variance, running count), got " +
             std::to_string(ctx.num_inputs()));
  const NDShape x = ctx.shape(kData);
  bool spatial = ctx.attr_bool("spatial");
  if (spatial && x.rank() == 0) ctx.fail("spatial batch normalization needs an operand with a channel axis");
  for (size_t i = kScale; i <= kRunCount; ++i)
    if (!ctx.input(i).dynamic_axes().empty()) ctx.fail("input " + std::to_string(i) + " must not have a dynamic axis");
  for (size_t i = kRunMean; i <= kRunCount; ++i) {
    const Variable& v = ctx.input(i);
    if (!(v.is_constant() || v.is_parameter() || v.is_placeholder()))
      ctx.fail("the running statistics (input " + std::to_string(i) + ") must be Constants or Parameters");
  }
  // Parameters of shape (inferred,) take the number of features: the channels (the
  // first axis) when spatial, the whole sample otherwise.
  bool x_known = spatial ? x[0] >= 0 : x.is_known();
  for (size_t i = kScale; i <= kRunVar; ++i) {
    const NDShape& p = ctx.shape(i);
    if (p.rank() == 1 && p.has_inferred() && x_known) ctx.fill_inferred(i, NDShape{spatial ? x[0] : x.total_size()});
  }
  const NDShape& p = ctx.shape(kScale);
  for (size_t i = kBias; i <= kRunVar; ++i)
    if (p.is_known() && ctx.shape(i).is_known() && ctx.shape(i) != p)
      ctx.fail("input " + std::to_string(i) + " has shape " + ctx.shape(i).str() + " but the scale has " + p.str() +
               "; scale, bias, running mean and running variance must have one shape");
  if (p.is_known() && x.is_known()) {
    int64_t F = x.total_size(), C = p.total_size();
    if (!spatial && C != F)
      ctx.fail("the scale must have one element per element of the operand (" + std::to_string(F) + "), it has " +
               std::to_string(C));
    if (spatial && (C == 0 || F % C != 0 || x[0] % C != 0))
      ctx.fail("the scale must have one element per channel (" + std::to_string(x[0]) + "), it has " +
               std::to_string(C));
  }
  const NDShape& cnt = ctx.shape(kRunCount);
  if (cnt.is_known() && cnt.total_size() != 1)
    ctx.fail("the running count must be a scalar, not of shape " + cnt.str());
  double eps = ctx.attr_double("epsilon");
  if (!(eps > 0) || !std::isfinite(eps)) ctx.fail("epsilon must be positive and finite");
  if (std::isnan(ctx.attr_double("normalizationTimeConstant")) || std::isnan(ctx.attr_double("blendTimeConstant")))
    ctx.fail("the time constants must be numbers");
  if (ctx.attr_double("blendTimeConstant") < 0) ctx.fail("blend_time_constant must not be negative");
  auto out = ctx.one(x);
  out[0].dtype = ctx.dtype(kData);
  return out;
}

std::vector<NDArrayView> bn_forward(ComputeContext& ctx) {
  const double eps = ctx.attr_double("epsilon");
  kernels::BatchNormDims d = bn_dims(ctx);
  // Inference over an operand in a oneDNN layout: oneDNN's primitive in that layout.
  if (const LayoutValue* xb = ctx.layout_input(kData);
      xb && !ctx.training && (ctx.may_keep_layout_output(0) || !ctx.inputs[kData].defined())) {
    auto y = kernels::batch_norm_infer_layout(*xb, d, ctx.input(kScale), ctx.input(kBias), ctx.input(kRunMean),
                                              ctx.input(kRunVar), eps);
    if (y) {
      if (!ctx.may_keep_layout_output(0)) return {kernels::to_plain(*y)};
      ctx.layout_outputs[0] = std::move(y);
      return {NDArrayView()};
    }
  }
  if (std::vector<NDArrayView> out; ctx.training && bn_train_layout(ctx, d, eps, out)) return out;
  // Otherwise the statistics run on the own loops, over the plain operand.
  for (size_t i = 0; i < ctx.inputs.size(); ++i) ctx.input(i);
  const NDArrayView &x = ctx.inputs[kData], &scale = ctx.inputs[kScale], &bias = ctx.inputs[kBias];
  std::vector<double> run_mean = as_doubles(ctx.inputs[kRunMean]), run_var = as_doubles(ctx.inputs[kRunVar]);
  if (int64_t(run_mean.size()) != d.C || int64_t(run_var.size()) != d.C)
    throw ValueError("BatchNormalization: the running statistics must have as many elements as the scale");
  if (!ctx.training) {
    // Inference: normalize with the running statistics; nothing is updated.
    NDArrayView y;
    if (kernels::batch_norm_infer_primitive(x, d, scale, bias, ctx.inputs[kRunMean], ctx.inputs[kRunVar], eps, y))
      return {y};
    std::vector<double> inv(run_var.size());
    for (size_t c = 0; c < inv.size(); ++c) inv[c] = 1.0 / std::sqrt(run_var[c] + eps);
    return {kernels::batch_norm_apply(x, d, scale, bias, run_mean, inv)};
  }
  int64_t n = 0;
  std::vector<uint8_t> valid = bn_valid_rows(ctx, n);
  const std::vector<uint8_t>* vp = valid.empty() ? nullptr : &valid;
  const double count = as_doubles(ctx.inputs[kRunCount]).at(0);
  if (n == 0 || d.S == 0) {
    // No samples: nothing to learn from; normalize (nothing) with the running statistics.
    auto st = std::make_shared<BnState>();
    st->mean = run_mean;
    st->inv_std.resize(run_var.size());
    for (size_t c = 0; c < run_var.size(); ++c) st->inv_std[c] = 1.0 / std::sqrt(run_var[c] + eps);
    st->stats_weight = 0;
    NDArrayView y = kernels::batch_norm_apply(x, d, scale, bias, st->mean, st->inv_std);
    ctx.state = st;
    return {y};
  }
  const double f = exp_avg_factor(ctx.attr_double("normalizationTimeConstant"), count, double(n));
  const double b = blend_factor(ctx.attr_double("blendTimeConstant"), count, double(n));
  // The batch's statistics, unless neither the running estimate nor the output uses them.
  std::vector<double> mu(size_t(d.C), 0.0), var(size_t(d.C), 0.0);
  if (f != 0 || b != 1) kernels::batch_norm_moments(x, d, vp, mu, var);
  update_running(f, double(n) * double(d.S), mu, var, run_mean, run_var);
  // The statistics to normalize with: the batch's, blended with the (updated)
  // running ones; CNTK blends the inverse standard deviations, not the variances.
  auto st = std::make_shared<BnState>();
  st->stats_weight = 1 - b;
  st->mean.resize(mu.size());
  st->inv_std.resize(mu.size());
  for (size_t c = 0; c < mu.size(); ++c) {
    st->mean[c] = b * run_mean[c] + (1 - b) * mu[c];
    double inv = 1.0 / std::sqrt(var[c] + eps);
    st->inv_std[c] = b != 0 ? b / std::sqrt(run_var[c] + eps) + (1 - b) * inv : inv;
  }
  NDArrayView y = kernels::batch_norm_apply(x, d, scale, bias, st->mean, st->inv_std);
  if (f != 0) {
    write_running(ctx, kRunMean, run_mean);
    write_running(ctx, kRunVar, run_var);
  }
  if (f != 0 || b != 1) write_running(ctx, kRunCount, {count + double(n)});
  ctx.state = st;
  return {y};
}

// Computes the gradients of data, scale and bias together once per backward step.
// CNTK recomputes the blend factor at backward time, after forward has already
// counted the minibatch, so with a positive blend_time_constant its first
// minibatch's data gradient assumes statistics it did not use; this uses the
// weight forward actually normalized with. As in CNTK, the running statistics count
// as constants, so for a blend strictly between 0 and 1 the data gradient is CNTK's
// approximation; for blends 0 and 1 it is the exact derivative.
NDArrayView bn_backward(ComputeContext& ctx, size_t i) {
  if (i >= kRunMean) return eager::zeros_like(ctx.input(i));  // running statistics take no gradient
  auto grads = std::static_pointer_cast<BnGrads>(ctx.scratch);
  if (!grads) {
    auto st = std::static_pointer_cast<BnState>(ctx.state);
    if (!st) throw Error("BatchNormalization: backward without a training forward");
    grads = std::make_shared<BnGrads>();
    const kernels::BatchNormDims d = bn_dims(ctx);
    // After a forward on oneDNN's primitive, its backward in x's layout.
    const LayoutValue* xb = ctx.layout_input(kData);
    const LayoutValue* gb = ctx.layout_grad_output(0);
    bool done = false;
    if (st->in_layout && xb && (ctx.may_keep_layout_grad(kData) || gb || !ctx.inputs[kData].defined())) {
      NDArrayView g = gb ? NDArrayView() : ctx.grad_output(0);
      done =
          kernels::batch_norm_backward_layout(*xb, gb, g, d, ctx.input(kScale), st->layout_mean, st->layout_var,
                                              ctx.attr_double("epsilon"), grads->dxb, grads->g.dscale, grads->g.dbias);
    }
    if (!done) {
      int64_t n = 0;
      std::vector<uint8_t> valid = bn_valid_rows(ctx, n);
      grads->g = kernels::batch_norm_backward(ctx.input(kData), ctx.grad_output(0), d, ctx.input(kScale), st->mean,
                                              st->inv_std, st->stats_weight, valid.empty() ? nullptr : &valid);
      grads->dxb.reset();
    }
    ctx.scratch = grads;
  }
  if (i == kData) {
    if (!grads->dxb) return grads->g.dx;
    if (!ctx.may_keep_layout_grad(kData)) return kernels::to_plain(*grads->dxb);
    ctx.layout_grad = grads->dxb;
    return NDArrayView();
  }
  return i == kScale ? grads->g.dscale : grads->g.dbias;
}

void register_batch_normalization() {
  OpDef d;
  d.name = "BatchNormalization";
  d.op_type = 40;
  // The running statistics are state the op updates, not operands it is differentiated by.
  d.inputs = {{"x"},
              {"scale"},
              {"bias"},
              {"running_mean", Gradient::None},
              {"running_variance", Gradient::None},
              {"running_count", Gradient::None, true}};
  d.attrs = {{"spatial", AttrType::Bool, false},           {"normalizationTimeConstant", AttrType::Double, 5000.0},
             {"blendTimeConstant", AttrType::Double, 0.0}, {"epsilon", AttrType::Double, 1e-5},
             {"useCuDNNEngine", AttrType::Bool, true},     {"disableRegularization", AttrType::Bool, false}};
  d.backend_layouts = true;
  d.infer = bn_infer;
  d.forward = bn_forward;
  d.backward = bn_backward;
  register_op(std::move(d));
}

// ------------------------------------------------ LocalResponseNormalization

// Across the channels, which are the first static axis (CNTK's last).
struct LrnParams {
  int64_t radius;
  double bias, alpha, beta;
};

LrnParams lrn_params(const Dictionary& a) {
  const std::string op = "LocalResponseNormalization";
  return {op_attr_int(op, a, "depthRadius"), op_attr_double(op, a, "bias"), op_attr_double(op, a, "alpha"),
          op_attr_double(op, a, "beta")};
}

void lrn_dims(const ComputeContext& ctx, int64_t& N, int64_t& C, int64_t& S) {
  const NDShape& s = ctx.inputs[0].shape();
  size_t nd = size_t(ctx.in_dyn[0]);
  N = 1;
  S = 1;
  for (size_t k = 0; k < nd; ++k) N *= s[k];
  C = s[nd];
  for (size_t k = nd + 1; k < s.rank(); ++k) S *= s[k];
}

// A value in a oneDNN layout has dims [N, channels, rest...]; oneDNN's LRN runs across
// its axis 1, which must be the operand's channel axis (its first static one).
bool lrn_layout_fits(const ComputeContext& ctx, const LayoutValue& x) {
  const std::vector<int64_t> dims = kernels::layout_dims(x);
  const NDShape s = ctx.input_shape(0);
  const size_t nd = size_t(ctx.in_dyn[0]);
  int64_t N = 1, rest = 1;
  for (size_t k = 0; k < nd; ++k) N *= s[k];
  for (size_t k = nd + 1; k < s.rank(); ++k) rest *= s[k];
  int64_t drest = 1;
  for (size_t k = 2; k < dims.size(); ++k) drest *= dims[k];
  return dims.size() >= 2 && s.rank() > nd && dims[0] == N && dims[1] == s[nd] && drest == rest;
}

void register_lrn() {
  OpDef d;
  d.name = "LocalResponseNormalization";
  d.inputs = {{"x"}};
  d.attrs = {{"depthRadius", AttrType::Int, 0},
             {"bias", AttrType::Double, 1.0},
             {"alpha", AttrType::Double, 1.0},
             {"beta", AttrType::Double, 0.5}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    if (ctx.shape(0).rank() < 1) ctx.fail("the operand needs a channel axis (its first axis)");
    LrnParams p = lrn_params(ctx.attrs());
    if (p.radius < 0) ctx.fail("depth_radius must not be negative");
    return infer_same_shape(ctx);
  };
  d.backend_layouts = true;
  d.forward = [](ComputeContext& ctx) {
    LrnParams p = lrn_params(ctx.attr());
    // An operand in a oneDNN layout: oneDNN's LRN in that layout.
    if (const LayoutValue* xb = ctx.layout_input(0);
        xb && lrn_layout_fits(ctx, *xb) && (ctx.may_keep_layout_output(0) || !ctx.inputs[0].defined())) {
      if (auto y = kernels::lrn_forward_layout(*xb, p.radius, p.bias, p.alpha, p.beta)) {
        if (!ctx.may_keep_layout_output(0)) return std::vector<NDArrayView>{kernels::to_plain(*y)};
        ctx.layout_outputs[0] = std::move(y);
        return std::vector<NDArrayView>{NDArrayView()};
      }
    }
    int64_t N, C, S;
    ctx.input(0);
    lrn_dims(ctx, N, C, S);
    return std::vector<NDArrayView>{kernels::lrn_forward(ctx.inputs[0], N, C, S, p.radius, p.bias, p.alpha, p.beta)};
  };
  d.backward = [](ComputeContext& ctx, size_t) {
    LrnParams p = lrn_params(ctx.attr());
    const LayoutValue* xb = ctx.layout_input(0);
    const LayoutValue* gb = ctx.layout_grad_output(0);
    if (xb && lrn_layout_fits(ctx, *xb) && (ctx.may_keep_layout_grad(0) || gb || !ctx.inputs[0].defined())) {
      NDArrayView g = gb ? NDArrayView() : ctx.grad_output(0);
      if (auto dx = kernels::lrn_backward_layout(*xb, gb, g, p.radius, p.bias, p.alpha, p.beta)) {
        if (!ctx.may_keep_layout_grad(0)) return kernels::to_plain(*dx);
        ctx.layout_grad = std::move(dx);
        return NDArrayView();
      }
    }
    int64_t N, C, S;
    ctx.input(0);
    lrn_dims(ctx, N, C, S);
    return kernels::lrn_backward(ctx.inputs[0], ctx.grad_output(0), N, C, S, p.radius, p.bias, p.alpha, p.beta);
  };
  register_op(std::move(d));
}

// ---------------------------------------------------------------------- Crop

// Crop(input, referent[, ancestor_input, ancestor_referent]): the window of the
// input's two spatial axes (the last two, CNTK's first two) of the referent's size,
// starting at `offset` = [x (last axis), y (second to last)]. The referent (and the
// ancestors) only give sizes and take no gradient.
std::vector<int64_t> crop_offset(const Dictionary& a) {
  auto it = a.find("offset");
  if (it == a.end()) throw NotImplementedError("Crop: automatic crop offsets are not supported; give offsets");
  std::vector<int64_t> o = it->second.as_int_list();
  if (o.size() != 2) throw ValueError("Crop: offset must hold two values (x, y)");
  return o;
}

void register_crop() {
  OpDef d;
  d.name = "Crop";
  d.op_type = 84;
  d.inputs = {{"x"}, {"reference", Gradient::Zero}, {"ancestors", Gradient::Zero, true}};  // sizes only
  d.attrs = {{"offset", AttrType::IntList, {}, AxisOrder::Cntk}};  // [x, y]: the last axis first
  d.infer = [](InferContext& ctx) {
    if (ctx.num_inputs() != 2 && ctx.num_inputs() != 4) ctx.fail("expects 2 or 4 inputs");
    const NDShape &x = ctx.shape(0), &r = ctx.shape(1);
    if (x.rank() < 2 || r.rank() < 2) ctx.fail("the input and the referent need two spatial axes (rank 2 or more)");
    if (ctx.attrs().find("offset") == ctx.attrs().end())
      ctx.fail("automatic crop offsets are not supported; give the offsets (crop_manual)");
    std::vector<int64_t> o;
    try {
      o = crop_offset(ctx.attrs());
    } catch (const ValueError& e) {
      ctx.fail(e.what());
    }
    NDShape out = x;
    size_t R = x.rank();
    for (int k = 0; k < 2; ++k) {
      int64_t in = x[R - 1 - k], want = r[r.rank() - 1 - k];
      if (o[size_t(k)] < 0) ctx.fail("crop offsets must not be negative");
      if (in >= 0 && want >= 0 && o[size_t(k)] + want > in)
        ctx.fail("the crop window (offset " + std::to_string(o[size_t(k)]) + ", size " + std::to_string(want) +
                 ") does not fit the input's axis of size " + std::to_string(in));
      out[R - 1 - k] = want;
    }
    auto res = ctx.one(out);
    res[0].dtype = ctx.dtype(0);
    res[0].dynamic_axes = ctx.input(0).dynamic_axes();
    return res;
  };
  d.forward = [](ComputeContext& ctx) {
    std::vector<int64_t> o = crop_offset(ctx.attr());
    const NDArrayView& x = ctx.inputs[0];
    const NDShape& r = ctx.inputs[1].shape();
    size_t R = x.rank();
    int64_t w = r[r.rank() - 1], h = r[r.rank() - 2];
    if (o[0] + w > x.shape()[R - 1] || o[1] + h > x.shape()[R - 2])
      throw ValueError("Crop: the crop window does not fit the input of shape " + x.shape().str());
    return std::vector<NDArrayView>{
        x.to_dense().slice(R - 1, o[0], o[0] + w).slice(R - 2, o[1], o[1] + h).contiguous()};
  };
  d.backward = [](ComputeContext& ctx, size_t i) {
    NDArrayView dx = eager::zeros_like(ctx.inputs[i]);
    if (i != 0) return dx;
    std::vector<int64_t> o = crop_offset(ctx.attr());
    const NDShape& g = ctx.grad_outputs[0].shape();
    size_t R = dx.rank();
    NDArrayView win = dx.slice(R - 1, o[0], o[0] + g[R - 1]).slice(R - 2, o[1], o[1] + g[R - 2]);
    win.copy_from(ctx.grad_outputs[0].to_dense());
    return dx;
  };
  register_op(std::move(d));
}

}  // namespace

// ONNX forms: BatchNormalization in its inference form (the running statistics as mean and
// var; the running count has no ONNX counterpart), LRN over 2 r + 1 channels.
static void register_norm_onnx() {
  set_onnx_export("BatchNormalization", [](onnx_io::ExportContext& c) {
    const bool spatial = c.attr_bool("spatial");
    std::vector<std::string> params{c.input(kScale), c.input(kBias), c.input(kRunMean), c.input(kRunVar)};
    if (!spatial) {
      // One statistic per element (ONNX dropped this mode): the sample is flattened into
      // channels, [N, D], and the statistics into [D], as CNTK 2.7 wrote it.
      const NDShape xs = c.input_var(kData).shape();
      for (size_t i = kScale; i <= kRunVar; ++i)
        if (!xs.is_known() || c.input_var(i).shape().total_size() != xs.total_size())
          c.unsupported("non-spatial statistics of another size than the sample");
      for (auto& p : params) p = c.node1("Reshape", {p, c.constant_i64({-1})});
    }
    // ONNX's momentum per sample (the batch size 1 the file records): exp(-1 / T) keeps the
    // engine's time constant T when the file is read back (import_norm.cpp).
    std::vector<onnx_io::Attr> attrs{onnx_io::Attr("epsilon", c.attr_double("epsilon"))};
    const double T = c.attr_double("normalizationTimeConstant");
    if (T >= 0) attrs.emplace_back("momentum", T == 0 ? 0.0 : std::exp(-1.0 / T));
    onnx_io::over_batch_export(c, kData, [&](const std::string& x, const std::string& out) {
      std::vector<std::string> in{spatial ? x : c.node1("Flatten", {x}, {onnx_io::Attr("axis", int64_t(1))})};
      in.insert(in.end(), params.begin(), params.end());
      if (spatial) return c.node1("BatchNormalization", in, attrs, out);
      std::string y = c.node1("BatchNormalization", in, attrs);
      std::vector<int64_t> shape{-1};  // N stays as free as it was
      for (auto d : c.input_var(kData).shape().dims()) shape.push_back(d);
      return c.node1("Reshape", {y, c.constant_i64(shape)}, {}, out);
    });
  });
  // Crop -> Slice of the last two axes (the referent gives the window's size).
  set_onnx_export("Crop", [](onnx_io::ExportContext& c) {
    const std::vector<int64_t> o = crop_offset(c.function().attributes());
    const NDShape out = c.output_var().shape();
    const int64_t R = int64_t(out.rank()), w = out[size_t(R - 1)], h = out[size_t(R - 2)];
    if (w < 0 || h < 0) c.unsupported("a crop window of free size");
    const int64_t last = c.input_dyn(0) + R - 1;
    const std::vector<int64_t> starts{o[1], o[0]}, ends{o[1] + h, o[0] + w}, axes{last - 1, last};
    if (c.opset() >= 10)
      c.node1("Slice", {c.input(0), c.constant_i64(starts), c.constant_i64(ends), c.constant_i64(axes)}, {},
              c.output(0));
    else
      c.node1("Slice", {c.input(0)},
              {onnx_io::Attr("starts", starts), onnx_io::Attr("ends", ends), onnx_io::Attr("axes", axes)}, c.output(0));
  });
  set_onnx_export("LocalResponseNormalization", [](onnx_io::ExportContext& c) {
    std::vector<onnx_io::Attr> attrs{
        onnx_io::Attr("size", 2 * c.attr_int("depthRadius") + 1), onnx_io::Attr("bias", c.attr_double("bias")),
        onnx_io::Attr("alpha", c.attr_double("alpha")), onnx_io::Attr("beta", c.attr_double("beta"))};
    onnx_io::over_batch_export(
        c, 0, [&](const std::string& x, const std::string& out) { return c.node1("LRN", {x}, attrs, out); });
  });
}

void register_norm_ops() {
  register_batch_normalization();
  register_lrn();
  register_crop();
  register_norm_onnx();
}

}  // namespace cntk
