// Global random-number settings that CNTK scripts set (set_fixed_random_seed).
#pragma once
#include <cstdint>

namespace cntk {

void set_fixed_random_seed(uint64_t seed);
bool is_random_seed_fixed();
// Sets the next seed to `seed` and unfixes it (CNTK's ResetRandomSeed, what CNTK's tests call
// before each test): later ops and initializers draw seed, seed + 1, ...
void reset_random_seed(uint64_t seed);
// The seed for an op or initializer that was not given one explicitly: the fixed seed
// itself while one is fixed, else the current seed, which then counts up (CNTK's rule).
uint64_t next_random_seed();
void force_deterministic_algorithms(bool on = true);
bool should_force_deterministic_algorithms();
void set_computation_network_trace_level(int level);
int get_computation_network_trace_level();

}  // namespace cntk
