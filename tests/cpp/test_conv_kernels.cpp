// The oneDNN convolution passes (float32) against the reference loops on the same data,
// over geometries with strides, dilation, groups and asymmetric padding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/backend.h"
#include "kernels/cpu/conv.h"

using namespace cntk;
using namespace cntk::kernels;

namespace {

NDArrayView random_tensor(const NDShape& s, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  NDArrayView v(DataType::Float, s);
  for (int64_t i = 0; i < v.numel(); ++i) v.data<float>()[i] = dist(rng);
  return v;
}

void expect_close(const NDArrayView& a, const NDArrayView& b, float tol) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], tol * (1 + std::abs(b.data<float>()[i]))) << "at " << i;
}

struct Case {
  int64_t batch, cin, cout, groups;
  std::vector<int64_t> in, kernel, stride, dilation, pad_lo, out;
};

ConvDims dims_of(const Case& c) {
  ConvDims d;
  d.batch = c.batch, d.in_channels = c.cin, d.out_channels = c.cout, d.groups = c.groups;
  d.win.in = c.in, d.win.kernel = c.kernel, d.win.stride = c.stride, d.win.dilation = c.dilation;
  d.win.pad_lo = c.pad_lo, d.win.out = c.out;
  d.win.pad_hi.assign(c.in.size(), 0);
  return d;
}

NDShape cat(int64_t a, int64_t b, const std::vector<int64_t>& rest) {
  std::vector<int64_t> d{a, b};
  d.insert(d.end(), rest.begin(), rest.end());
  return NDShape(d);
}

}  // namespace

TEST(ConvKernels, OneDnnMatchesReference) {
  std::vector<Case> cases = {
      {2, 3, 4, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {7, 6}},
      {2, 4, 6, 2, {9, 8}, {3, 2}, {2, 3}, {1, 1}, {1, 0}, {5, 3}},  // groups, strides, uneven padding
      {1, 4, 8, 4, {8, 8}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {8, 8}},  // depthwise with dilation
      {3, 2, 3, 1, {10}, {4}, {3}, {1}, {1}, {4}},                   // 1-D
      {1, 2, 2, 1, {5, 4, 6}, {3, 2, 3}, {1, 2, 2}, {1, 1, 1}, {1, 0, 1}, {5, 2, 3}},  // 3-D
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    ConvDims d = dims_of(c);
    NDArrayView x = random_tensor(cat(c.batch, c.cin, c.in), rng);
    NDArrayView w = random_tensor(cat(c.cout, c.cin / c.groups, c.kernel), rng);
    NDArrayView dy = random_tensor(cat(c.batch, c.cout, c.out), rng);
    expect_close(conv_forward(x, w, d), conv_forward_reference(x, w, d), 1e-4f);
    expect_close(conv_backward_data(dy, w, d), conv_backward_data_reference(dy, w, d), 1e-4f);
    expect_close(conv_backward_weights(x, dy, d), conv_backward_weights_reference(x, dy, d), 1e-4f);
  }
}

TEST(ConvKernels, NegativeLowerPaddingRunsOnTheReference) {
  // A 1-wide kernel with stride 3 centred over 9 positions reads 1, 4, 7.
  Case c{1, 1, 1, 1, {9}, {1}, {3}, {1}, {-1}, {3}};
  ConvDims d = dims_of(c);
  NDArrayView x(DataType::Float, NDShape{1, 1, 9}), w(DataType::Float, NDShape{1, 1, 1});
  for (int i = 0; i < 9; ++i) x.data<float>()[i] = float(i);
  w.data<float>()[0] = 1.f;
  NDArrayView y = conv_forward(x, w, d);
  EXPECT_EQ(y.data<float>()[0], 1.f);
  EXPECT_EQ(y.data<float>()[1], 4.f);
  EXPECT_EQ(y.data<float>()[2], 7.f);
}

TEST(ConvKernels, GroupsMustDivideChannels) {
  Case c{1, 3, 4, 2, {4}, {3}, {1}, {1}, {0}, {2}};
  ConvDims d = dims_of(c);
  NDArrayView x = NDArrayView::zeros(DataType::Float, NDShape{1, 3, 4});
  NDArrayView w = NDArrayView::zeros(DataType::Float, NDShape{4, 1, 3});
  EXPECT_THROW(conv_forward(x, w, d), ValueError);
}

TEST(PoolKernels, MaxAndAverageWithPadding) {
  PoolDims p;
  p.batch = 1, p.channels = 1;
  p.win.in = {4}, p.win.out = {2}, p.win.kernel = {3}, p.win.stride = {2}, p.win.dilation = {1};
  p.win.pad_lo = {1}, p.win.pad_hi = {1};
  NDArrayView x(DataType::Double, NDShape{1, 1, 4});
  double v[] = {1, -2, 5, 3};
  for (int i = 0; i < 4; ++i) x.data<double>()[i] = v[i];
  NDArrayView y = pool_forward(x, p);
  EXPECT_EQ(y.data<double>()[0], 1.0);  // window {pad, 1, -2}
  EXPECT_EQ(y.data<double>()[1], 5.0);  // window {-2, 5, 3}
  p.kind = PoolKind::Average;
  y = pool_forward(x, p);
  EXPECT_DOUBLE_EQ(y.data<double>()[0], -0.5);  // padding excluded
  p.include_pad = true;
  y = pool_forward(x, p);
  EXPECT_DOUBLE_EQ(y.data<double>()[0], -1.0 / 3);
}

