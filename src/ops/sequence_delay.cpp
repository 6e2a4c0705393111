// Op family: sequence delay. PastValue and FutureValue shift a sequence in time
// within each sequence of the minibatch, reading an initial state where the shift
// falls off the sequence. A graph whose delays form cycles is a recurrent loop,
// which the executor runs one time step at a time through delay_forward_steps
// and delay_backward_steps; outside loops the whole sequence is shifted at once.
#include "ops/sequence_delay.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/reduce.h"
#include "ops/eager.h"
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
    if (a.is_sequence()) continue;  // its own sequence: the last (first) item is used
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
  if (ctx.attr_int("offset") < 0) ctx.fail("the offset (time_step) must not be negative");
  return {{xs, ctx.common_dtype(), x.dynamic_axes(), false}};
}

// A static shape left-padded with 1s to `rank` (NumPy broadcasting).
NDShape padded_item(const NDShape& shape, size_t rank) {
  std::vector<int64_t> dims(rank > shape.rank() ? rank - shape.rank() : 0, 1);
  for (auto d : shape.dims()) dims.push_back(d);
  return NDShape(dims);
}

bool init_is_sequence(const ComputeContext& ctx) { return ctx.in_dyn[1] == 2; }

// The length of sequence b of an initial state that is a sequence.
int64_t init_length(const ComputeContext& ctx, int64_t b) {
  int64_t L = length_of(ctx.in_lengths[1], b, ctx.inputs[1].shape()[0]);
  if (L < 1) throw ValueError(ctx.fn->op_name() + ": the initial state of sequence " + std::to_string(b) + " is empty");
  return L;
}

// For an initial state that is a sequence: the item of sequence b read for the j-th of
// the K steps the initial state fills (see delay_initial_steps).
int64_t init_item(const ComputeContext& ctx, int64_t b, int64_t j, int64_t K) {
  int64_t L = init_length(ctx, b);
  bool past = delay_spec(*ctx.fn).past;
  if (L == 1) return 0;
  if (K == 1) return past ? L - 1 : 0;
  if (L < K)
    throw ValueError(ctx.fn->op_name() + ": the initial state of sequence " + std::to_string(b) + " has " +
                     std::to_string(L) + " items, fewer than the offset " + std::to_string(K) +
                     " (give one item, or at least offset many)");
  return past ? L - K + j : j;
}

// Rows per sequence in the initial state's runtime form: `offset` where the initial state
// is a sequence with more than one item and the offset exceeds 1 (CNTK reads its last
// `offset` items in order, its first ones for FutureValue), else 1 (one item, read for
// every step the initial state fills).
int64_t init_steps(const ComputeContext& ctx) {
  int64_t offset = delay_spec(*ctx.fn).offset;
  if (!init_is_sequence(ctx) || offset <= 1) return 1;
  for (int64_t b = 0; b < ctx.inputs[1].shape()[1]; ++b)
    if (init_length(ctx, b) > 1) return offset;
  return 1;
}

// Which of the K initial-state rows output step t of a sequence of length L reads,
// where it reads the initial state.
int64_t init_row(const DelaySpec& d, int64_t t, int64_t L, int64_t K) {
  if (K == 1) return 0;
  return d.past ? t : t + d.offset - L;
}

bool continued(const std::vector<char>* continues, int64_t b) {
  return continues && b < int64_t(continues->size()) && (*continues)[size_t(b)];
}

// Delaying only moves rows: float16 rows (a float16 loop's buffers) move as 16-bit words.
template <class F>
void dispatch_rows(DataType t, F&& f) {
  if (t == DataType::Float16) return f(uint16_t{});
  CNTK_DISPATCH_FLOAT(t, T, [&] { f(T{}); });
}

