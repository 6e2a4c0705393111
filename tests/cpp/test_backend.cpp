// The CPU backends (kernels/backend.h): the switch selects them, the reference backend
// keeps float32 off oneDNN, and both compute the same products and convolutions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include "cntk/common.h"
#include "cntk/device.h"
#include "cntk/switches.h"
#include "kernels/backend.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/matmul.h"

using namespace cntk;

namespace {

// Selects a backend for one test and restores the one before.
struct BackendScope {
  std::string before = backend_name();
  explicit BackendScope(const char* name) { set_backend(name); }
  ~BackendScope() { set_backend(before); }
};

NDArrayView random_tensor(const NDShape& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  NDArrayView v(DataType::Float, s);
  for (int64_t i = 0; i < v.numel(); ++i) v.data<float>()[i] = dist(rng);
  return v;
}

void expect_close(const NDArrayView& a, const NDArrayView& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-4f * (1 + std::abs(b.data<float>()[i]))) << "at " << i;
}

}  // namespace

TEST(Backend, SwitchSelectsTheCpuBackend) {
  {
    BackendScope s("reference");
    kernels::Backend& b = kernels::backend_for(DeviceDescriptor::cpu());
    EXPECT_EQ(&b, &kernels::cpu_backend());
    EXPECT_STREQ(b.name(), "reference");
    EXPECT_FALSE(kernels::primitives_enabled());
    EXPECT_FALSE(b.keeps_layouts() || b.fuses_convolutions() || b.fuses_recurrences());
  }
  {
    BackendScope s("onednn");
    EXPECT_STREQ(kernels::cpu_backend().name(), "onednn");
    EXPECT_TRUE(kernels::primitives_enabled());
  }
  EXPECT_THROW(set_backend("cuda"), ValueError);
}

TEST(Backend, ProductsAndConvolutionsAgreeAcrossBackends) {
  // Large enough for oneDNN's sgemm (not the tiny-product loop) and a oneDNN convolution.
  NDArrayView a = random_tensor({64, 96}, 1), b = random_tensor({96, 80}, 2);
  kernels::ConvDims d;
  d.batch = 2, d.in_channels = 3, d.out_channels = 8, d.groups = 1;
  d.win.in = {9, 9}, d.win.kernel = {3, 3}, d.win.stride = {1, 1}, d.win.dilation = {1, 1};
  d.win.pad_lo = {1, 1}, d.win.pad_hi = {1, 1}, d.win.out = {9, 9};
  NDArrayView x = random_tensor({2, 3, 9, 9}, 3), w = random_tensor({8, 3, 3, 3}, 4);
  NDArrayView prod[2], conv[2];
  const char* names[2] = {"onednn", "reference"};
  for (int k = 0; k < 2; ++k) {
    BackendScope s(names[k]);
    EXPECT_EQ(kernels::conv_runs_on_primitives(d, DataType::Float), k == 0);
    prod[k] = kernels::matmul(a, b, false, false);
    conv[k] = kernels::conv_forward(x, w, d);
  }
  expect_close(prod[1], prod[0]);
  expect_close(conv[1], conv[0]);
}

namespace {

// Selects a float32 math mode for one test and restores the one before.
struct MathScope {
  std::string before = float32_math();
  explicit MathScope(const char* mode) { set_float32_math(mode); }
  ~MathScope() { set_float32_math(before); }
};

// x rounded to bfloat16, to nearest even (NaN does not occur in these tests).
float to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

NDArrayView rounded(const NDArrayView& v) {
  NDArrayView r(DataType::Float, v.shape());
  for (int64_t i = 0; i < v.numel(); ++i) r.data<float>()[i] = to_bf16(v.data<float>()[i]);
  return r;
}

// Near with a tolerance relative to the largest magnitude of b (float32 accumulation).
void expect_near_all(const NDArrayView& a, const NDArrayView& b, float rel, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  float scale = 0;
  for (int64_t i = 0; i < b.numel(); ++i) scale = std::max(scale, std::abs(b.data<float>()[i]));
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], rel * scale) << what << " at " << i;
}

}  // namespace

TEST(Backend, Float32MathSwitch) {
  EXPECT_STREQ(float32_math(), "float32");
  EXPECT_FALSE(bf16_math_active());
  EXPECT_THROW(set_float32_math("float8"), ValueError);
  {
    MathScope m("bfloat16");
    EXPECT_STREQ(float32_math(), "bfloat16");
    EXPECT_EQ(bf16_math_active(), bf16_math_available());
    BackendScope s("reference");
    EXPECT_FALSE(bf16_math_active());  // the reference backend computes in float32
  }
  EXPECT_STREQ(float32_math(), "float32");
}

