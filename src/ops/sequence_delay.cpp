// Op family: sequence delay. PastValue and FutureValue shift a sequence in time
// within each sequence of the minibatch, reading an initial state where the shift
// falls off the sequence. A graph whose delays form cycles is a recurrent loop,
// which the executor runs one time step at a time through delay_forward_steps
// and delay_backward_steps; outside loops the whole sequence is shifted at once.
#include "ops/sequence_delay.h"

#include <algorithm>
#include <cstring>

#include "ops/op.h"

namespace cntk {

namespace {

constexpr const char* kPast = "PastValue";
constexpr const char* kFuture = "FutureValue";

int64_t row_size(const NDArrayView& x) {
  int64_t r = 1;
  for (size_t k = 2; k < x.rank(); ++k) r *= x.shape()[k];
  return r;
}

int64_t length_of(const std::vector<int64_t>& lengths, int64_t b, int64_t T) {
  return b < int64_t(lengths.size()) ? std::min(lengths[b], T) : T;
}

// The time step of the operand that output step t of a sequence of length L reads,
// or -1 where it reads the initial state.
int64_t source_step(const DelaySpec& d, int64_t t, int64_t L) {
  int64_t s = d.past ? t - d.offset : t + d.offset;
  return (s >= 0 && s < L) ? s : -1;
}

std::vector<OutputInfo> infer_delay(InferContext& ctx) {
  ctx.expect_inputs(2);
  const Variable& x = ctx.input(0);
  const Variable& init = ctx.input(1);
  bool has_seq = false;
  for (auto& a : x.dynamic_axes()) has_seq = has_seq || a.is_sequence();
  if (!has_seq) ctx.fail("the operand " + x.str() + " must be a sequence (have a sequence axis)");
  for (auto& a : init.dynamic_axes()) {
    if (a.is_sequence())
      throw NotImplementedError(ctx.op() + ": an initial state with a sequence axis (" + init.str() +
                                ") is not supported; pass a tensor without a sequence axis");
    bool found = false;
    for (auto& b : x.dynamic_axes()) found = found || a == b;
    if (!found) ctx.fail("the initial state " + init.str() + " has a dynamic axis the operand lacks");
  }
  const NDShape& xs = x.shape();
  const NDShape& is = init.shape();
  bool ok = is.rank() <= xs.rank();
  for (size_t k = 0; ok && k < is.rank(); ++k) {
    int64_t d = is[is.rank() - 1 - k], e = xs[xs.rank() - 1 - k];
    ok = d == 1 || d == e || e == NDShape::kFreeDimension;
  }
  if (!ok) ctx.fail("the initial state of shape " + is.str() + " does not broadcast to the operand's " + xs.str());
  if (attr_int(ctx.attrs(), "offset", 1) < 0) ctx.fail("the offset (time_step) must not be negative");
  return {{xs, ctx.common_dtype(), x.dynamic_axes(), false}};
}

// The initial state (input 1) broadcast to [B, *shape], contiguous.
NDArrayView init_rows(const ComputeContext& ctx, const NDArrayView& x) {
  size_t srank = x.rank() - 2;
  NDArrayView a = ctx.aligned(1, srank);
  std::vector<int64_t> dims = x.shape().dims();
  dims[0] = 1;
  return a.broadcast_to(NDShape(dims)).contiguous().reshape(x.shape().sub(1));
}

template <class T>
void forward_rows(const DelaySpec& d, const T* x, const T* init, const std::vector<int64_t>& lengths, int64_t TT,
                  int64_t B, int64_t R, int64_t t0, int64_t t1, T* out) {
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t b = 0; b < B; ++b) {
      T* dst = out + (t * B + b) * R;
      int64_t L = length_of(lengths, b, TT);
      if (t >= L) {
        std::memset(dst, 0, sizeof(T) * R);
        continue;
      }
      int64_t s = source_step(d, t, L);
      const T* src = s >= 0 ? x + (s * B + b) * R : init + b * R;
      std::memcpy(dst, src, sizeof(T) * R);
    }
}

template <class T>
void backward_rows(const DelaySpec& d, const T* g, const std::vector<int64_t>& lengths, int64_t TT, int64_t B,
                   int64_t R, int64_t t0, int64_t t1, T* gx, T* ginit) {
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t b = 0; b < B; ++b) {
      int64_t L = length_of(lengths, b, TT);
      if (t >= L) continue;  // padding carries no gradient
      int64_t s = source_step(d, t, L);
      T* dst = s >= 0 ? (gx ? gx + (s * B + b) * R : nullptr) : (ginit ? ginit + b * R : nullptr);
      if (!dst) continue;
      const T* src = g + (t * B + b) * R;
      for (int64_t k = 0; k < R; ++k) dst[k] += src[k];
    }
}