// A training forward pass of max pooling keeps oneDNN's workspace: the backward pass reads it
// instead of recomputing it, and routes each gradient where the recomputed one does and
// where the own loops do (the first maximum of each window, with many ties here).
TEST(PoolKernels, MaxPoolingKeepsItsWorkspaceForTheBackwardPass) {
  if (!primitives_enabled()) GTEST_SKIP() << "reference backend (CNTK_BACKEND=reference): no oneDNN primitive";
  PoolDims p;
  p.batch = 2, p.channels = 16;
  p.win.in = {9, 9}, p.win.out = {5, 5}, p.win.kernel = {3, 3}, p.win.stride = {2, 2}, p.win.dilation = {1, 1};
  p.win.pad_lo = {1, 1}, p.win.pad_hi = {1, 1};
  std::mt19937 rng(4);
  NDArrayView x = random_tensor(NDShape{2, 16, 9, 9}, rng), dy = random_tensor(NDShape{2, 16, 5, 5}, rng);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::round(x.data<float>()[i]);  // ties
  auto saved = make_pool_saved();
  NDArrayView y = pool_forward(x, p, saved.get());
  expect_close(y, pool_forward(x, p), 0);
  const size_t before = max_pool_workspaces_recomputed();
  NDArrayView dx_kept = pool_backward(x, dy, p, saved.get());
  EXPECT_EQ(max_pool_workspaces_recomputed(), before);
  NDArrayView dx_recomputed = pool_backward(x, dy, p);
  EXPECT_EQ(max_pool_workspaces_recomputed(), before + 1);
  expect_close(dx_kept, dx_recomputed, 0);
  NDArrayView dx_loops = pool_backward(x.cast(DataType::Double), dy.cast(DataType::Double), p).cast(DataType::Float);
  expect_close(dx_kept, dx_loops, 1e-6f);
  // Average pooling keeps nothing.
  p.kind = PoolKind::Average;
  auto none = make_pool_saved();
  pool_forward(x, p, none.get());
  pool_backward(x, dy, p, none.get());
  EXPECT_EQ(max_pool_workspaces_recomputed(), before + 1);
}

TEST(ConvKernels, FusedBiasAndActivationMatchSeparateSteps) {
  if (!primitives_enabled()) GTEST_SKIP() << "reference backend (CNTK_BACKEND=reference): no oneDNN primitive";
  Case c{2, 3, 5, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {7, 6}};
  ConvDims d = dims_of(c);
  std::mt19937 rng(11);
  NDArrayView x = random_tensor(cat(c.batch, c.cin, c.in), rng);
  NDArrayView w = random_tensor(cat(c.cout, c.cin, c.kernel), rng);
  NDArrayView b = random_tensor(NDShape{c.cout}, rng);
  NDArrayView ref = conv_forward_reference(x, w, d);
  const int64_t OS = 7 * 6;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.cout; ++o)
      for (int64_t i = 0; i < OS; ++i) {
        float& v = ref.data<float>()[(n * c.cout + o) * OS + i];
        v = std::max(v + b.data<float>()[o], 0.f);
      }
  ConvPostOps post;
  post.bias = true;
  post.eltwise = Eltwise::Relu;
  NDArrayView y = conv_forward_fused(x, w, b, post, d);
  ASSERT_TRUE(y.defined());
  expect_close(y, ref, 1e-4f);
  // A geometry oneDNN cannot express is left to the caller.
  Case neg{1, 1, 1, 1, {9}, {1}, {3}, {1}, {-1}, {3}};
  NDArrayView x1 = random_tensor(NDShape{1, 1, 9}, rng), w1 = random_tensor(NDShape{1, 1, 1}, rng);
  EXPECT_FALSE(conv_forward_fused(x1, w1, random_tensor(NDShape{1}, rng), post, dims_of(neg)).defined());
}

