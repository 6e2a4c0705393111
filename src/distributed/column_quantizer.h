// Column-wise quantization of gradients for CNTK's 1-bit SGD (and its 2-, 4-,
// 8- and 16-bit variants), following CNTK's ColumnQuantizer/ValueQuantizer:
//
//  - a matrix is the parameter's values as CNTK sees them: rows = the last
//    NumPy axis (contiguous), columns = everything else;
//  - each column is quantized on its own: the value quantized is gradient +
//    residual, and what the quantization loses becomes the new residual
//    (error feedback), so no gradient is ever dropped, only delayed;
//  - 1 bit: values split at 0 (or at the column mean), each half
//    reconstructs to its own mean; more bits: a linear grid over
//    mean +- 4 standard deviations (the mean taken as 0);
//  - wire format per column: lower and upper bound (element type), then the
//    packed words (as wide as the element type), row i of word w being
//    w + k * words (CNTK's interleaving).
// Arithmetic stays in the element type, as CNTK's does.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cntk::distributed {

template <class T>
class ColumnQuantizer {
 public:
  using Word = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  using SignedWord = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  static constexpr size_t kWordBits = 8 * sizeof(Word);
  static constexpr size_t kParallelElements = size_t(1) << 16;

  static size_t words_per_column(size_t rows, size_t bits) {
    const size_t per_word = kWordBits / bits;
    return (rows + per_word - 1) / per_word;
  }
  static size_t column_bytes(size_t rows, size_t bits) {
    return 2 * sizeof(T) + words_per_column(rows, bits) * sizeof(Word);
  }

  // Quantizes `cols` columns of `rows` values (in + residual) into `out`
  // (cols * column_bytes bytes); the residual is updated in place.
  static void quantize(const T* in, T* residual, size_t rows, size_t cols, size_t bits, bool zero_threshold,
                       char* out) {
    const size_t words = words_per_column(rows, bits);
    // Columns are independent: threads change nothing in the result.
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelElements)
    for (size_t c = 0; c < cols; ++c) {
      const T* x = in + c * rows;
      T* r = residual + c * rows;
      T lower, upper;
      range(x, r, rows, bits, zero_threshold, lower, upper);
      Grid g(bits, lower, upper);
      char* col = out + c * column_bytes(rows, bits);
      std::memcpy(col, &lower, sizeof(T));
      std::memcpy(col + sizeof(T), &upper, sizeof(T));
      Word* w = reinterpret_cast<Word*>(col + 2 * sizeof(T));
      for (size_t iw = 0; iw < words; ++iw) {
        Word buf = 0;
        size_t k = 0;
        for (size_t i = iw; i < rows && k < kWordBits; i += words, k += bits) {
          const T v = x[i] + r[i];
          const Word q = g.quantize(v, zero_threshold);
          r[i] = v - g.unquantize(q);
          buf |= q << k;
        }
        std::memcpy(w + iw, &buf, sizeof(Word));
      }
    }
  }

  // Unquantizes `cols` columns from `in` into `out` (adding to it when `add`).
  static void unquantize(const char* in, size_t rows, size_t cols, size_t bits, T* out, bool add) {
    const size_t words = words_per_column(rows, bits);
    const Word mask = bits == kWordBits ? ~Word(0) : ((Word(1) << bits) - 1);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelElements)
    for (size_t c = 0; c < cols; ++c) {
      const char* col = in + c * column_bytes(rows, bits);
      T lower, upper;
      std::memcpy(&lower, col, sizeof(T));
      std::memcpy(&upper, col + sizeof(T), sizeof(T));
      Grid g(bits, lower, upper);
      const Word* w = reinterpret_cast<const Word*>(col + 2 * sizeof(T));
      T* y = out + c * rows;
      for (size_t iw = 0; iw < words; ++iw) {
        Word buf;
        std::memcpy(&buf, w + iw, sizeof(Word));
        size_t k = 0;
        for (size_t i = iw; i < rows && k < kWordBits; i += words, k += bits) {
          const T v = g.unquantize((buf >> k) & mask);
          y[i] = add ? T(v + y[i]) : v;
        }
      }
    }
  }

 private:
  // The quantization grid of one column (CNTK's ValueQuantizer).
  struct Grid {
    size_t bits;
    Word range_end;
    T lo, hi, mid, qfactor, ufactor;
    Grid(size_t b, T lower, T upper) : bits(b), lo(lower), hi(upper) {
      range_end = Word(1) << bits;
      const Word used = range_end - (bits > 1 ? 1 : 0);
      if (hi - lo < T(1e-36f)) {
        qfactor = ufactor = T(0);
      } else {
        qfactor = T(used) / (hi - lo);
        ufactor = (hi - lo) / T(used);
      }
      mid = T(0.5f) * (hi + lo);
    }
    Word quantize(T u, bool zero_threshold) const {
      if (bits == 1) return (zero_threshold ? u >= T(0) : u >= mid) ? 1 : 0;
      if (u <= lo) return 0;
      if (u >= hi) return range_end - 1;
      return Word(SignedWord((u - lo) * qfactor));
    }
    T unquantize(Word q) const { return ((T(q) + T(0.5)) * ufactor) + lo; }
  };

  // The column's range (CNTK's ComputeRangeStatColj).
  static void range(const T* x, const T* r, size_t rows, size_t bits, bool zero_threshold, T& lower, T& upper) {
    T mean = 0;
    if (!zero_threshold && bits == 1) {
      T acc = 0;
      for (size_t i = 0; i < rows; ++i) acc += x[i] + r[i];
      mean = acc / T(rows);
    }
    if (bits == 1) {
      T acc0 = 0, acc1 = 0;
      unsigned n0 = 0, n1 = 0;
      for (size_t i = 0; i < rows; ++i) {
        const T v = x[i] + r[i];
        if (v < mean) {
          acc0 += v;
          ++n0;
        } else {
          acc1 += v;
          ++n1;
        }
      }
      T radius, center;
      if (!zero_threshold) {
        // Both halves tied to one deviation around the mean.
        const T dev = ((T(n0) * mean - acc0) + (acc1 - T(n1) * mean)) / T(rows);
        radius = T(2) * dev;
        center = mean;
      } else {
        // Two reconstruction values, split at zero (all-zero columns do occur).
        if (n0 == 0) n0 = 1;
        if (n1 == 0) n1 = 1;
        const T mean0 = acc0 / T(n0), mean1 = acc1 / T(n1);
        center = T(0.5f) * (mean0 + mean1);
        radius = T(2) * (mean1 - center);
      }
      lower = center - radius;
      upper = center + radius;
    } else {
      const T stddevs = 4;
      T var = 0;
      for (size_t i = 0; i < rows; ++i) {
        const T v = x[i] + r[i];
        var += (v - mean) * (v - mean);
      }
      const T sd = std::sqrt(var / T(rows));
      lower = mean - stddevs * sd;
      upper = mean + stddevs * sd;
    }
  }
};

}  // namespace cntk::distributed