void check_steps(const char* what, const NDArrayView& v, int64_t t0, int64_t t1) {
  if (v.rank() < 2 || t0 < 0 || t1 > v.shape()[0] || t0 > t1)
    throw Error(std::string("delay: ") + what + " of shape " + v.shape().str() + " does not hold steps [" +
                std::to_string(t0) + ", " + std::to_string(t1) + ")");
}

}  // namespace

bool is_delay_op(const OpDef* op) { return op && (op->name == kPast || op->name == kFuture); }

DelaySpec delay_spec(const Function& f) {
  DelaySpec d;
  d.past = f.op_name() == kPast;
  d.offset = attr_int(f.attributes(), "offset", 1);
  return d;
}

void delay_forward_steps(const DelaySpec& d, const NDArrayView& x, const NDArrayView& init,
                         const std::vector<int64_t>& lengths, int64_t t0, int64_t t1, NDArrayView& out) {
  check_steps("output", out, t0, t1);
  if (x.shape() != out.shape() || x.dtype() != out.dtype() || init.dtype() != out.dtype() ||
      init.numel() != out.numel() / out.shape()[0])
    throw Error("delay: operand " + x.shape().str() + ", initial state " + init.shape().str() + " and output " +
                out.shape().str() + " disagree");
  int64_t TT = out.shape()[0], B = out.shape()[1], R = row_size(out);
  CNTK_DISPATCH_FLOAT(out.dtype(), T, [&] {
    forward_rows<T>(d, x.data<T>(), init.data<T>(), lengths, TT, B, R, t0, t1, out.data<T>());
  });
}

void delay_backward_steps(const DelaySpec& d, const NDArrayView& grad_out, const std::vector<int64_t>& lengths,
                          int64_t t0, int64_t t1, NDArrayView* grad_x, NDArrayView* grad_init) {
  check_steps("gradient", grad_out, t0, t1);
  int64_t TT = grad_out.shape()[0], B = grad_out.shape()[1], R = row_size(grad_out);
  if (grad_x && grad_x->shape() != grad_out.shape())
    throw Error("delay: operand gradient " + grad_x->shape().str() + " does not match " + grad_out.shape().str());
  if (grad_init && grad_init->numel() != B * R)
    throw Error("delay: initial state gradient " + grad_init->shape().str() + " does not hold " +
                std::to_string(B) + " rows");
  CNTK_DISPATCH_FLOAT(grad_out.dtype(), T, [&] {
    backward_rows<T>(d, grad_out.data<T>(), lengths, TT, B, R, t0, t1, grad_x ? grad_x->data<T>() : nullptr,
                     grad_init ? grad_init->data<T>() : nullptr);
  });
}

void register_sequence_delay_ops() {
  for (const char* name : {kPast, kFuture}) {
    OpDef def;
    def.name = name;
    def.infer = infer_delay;
    def.forward = [](ComputeContext& ctx) {
      NDArrayView x = ctx.inputs[0].contiguous();
      NDArrayView out(x.dtype(), x.shape());
      delay_forward_steps(delay_spec(*ctx.fn), x, init_rows(ctx, x), ctx.in_lengths[0], 0, x.shape()[0], out);
      return std::vector<NDArrayView>{out};
    };
    def.backward = [](ComputeContext& ctx, size_t i) {
      NDArrayView g = ctx.grad_outputs[0].contiguous();
      const auto& lengths = ctx.in_lengths[0];
      DelaySpec d = delay_spec(*ctx.fn);
      if (i == 0) {
        NDArrayView gx = NDArrayView::zeros(g.dtype(), g.shape());
        delay_backward_steps(d, g, lengths, 0, g.shape()[0], &gx, nullptr);
        return gx;
      }
      NDArrayView gi = NDArrayView::zeros(g.dtype(), g.shape().sub(1));
      delay_backward_steps(d, g, lengths, 0, g.shape()[0], nullptr, &gi);
      std::vector<int64_t> dims = g.shape().dims();
      dims[0] = 1;
      return ctx.reduce_to_input(1, gi.reshape(NDShape(dims)));
    };
    register_op(std::move(def));
  }
}

}  // namespace cntk
