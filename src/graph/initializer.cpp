// Parameter initializers (CNTK's uniform, normal, xavier, glorot_*, he_*,
// truncated_normal, bilinear) and the global random seed.
#include <atomic>
#include <cmath>
#include <limits>
#include <random>

#include "cntk/random.h"
#include "cntk/variable.h"

namespace cntk {

namespace {
std::atomic<uint64_t> g_seed{1};
std::atomic<bool> g_fixed{false};
std::atomic<bool> g_deterministic{false};
std::atomic<int> g_trace{0};
}  // namespace

void set_fixed_random_seed(uint64_t seed) {
  g_seed = seed;
  g_fixed = true;
}
bool is_random_seed_fixed() { return g_fixed; }
uint64_t next_random_seed() { return g_seed++; }
void force_deterministic_algorithms(bool on) { g_deterministic = on; }
bool should_force_deterministic_algorithms() { return g_deterministic; }
void set_computation_network_trace_level(int level) { g_trace = level; }
int get_computation_network_trace_level() { return g_trace; }

namespace {

// Fan-in and fan-out in NumPy order. A non-negative output_rank counts output
// axes from the end (Dense: (in, out)); a negative one counts them from the front
// (convolution kernels: (out, in, *filter)). filter_rank axes form the receptive field.
void fans(const NDShape& s, int64_t output_rank, int64_t filter_rank, double& fan_in, double& fan_out) {
  int64_t r = (int64_t)s.rank();
  if (r == 0) {
    fan_in = fan_out = 1;
    return;
  }
  if (output_rank == std::numeric_limits<int>::max()) output_rank = 1;  // sentinel: default
  if (filter_rank == std::numeric_limits<int>::max()) filter_rank = 0;
  double out = 1, in = 1, field = 1;
  if (output_rank >= 0) {
    int64_t o = std::min(output_rank, r);
    for (int64_t i = r - o; i < r; ++i) out *= s[i];
    int64_t f = std::min(filter_rank, r - o);
    for (int64_t i = 0; i < f; ++i) field *= s[i];
    for (int64_t i = f; i < r - o; ++i) in *= s[i];
  } else {
    int64_t o = std::min(-output_rank, r);
    for (int64_t i = 0; i < o; ++i) out *= s[i];
    int64_t f = std::min(filter_rank, r - o);
    for (int64_t i = r - f; i < r; ++i) field *= s[i];
    for (int64_t i = o; i < r - f; ++i) in *= s[i];
  }
  if (r == 1) in = 1;  // a vector (a bias) has no inputs
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
  std::mt19937_64 rng(seed >= 0 ? uint64_t(seed) : next_random_seed());
  NDArrayView out(DataType::Double, shape);
  double* p = out.data<double>();
  int64_t n = shape.total_size();
  double fan_in, fan_out;
  fans(shape, output_rank, filter_rank, fan_in, fan_out);
  auto uniform = [&](double range) {
    std::uniform_real_distribution<double> u(-range, range);
    for (int64_t i = 0; i < n; ++i) p[i] = u(rng);
  };
  auto normal = [&](double std) {
    std::normal_distribution<double> d(0.0, std);
    for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
  };
  if (type == "uniform") {
    uniform(scale);
  } else if (type == "normal" || type == "gaussian") {
    normal(scale);
  } else if (type == "xavier") {
    normal(scale * std::sqrt(3.0 / fan_in));
  } else if (type == "glorot_uniform") {
    uniform(scale * std::sqrt(6.0 / (fan_in + fan_out)));
  } else if (type == "glorot_normal") {
    normal(scale * std::sqrt(2.0 / (fan_in + fan_out)));
  } else if (type == "he_uniform") {
    uniform(scale * std::sqrt(6.0 / fan_in));
  } else if (type == "he_normal") {
    normal(scale * std::sqrt(2.0 / fan_in));
  } else if (type == "truncated_normal") {
    // Values beyond two standard deviations are drawn again.
    std::normal_distribution<double> d(0.0, scale);
    for (int64_t i = 0; i < n; ++i) {
      double v;
      do v = d(rng);
      while (std::abs(v) > 2 * scale);
      p[i] = v;
    }
  } else if (type == "bilinear") {
    // Upsampling kernel of shape (channels, channels, k, k): channel c maps to itself.
    int64_t kw = attr_int(init, "kernelWidth", 0), kh = attr_int(init, "kernelHeight", 0);
    if (shape.rank() < 2 || kw <= 0 || kh <= 0) throw ValueError("bilinear initializer: bad kernel or shape");
    out.fill(0);
    double fw = std::ceil(kw / 2.0), fh = std::ceil(kh / 2.0);
    double cw = (2 * fw - 1 - std::fmod(fw, 2.0)) / (2 * fw), ch = (2 * fh - 1 - std::fmod(fh, 2.0)) / (2 * fh);
    int64_t channels = shape.rank() >= 4 ? std::min(shape[0], shape[1]) : 1;
    int64_t plane = kh * kw;
    int64_t per_out = shape.rank() >= 4 ? shape[1] * plane : plane;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
          p[c * per_out + (shape.rank() >= 4 ? c * plane : 0) + y * kw + x] =
              (1 - std::abs(x / fw - cw)) * (1 - std::abs(y / fh - ch));
  } else if (type == "zero" || type == "constant") {
    out.fill(attr_double(init, "value", 0.0));
  } else {
    throw ValueError("unknown initializer type '" + type + "'");
  }
  return out.cast(dtype);
}

}  // namespace cntk
