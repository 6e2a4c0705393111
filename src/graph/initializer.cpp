// Parameter initializers (CNTK's uniform, normal, xavier, glorot_*, he_*,
// truncated_normal, bilinear) and the global random seed.
#include <atomic>
#include <cmath>
#include <limits>

#include "cntk/random.h"
#include "cntk/variable.h"
#include "core/rng.h"

namespace cntk {

namespace {
std::atomic<uint64_t> g_seed{0};
std::atomic<bool> g_fixed{false};
std::atomic<bool> g_deterministic{false};
std::atomic<int> g_trace{0};
}  // namespace

void set_fixed_random_seed(uint64_t seed) {
  g_seed = seed;
  g_fixed = true;
}
bool is_random_seed_fixed() { return g_fixed; }
void reset_random_seed(uint64_t seed) {
  g_seed = seed;
  g_fixed = false;
}
// While a seed is fixed every automatic seed is that seed; otherwise they count up from it.
uint64_t next_random_seed() { return g_fixed ? g_seed.load() : g_seed++; }
void force_deterministic_algorithms(bool on) { g_deterministic = on; }
bool should_force_deterministic_algorithms() { return g_deterministic; }
void set_computation_network_trace_level(int level) { g_trace = level; }
int get_computation_network_trace_level() { return g_trace; }

namespace {

// Fan-in and fan-out as CNTK computes them (LearnableParameter::InitRandom),
// translated to NumPy order, where CNTK's leading (fastest) axes come last:
//  - the last `filter_rank` axes are the receptive field (convolution kernels);
//  - output_rank >= 0: the `output_rank` axes before the field are outputs and the
//    leading ones inputs (Dense: (in, out));
//  - output_rank < 0: the first -output_rank axes are outputs and the ones between
//    them and the field inputs (convolution: (out, in, *field)).
// fan_in = field * inputs, fan_out = field * outputs. Defaults: output rank 1, filter rank 0.
void fans(const NDShape& s, int64_t output_rank, int64_t filter_rank, double& fan_in, double& fan_out) {
  constexpr int64_t kSentinel = std::numeric_limits<int>::max();
  int64_t r = (int64_t)s.rank();
  bool defaults = output_rank == kSentinel && filter_rank == kSentinel;
  if (output_rank == kSentinel) output_rank = 1;
  if (filter_rank == kSentinel) filter_rank = 0;
  if (filter_rank < 0)
    throw ValueError("initializer: filter_rank must not be negative, got " + std::to_string(filter_rank));
  if (filter_rank + std::abs(output_rank) > r) {
    if (defaults) {  // a scalar parameter: nothing to fan over
      fan_in = fan_out = 1;
      return;
    }
    throw ValueError("initializer: filter_rank (" + std::to_string(filter_rank) + ") plus output_rank (" +
                     std::to_string(output_rank) + ") exceeds the rank of the parameter shape " + s.str());
  }
  double field = 1, in = 1, out = 1;
  for (int64_t i = r - filter_rank; i < r; ++i) field *= double(s[i]);
  if (output_rank >= 0) {
    for (int64_t i = r - filter_rank - output_rank; i < r - filter_rank; ++i) out *= double(s[i]);
    for (int64_t i = 0; i < r - filter_rank - output_rank; ++i) in *= double(s[i]);
  } else {
    for (int64_t i = 0; i < -output_rank; ++i) out *= double(s[i]);
    for (int64_t i = -output_rank; i < r - filter_rank; ++i) in *= double(s[i]);
  }
  fan_in = in * field;
  fan_out = out * field;
}

}  // namespace

NDArrayView initialize_parameter(const Dictionary& init, const NDShape& shape, DataType dtype) {
  std::string type = attr_string(init, "type", "uniform");
  double scale = attr_double(init, "scale", 1.0);
  int64_t output_rank = attr_int(init, "outputRank", std::numeric_limits<int>::max());
  int64_t filter_rank = attr_int(init, "filterRank", std::numeric_limits<int>::max());
  int64_t seed = attr_int(init, "randomSeed", -1);
  rng::Engine rng(seed >= 0 ? uint64_t(seed) : next_random_seed());
  NDArrayView out(DataType::Double, shape);
  double* p = out.data<double>();
  int64_t n = shape.total_size();
  bool fan_based = type == "xavier" || type == "glorot_uniform" || type == "glorot_normal" || type == "he_uniform" ||
                   type == "he_normal";
  bool random = fan_based || type == "uniform" || type == "normal" || type == "gaussian" || type == "truncated_normal";
  if (random && !(scale > 0)) throw ValueError("initializer '" + type + "': scale must be positive");
  double fan_in = 1, fan_out = 1;
  if (fan_based) fans(shape, output_rank, filter_rank, fan_in, fan_out);
  // CNTK fills the parameter on the CPU in storage order (its column-major order over
  // the reversed shape is NumPy's row-major order), one value per draw of a generator
  // seeded with the seed, and works at the parameter's precision: the range or standard
  // deviation is rounded to it, then multiplied by the scale, and each value rounded.
  bool single = dtype != DataType::Double;
  auto elem = [single](double v) { return single ? double(float(v)) : v; };
  auto spread = [&](double base) { return elem(elem(base) * elem(scale)); };
  auto uniform = [&](double range) {
    for (int64_t i = 0; i < n; ++i) p[i] = elem(rng::uniform(rng, -range, range));
  };
  auto normal = [&](double std) {
    for (int64_t i = 0; i < n; ++i) p[i] = elem(rng::normal(rng, 0.0, std));
  };
  if (type == "uniform") {
    uniform(spread(1.0));
  } else if (type == "normal" || type == "gaussian") {
    normal(spread(1.0));
  } else if (type == "xavier") {
    // CNTK's documentation calls xavier Gaussian; its implementation (which gave the
    // values its tests expect) draws uniformly in +-scale * sqrt(3 / fan_in).
    uniform(spread(std::sqrt(3.0 / fan_in)));
  } else if (type == "glorot_uniform") {
    uniform(spread(std::sqrt(6.0 / (fan_in + fan_out))));
  } else if (type == "glorot_normal") {
    normal(spread(std::sqrt(2.0 / (fan_in + fan_out))));
  } else if (type == "he_uniform") {
    uniform(spread(std::sqrt(6.0 / fan_in)));
  } else if (type == "he_normal") {
    normal(spread(std::sqrt(2.0 / fan_in)));
  } else if (type == "truncated_normal") {
    // Values beyond two standard deviations are drawn again (compared at the
    // parameter's precision, as CNTK does).
    double std = spread(1.0), limit = elem(2 * std);
    for (int64_t i = 0; i < n; ++i) {
      double v;
      do v = elem(rng::normal(rng, 0.0, std));
      while (v < -limit || v > limit);
      p[i] = v;
    }
  } else if (type == "bilinear") {
    // Upsampling kernels (out, in, height, width) with out == in: channel c maps to
    // itself with weights (1 - |x - center| / f) (1 - |y - center| / f), f = (k + 1) / 2
    // (integer division) and center = (k - 1) / 2.
    int64_t kw = attr_int(init, "kernelWidth", 0), kh = attr_int(init, "kernelHeight", 0);
    if (kw <= 0 || kh <= 0) throw ValueError("bilinear initializer: kernel sizes must be positive");
    if (kw != kh)
      throw ValueError("bilinear initializer: the kernel must be square, got " + std::to_string(kh) + "x" +
                       std::to_string(kw));
    if (shape.rank() != 4 || shape[2] != kh || shape[3] != kw || shape[0] != shape[1])
      throw ValueError("bilinear initializer: the parameter must have shape (channels, channels, " +
                       std::to_string(kh) + ", " + std::to_string(kw) + "), not " + shape.str());
    out.fill(0);
    double factor = double((kw + 1) / 2), center = (kw - 1) / 2.0;
    int64_t channels = shape[0], plane = kh * kw;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
          p[(c * channels + c) * plane + y * kw + x] =
              (1 - std::abs(x - center) / factor) * (1 - std::abs(y - center) / factor);
  } else if (type == "zero" || type == "constant") {
    out.fill(attr_double(init, "value", 0.0));
  } else {
    throw ValueError("unknown initializer type '" + type + "'");
  }
  return out.cast(dtype);
}

}  // namespace cntk
