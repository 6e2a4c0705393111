#include "kernels/cpu/matmul.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "cntk/switches.h"
#include "kernels/backend.h"
#include "kernels/cpu/dnnl_context.h"
#include "kernels/cpu/primitive_cache.h"

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

// The bfloat16 product C = alpha * op(A) op(B) + beta * C: A and B reordered (rounded to
// nearest even) into bfloat16 copies of the same orientation, then oneDNN's matmul with
// float32 accumulation and a float32 C (alpha as its output scale, beta as a sum post-op).
struct Bf16Gemm {
  dnnl::reorder to_a, to_b;
  dnnl::memory::desc a32, b32, a16, b16, c32;
  dnnl::matmul product;
};

using Bf16Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float, float>;

PrimitiveCache<Bf16Key, Bf16Gemm>& bf16_cache() {
  static auto* c = new PrimitiveCache<Bf16Key, Bf16Gemm>(256);
  return *c;
}

Bf16Gemm make_bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc,
                        float alpha, float beta) {
  using dt = dnnl::memory::data_type;
  using md = dnnl::memory::desc;
  auto& eng = dnnl_engine();
  Bf16Gemm g;
  // op(A) is [M, K]: row-major with row stride lda, or its transpose read in place.
  g.a32 = md({M, K}, dt::f32, ta ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
  g.a16 = md({M, K}, dt::bf16, ta ? dnnl::memory::dims{1, M} : dnnl::memory::dims{K, 1});
  g.b32 = md({K, N}, dt::f32, tb ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
  g.b16 = md({K, N}, dt::bf16, tb ? dnnl::memory::dims{1, K} : dnnl::memory::dims{N, 1});
  g.c32 = md({M, N}, dt::f32, dnnl::memory::dims{ldc, 1});
  g.to_a = dnnl::reorder(dnnl::reorder::primitive_desc(eng, g.a32, eng, g.a16));
  g.to_b = dnnl::reorder(dnnl::reorder::primitive_desc(eng, g.b32, eng, g.b16));
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  g.product = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(g.a16, g.b16, g.c32), attr, eng));
  return g;
}

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const Bf16Gemm g = bf16_cache().get(Bf16Key{ta, tb, M, N, K, lda, ldb, ldc, alpha, beta},
                                      [&] { return make_bf16_gemm(ta, tb, M, N, K, lda, ldb, ldc, alpha, beta); });
  thread_local std::vector<uint16_t> a16, b16;  // the rounded copies, reused by the thread's next product
  a16.resize(size_t(M * K));
  b16.resize(size_t(K * N));
  auto& eng = dnnl_engine();
  auto& strm = dnnl_stream();
  dnnl::memory a32(g.a32, eng, const_cast<float*>(A)), b32(g.b32, eng, const_cast<float*>(B));
  dnnl::memory am(g.a16, eng, a16.data()), bm(g.b16, eng, b16.data()), cm(g.c32, eng, C);
  g.to_a.execute(strm, a32, am);
  g.to_b.execute(strm, b32, bm);
  g.product.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  strm.wait();
}

void sgemm(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
           int64_t ldb, float beta, float* C, int64_t ldc) {
  dnnl_status_t st = dnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success) throw Error("oneDNN sgemm failed with status " + std::to_string(int(st)));
}

// oneDNN 2.6's sgemm is slow when B is read transposed and op(B) is the wide operand: it
// repacks B's rows into panels on every call. A [16, 4096] x [4096, 9216]^T product
// (AlexNet's fc6 input gradient) took 60 ms where the same product with the operands
// swapped, [9216, 4096] x [4096, 16], took 12 ms. In a grid of dense-layer shapes (M 1-256,
// N and K 256-9216) the swapped form was faster or level, by 1.2-7x, for op(A)^T op(B)^T
// from M = 2 on and for op(A) op(B)^T from M = 16 on, wherever M <= N. Below 16 rows the
// latter takes a matrix-vector path that is fast already (swapping it was up to 2x slower
// at M = 8, level at M = 1); when op(A) is the wider operand the direct call is the fast
// one; and with a short K the transposition of C would cost as much as the product.
bool swap_operands(bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
  return tb && M >= (ta ? 2 : 16) && M <= N && M <= 256 && K >= 64;
}

// C[M, N] = beta * C + t^T for t [N, M] (beta 0: C is overwritten, its old values unread).
void add_transposed(const float* t, int64_t N, int64_t M, float beta, float* C, int64_t ldc) {
  constexpr int64_t kBlock = 64;  // columns of C per block: t's rows stay in cache across C's rows
  const int64_t blocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (M * N >= (1 << 16))
  for (int64_t bj = 0; bj < blocks; ++bj) {
    const int64_t j0 = bj * kBlock, j1 = std::min(N, j0 + kBlock);
    for (int64_t i = 0; i < M; ++i) {
      float* c = C + i * ldc;
      if (beta == 0.f)
        for (int64_t j = j0; j < j1; ++j) c[j] = t[j * M + i];
      else
        for (int64_t j = j0; j < j1; ++j) c[j] = beta * c[j] + t[j * M + i];
    }
  }
}

}  // namespace
}  // namespace cntk::kernels

namespace cntk {

bool bf16_math_available() {
  // The ISA values are sets of feature bits: AMX's include AVX512_BF16's.
  static const bool available = (unsigned(dnnl_get_effective_cpu_isa()) & unsigned(dnnl_cpu_isa_avx512_core_bf16)) ==
                                unsigned(dnnl_cpu_isa_avx512_core_bf16);
  return available;
}

bool bf16_math_active() {
  return std::strcmp(float32_math(), "bfloat16") == 0 && bf16_math_available() && kernels::primitives_enabled();
}

}  // namespace cntk

namespace cntk::kernels {

template <>
void gemm<float>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (M * N * K <= kTinyProduct || !primitives_enabled()) {
    naive_gemm<float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (bf16_math_active()) {
    gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (swap_operands(ta, tb, M, N, K)) {
    // C^T = op(B)^T op(A)^T into a scratch [N, M], then transposed into C.
    thread_local std::vector<float> ct;
    ct.resize(size_t(M * N));
    sgemm(tb ? 'N' : 'T', ta ? 'N' : 'T', N, M, K, alpha, B, ldb, A, lda, 0.f, ct.data(), M);
    add_transposed(ct.data(), N, M, beta, C, ldc);
    return;
  }
  sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
