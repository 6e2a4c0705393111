// Weighted class sampling shared by the random ops (random.cpp) and the losses that
// sample negatives (NCE in loss.cpp).
#pragma once
#include <string>
#include <vector>

#include "cntk/tensor.h"
#include "core/rng.h"

namespace cntk {

// The expected count of each class in a set of `num_samples` classes drawn by
// `weights` (non-negative, a positive sum; ValueError naming `op` otherwise), as
// CNTK's RandomSampleInclusionFrequency estimates it, drawing from `g`.
std::vector<double> inclusion_frequency(const NDArrayView& weights, int64_t num_samples, bool allow_duplicates,
                                        rng::Engine& g, const std::string& op);

}  // namespace cntk
