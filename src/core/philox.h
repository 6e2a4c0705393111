// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw
// ("Parallel random numbers: as easy as 1, 2, 3", SC 2011): a keyed bijection of a
// 128-bit counter, so that block i of a stream is computed from (key, i) alone. Any
// thread can draw any part of a stream, and a gradient rule can draw a forward pass's
// numbers again instead of storing them. tests/cpp/test_philox.cpp checks it against
// the published known-answer vectors.
#pragma once
#include <array>
#include <cstdint>

namespace cntk::philox {

using Block = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

inline Key key_of(uint64_t seed) { return {uint32_t(seed), uint32_t(seed >> 32)}; }

// The four words of counter block `ctr` under `key`.
inline Block block(Block ctr, Key key) {
  for (int r = 0; r < kRounds; ++r) {
    if (r > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    const uint64_t p0 = uint64_t(kMul0) * ctr[0], p1 = uint64_t(kMul1) * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ key[1], uint32_t(p0)};
  }
  return ctr;
}

// Blocks first .. first + count - 1 of the stream with counters (i, 0, 0, 0) (i taken
// as 64 bits over the first two words), written as words: out[4 * j + w] is word w of
// block first + j. The lanes of `kLanes` blocks run side by side, so that the compiler
// vectorizes the rounds.
inline void blocks(Key key, uint64_t first, int64_t count, uint32_t* out) {
  constexpr int kLanes = 16;
  for (int64_t base = 0; base < count; base += kLanes) {
    const int lanes = int(count - base < kLanes ? count - base : kLanes);
    uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t i = first + uint64_t(base + l);
      c0[l] = uint32_t(i);
      c1[l] = uint32_t(i >> 32);
      c2[l] = 0;
      c3[l] = 0;
    }
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < kRounds; ++r) {
      if (r > 0) {
        k0 += kWeyl0;
        k1 += kWeyl1;
      }
      for (int l = 0; l < kLanes; ++l) {
        const uint64_t p0 = uint64_t(kMul0) * c0[l], p1 = uint64_t(kMul1) * c2[l];
        const uint32_t n0 = uint32_t(p1 >> 32) ^ c1[l] ^ k0, n2 = uint32_t(p0 >> 32) ^ c3[l] ^ k1;
        c1[l] = uint32_t(p1);
        c3[l] = uint32_t(p0);
        c0[l] = n0;
        c2[l] = n2;
      }
    }
    for (int l = 0; l < lanes; ++l) {
      out[4 * (base + l) + 0] = c0[l];
      out[4 * (base + l) + 1] = c1[l];
      out[4 * (base + l) + 2] = c2[l];
      out[4 * (base + l) + 3] = c3[l];
    }
  }
}

}  // namespace cntk::philox
