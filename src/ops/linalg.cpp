// Matrix products: Times (CNTK's `times`, with output_rank and infer_input_rank_to_map).
//
// In NumPy order `times(left, right)` contracts the trailing axes of left with the
// leading axes of right: left (a..., k...), right (k..., n...) -> (a..., n...),
// where right keeps its last `output_rank` axes.
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/sparse.h"
#include "ops/eager.h"
#include "onnx/export.h"
#include "ops/op.h"

namespace cntk {
namespace {

struct TimesDims {
  int64_t A = 1, K = 1, N = 1;  // map size of left, contracted size, output size of right
};

std::vector<OutputInfo> infer_times(InferContext& ctx) {
  ctx.expect_inputs(2);
  NDShape L = ctx.shape(0), R = ctx.shape(1);
  int64_t out_rank = ctx.attr_int("outputRank");
  int64_t map_rank = ctx.attr_int("inferInputRankToMap");
  if (out_rank < 0 || size_t(out_rank) > R.rank())
    ctx.fail("output_rank " + std::to_string(out_rank) + " exceeds the rank of the right operand");
  size_t k_rank = R.rank() - out_rank;
  if (R.sub(0, k_rank).has_inferred()) {
    // Infer right's contracted dims from left: all of left after its first map_rank axes.
    size_t keep = map_rank >= 0 ? size_t(map_rank) : (L.rank() >= k_rank ? L.rank() - k_rank : 0);
    if (keep > L.rank()) ctx.fail("infer_input_rank_to_map exceeds the rank of the left operand");
    NDShape k = L.sub(keep);
    if (k_rank == 1 && R[0] == NDShape::kInferredDimension) {
      ctx.fill_inferred(1, k.concat(R.sub(k_rank)));
    } else if (k_rank == k.rank()) {
      std::vector<int64_t> d = R.dims();
      for (size_t i = 0; i < k_rank; ++i)
        if (d[i] == NDShape::kInferredDimension) d[i] = k[i];
      ctx.fill_inferred(1, NDShape(d));
    } else {
      ctx.fail("cannot infer the inner dimensions of the right operand");
    }
    R = ctx.shape(1);
    k_rank = R.rank() - out_rank;
  }
  if (k_rank > L.rank()) ctx.fail("the left operand has fewer axes than the right operand's inner axes");
  // A left operand's inferred inner dimensions come from the right's, as CNTK's TransposeTimes
  // inferred them (BrainScript's EmbeddingLayer {transpose = true}: E' * x, E [Inferred x outDim]).
  if (L.sub(L.rank() - k_rank).has_inferred() && !R.sub(0, k_rank).has_inferred()) {
    std::vector<int64_t> d = L.dims();
    for (size_t i = 0; i < k_rank; ++i)
      if (d[L.rank() - k_rank + i] == NDShape::kInferredDimension) d[L.rank() - k_rank + i] = R[i];
    ctx.fill_inferred(0, NDShape(d));
    L = ctx.shape(0);
  }
  NDShape lk = L.sub(L.rank() - k_rank), rk = R.sub(0, k_rank);
  for (size_t i = 0; i < k_rank; ++i)
    if (lk[i] != rk[i] && lk[i] >= 0 && rk[i] >= 0)
      ctx.fail("inner dimensions do not match: " + lk.str() + " vs " + rk.str());
  if (ctx.input(0).is_sparse() && ctx.input(1).is_sparse()) ctx.fail("both operands are sparse");
  // CNTK refuses this with a logic error (RuntimeError in Python), not an argument error.
  if (ctx.input(0).is_sparse() && k_rank > 1)
    throw Error("Times: for the sparse left operand " + ctx.input(0).str() + ", cannot reduce multiple (" +
                std::to_string(k_rank) + ") axes; only its last axis can be reduced");
  return ctx.one(L.sub(0, L.rank() - k_rank).concat(R.sub(k_rank)));
}

// Runtime sizes; left/right are runtime tensors with ndl/ndr leading dynamic dims.
TimesDims times_dims(const ComputeContext& ctx) {
  int64_t out_rank = ctx.attr_int("outputRank");
  NDShape R = ctx.static_shape(1), L = ctx.static_shape(0);
  size_t k_rank = R.rank() - out_rank;
  // Free (or input-inferred) dimensions are only known from the data: check them here.
  if (k_rank > L.rank() || L.sub(L.rank() - k_rank) != R.sub(0, k_rank))
    throw ValueError("Times: inner dimensions do not match: " + L.str() + " times " + R.str() + " in the data");
  TimesDims d;
  for (size_t i = 0; i < L.rank() - k_rank; ++i) d.A *= L[i];
  for (size_t i = 0; i < k_rank; ++i) d.K *= R[i];
  for (size_t i = k_rank; i < R.rank(); ++i) d.N *= R[i];
  return d;
}

NDShape times_out_shape(const ComputeContext& ctx) {
  int64_t out_rank = ctx.attr_int("outputRank");
  NDShape R = ctx.static_shape(1), L = ctx.static_shape(0);
  size_t k_rank = R.rank() - out_rank;
  std::vector<int64_t> dyn;
  // The output's dynamic dims: the richer operand's.
  int src = ctx.in_dyn[0] >= ctx.in_dyn[1] ? 0 : 1;
  for (int i = 0; i < ctx.in_dyn[src]; ++i) dyn.push_back(ctx.inputs[src].shape()[i]);
  return NDShape(dyn).concat(L.sub(0, L.rank() - k_rank)).concat(R.sub(k_rank));
}

// Batch count of the dynamic dims of input i (1 when it has none).
int64_t dyn_count(const ComputeContext& ctx, size_t i) {
  int64_t n = 1;
  for (int k = 0; k < ctx.in_dyn[i]; ++k) n *= ctx.inputs[i].shape()[k];
  return n;
}

// A sparse left operand (one-hot rows) times a dense right one that holds no batch: the
// product is a row gather and its gradient for the right operand a row scatter, so
// neither densifies the left operand. That needs the contraction to be over the
// left's last axis alone, which is the axis the sparse rows index.
bool sparse_row_product(const ComputeContext& ctx) {
  const NDArrayView &l = ctx.inputs[0], &r = ctx.inputs[1];
  return l.is_sparse() && !r.is_sparse() && l.dtype() == r.dtype() && ctx.in_dyn[1] == 0 &&
         ctx.static_shape(1).rank() - size_t(ctx.attr_int("outputRank")) == 1 && ctx.static_shape(0).rank() >= 1;
}

std::vector<NDArrayView> times_forward(ComputeContext& ctx) {
  TimesDims d = times_dims(ctx);
  if (sparse_row_product(ctx)) return {kernels::sparse_times_dense(ctx.inputs[0], ctx.inputs[1], times_out_shape(ctx))};
  NDArrayView l = ctx.inputs[0].to_dense().contiguous(), r = ctx.inputs[1].to_dense().contiguous();
  NDShape out_shape = times_out_shape(ctx);
  NDArrayView out(l.dtype(), out_shape);
  int64_t bl = dyn_count(ctx, 0), br = dyn_count(ctx, 1);
  CNTK_DISPATCH_FLOAT(l.dtype(), T, [&] {
    const T *pl = l.data<T>(), *pr = r.data<T>();
    T* po = out.data<T>();
    if (br == 1) {
      // The common case: right is a parameter; fold the batch into M.
      kernels::gemm<T>(false, false, bl * d.A, d.N, d.K, T(1), pl, d.K, pr, d.N, T(0), po, d.N);
    } else {
      if (bl != 1 && bl != br) throw ValueError("Times: operands have different batch sizes");
      for (int64_t b = 0; b < br; ++b)
        kernels::gemm<T>(false, false, d.A, d.N, d.K, T(1), pl + (bl == 1 ? 0 : b * d.A * d.K), d.K, pr + b * d.K * d.N,
                         d.N, T(0), po + b * d.A * d.N, d.N);
    }
  });
  return {out};
}

NDArrayView times_backward(ComputeContext& ctx, size_t which) {
  TimesDims d = times_dims(ctx);
  if (which == 1 && sparse_row_product(ctx)) {
    // A [K, N] weight (an embedding) gets its gradient as the rows used, as CNTK's
    // sparse block gradient did; the executor makes it dense where it adds up.
    if (ctx.inputs[1].shape() == NDShape{d.K, d.N})
      return kernels::sparse_transpose_times_dense_rows(ctx.inputs[0], ctx.grad_outputs[0], d.K, d.N);
    return kernels::sparse_transpose_times_dense(ctx.inputs[0], ctx.grad_outputs[0], d.K, d.N)
        .reshape(ctx.inputs[1].shape());
  }
  NDArrayView l = ctx.inputs[0].to_dense().contiguous(), r = ctx.inputs[1].to_dense().contiguous();
  NDArrayView g = ctx.grad_outputs[0].contiguous();
  int64_t bl = dyn_count(ctx, 0), br = dyn_count(ctx, 1);
  // Every path below writes the whole buffer (beta = 0 on its first product), so no zero fill.
  NDArrayView grad(l.dtype(), ctx.inputs[which].shape());
  if (br == 0) {  // an empty batch contributes nothing
    grad.fill(0);
    return grad;
  }
  CNTK_DISPATCH_FLOAT(l.dtype(), T, [&] {
    const T *pl = l.data<T>(), *pr = r.data<T>(), *pg = g.data<T>();
    T* po = grad.data<T>();
    if (br == 1) {
      if (which == 0)  // dL = G[M,N] @ R^T
        kernels::gemm<T>(false, true, bl * d.A, d.K, d.N, T(1), pg, d.N, pr, d.N, T(0), po, d.K);
      else  // dR = L^T @ G, summed over the batch folded into M
        kernels::gemm<T>(true, false, d.K, d.N, bl * d.A, T(1), pl, d.K, pg, d.N, T(0), po, d.N);
      return;
    }
    for (int64_t b = 0; b < br; ++b) {
      const T* lb = pl + (bl == 1 ? 0 : b * d.A * d.K);
      const T* gb = pg + b * d.A * d.N;
      if (which == 0) {
        T* ob = po + (bl == 1 ? 0 : b * d.A * d.K);
        kernels::gemm<T>(false, true, d.A, d.K, d.N, T(1), gb, d.N, pr + b * d.K * d.N, d.N,
                         T(bl == 1 && b > 0 ? 1 : 0), ob, d.K);
      } else {
        kernels::gemm<T>(true, false, d.K, d.N, d.A, T(1), lb, d.K, gb, d.N, T(0), po + b * d.K * d.N, d.N);
      }
    }
  });
  return grad;
}

}  // namespace

void register_linalg_ops() {
  OpDef d;
  d.name = "Times";
  d.op_type = 31;
  d.inputs = {{"left"}, {"right"}};
  d.cntk_swaps_operands = true;
  d.attrs = {{"outputRank", AttrType::Int, 1}, {"inferInputRankToMap", AttrType::Int, -1}};
  d.infer = infer_times;
  d.forward = times_forward;
  d.backward = times_backward;
  d.sparse_inputs = true;
  register_op(std::move(d));
  // ONNX: MatMul where the right operand is a matrix contracted over its first axis.
  // ONNX: MatMul of x [dyn.., M, K] by W [dyn.., K, N] (M, K and N the map, contracted and
  // output axes of each operand flattened to one), then the output's shape back. ONNX's
  // MatMul broadcasts the leading (dynamic) dims of the two operands, as Times pairs samples.
  set_onnx_export("Times", [](onnx_io::ExportContext& c) {
    const NDShape R = c.input_var(1).shape(), out = c.output_var(0).shape();
    const size_t o = size_t(c.attr_int("outputRank")), k_rank = R.rank() - o;
    if (c.input_dyn(1) == 0 && k_rank == 1 && o <= 1 && c.input_var(0).shape().rank() >= 1) {  // MatMul as it is
      c.node1("MatMul", {c.input(0), c.input(1)}, {}, c.output(0));
      return;
    }
    if (!out.is_known() || !R.is_known()) c.unsupported("Times with free dimensions and several contracted axes");
    const NDShape map = out.sub(0, out.rank() - o);
    const int64_t K = R.sub(0, k_rank).total_size(), N = R.sub(k_rank).total_size(), M = map.total_size();
    auto shape_of = [&](int dyn, std::vector<int64_t> s) {
      std::vector<int64_t> d(size_t(dyn), 0);  // 0: the dynamic dims as they are
      d.insert(d.end(), s.begin(), s.end());
      return c.constant_i64(d);
    };
    std::string x = c.node1("Reshape", {c.input(0), shape_of(c.input_dyn(0), {M, K})});
    std::string w = c.node1("Reshape", {c.input(1), shape_of(c.input_dyn(1), {K, N})});
    c.node1("Reshape", {c.node1("MatMul", {x, w}), shape_of(c.output_dyn(0), out.dims())}, {}, c.output(0));
  });
}

}  // namespace cntk
