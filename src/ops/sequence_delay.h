// The delay ops PastValue and FutureValue, as kernels over a range of time steps,
// so that the executor can run them one step at a time inside a recurrent loop.
// Runtime layout: operand and output [T, B, *shape] (time-major), lengths per sequence.
#pragma once
#include <memory>
#include <vector>

#include "cntk/tensor.h"

namespace cntk {

class Function;
class ComputeContext;
struct OpDef;

struct DelaySpec {
  bool past = true;    // PastValue: out[t] = x[t - offset]; FutureValue: out[t] = x[t + offset]
  int64_t offset = 1;  // time steps, >= 0
};

// Whether `op` is PastValue or FutureValue, and then its direction and offset.
bool is_delay_op(const OpDef* op);
DelaySpec delay_spec(const Function& f);

// The initial state (input 1 of the delay in `ctx`) as [K, B, *item_shape], contiguous:
// broadcast from a scalar or tensor, one row per sequence from a batch axis, or, for
// an initial state that is itself a sequence (over its own axis), its last item per
// sequence (its first for FutureValue). K is 1, except for such a sequence with more
// than one item and an offset above 1: then, as CNTK, the K = offset steps the initial
// state fills read its last (first) `offset` items in order.
NDArrayView delay_initial_steps(const ComputeContext& ctx, const NDShape& item_shape, int64_t batch);
// The same as [B, *item_shape] where K is 1 (recurrent loops); NotImplementedError otherwise.
NDArrayView delay_initial_rows(const ComputeContext& ctx, const NDShape& item_shape, int64_t batch);
// The gradient of the initial state's runtime tensor from that of its rows ([B, ...] or [K, B, ...]).
NDArrayView delay_initial_gradient(const ComputeContext& ctx, const NDArrayView& grad_rows);

// Truncated BPTT: a sequence cut into pieces over several minibatches (a reader
// with truncation_length) continues in the next call, where its first item has no
// sequence-begin flag. PastValue starts such a sequence from what its operand held
// at the end of the previous piece of the same sequence (the same batch position,
// as CNTK's parallel sequences), not from the initial state, and no gradient flows
// back into the previous minibatch. The delay function keeps those last items.
struct DelayCarry {
  NDArrayView rows;  // [offset, B, *shape]: the operand's last `offset` items per sequence
  // Per sequence: its rows were not kept (a fused LSTM keeps its cell state only for the
  // sequences that span the whole call); continuing it is a ValueError. Empty: all kept.
  std::vector<char> lost;
};
// The carry the previous call left on delay function `f` (null if none), checked
// against the sequences of this call that continue: ValueError where a continued
// sequence has no previous piece (or its state was lost), NotImplementedError for FutureValue.
// The caller shares ownership: another call may record a new carry meanwhile.
std::shared_ptr<const DelayCarry> delay_carry_in(Function& f, const std::vector<char>* continues, int64_t batch,
                                                 const NDShape& item_shape, DataType dtype);
// Records the last items of operand x ([T, B, *shape], contiguous) of this call on
// f, for a next call that continues the sequences (`init_rows` and the previous
// carry fill in what a piece shorter than the offset lacks).
void delay_carry_out(Function& f, const NDArrayView& x, const NDArrayView& init_rows,
                     const std::vector<int64_t>& lengths, const std::vector<char>* continues,
                     const DelayCarry* previous);

// Writes output steps [t0, t1) of `out` ([T, B, *shape], contiguous): the operand's item
// `offset` steps back (or ahead) within the same sequence, or the initial state where
// that falls outside the sequence; zero past a sequence's end. `init_rows` is the
// initial state broadcast to [B, *shape] or [K, B, *shape] (delay_initial_steps;
// contiguous), of the output's type.
// With `carry`, continued sequences (`continues`) read it instead of the initial state.
void delay_forward_steps(const DelaySpec& d, const NDArrayView& x, const NDArrayView& init_rows,
                         const std::vector<int64_t>& lengths, int64_t t0, int64_t t1, NDArrayView& out,
                         const DelayCarry* carry = nullptr, const std::vector<char>* continues = nullptr);

// Routes the gradient of output steps [t0, t1) back: into `grad_x` ([T, B, *shape],
// contiguous, accumulated) where the operand was read, and into `grad_init_rows`
// ([B, *shape] or [K, B, *shape], contiguous, accumulated) where the initial state was.
// Either may be null.
// Continued sequences (`continues`) send no gradient to the initial state.
void delay_backward_steps(const DelaySpec& d, const NDArrayView& grad_out, const std::vector<int64_t>& lengths,
                          int64_t t0, int64_t t1, NDArrayView* grad_x, NDArrayView* grad_init_rows,
                          const std::vector<char>* continues = nullptr);

// A delay inside a recurrent loop (the executor's Delay instruction): its step kernel,
// run one time step at a time on the loop's [T, B, *shape] buffers, with the initial
// state's rows and the carry of continued sequences fixed for the pass.
class DelayLoopStep {
 public:
  // `ctx`: the delay's context (input 1 is its initial state); `item_shape` and `dtype`:
  // its output's; a loop over `lengths.size()` sequences of these lengths, `continues`
  // (may be null) saying which continue one of the previous call.
  DelayLoopStep(const ComputeContext& ctx, const NDShape& item_shape, DataType dtype,
                const std::vector<int64_t>& lengths, const std::vector<char>* continues);
  // Output step t of `out` from operand `x` (both [T, B, *shape]).
  void forward(const NDArrayView& x, int64_t t, NDArrayView& out) const;
  // After the last time step: records what a next call continuing these sequences starts from.
  void finish(const NDArrayView& x) const;

 private:
  Function& fn_;
  DelaySpec spec_;
  const std::vector<int64_t>& lengths_;
  const std::vector<char>* continues_;
  NDArrayView init_rows_;
  std::shared_ptr<const DelayCarry> carry_;
};

// The gradient side of a DelayLoopStep: time steps in reverse, then the initial state's.
class DelayLoopGradient {
 public:
  // `want_init`: the initial state's gradient is asked for; `out` is the delay's output [T, B, *shape].
  DelayLoopGradient(const Function& f, const NDArrayView& out, bool want_init, const std::vector<int64_t>& lengths,
                    const std::vector<char>* continues);
  // Routes step t of `grad_out` into `grad_x` (may be null; accumulated) and the initial state's rows.
  void backward(const NDArrayView& grad_out, int64_t t, NDArrayView* grad_x);
  // The initial state's gradient (input 1 of `ctx`), undefined when not asked for.
  NDArrayView initial_gradient(const ComputeContext& ctx) const;

 private:
  DelaySpec spec_;
  const std::vector<int64_t>& lengths_;
  const std::vector<char>* continues_;
  NDArrayView init_grad_;
};

}  // namespace cntk
