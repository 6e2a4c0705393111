// Philox4x32-10 against the known-answer vectors its authors publish with Random123
// (kat_vectors), and the dropout kernel that draws its masks from it.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <vector>

#include "core/philox.h"
#include "kernels/cpu/dropout.h"

using namespace cntk;

TEST(Philox, KnownAnswers) {
  struct Case {
    philox::Block ctr;
    philox::Key key;
    philox::Block out;
  };
  const Case cases[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const auto& c : cases) EXPECT_EQ(philox::block(c.ctr, c.key), c.out);
}

TEST(Philox, BlocksAreTheBlockFunctionOverConsecutiveCounters) {
  const philox::Key key = philox::key_of(0x0123456789abcdefull);
  EXPECT_EQ(key[0], 0x89abcdefu);
  EXPECT_EQ(key[1], 0x01234567u);
  // A run of 37 blocks (two lane groups and a partial one) across the 32-bit carry.
  const uint64_t first = 0xffffffffull - 20;
  std::vector<uint32_t> words(4 * 37);
  philox::blocks(key, first, 37, words.data());
  for (int j = 0; j < 37; ++j) {
    const uint64_t i = first + uint64_t(j);
    const philox::Block want = philox::block({uint32_t(i), uint32_t(i >> 32), 0, 0}, key);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(words[4 * j + w], want[w]) << "block " << j << " word " << w;
  }
}

namespace {

NDArrayView filled(DataType t, int64_t n, double v) {
  NDArrayView x(t, NDShape{n});
  for (int64_t i = 0; i < n; ++i) {
    if (t == DataType::Float)
      x.data<float>()[i] = float(v);
    else
      x.data<double>()[i] = v;
  }
  return x;
}

}  // namespace

TEST(DropoutKernel, DropsTheRateAndScalesTheRest) {
  const int64_t n = 200003;  // over the parallel grain, not a multiple of a chunk
  const kernels::DropoutDraw draw{7, 11, 0.3};
  const NDArrayView y = kernels::dropout(filled(DataType::Float, n, 2.0), draw);
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = y.data<float>()[i];
    if (v == 0.0f)
      ++dropped;
    else
      EXPECT_FLOAT_EQ(v, 2.0f / 0.7f);
  }
  // Binomial(n, 0.3): the standard deviation is about 205 elements.
  EXPECT_NEAR(double(dropped) / double(n), 0.3, 0.005);
}

TEST(DropoutKernel, ElementIReadsWordIOfTheStreamOnAnyThreadCount) {
  const int64_t n = 70001;
  const kernels::DropoutDraw draw{0xfeedull, 5, 0.5};
  const NDArrayView ones = filled(DataType::Double, n, 1.0);
  std::vector<uint32_t> words(4 * kernels::dropout_blocks(n));
  philox::blocks(philox::key_of(draw.seed), draw.counter, int64_t(kernels::dropout_blocks(n)), words.data());
  const int threads = omp_get_max_threads();
  for (int t : {1, 2, 3}) {
    omp_set_num_threads(t);
    const NDArrayView y = kernels::dropout(ones, draw);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(y.data<double>()[i], words[i] < 0x80000000u ? 0.0 : 2.0) << "element " << i << ", threads " << t;
  }
  omp_set_num_threads(threads);
  // A draw later in the stream is another mask.
  const NDArrayView a = kernels::dropout(ones, draw);
  const NDArrayView b = kernels::dropout(ones, {draw.seed, draw.counter + kernels::dropout_blocks(n), 0.5});
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i) same += a.data<double>()[i] == b.data<double>()[i];
  EXPECT_LT(same, n * 6 / 10);
}

TEST(DropoutKernel, NonFiniteInputsStayNonFiniteWhereDropped) {
  NDArrayView x = filled(DataType::Float, 64, std::nan(""));
  const NDArrayView y = kernels::dropout(x, {1, 0, 0.5});
  for (int64_t i = 0; i < 64; ++i) EXPECT_TRUE(std::isnan(y.data<float>()[i]));
  EXPECT_THROW(kernels::dropout(NDArrayView(DataType::Float16, NDShape{4}), {1, 0, 0.5}), NotImplementedError);
}