TEST(ConvKernels, PrimitivesAreCachedPerShape) {
  if (!primitives_enabled()) GTEST_SKIP() << "reference backend (CNTK_BACKEND=reference): no oneDNN primitive";
  Case c{2, 3, 4, 1, {11, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {11, 9}};  // a shape no other test uses
  ConvDims d = dims_of(c);
  std::mt19937 rng(5);
  NDArrayView x = random_tensor(cat(c.batch, c.cin, c.in), rng);
  NDArrayView w = random_tensor(cat(c.cout, c.cin, c.kernel), rng);
  NDArrayView dy = random_tensor(cat(c.batch, c.cout, c.out), rng);
  size_t before = dnnl_conv_primitives_created();
  conv_forward(x, w, d);
  conv_backward_data(dy, w, d);
  conv_backward_weights(x, dy, d);
  size_t first = dnnl_conv_primitives_created();
  EXPECT_EQ(first - before, 3u);  // one per pass
  for (int k = 0; k < 3; ++k) {
    conv_forward(x, w, d);
    conv_backward_data(dy, w, d);
    conv_backward_weights(x, dy, d);
  }
  EXPECT_EQ(dnnl_conv_primitives_created(), first);  // the same shape again: all cached
  Case other = c;
  other.batch = 3;  // another batch size is another shape
  ConvDims d2 = dims_of(other);
  conv_forward(random_tensor(cat(3, c.cin, c.in), rng), w, d2);
  EXPECT_EQ(dnnl_conv_primitives_created(), first + 1);
  // Pooling primitives are cached the same way.
  PoolDims p;
  p.batch = 2, p.channels = 3;
  p.win.in = {11, 9}, p.win.out = {5, 4}, p.win.kernel = {2, 2}, p.win.stride = {2, 2}, p.win.dilation = {1, 1};
  p.win.pad_lo = {0, 0}, p.win.pad_hi = {0, 0};
  size_t pool_before = dnnl_conv_primitives_created();
  pool_forward(x, p);
  pool_forward(x, p);
  EXPECT_EQ(dnnl_conv_primitives_created(), pool_before + 1);
}

TEST(ConvKernels, PassesSharingReordersMatchSeparatePasses) {
  Case c{2, 16, 32, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {9, 9}};  // channels oneDNN blocks
  ConvDims d = dims_of(c);
  std::mt19937 rng(3);
  NDArrayView x = random_tensor(cat(c.batch, c.cin, c.in), rng), x2 = random_tensor(cat(c.batch, c.cin, c.in), rng);
  NDArrayView w = random_tensor(cat(c.cout, c.cin, c.kernel), rng);
  NDArrayView dy = random_tensor(cat(c.batch, c.cout, c.out), rng),
              dy2 = random_tensor(cat(c.batch, c.cout, c.out), rng);
  auto reuse = make_conv_reuse();
  expect_close(conv_forward(x, w, d, reuse.get()), conv_forward(x, w, d), 1e-6f);
  expect_close(conv_backward_weights(x, dy, d, reuse.get()), conv_backward_weights(x, dy, d), 1e-6f);
  expect_close(conv_backward_data(dy, w, d, reuse.get()), conv_backward_data(dy, w, d), 1e-6f);
  // Other tensors than the ones kept are reordered afresh, never read from the kept copies.
  expect_close(conv_backward_weights(x2, dy2, d, reuse.get()), conv_backward_weights_reference(x2, dy2, d), 1e-4f);
  expect_close(conv_backward_data(dy, w, d, reuse.get()), conv_backward_data_reference(dy, w, d), 1e-4f);
  release_source(*reuse);
  release_output_gradient(*reuse);
  expect_close(conv_backward_weights(x, dy, d, reuse.get()), conv_backward_weights_reference(x, dy, d), 1e-4f);
}

#include "cntk/evaluation.h"
#include "cntk/ops.h"

TEST(ConvOps, CppApiBuildsAndRunsAConvNet) {
  auto x = Variable::input({1, 6, 6}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  NDArrayView w(DataType::Float, NDShape{2, 1, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 1.f;
  auto conv = ops::convolution(Variable::constant(w, "w"), x, NDShape{1}, {false, true, true});
  EXPECT_EQ(conv->output().shape(), NDShape({2, 6, 6}));
  auto pool = ops::pooling(conv, ops::PoolingType::Max, NDShape{2, 2}, NDShape{2, 2});
  EXPECT_EQ(pool->output().shape(), NDShape({2, 3, 3}));
  NDArrayView data(DataType::Float, NDShape{1, 1, 6, 6});
  for (int64_t i = 0; i < data.numel(); ++i) data.data<float>()[i] = 1.f;
  std::vector<Value> out;
  forward(conv, {{x, Value(data)}}, {}, out, false);
  ASSERT_EQ(out.size(), 1u);
  NDArrayView c = out[0].data().to_dense().contiguous();
  // 3x3 box sums of ones, zero-padded: 4 in a corner, 6 on an edge, 9 inside.
  EXPECT_EQ(c.data<float>()[0], 4.f);
  EXPECT_EQ(c.data<float>()[1], 6.f);
  EXPECT_EQ(c.data<float>()[7], 9.f);
  forward(pool, {{x, Value(data)}}, {}, out, false);
  NDArrayView y = out[0].data().to_dense().contiguous();
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data<float>()[i], 9.f);
  EXPECT_THROW(ops::convolution(Variable::constant(w, "w"), x, NDShape{1}, {false}, NDShape{1}, 3), ShapeError);
}
