#include "kernels/cpu/dropout.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/philox.h"
#include "kernels/cpu/elementwise.h"

namespace cntk::kernels {

namespace {

// Elements per chunk of work: a multiple of 4 (whole counter blocks), its words on
// the stack.
constexpr int64_t kChunk = 4096;

template <class T>
void apply_chunk(const T* __restrict x, T* __restrict y, const uint32_t* __restrict words, int64_t n,
                 uint32_t threshold, T scale) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * (words[i] < threshold ? T(0) : scale);  // NaN stays NaN
}

template <class T>
void run(const T* x, T* y, int64_t n, const DropoutDraw& d) {
  // rate < 1, so the threshold is below 2^32.
  const uint32_t threshold = uint32_t(std::floor(d.rate * 4294967296.0));
  const T scale = T(1.0 / (1.0 - d.rate));
  const philox::Key key = philox::key_of(d.seed);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t c = 0; c < chunks; ++c) {
    uint32_t words[kChunk];
    const int64_t begin = c * kChunk, count = std::min(kChunk, n - begin);
    philox::blocks(key, d.counter + uint64_t(begin / 4), int64_t(dropout_blocks(count)), words);
    apply_chunk(x + begin, y + begin, words, count, threshold, scale);
  }
}

}  // namespace

NDArrayView dropout(const NDArrayView& x, const DropoutDraw& draw) {
  const NDArrayView in = x.contiguous();
  NDArrayView out(in.dtype(), in.shape());
  if (in.dtype() == DataType::Float)
    run(in.data<float>(), out.data<float>(), in.numel(), draw);
  else if (in.dtype() == DataType::Double)
    run(in.data<double>(), out.data<double>(), in.numel(), draw);
  else
    throw NotImplementedError(std::string("dropout takes float32 and float64 tensors, not ") + to_string(in.dtype()));
  return out;
}

}  // namespace cntk::kernels
