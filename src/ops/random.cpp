// Op family: random. Dropout, RandomSample, RandomSampleInclusionFrequency and
// RandomDistribution (uniform, normal, gumbel, bernoulli). Each function draws from
// its own generator, seeded from its rngSeed/rngOffset attributes (CNTK's keys), so
// a graph built with a fixed seed draws the same numbers on every run.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/dropout.h"
#include "kernels/cpu/elementwise.h"
#include "ops/eager.h"
#include "ops/op.h"
#include "onnx/export.h"
#include "ops/sampling.h"

namespace cntk {
namespace {

// Every op draws as CNTK's CPU kernels do (core/rng.h), element by element in storage
// order, each value computed in double and rounded to the element type.

// --------------------------------------------------------------- Dropout

// Inverted dropout: in training each element is zeroed with probability dropoutRate
// and the others scaled by 1 / (1 - dropoutRate); in inference it is the identity.
// The mask comes from the counter-based stream of the function's seed
// (kernels/cpu/dropout.h), drawn while the input is multiplied; the gradient rule
// draws it again from the same counters instead of keeping it.
void register_dropout() {
  OpDef d;
  d.name = "Dropout";
  d.op_type = 15;
  d.inputs = {{"x"}};
  d.attrs = {{"dropoutRate", AttrType::Double, 0.0}, {"rngSeed", AttrType::Int, 0}, {"rngOffset", AttrType::Int, 0}};
  d.stateful_random = true;
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    double rate = ctx.attr_double("dropoutRate");
    if (!(rate >= 0.0 && rate < 1.0)) ctx.fail("dropout rate " + std::to_string(rate) + " must be in [0, 1)");
    return ctx.one(ctx.shape(0));
  };
  d.forward = [](ComputeContext& ctx) {
    double rate = ctx.attr_double("dropoutRate");
    if (!ctx.training || rate == 0.0) return std::vector<NDArrayView>{ctx.inputs[0].to_dense()};
    NDArrayView x = ctx.inputs[0].to_dense();
    RandomStream stream = ctx.random();
    auto draw = std::make_shared<kernels::DropoutDraw>();
    draw->seed = stream.seed();
    draw->counter = stream.take_blocks(kernels::dropout_blocks(x.numel()));
    draw->rate = rate;
    ctx.state = draw;
    return std::vector<NDArrayView>{kernels::dropout(x, *draw)};
  };
  d.backward = [](ComputeContext& ctx, size_t) {
    if (!ctx.state) return ctx.grad_outputs[0];  // the forward pass was the identity
    return kernels::dropout(ctx.grad_outputs[0].to_dense(), *static_cast<const kernels::DropoutDraw*>(ctx.state.get()));
  };
  register_op(std::move(d));
}

// ------------------------------------------------ RandomSample (+ frequency)

struct SampleAttrs {
  int64_t num_samples;
  bool allow_duplicates;
};

// RandomSample and RandomSampleInclusionFrequency declare the same attributes.
std::vector<AttrSpec> sample_attr_specs() {
  return {{"numSamples", AttrType::Int, 0},
          {"allowDuplicates", AttrType::Bool, true},
          {"rngSeed", AttrType::Int, 0},
          {"rngOffset", AttrType::Int, 0}};
}

SampleAttrs sample_attrs(const Dictionary& a) {
  return {op_attr_int("RandomSample", a, "numSamples"), op_attr_bool("RandomSample", a, "allowDuplicates")};
}

// The sampling weights (double) and their running sums, checked.
struct Weights {
  std::vector<double> w, sums;
};

Weights sampling_weights(const std::string& op, const NDArrayView& w_in) {
  NDArrayView w = w_in.to_dense().contiguous().cast(DataType::Double);
  const double* p = w.data<double>();
  Weights out;
  double s = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    if (!(p[i] >= 0)) throw ValueError(op + ": sampling weights must be non-negative, got " + std::to_string(p[i]));
    s += p[i];
    out.w.push_back(p[i]);
    out.sums.push_back(s);
  }
  if (!(s > 0)) throw ValueError(op + ": sampling weights sum to zero");
  return out;
}

// Class indices drawn by weight (without duplicates by rejection, as CNTK does);
// `tries` returns the number of draws needed.
std::vector<int64_t> run_sampling(const std::string& op, const Weights& w, const SampleAttrs& a, rng::Engine& g,
                                  int64_t& tries) {
  if (!a.allow_duplicates) {
    int64_t positive = std::count_if(w.w.begin(), w.w.end(), [](double v) { return v > 0; });
    if (positive < a.num_samples)
      throw ValueError(op + ": only " + std::to_string(positive) + " classes have a positive weight; cannot draw " +
                       std::to_string(a.num_samples) + " samples without duplicates");
  }
  return rng::weighted_samples(g, w.sums, a.num_samples, a.allow_duplicates, &tries);
}

}  // namespace