template <class T>
void forward_rows(const DelaySpec& d, const T* x, const T* init, int64_t K, const std::vector<int64_t>& lengths,
                  int64_t TT, int64_t B, int64_t R, int64_t t0, int64_t t1, T* out, const T* carry,
                  const std::vector<char>* continues) {
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t b = 0; b < B; ++b) {
      T* dst = out + (t * B + b) * R;
      int64_t L = length_of(lengths, b, TT);
      if (t >= L) {
        std::memset(dst, 0, sizeof(T) * R);
        continue;
      }
      int64_t s = source_step(d, t, L);
      const T* src = s >= 0 ? x + (s * B + b) * R : init + (init_row(d, t, L, K) * B + b) * R;
      // A continued sequence: step t - offset < 0 is item t of the carry (past only).
      if (s < 0 && carry && d.past && continued(continues, b)) src = carry + (t * B + b) * R;
      std::memcpy(dst, src, sizeof(T) * R);
    }
}

template <class T>
void backward_rows(const DelaySpec& d, const T* g, const std::vector<int64_t>& lengths, int64_t TT, int64_t B,
                   int64_t R, int64_t K, int64_t t0, int64_t t1, T* gx, T* ginit, const std::vector<char>* continues) {
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t b = 0; b < B; ++b) {
      int64_t L = length_of(lengths, b, TT);
      if (t >= L) continue;  // padding carries no gradient
      int64_t s = source_step(d, t, L);
      if (s < 0 && continued(continues, b)) continue;  // read from the previous minibatch: no gradient
      T* dst = s >= 0 ? (gx ? gx + (s * B + b) * R : nullptr)
                      : (ginit ? ginit + (init_row(d, t, L, K) * B + b) * R : nullptr);
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

NDArrayView delay_initial_steps(const ComputeContext& ctx, const NDShape& item_shape, int64_t batch) {
  NDShape rows_shape = NDShape{batch}.concat(item_shape);
  if (!init_is_sequence(ctx)) {
    NDArrayView a = ctx.aligned(1, item_shape.rank());
    return a.broadcast_to(NDShape{1}.concat(rows_shape)).contiguous();
  }
  const NDArrayView& init = ctx.inputs[1];  // [T', B, *shape'] over its own sequence axis
  if (init.shape()[1] != batch)
    throw ValueError(ctx.fn->op_name() + ": the initial state has " + std::to_string(init.shape()[1]) +
                     " sequences but the operand " + std::to_string(batch));
  const int64_t K = init_steps(ctx);
  NDArrayView rows(init.dtype(), NDShape{K}.concat(rows_shape));
  NDShape item = padded_item(init.shape().sub(2), item_shape.rank());
  for (int64_t j = 0; j < K; ++j)
    for (int64_t b = 0; b < batch; ++b) {
      int64_t t = init_item(ctx, b, j, K);
      NDArrayView src = init.slice(0, t, t + 1).slice(1, b, b + 1).contiguous().reshape(item);
      rows.slice(0, j, j + 1).slice(1, b, b + 1).reshape(item_shape).copy_from(src.broadcast_to(item_shape));
    }
  return rows;
}

NDArrayView delay_initial_rows(const ComputeContext& ctx, const NDShape& item_shape, int64_t batch) {
  if (init_steps(ctx) != 1)
    throw NotImplementedError(ctx.fn->op_name() +
                              ": inside a recurrent loop, an initial state that is a sequence "
                              "of several items with an offset above 1 is not supported; give one item");
  return delay_initial_steps(ctx, item_shape, batch).reshape(NDShape{batch}.concat(item_shape));
}

NDArrayView delay_initial_gradient(const ComputeContext& ctx, const NDArrayView& grad_rows) {
  if (!init_is_sequence(ctx)) return ctx.reduce_to_input(1, grad_rows.reshape(NDShape{1}.concat(grad_rows.shape())));
  const NDArrayView& init = ctx.inputs[1];
  const int64_t B = init.shape()[1], K = init_steps(ctx);
  NDArrayView steps = grad_rows.reshape(NDShape{K, B}.concat(grad_rows.shape().sub(K == 1 ? 1 : 2)));
  NDArrayView g = NDArrayView::zeros(grad_rows.dtype(), init.shape());
  NDShape own = init.shape().sub(2);
  NDShape item = padded_item(own, steps.rank() - 2);
  for (int64_t j = 0; j < K; ++j)
    for (int64_t b = 0; b < B; ++b) {
      NDArrayView row = steps.slice(0, j, j + 1).slice(1, b, b + 1).contiguous().reshape(steps.shape().sub(2));
      NDArrayView summed = row.shape() == item ? row : kernels::sum_to(row, item);
      int64_t t = init_item(ctx, b, j, K);
      NDArrayView dst = g.slice(0, t, t + 1).slice(1, b, b + 1).reshape(own);
      // One item can fill several steps: their gradients add up.
      dst.copy_from(eager::add(dst.contiguous(), summed.contiguous().reshape(own)));
    }
  return g;
}

std::shared_ptr<const DelayCarry> delay_carry_in(Function& f, const std::vector<char>* continues, int64_t batch,
                                                 const NDShape& item_shape, DataType dtype) {
  bool any = false;
  if (continues)
    for (int64_t b = 0; b < batch; ++b) any = any || continued(continues, b);
  if (!any) return nullptr;
  DelaySpec d = delay_spec(f);
  if (!d.past)
    throw NotImplementedError(f.op_name() +
                              ": a sequence continues from the previous minibatch (truncated BPTT, "
                              "truncation_length), but future_value cannot look past the end of a piece into "
                              "the next minibatch; read whole sequences for models with future_value");
  auto carry = std::static_pointer_cast<const DelayCarry>(f.op_state());
  NDShape want = NDShape{d.offset, batch}.concat(item_shape);
  if (!carry || carry->rows.shape().rank() < 2 || carry->rows.shape()[1] < batch ||
      carry->rows.shape().sub(2) != item_shape || carry->rows.shape()[0] != d.offset || carry->rows.dtype() != dtype)
    throw ValueError(f.op_name() +
                     ": a sequence continues from the previous minibatch (its sequence start flag "
                     "is False), but the previous minibatch did not hold it (" +
                     (carry ? "it had " + carry->rows.shape().str() + " where " + want.str() + " is needed"
                            : std::string("there was none")) +
                     ")");
  for (int64_t b = 0; b < batch; ++b)
    if (continued(continues, b) && b < int64_t(carry->lost.size()) && carry->lost[size_t(b)])
      throw ValueError(f.op_name() + ": sequence " + std::to_string(b) +
                       " continues from the previous minibatch (its sequence start flag is False), but there it "
                       "was shorter than the minibatch's longest sequence, and the fused oneDNN LSTM keeps the "
                       "cell state only of sequences that span the whole minibatch (as the pieces that a "
                       "MinibatchSource with truncation_length continues do); give such pieces the full length, "
                       "or turn fusion off with cntk.cntk_py.set_rnn_fusion(False) or CNTK_RNN_FUSION=0");
  if (carry->rows.shape()[1] != batch) {
    // Fewer sequences now: keep the carry of the first `batch` positions.
    auto fitted = std::make_shared<DelayCarry>();
    fitted->rows = carry->rows.slice(1, 0, batch).contiguous();
    if (!carry->lost.empty()) fitted->lost.assign(carry->lost.begin(), carry->lost.begin() + batch);
    f.set_op_state(fitted);
    carry = fitted;
  }
  return carry;
}

void delay_carry_out(Function& f, const NDArrayView& x, const NDArrayView& init_rows,
                     const std::vector<int64_t>& lengths, const std::vector<char>* continues,
                     const DelayCarry* previous) {
  DelaySpec d = delay_spec(f);
  if (!d.past || d.offset == 0 || x.rank() < 2) return;
  const int64_t TT = x.shape()[0], B = x.shape()[1], R = row_size(x);
  const int64_t K = init_rows.numel() / std::max<int64_t>(B * R, 1);
  auto next = std::make_shared<DelayCarry>();
  next->rows = NDArrayView(x.dtype(), NDShape{d.offset, B}.concat(x.shape().sub(2)));
  dispatch_rows(x.dtype(), [&](auto word) {
    using T = decltype(word);
    const T* xs = x.data<T>();
    const T* init = init_rows.data<T>();
    NDArrayView prev_rows = previous ? previous->rows : NDArrayView();
    const T* prev = previous ? prev_rows.data<T>() : nullptr;
    T* out = next->rows.data<T>();
    for (int64_t j = 0; j < d.offset; ++j)
      for (int64_t b = 0; b < B; ++b) {
        int64_t L = length_of(lengths, b, TT);
        int64_t u = L - d.offset + j;  // the time step, relative to this piece, of carry item j
        const T* src = u >= 0                            ? xs + (u * B + b) * R
                       : prev && continued(continues, b) ? prev + ((d.offset + u) * B + b) * R
                                                         : init + ((K == 1 ? 0 : d.offset + u) * B + b) * R;
        std::memcpy(out + (j * B + b) * R, src, sizeof(T) * size_t(R));
      }
  });
  f.set_op_state(std::move(next));
}

DelayLoopStep::DelayLoopStep(const ComputeContext& ctx, const NDShape& item_shape, DataType dtype,
                             const std::vector<int64_t>& lengths, const std::vector<char>* continues)
    : fn_(*ctx.fn), spec_(delay_spec(*ctx.fn)), lengths_(lengths), continues_(continues) {
  const int64_t B = int64_t(lengths.size());
  // In the loop buffer's type: a float16 loop keeps float16 values, while its steps (the
  // initial state's included) compute in float32.
  init_rows_ = delay_initial_rows(ctx, item_shape, B);
  if (init_rows_.dtype() != dtype) init_rows_ = init_rows_.cast(dtype);
  carry_ = delay_carry_in(fn_, continues, B, item_shape, dtype);
}

void DelayLoopStep::forward(const NDArrayView& x, int64_t t, NDArrayView& out) const {
  delay_forward_steps(spec_, x, init_rows_, lengths_, t, t + 1, out, carry_.get(), continues_);
}

void DelayLoopStep::finish(const NDArrayView& x) const {
  delay_carry_out(fn_, x, init_rows_, lengths_, continues_, carry_.get());
}

DelayLoopGradient::DelayLoopGradient(const Function& f, const NDArrayView& out, bool want_init,
                                     const std::vector<int64_t>& lengths, const std::vector<char>* continues)
    : spec_(delay_spec(f)), lengths_(lengths), continues_(continues) {
  if (want_init) init_grad_ = NDArrayView::zeros(out.dtype(), out.shape().sub(1));
}

void DelayLoopGradient::backward(const NDArrayView& grad_out, int64_t t, NDArrayView* grad_x) {
  delay_backward_steps(spec_, grad_out, lengths_, t, t + 1, grad_x, init_grad_.defined() ? &init_grad_ : nullptr,
                       continues_);
}

NDArrayView DelayLoopGradient::initial_gradient(const ComputeContext& ctx) const {
  return init_grad_.defined() ? delay_initial_gradient(ctx, init_grad_) : NDArrayView();
}

bool is_delay_op(const OpDef* op) { return op && op->is(kDelay); }

DelaySpec delay_spec(const Function& f) {
  DelaySpec d;
  d.past = f.op_name() == kPast;
  // PastValue and FutureValue declare offset alike; a fused recurrence's block (whose initial
  // states the delay kernels read) has none and gets the declared default.
  d.offset = op_attr_int(kPast, f.attributes(), "offset");
  return d;
}

void delay_forward_steps(const DelaySpec& d, const NDArrayView& x, const NDArrayView& init,
                         const std::vector<int64_t>& lengths, int64_t t0, int64_t t1, NDArrayView& out,
                         const DelayCarry* carry, const std::vector<char>* continues) {
  check_steps("output", out, t0, t1);
  int64_t TT = out.shape()[0], B = out.shape()[1], R = row_size(out);
  const int64_t K = init.numel() / std::max<int64_t>(B * R, 1);
  if (x.shape() != out.shape() || x.dtype() != out.dtype() || init.dtype() != out.dtype() ||
      init.numel() != K * B * R || (K != 1 && K != d.offset))
    throw Error("delay: operand " + x.shape().str() + ", initial state " + init.shape().str() + " and output " +
                out.shape().str() + " disagree");
  if (carry && (carry->rows.dtype() != out.dtype() || carry->rows.numel() != d.offset * B * R))
    throw Error("delay: the carried state " + carry->rows.shape().str() + " does not fit the output " +
                out.shape().str());
  dispatch_rows(out.dtype(), [&](auto word) {
    using T = decltype(word);
    NDArrayView rows = carry ? carry->rows : NDArrayView();
    forward_rows<T>(d, x.data<T>(), init.data<T>(), K, lengths, TT, B, R, t0, t1, out.data<T>(),
                    carry ? rows.data<T>() : nullptr, continues);
  });
}

void delay_backward_steps(const DelaySpec& d, const NDArrayView& grad_out, const std::vector<int64_t>& lengths,
                          int64_t t0, int64_t t1, NDArrayView* grad_x, NDArrayView* grad_init,
                          const std::vector<char>* continues) {
  check_steps("gradient", grad_out, t0, t1);
  int64_t TT = grad_out.shape()[0], B = grad_out.shape()[1], R = row_size(grad_out);
  if (grad_x && grad_x->shape() != grad_out.shape())
    throw Error("delay: operand gradient " + grad_x->shape().str() + " does not match " + grad_out.shape().str());
  const int64_t K = grad_init ? grad_init->numel() / std::max<int64_t>(B * R, 1) : 1;
  if (grad_init && (grad_init->numel() != K * B * R || (K != 1 && K != d.offset)))
    throw Error("delay: initial state gradient " + grad_init->shape().str() + " does not hold " + std::to_string(B) +
                " rows");
  CNTK_DISPATCH_FLOAT(grad_out.dtype(), T, [&] {
    backward_rows<T>(d, grad_out.data<T>(), lengths, TT, B, R, K, t0, t1, grad_x ? grad_x->data<T>() : nullptr,
                     grad_init ? grad_init->data<T>() : nullptr, continues);
  });
}

void register_sequence_delay_ops() {
  for (const char* name : {kPast, kFuture}) {
    OpDef def;
    def.name = name;
    def.op_type = name == std::string(kPast) ? 37 : 38;
    def.inputs = {{"x"}, {"initial_state"}};
    def.attrs = {{"offset", AttrType::Int, 1}};
    def.classes = kDelay;
    def.infer = infer_delay;
    def.forward = [](ComputeContext& ctx) {
      NDArrayView x = ctx.inputs[0].contiguous();
      NDArrayView out(x.dtype(), x.shape());
      NDArrayView init = delay_initial_steps(ctx, x.shape().sub(2), x.shape()[1]);
      auto carry = delay_carry_in(*ctx.fn, ctx.continues, x.shape()[1], x.shape().sub(2), x.dtype());
      delay_forward_steps(delay_spec(*ctx.fn), x, init, ctx.in_lengths[0], 0, x.shape()[0], out, carry.get(),
                          ctx.continues);
      delay_carry_out(*ctx.fn, x, init, ctx.in_lengths[0], ctx.continues, carry.get());
      return std::vector<NDArrayView>{out};
    };
    def.backward = [](ComputeContext& ctx, size_t i) {
      NDArrayView g = ctx.grad_outputs[0].contiguous();
      const auto& lengths = ctx.in_lengths[0];
      DelaySpec d = delay_spec(*ctx.fn);
      if (i == 0) {
        NDArrayView gx = NDArrayView::zeros(g.dtype(), g.shape());
        delay_backward_steps(d, g, lengths, 0, g.shape()[0], &gx, nullptr, ctx.continues);
        return gx;
      }
      const int64_t K = init_steps(ctx);  // rows per sequence: [B, ...] or [K, B, ...]
      NDArrayView gi = NDArrayView::zeros(g.dtype(), K == 1 ? g.shape().sub(1) : NDShape{K}.concat(g.shape().sub(1)));
      delay_backward_steps(d, g, lengths, 0, g.shape()[0], nullptr, &gi, ctx.continues);
      return delay_initial_gradient(ctx, gi);
    };
    register_op(std::move(def));
  }
}

}  // namespace cntk
