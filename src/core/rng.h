// CNTK's CPU random streams. CNTK draws every random number on the CPU from a
// std::mt19937_64 (whose output the C++ standard fixes on every platform) and turns
// it into values with Boost.Random 1.60's distributions, not the standard library's
// (whose algorithms differ between implementations). These functions turn the engine's
// output into numbers the same way, so that a seed gives CNTK's values.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace cntk::rng {

using Engine = std::mt19937_64;

// A generator as CNTK starts one for a seed and an offset (the draws already used).
inline Engine make_engine(uint64_t seed, uint64_t offset = 0) {
  Engine g(seed);
  g.discard(offset);
  return g;
}

// [0, 1): one draw over 2^64, drawn again in the rare case that rounds to 1.
double uniform01(Engine& g);

// [low, high): one draw over 2^64 scaled into the range, drawn again unless below high.
double uniform(Engine& g, double low, double high);

// Standard normal by the 128-layer ziggurat; the tail by rejection from an exponential.
double standard_normal(Engine& g);

inline double normal(Engine& g, double mean, double sigma) { return standard_normal(g) * sigma + mean; }

// CNTK's weighted sampling of class indices (RandomSample, RandomSampleInclusionFrequency,
// NCE noise): each draw is uniform in [0, total) and picks the first class whose running
// weight sum reaches it. Without duplicates a class drawn again is rejected and drawn
// again; `tries` counts all draws. `prefix_sums` must end with a positive total.
std::vector<int64_t> weighted_samples(Engine& g, const std::vector<double>& prefix_sums, int64_t count,
                                      bool allow_duplicates, int64_t* tries = nullptr);

}  // namespace cntk::rng
