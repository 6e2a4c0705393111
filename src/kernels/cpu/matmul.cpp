#include "kernels/cpu/matmul.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

namespace cntk::kernels {

template <>
void gemm<float>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];
    return;
  }
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success) throw Error("oneDNN sgemm failed with status " + std::to_string(int(st)));
}

template <>
void gemm<double>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                  const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  // float64 is for gradient checks and exactness, not speed: a plain blocked loop.
  auto a = [&](int64_t i, int64_t k) { return ta ? A[k * lda + i] : A[i * lda + k]; };
  auto b = [&](int64_t k, int64_t j) { return tb ? B[j * ldb + k] : B[k * ldb + j]; };
#pragma omp parallel for if (M * N * K > (1 << 18))
  for (int64_t i = 0; i < M; ++i) {
    double* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == 0 ? 0 : beta * c[j];
    for (int64_t k = 0; k < K; ++k) {
      double av = alpha * a(i, k);
      if (av == 0) continue;
      for (int64_t j = 0; j < N; ++j) c[j] += av * b(k, j);
    }
  }
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
