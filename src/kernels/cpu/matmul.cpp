#include "kernels/cpu/matmul.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include "kernels/backend.h"

namespace cntk::kernels {

namespace {

// A plain loop: the reference for float64 (which oneDNN does not compute) and the
// fast choice for tiny float32 products, where a library call costs more than the math.
template <class T>
void naive_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
                int64_t ldb, T beta, T* C, int64_t ldc) {
  auto a = [&](int64_t i, int64_t k) { return ta ? A[k * lda + i] : A[i * lda + k]; };
  auto b = [&](int64_t k, int64_t j) { return tb ? B[j * ldb + k] : B[k * ldb + j]; };
  auto row = [&](int64_t i) {
    T* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == 0 ? T(0) : beta * c[j];
    for (int64_t k = 0; k < K; ++k) {
      T av = alpha * a(i, k);
      for (int64_t j = 0; j < N; ++j) c[j] += av * b(k, j);
    }
  };
  if (M * N * K <= (1 << 18)) {  // not worth a parallel region
    for (int64_t i = 0; i < M; ++i) row(i);
    return;
  }
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) row(i);
}

constexpr int64_t kTinyProduct = 4096;  // M*N*K below which float32 stays off oneDNN

}  // namespace

template <>
void gemm<float>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (M * N * K <= kTinyProduct || !primitives_enabled()) {
    naive_gemm<float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success) throw Error("oneDNN sgemm failed with status " + std::to_string(int(st)));
}

template <>
void gemm<double>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                  const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  naive_gemm<double>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

NDArrayView matmul(const NDArrayView& a_in, const NDArrayView& b_in, bool ta, bool tb) {
  NDArrayView a = a_in.to_dense().contiguous(), b = b_in.to_dense().contiguous();
  if (a.rank() != 2 || b.rank() != 2) throw Error("matmul: expects 2-D operands");
  int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
  int64_t K2 = tb ? b.shape()[1] : b.shape()[0], N = tb ? b.shape()[0] : b.shape()[1];
  if (K != K2) throw ShapeError("matmul: inner dimensions differ: " + a.shape().str() + " and " + b.shape().str());
  NDArrayView c(a.dtype(), NDShape{M, N});
  CNTK_DISPATCH_FLOAT(a.dtype(), T, [&] {
    gemm<T>(ta, tb, M, N, K, T(1), a.data<T>(), a.shape()[1], b.data<T>(), b.shape()[1], T(0), c.data<T>(), N);
  });
  return c;
}

}  // namespace cntk::kernels
