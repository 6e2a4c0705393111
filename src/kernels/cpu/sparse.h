// Loops over sparse tensors (SparseCSC: compressed rows over the last axis). Dense
// math goes through oneDNN; these cover what one-hot inputs need without densifying.
#pragma once
#include "cntk/tensor.h"

namespace cntk::kernels {

// The sparse tensor x [A, B, ...] with its first two axes exchanged: [B, A, ...]
// (batch-first user data to the time-major runtime layout and back).
NDArrayView sparse_swap_leading(const NDArrayView& x);

// out[r, :] = sum over the nonzeros (k, v) of row r of `sparse` of v * dense[k, :]:
// the product of the sparse [rows, K] matrix and a dense contiguous [K, N] matrix,
// i.e. a weighted row gather. The result has shape `out_shape` (rows * N elements).
NDArrayView sparse_times_dense(const NDArrayView& sparse, const NDArrayView& dense, const NDShape& out_shape);

// The gradient of that product with respect to the dense matrix: sparse^T @ grad, a
// [K, N] matrix that is zero except in the rows the sparse matrix uses (a row scatter).
NDArrayView sparse_transpose_times_dense(const NDArrayView& sparse, const NDArrayView& grad, int64_t K, int64_t N);
// The same as compressed rows of [K, N] holding only the rows used (an embedding's
// gradient: the learners then read no zero rows), where they are at most a quarter of
// K; else dense, as above. The values are the dense product's, bit for bit.
NDArrayView sparse_transpose_times_dense_rows(const NDArrayView& sparse, const NDArrayView& grad, int64_t K, int64_t N);

}  // namespace cntk::kernels