// float32 products against a double-precision loop: every transpose, alpha and beta, row
// strides wider than the rows, and shapes on both sides of the operand swap the sgemm
// call makes for a transposed B (one row; fewer than 16 rows of a plain A; op(A) the wider;
// K short; M past 256).
TEST(Backend, Float32ProductsAgreeWithTheLoop) {
  struct Shape {
    int64_t M, N, K;
  };
  const int64_t pad = 3;
  for (Shape sh : {Shape{16, 300, 100}, Shape{2, 70, 64}, Shape{8, 300, 100}, Shape{1, 300, 100}, Shape{300, 16, 100},
                   Shape{40, 500, 20}, Shape{257, 300, 70}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.5f, 1.0f}, std::pair{-2.0f, 0.25f}}) {
          const int64_t M = sh.M, N = sh.N, K = sh.K;
          const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
          NDArrayView A = random_tensor({ta ? K : M, lda}, 5), B = random_tensor({tb ? N : K, ldb}, 6);
          NDArrayView C0 = random_tensor({M, ldc}, 7), C = C0.copy();
          // With beta 0, C's old values are not read: NaN there must not reach the result.
          if (beta == 0.0f)
            for (int64_t i = 0; i < M; ++i) std::fill_n(C.data<float>() + i * ldc, N, std::nanf(""));
          kernels::gemm<float>(ta, tb, M, N, K, alpha, A.data<float>(), lda, B.data<float>(), ldb, beta,
                               C.data<float>(), ldc);
          const float *a = A.data<float>(), *b = B.data<float>();
          const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " +
                                   (ta ? "T" : "N") + (tb ? "T" : "N") + " beta " + std::to_string(beta);
          for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
              double r = 0;
              for (int64_t k = 0; k < K; ++k)
                r += double(ta ? a[k * lda + i] : a[i * lda + k]) * double(tb ? b[j * ldb + k] : b[k * ldb + j]);
              r = alpha * r + (beta == 0.0f ? 0.0 : double(beta) * C0.data<float>()[i * ldc + j]);
              ASSERT_NEAR(C.data<float>()[i * ldc + j], r, 1e-4 * (std::sqrt(double(K)) + std::abs(r))) << what;
            }
            for (int64_t j = N; j < ldc; ++j)  // the padding of C's rows stays untouched
              ASSERT_EQ(C.data<float>()[i * ldc + j], C0.data<float>()[i * ldc + j]) << what;
          }
        }
}

// Under the bfloat16 math mode a float32 product is the float32-accumulated product of its
// operands rounded to bfloat16: every transpose, alpha and beta, and row strides wider
// than the rows.
TEST(Backend, Bfloat16ProductsRoundTheirOperands) {
  if (!bf16_math_available()) GTEST_SKIP() << "this CPU has no bfloat16 instructions";
  const int64_t M = 37, N = 45, K = 70, pad = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.5f, 1.0f}, std::pair{-2.0f, 0.25f}}) {
        const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        NDArrayView A = random_tensor({ta ? K : M, lda}, 5), B = random_tensor({tb ? N : K, ldb}, 6);
        NDArrayView C0 = random_tensor({M, ldc}, 7), C = C0.copy(), R = C0.copy();
        {
          MathScope m("bfloat16");
          kernels::gemm<float>(ta, tb, M, N, K, alpha, A.data<float>(), lda, B.data<float>(), ldb, beta,
                               C.data<float>(), ldc);
        }
        NDArrayView Ar = rounded(A), Br = rounded(B);
        kernels::gemm<float>(ta, tb, M, N, K, alpha, Ar.data<float>(), lda, Br.data<float>(), ldb, beta,
                             R.data<float>(), ldc);
        const std::string what = std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " alpha " + std::to_string(alpha);
        for (int64_t i = 0; i < M; ++i) {
          for (int64_t j = 0; j < N; ++j)
            ASSERT_NEAR(C.data<float>()[i * ldc + j], R.data<float>()[i * ldc + j], 1e-4f) << what;
          for (int64_t j = N; j < ldc; ++j)  // the padding of C's rows stays untouched
            ASSERT_EQ(C.data<float>()[i * ldc + j], C0.data<float>()[i * ldc + j]) << what;
        }
      }
}

// The three convolution passes under the bfloat16 math mode: the float32 passes of the
// rounded operands (the output gradient is rounded as the convolution reads it).
TEST(Backend, Bfloat16ConvolutionsRoundTheirOperands) {
  if (!bf16_math_available()) GTEST_SKIP() << "this CPU has no bfloat16 instructions";
  kernels::ConvDims d;
  d.batch = 3, d.in_channels = 16, d.out_channels = 24, d.groups = 1;
  d.win.in = {10, 10}, d.win.kernel = {3, 3}, d.win.stride = {1, 1}, d.win.dilation = {1, 1};
  d.win.pad_lo = {1, 1}, d.win.pad_hi = {1, 1}, d.win.out = {10, 10};
  NDArrayView x = random_tensor({3, 16, 10, 10}, 8), w = random_tensor({24, 16, 3, 3}, 9);
  NDArrayView dy = random_tensor({3, 24, 10, 10}, 10);
  NDArrayView y, dx, dw;
  {
    MathScope m("bfloat16");
    y = kernels::conv_forward(x, w, d);
    dx = kernels::conv_backward_data(dy, w, d);
    dw = kernels::conv_backward_weights(x, dy, d);
  }
  expect_near_all(y, kernels::conv_forward_reference(rounded(x), rounded(w), d), 1e-5f, "forward");
  expect_near_all(dx, kernels::conv_backward_data_reference(rounded(dy), rounded(w), d), 1e-5f, "backward data");
  expect_near_all(dw, kernels::conv_backward_weights_reference(rounded(x), rounded(dy), d), 1e-5f, "backward weights");
  // And in float32 again afterwards: the bfloat16 primitives are cached apart.
  expect_near_all(kernels::conv_forward(x, w, d), kernels::conv_forward_reference(x, w, d), 1e-5f, "float32 again");
}