std::vector<double> inclusion_frequency(const NDArrayView& weights, int64_t num_samples, bool allow_duplicates,
                                        rng::Engine& g, const std::string& op) {
  Weights w = sampling_weights(op, weights);
  const SampleAttrs a{num_samples, allow_duplicates};
  // p * n with duplicates; without them 1 - (1 - p)^tries, tries estimated from ten
  // sampling runs (which CNTK makes, drawing from the generator, in either case).
  const int experiments = 10;
  int64_t sum_tries = 0;
  for (int e = 0; e < experiments; ++e) {
    int64_t t;
    run_sampling(op, w, a, g, t);
    sum_tries += t;
  }
  const double est_tries = double(sum_tries) / experiments, total = w.sums.back();
  std::vector<double> freq(w.w.size());
  for (size_t i = 0; i < w.w.size(); ++i) {
    const double prob = w.w[i] / total;
    freq[i] = allow_duplicates ? prob * double(num_samples) : -std::expm1(est_tries * std::log1p(-prob));
  }
  return freq;
}

namespace {

void check_static_weights(const ComputeContext& ctx, const char* op) {
  if (ctx.in_dyn[0] > 0)
    throw NotImplementedError(std::string(op) +
                              ": sampling with weights that have dynamic axes (one set per "
                              "sample) is not implemented; give weights without dynamic axes");
}

std::vector<OutputInfo> infer_sample(InferContext& ctx, bool frequency) {
  ctx.expect_inputs(1);
  SampleAttrs a = sample_attrs(ctx.attrs());
  if (a.num_samples < 1) ctx.fail("the number of samples must be > 0, got " + std::to_string(a.num_samples));
  // CNTK builds this over weights with dynamic axes too (the result has none); such
  // weights are refused when the op runs.
  const NDShape& s = ctx.shape(0);
  if (s.rank() != 1) ctx.fail("the sampling weights must be a vector");
  int64_t classes = s[0];
  if (classes >= 0 && !a.allow_duplicates && classes <= a.num_samples)
    ctx.fail("for sampling without duplicates the number of samples (" + std::to_string(a.num_samples) +
             ") must be less than the number of classes (" + std::to_string(classes) + ")");
  DataType t = ctx.common_dtype();
  if (frequency) return {{s, t, {}}};
  // One one-hot row per sample (sparse in CNTK; computed densely here).
  return {{NDShape{a.num_samples, classes}, t, {}, true}};
}

void register_random_sample() {
  OpDef d;
  d.name = "RandomSample";
  d.op_type = 45;
  d.inputs = {{"weights", Gradient::Zero}};
  d.attrs = sample_attr_specs();
  d.stateful_random = true;
  d.infer = [](InferContext& ctx) { return infer_sample(ctx, false); };
  d.forward = [](ComputeContext& ctx) {
    SampleAttrs a = sample_attrs(ctx.attr());
    check_static_weights(ctx, "RandomSample");
    Weights w = sampling_weights("RandomSample", ctx.inputs[0]);
    int64_t tries;
    auto samples = run_sampling("RandomSample", w, a, ctx.random().engine(), tries);
    int64_t classes = int64_t(w.w.size());
    NDArrayView y = NDArrayView::zeros(ctx.inputs[0].dtype(), NDShape{a.num_samples, classes});
    CNTK_DISPATCH_FLOAT(y.dtype(), T, [&] {
      T* p = y.data<T>();
      for (int64_t i = 0; i < a.num_samples; ++i) p[i * classes + samples[i]] = 1;
    });
    return std::vector<NDArrayView>{y};
  };
  d.gradient = Gradient::Zero;
  register_op(std::move(d));

  OpDef f;
  f.name = "RandomSampleInclusionFrequency";
  f.op_type = 46;
  f.inputs = {{"weights", Gradient::Zero}};
  f.attrs = sample_attr_specs();
  f.stateful_random = true;
  f.infer = [](InferContext& ctx) { return infer_sample(ctx, true); };
  f.forward = [](ComputeContext& ctx) {
    SampleAttrs a = sample_attrs(ctx.attr());
    check_static_weights(ctx, "RandomSampleInclusionFrequency");
    const NDArrayView& in = ctx.inputs[0];
    std::vector<double> freq = inclusion_frequency(in, a.num_samples, a.allow_duplicates, ctx.random().engine(),
                                                   "RandomSampleInclusionFrequency");
    NDArrayView y(in.dtype(), in.shape());
    CNTK_DISPATCH_FLOAT(y.dtype(), T, [&] {
      T* p = y.data<T>();
      for (size_t i = 0; i < freq.size(); ++i) p[i] = T(freq[i]);
    });
    return std::vector<NDArrayView>{y};
  };
  f.gradient = Gradient::Zero;
  register_op(std::move(f));
}

// ---------------------------------------------------------- RandomDistribution

std::vector<double> distribution_args(const Dictionary& a) {
  std::vector<double> out;
  auto it = a.find("randomDistributionArgs");
  if (it == a.end() || it->second.empty()) return out;
  if (it->second.is<double>() || it->second.is<int64_t>()) return {it->second.as_double()};
  for (auto& v : it->second.as_list()) out.push_back(v.as_double());
  return out;
}

void check_distribution(InferContext& ctx) {
  std::string type = ctx.attr_string("randomDistributionType");
  auto args = distribution_args(ctx.attrs());
  size_t want = type == "bernoulli" ? 1 : 2;
  if (type != "uniform" && type != "normal" && type != "gumbel" && type != "bernoulli")
    ctx.fail("unknown distribution '" + type + "' (uniform, normal, gumbel or bernoulli)");
  if (args.size() != want)
    ctx.fail("the " + type + " distribution takes " + std::to_string(want) + " arguments, got " +
             std::to_string(args.size()));
  if (type == "uniform" && !(args[0] < args[1]))
    ctx.fail("uniform: low (" + std::to_string(args[0]) + ") must be less than high (" + std::to_string(args[1]) + ")");
  if ((type == "normal" || type == "gumbel") && !(args[1] >= 0))
    ctx.fail(type + ": the scale (" + std::to_string(args[1]) + ") must be non-negative");
  if (type == "bernoulli" && !(args[0] >= 0 && args[0] <= 1))
    ctx.fail("bernoulli: the mean (" + std::to_string(args[0]) + ") must be in [0, 1]");
}

void register_random_distribution() {
  OpDef d;
  d.name = "RandomDistribution";
  d.op_type = 76;
  d.inputs = {{"like", Gradient::Zero, true}};
  d.attrs = {{"randomDistributionType", AttrType::String, ""},
             {"randomDistributionArgs", AttrType::List},
             {"newShape", AttrType::Shape},
             {"newDataType", AttrType::Int, int64_t(DataType::Float)},
             {"rngSeed", AttrType::Int, 0},
             {"rngOffset", AttrType::Int, 0}};
  d.stateful_random = true;
  d.infer = [](InferContext& ctx) -> std::vector<OutputInfo> {
    if (ctx.num_inputs() > 1) ctx.fail("expects at most 1 input, got " + std::to_string(ctx.num_inputs()));
    check_distribution(ctx);
    if (ctx.num_inputs() == 1) return ctx.one(ctx.shape(0));  // *_like: the operand's shape, type and axes
    auto it = ctx.attrs().find("newShape");
    if (it == ctx.attrs().end() || it->second.empty()) ctx.fail("the output shape (newShape) is missing");
    NDShape shape(it->second.as_int_list());
    for (size_t i = 0; i < shape.rank(); ++i)
      if (shape[i] < 0) ctx.fail("the output shape " + shape.str() + " must not have free or inferred dimensions");
    DataType t = static_cast<DataType>(ctx.attr_int("newDataType"));
    if (t != DataType::Float && t != DataType::Double) ctx.fail_type("the data type must be float32 or float64");
    return {{shape, t, {}}};
  };
  d.forward = [](ComputeContext& ctx) {
    NDShape shape;
    DataType t;
    if (ctx.inputs.empty()) {
      shape = NDShape(ctx.attr().at("newShape").as_int_list());
      t = static_cast<DataType>(ctx.attr_int("newDataType"));
    } else {
      shape = ctx.inputs[0].shape();
      t = ctx.inputs[0].dtype();
    }
    std::string type = ctx.attr_string("randomDistributionType");
    auto args = distribution_args(ctx.attr());
    RandomStream stream = ctx.random();
    auto& g = stream.engine();
    NDArrayView y(t, shape);
    CNTK_DISPATCH_FLOAT(t, T, [&] {
      T* p = y.data<T>();
      int64_t n = y.numel();
      // The arguments at the element type, as CNTK's kernels take them.
      const double a0 = double(T(args[0])), a1 = args.size() > 1 ? double(T(args[1])) : 0.0;
      if (type == "uniform") {
        for (int64_t i = 0; i < n; ++i) p[i] = T(rng::uniform(g, a0, a1));
      } else if (type == "normal") {
        for (int64_t i = 0; i < n; ++i) p[i] = T(rng::normal(g, a0, a1));
        if (n % 2) rng::normal(g, a0, a1);  // CNTK draws an even count
      } else if (type == "gumbel") {
        for (int64_t i = 0; i < n; ++i) p[i] = T(a0 - a1 * std::log(-std::log1p(-rng::uniform01(g))));
      } else {  // bernoulli: CNTK's dropout mask with rate 1 - mean and value 1
        const T drop = T(1 - args[0]);
        for (int64_t i = 0; i < n; ++i) p[i] = T(rng::uniform01(g)) <= drop ? T(0) : T(1);
      }
    });
    return std::vector<NDArrayView>{y};
  };
  d.gradient = Gradient::Zero;
  register_op(std::move(d));
}

}  // namespace

void register_random_ops() {
  register_dropout();
  // An exported model is for inference, where dropout is the identity.
  set_onnx_export("Dropout", onnx_io::export_as("Identity"));
  register_random_sample();
  register_random_distribution();
}

}  // namespace cntk
