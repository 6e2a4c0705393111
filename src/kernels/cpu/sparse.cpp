#include "kernels/cpu/sparse.h"

#include <algorithm>
#include <vector>

namespace cntk::kernels {

NDArrayView sparse_swap_leading(const NDArrayView& x) {
  const SparseCSC& s = x.sparse_data();
  const NDShape& shape = x.shape();
  if (shape.rank() < 3) throw ValueError("sparse_swap_leading: needs rank >= 3, got shape " + shape.str());
  int64_t A = shape[0], B = shape[1];
  int64_t R = (int64_t(s.starts.size()) - 1) / std::max<int64_t>(A * B, 1);  // rows per (a, b) entry
  size_t es = element_size(x.dtype());
  const char* vals = static_cast<const char*>(s.values->data());
  std::vector<int64_t> starts{0}, indices;
  std::vector<char> values;
  indices.reserve(size_t(s.nnz()));
  values.reserve(size_t(s.nnz()) * es);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t r = 0; r < R; ++r) {
        int64_t row = (a * B + b) * R + r;
        for (int64_t k = s.starts[size_t(row)]; k < s.starts[size_t(row) + 1]; ++k) {
          indices.push_back(s.indices[size_t(k)]);
          values.insert(values.end(), vals + k * int64_t(es), vals + (k + 1) * int64_t(es));
        }
        starts.push_back(int64_t(indices.size()));
      }
  std::vector<int64_t> dims = shape.dims();
  std::swap(dims[0], dims[1]);
  return NDArrayView::sparse(x.dtype(), NDShape(dims), std::move(starts), std::move(indices), values.data());
}

namespace {
// out[row_of(index)] += value * grad[r] for every stored (r, index, value) of s, in
// storage order (serial: rows may share a target row), over rows of N elements.
template <class T, class RowOf>
void scatter_transpose_rows(const SparseCSC& s, const T* grad, int64_t N, T* out, RowOf&& row_of) {
  const T* v = static_cast<const T*>(s.values->data());
  const int64_t rows = int64_t(s.starts.size()) - 1;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = s.starts[size_t(r)]; k < s.starts[size_t(r) + 1]; ++k) {
      T* dst = out + row_of(s.indices[size_t(k)]) * N;
      const T* src = grad + r * N;
      const T val = v[k];
      for (int64_t n = 0; n < N; ++n) dst[n] += val * src[n];
    }
}

template <class T>
void gather_weighted_rows(const SparseCSC& s, const T* w, int64_t N, T* o) {
  int64_t rows = int64_t(s.starts.size()) - 1;
  const T* v = static_cast<const T*>(s.values->data());
#pragma omp parallel for if (rows * N > (1 << 16))
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = s.starts[size_t(r)]; k < s.starts[size_t(r) + 1]; ++k) {
      const T* src = w + s.indices[size_t(k)] * N;
      T* dst = o + r * N;
      T val = v[k];
      for (int64_t n = 0; n < N; ++n) dst[n] += val * src[n];
    }
}
}  // namespace

NDArrayView sparse_times_dense(const NDArrayView& sparse, const NDArrayView& dense_in, const NDShape& out_shape) {
  const SparseCSC& s = sparse.sparse_data();
  NDArrayView dense = dense_in.contiguous();
  int64_t rows = int64_t(s.starts.size()) - 1, K = dense.shape()[0], N = dense.numel() / std::max<int64_t>(K, 1);
  NDArrayView out = NDArrayView::zeros(dense.dtype(), out_shape);
  if (out.numel() != rows * N)
    throw ValueError("sparse_times_dense: output shape " + out_shape.str() + " does not hold " + std::to_string(rows) +
                     " x " + std::to_string(N) + " elements");
  CNTK_DISPATCH_FLOAT(dense.dtype(), T, [&] { gather_weighted_rows<T>(s, dense.data<T>(), N, out.data<T>()); });
  return out;
}

NDArrayView sparse_transpose_times_dense(const NDArrayView& sparse, const NDArrayView& grad_in, int64_t K, int64_t N) {
  const SparseCSC& s = sparse.sparse_data();
  NDArrayView grad = grad_in.contiguous();
  int64_t rows = int64_t(s.starts.size()) - 1;
  if (grad.numel() != rows * N) throw ValueError("sparse_transpose_times_dense: gradient has the wrong size");
  NDArrayView out = NDArrayView::zeros(grad.dtype(), NDShape{K, N});
  CNTK_DISPATCH_FLOAT(grad.dtype(), T, [&] {
    scatter_transpose_rows<T>(s, grad.data<T>(), N, out.data<T>(), [](int64_t index) { return index; });
  });
  return out;
}

NDArrayView sparse_transpose_times_dense_rows(const NDArrayView& sparse, const NDArrayView& grad_in, int64_t K,
                                              int64_t N) {
  const SparseCSC& s = sparse.sparse_data();
  std::vector<int64_t> used(s.indices.begin(), s.indices.end());
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  if (int64_t(used.size()) * 4 > K) return sparse_transpose_times_dense(sparse, grad_in, K, N);
  const NDArrayView grad = grad_in.contiguous();
  const int64_t rows = int64_t(s.starts.size()) - 1, U = int64_t(used.size());
  if (grad.numel() != rows * N) throw ValueError("sparse_transpose_times_dense: gradient has the wrong size");
  if (!used.empty() && (used.front() < 0 || used.back() >= K))
    throw ValueError("sparse_transpose_times_dense: an index is outside the " + std::to_string(K) + " rows");
  // The used rows' sums, accumulated in the order the dense scatter adds them.
  NDArrayView acc = NDArrayView::zeros(grad.dtype(), NDShape{U, N});
  CNTK_DISPATCH_FLOAT(grad.dtype(), T, [&] {
    scatter_transpose_rows<T>(s, grad.data<T>(), N, acc.data<T>(), [&](int64_t index) {
      return int64_t(std::lower_bound(used.begin(), used.end(), index) - used.begin());
    });
  });
  std::vector<int64_t> starts(size_t(K) + 1), indices(size_t(U * N));
  int64_t next = 0;
  size_t j = 0;
  for (int64_t row = 0; row < K; ++row) {
    starts[size_t(row)] = next;
    if (j < used.size() && used[j] == row) {
      next += N;
      ++j;
    }
  }
  starts[size_t(K)] = next;
  for (int64_t u = 0; u < U; ++u)
    for (int64_t n = 0; n < N; ++n) indices[size_t(u * N + n)] = n;
  return NDArrayView::sparse(grad.dtype(), NDShape{K, N}, std::move(starts), std::move(indices), acc.raw_data());
}

}  // namespace cntk::kernels
