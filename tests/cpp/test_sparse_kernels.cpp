// The sparse kernels' row scatter (kernels/cpu/sparse.h): the gradient of a sparse
// times dense product, as a dense [K, N] matrix and as the rows used.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cntk/common.h"
#include "kernels/cpu/sparse.h"

using namespace cntk;

namespace {

// A sparse [rows, K] float matrix whose row r holds (index, value) pairs `entries[r]`.
NDArrayView sparse_rows(int64_t K, const std::vector<std::vector<std::pair<int64_t, float>>>& entries) {
  std::vector<int64_t> starts{0}, indices;
  std::vector<float> values;
  for (const auto& row : entries) {
    for (auto [index, value] : row) {
      indices.push_back(index);
      values.push_back(value);
    }
    starts.push_back(int64_t(indices.size()));
  }
  return NDArrayView::sparse(DataType::Float, NDShape{int64_t(entries.size()), K}, starts, indices, values.data());
}

NDArrayView ramp(const NDShape& shape) {
  NDArrayView v(DataType::Float, shape);
  for (int64_t i = 0; i < v.numel(); ++i) v.data<float>()[i] = float(std::sin(0.7 * double(i)));
  return v;
}

}  // namespace

// Rows 2 and 9 of 40 used (twice for row 9): the rows form holds exactly those rows, with
// the dense scatter's values bit for bit; the other rows read as zeros.
TEST(SparseKernels, RowGradientHoldsTheUsedRowsOfTheDenseOne) {
  const int64_t K = 40, N = 3;
  const NDArrayView x = sparse_rows(K, {{{9, 0.5f}}, {{2, -1.0f}, {9, 2.0f}}});
  const NDArrayView g = ramp(NDShape{2, N});
  const NDArrayView dense = kernels::sparse_transpose_times_dense(x, g, K, N);
  const NDArrayView rows = kernels::sparse_transpose_times_dense_rows(x, g, K, N);
  ASSERT_TRUE(rows.is_sparse());
  const SparseCSC& s = rows.sparse_data();
  ASSERT_EQ(s.starts.size(), size_t(K) + 1);
  EXPECT_EQ(s.nnz(), 2 * N);
  const float* v = static_cast<const float*>(s.values->data());
  for (int64_t r = 0; r < K; ++r) {
    const int64_t k0 = s.starts[size_t(r)], k1 = s.starts[size_t(r) + 1];
    EXPECT_EQ(k1 - k0, (r == 2 || r == 9) ? N : 0) << "row " << r;
    for (int64_t k = k0; k < k1; ++k) EXPECT_EQ(v[k], dense.data<float>()[r * N + s.indices[size_t(k)]]) << "row " << r;
  }
  EXPECT_EQ(dense.data<float>()[9 * N], 0.5f * g.data<float>()[0] + 2.0f * g.data<float>()[N]);
}

// Past a quarter of the rows the gradient stays dense.
TEST(SparseKernels, RowGradientIsDenseWhenMostRowsAreUsed) {
  const int64_t K = 4, N = 2;
  const NDArrayView x = sparse_rows(K, {{{0, 1.0f}, {3, 1.0f}}});
  const NDArrayView rows = kernels::sparse_transpose_times_dense_rows(x, ramp(NDShape{1, N}), K, N);
  EXPECT_FALSE(rows.is_sparse());
  EXPECT_EQ(rows.shape(), (NDShape{K, N}));
}

// An index past the K rows of the weight, and a gradient of the wrong size, are refused.
TEST(SparseKernels, RowGradientRefusesIndicesOutsideTheWeight) {
  const NDArrayView x = sparse_rows(100, {{{1, 1.0f}}, {{90, 1.0f}}});
  try {
    kernels::sparse_transpose_times_dense_rows(x, ramp(NDShape{2, 3}), 50, 3);
    ADD_FAILURE() << "index 90 of 50 rows was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the 50 rows"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kernels::sparse_transpose_times_dense_rows(x, ramp(NDShape{3, 3}), 100, 3), ValueError);
}
