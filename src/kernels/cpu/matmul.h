// Dense matrix products. float32 goes to oneDNN's sgemm (JIT-compiled for the
// host ISA), or to its bfloat16 matmul under the bfloat16 math mode; float64, which
// oneDNN does not compute, uses a blocked loop.
#pragma once
#include "cntk/tensor.h"

namespace cntk::kernels {

// C[M,N] = alpha * op(A) @ op(B) + beta * C, row-major; lda/ldb/ldc are row strides.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc);

// Convenience: contiguous 2-D views. Returns op(A) @ op(B).
NDArrayView matmul(const NDArrayView& a, const NDArrayView& b, bool trans_a = false, bool trans_b = false);

}  // namespace cntk::kernels
