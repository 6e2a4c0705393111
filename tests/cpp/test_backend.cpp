// The CPU backends (kernels/backend.h): the switch selects them, the reference backend
// keeps float32 off oneDNN, and both compute the same products and convolutions.
#include <gtest/gtest.h>

#include <random>
#include <string>

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
