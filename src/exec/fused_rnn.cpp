#include "exec/fused_rnn.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>

#include "cntk/evaluation.h"
#include "cntk/switches.h"
#include "kernels/cpu/rnn.h"
#include "ops/sequence_delay.h"

namespace cntk {

namespace {

void visit_functions(const FunctionPtr& root, const std::function<void(const FunctionPtr&)>& fn) {
  std::unordered_set<const Function*> seen;
  std::vector<FunctionPtr> stack{root};
  while (!stack.empty()) {
    FunctionPtr g = stack.back();
    stack.pop_back();
    if (!g || !seen.insert(g.get()).second) continue;
    if (g->is_composite()) {  // a wrapper: its root is the graph
      stack.push_back(g->root_function());
      continue;
    }
    fn(g);
    for (auto& in : g->direct_inputs())
      if (in.is_output()) stack.push_back(in.owner());
    if (g->is_block()) stack.push_back(g->block_root());
  }
}

}  // namespace

VariableUses count_variable_uses(const FunctionPtr& root, const std::vector<Variable>& outputs) {
  VariableUses uses;
  for (auto& o : outputs) ++uses[o.get()];
  visit_functions(root, [&](const FunctionPtr& g) {
    for (auto& in : g->direct_inputs()) ++uses[in.get()];  // a block's include its arguments
  });
  return uses;
}

namespace {

using kernels::RnnCell;

// Input positions of a fused step.
struct FusedLayout {
  RnnCell cell;
  bool backward_in_time;
  int w = 1, h = 2, h1 = -1, b = 3, h0 = 4, c0 = -1;
};

FusedLayout layout_of(RnnCell cell, bool backward_in_time) {
  FusedLayout l{cell, backward_in_time};
  if (cell == RnnCell::Gru) {
    l.h1 = 3;
    l.b = 4;
    l.h0 = 5;
  }
  if (cell == RnnCell::Lstm) l.c0 = 5;
  return l;
}

// The initial state input k as the delay kernels read it: [B, hidden] rows.
ComputeContext initial_state_context(const ComputeContext& ctx, int k) {
  ComputeContext sub;
  sub.fn = ctx.fn;
  sub.attrs = ctx.attrs;
  sub.inputs = {ctx.inputs[0], ctx.inputs[size_t(k)]};
  sub.in_dyn = {ctx.in_dyn[0], ctx.in_dyn[size_t(k)]};
  sub.in_axes = {ctx.in_axes[0], ctx.in_axes[size_t(k)]};
  sub.in_lengths = {ctx.in_lengths[0], ctx.in_lengths[size_t(k)]};
  sub.out_axes = ctx.out_axes;
  sub.out_dyn = ctx.out_dyn;
  return sub;
}

std::vector<float> to_vector(const NDArrayView& v) {
  NDArrayView c = v.contiguous();
  const float* p = c.data<float>();
  return std::vector<float>(p, p + c.numel());
}

// CNTK's weights in oneDNN's layouts (rnn.h).
struct FusedWeights {
  std::vector<float> wx, wh, bias;
};

FusedWeights to_fused(const FusedLayout& l, const ComputeContext& ctx, int64_t C, int64_t H) {
  FusedWeights w;
  auto view = [&](int i) { return ctx.inputs[size_t(i)].contiguous(); };  // no copy when contiguous
  auto copy = [&](int i) { return to_vector(ctx.inputs[size_t(i)]); };
  switch (l.cell) {
    case RnnCell::Lstm: {  // the gates reordered straight from the parameters
      auto permuted = [&](int i, std::vector<float>& out, int64_t rows) {
        NDArrayView v = view(i);
        out.resize(size_t(v.numel()));
        kernels::lstm_gates_cntk_to_fused(v.data<float>(), out.data(), rows, H);
      };
      permuted(l.w, w.wx, C);
      permuted(l.h, w.wh, H);
      permuted(l.b, w.bias, 1);
      break;
    }
    case RnnCell::Gru: {
      w.wx = copy(l.w);
      w.bias = copy(l.b);
      NDArrayView Hm = view(l.h), H1 = view(l.h1);
      w.wh.resize(size_t(H * 3 * H));
      kernels::gru_iter_cntk_to_fused(Hm.data<float>(), H1.data<float>(), w.wh.data(), H);
      break;
    }
    default:
      w.wx = copy(l.w);
      w.wh = copy(l.h);
      w.bias = copy(l.b);
  }
  return w;
}

// The weights in oneDNN's layouts, kept on the step block between calls and converted
// again only when a parameter's value changes: its value_version (bumped by learners,
// set_value and checkpoint restores), its storage, or user_write_epoch() (a value written
// in place through a bare NDArrayView handle, e.g. copy_from on `p.data`, bumps no version).
struct WeightCache {
  std::mutex mu;
  bool searched = false;
  std::map<int, Variable> params;                        // input position -> the block's parameter bound there
  std::map<int, std::pair<const void*, uint64_t>> seen;  // input position -> (data, version) converted
  uint64_t epoch = 0;                                    // user_write_epoch() when converted
  std::shared_ptr<const FusedWeights> weights;
};

// The weights of a fusable step block, found from its wiring (match_cell below).
struct CellMatch {
  RnnCell cell = RnnCell::RnnTanh;
  Variable W, H, H1, b;  // H1: GRU only
};
bool match_cell(const FunctionPtr& f, CellMatch& m, std::string& why);

std::shared_ptr<const FusedWeights> fused_weights(const FusedLayout& l, const ComputeContext& ctx, int64_t C,
                                                  int64_t H) {
  auto cache = ctx.fn->op_state_or<WeightCache>([] { return std::make_shared<WeightCache>(); });
  std::lock_guard<std::mutex> lock(cache->mu);
  std::vector<int> positions{l.w, l.h, l.b};
  if (l.h1 >= 0) positions.push_back(l.h1);
  if (!cache->searched) {
    cache->searched = true;
    CellMatch cm;
    std::string why;
    if (match_cell(ctx.fn->shared_from_this(), cm, why)) {
      cache->params[l.w] = cm.W;
      cache->params[l.h] = cm.H;
      cache->params[l.b] = cm.b;
      if (l.h1 >= 0) cache->params[l.h1] = cm.H1;
    }
  }
  // Usable when every input is its parameter's own value, unchanged since converted.
  const uint64_t epoch = user_write_epoch();
  bool fresh = cache->weights != nullptr && cache->epoch == epoch, known = true;
  std::map<int, std::pair<const void*, uint64_t>> now;
  for (int i : positions) {
    auto it = cache->params.find(i);
    const NDArrayView& in = ctx.inputs[size_t(i)];
    if (it == cache->params.end() || in.is_sparse() || !in.is_contiguous() || !it->second.impl()->value.defined() ||
        !it->second.impl()->value.same_storage(in) || it->second.impl()->value.offset() != in.offset()) {
      known = false;
      break;
    }
    now[i] = {in.data<float>(), it->second.impl()->value_version};
    auto seen = cache->seen.find(i);
    fresh = fresh && seen != cache->seen.end() && seen->second == now[i];
  }
  if (known && fresh) return cache->weights;
  auto w = std::make_shared<const FusedWeights>(to_fused(l, ctx, C, H));
  if (known) {
    cache->weights = w;
    cache->seen = std::move(now);
    cache->epoch = epoch;
  }
  return w;
}

struct FusedState {
  std::shared_ptr<kernels::RnnSaved> saved;
  kernels::RnnDims dims;
};

kernels::RnnDims dims_of(const FusedLayout& l, const ComputeContext& ctx) {
  const NDArrayView& x = ctx.inputs[0];
  kernels::RnnDims d;
  d.cell = l.cell;
  d.direction = l.backward_in_time ? kernels::RnnDirection::Backward : kernels::RnnDirection::Forward;
  d.steps = x.shape()[0];
  d.batch = x.shape()[1];
  d.input = x.shape().sub(2).total_size();
  d.hidden = ctx.inputs[size_t(l.b)].numel() / kernels::rnn_gates(l.cell);
  return d;
}

bool continues_at(const ComputeContext& ctx, int64_t b) {
  return ctx.continues && b < int64_t(ctx.continues->size()) && (*ctx.continues)[size_t(b)];
}

// The delay function feeding state k (h, then c for LSTM) into the step block: the
// state across minibatches (truncated BPTT) is kept on it, as the step-by-step loops do.
Function& state_delay(const ComputeContext& ctx, size_t k) {
  return *ctx.fn->block_arguments_mapping()[k].second.owner();
}

// The initial state rows [B, H] of state k: the carried rows for sequences that
// continue from the previous call (truncated BPTT), else the delay's initial state.
NDArrayView state_rows(const FusedLayout& l, ComputeContext& ctx, size_t k, int64_t B, int64_t H) {
  NDArrayView rows = delay_initial_rows(initial_state_context(ctx, k == 0 ? l.h0 : l.c0), NDShape{H}, B);
  Function& delay = state_delay(ctx, k);
  auto carry = delay_carry_in(delay, ctx.continues, B, NDShape{H}, DataType::Float);
  if (!carry) return rows.contiguous();
  rows = rows.copy();  // not the initial state's own storage
  float* r = rows.data<float>();
  NDArrayView carried = carry->rows.contiguous();
  const float* c = carried.data<float>();
  for (int64_t b = 0; b < B; ++b)
    if (continues_at(ctx, b)) std::copy(c + b * H, c + (b + 1) * H, r + b * H);
  return rows;
}

// What a next call continuing these sequences starts from (forward in time only):
// h after each sequence's last step is its output there; c is oneDNN's final state,
// which is each sequence's own only where it spans all T steps. A sequence cut by a
// reader's truncation_length continues only when its piece had the full length, so
// the others' c is marked lost (continuing them is a clear error, see DelayCarry).
void carry_out(const FusedLayout& l, ComputeContext& ctx, const kernels::RnnDims& d, const std::vector<int64_t>& len,
               const NDArrayView& y, const NDArrayView& h0, const NDArrayView& c0, const float* c_final) {
  if (l.backward_in_time) return;
  const int64_t T = d.steps, B = d.batch, H = d.hidden;
  auto h = std::make_shared<DelayCarry>();
  h->rows = NDArrayView(DataType::Float, NDShape{1, B, H});
  std::shared_ptr<DelayCarry> c;
  if (c_final) {
    c = std::make_shared<DelayCarry>();
    c->rows = NDArrayView(DataType::Float, NDShape{1, B, H});
  }
  const float* ys = y.data<float>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = len.empty() ? T : len[size_t(b)];
    const float* hs = L > 0 ? ys + ((L - 1) * B + b) * H : h0.data<float>() + b * H;
    std::copy(hs, hs + H, h->rows.data<float>() + b * H);
    if (!c) continue;
    const float* cs = L == T ? c_final + b * H : c0.data<float>() + b * H;
    if (L > 0 && L < T) {
      if (c->lost.empty()) c->lost.assign(size_t(B), 0);
      c->lost[size_t(b)] = 1;
    }
    std::copy(cs, cs + H, c->rows.data<float>() + b * H);
  }
  state_delay(ctx, 0).set_op_state(std::move(h));
  if (c) state_delay(ctx, 1).set_op_state(std::move(c));
}

// The op reads its input sequence sparse (a one-hot sequence, say: the kernels gather its
// rows); every other input is made dense here, as the executor does for other ops.
void densify_all_but_sequence(ComputeContext& ctx) {
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (ctx.inputs[i].is_sparse()) ctx.inputs[i] = ctx.inputs[i].to_dense();
}

std::vector<NDArrayView> fused_forward(const FusedLayout& l, ComputeContext& ctx) {
  densify_all_but_sequence(ctx);
  const kernels::RnnDims d = dims_of(l, ctx);
  NDArrayView x = ctx.inputs[0].contiguous();
  if (x.is_sparse() &&
      (x.dtype() != DataType::Float || int64_t(x.sparse_data().starts.size()) != d.steps * d.batch + 1))
    x = x.to_dense().cast(DataType::Float);
  const int64_t H = d.hidden, B = d.batch;
  std::shared_ptr<const FusedWeights> w = fused_weights(l, ctx, d.input, H);
  NDArrayView h0 = state_rows(l, ctx, 0, B, H);
  NDArrayView c0;
  if (l.c0 >= 0) c0 = state_rows(l, ctx, 1, B, H);
  NDArrayView y(DataType::Float, NDShape{d.steps, B, H});
  std::vector<float> c_final(l.c0 >= 0 && !l.backward_in_time ? size_t(B * H) : 0);
  kernels::RnnForwardArgs a;
  if (x.is_sparse()) {
    const SparseCSC& sp = x.sparse_data();
    a.x_sparse = {sp.starts.data(), sp.indices.data(), static_cast<const float*>(sp.values->data())};
  } else {
    a.x = x.data<float>();
  }
  const auto& len = ctx.in_lengths[0];
  a.lengths = len.empty() ? nullptr : len.data();
  a.weights = {{w->wx.data(), w->wh.data(), w->bias.data()}};
  a.h0 = h0.data<float>();
  a.c0 = c0.defined() ? c0.data<float>() : nullptr;
  a.y = y.data<float>();
  a.c_final = c_final.empty() ? nullptr : c_final.data();
  a.training = ctx.training;
  a.keep = w;  // the converted weights are never changed, only replaced (fused_weights)
  auto saved = kernels::rnn_forward(d, a);
  carry_out(l, ctx, d, len, y, h0, c0, a.c_final);
  if (ctx.training) ctx.state = std::make_shared<FusedState>(FusedState{saved, d});
  return {y};
}

// Every input's gradient at once (kept in ctx.scratch for the calls that follow).
std::vector<NDArrayView> fused_gradients(const FusedLayout& l, ComputeContext& ctx) {
  if (!ctx.state) throw Error("fused recurrence: backward without a training forward pass");
  densify_all_but_sequence(ctx);
  const auto& st = *std::static_pointer_cast<FusedState>(ctx.state);
  const kernels::RnnDims& d = st.dims;
  const int64_t T = d.steps, B = d.batch, C = d.input, H = d.hidden;
  const int64_t G = kernels::rnn_gates(d.cell);
  NDArrayView dy = ctx.grad_outputs[0].contiguous();
  if (dy.dtype() != DataType::Float) dy = dy.cast(DataType::Float);
  auto param_grad = [&](int i) { return NDArrayView(DataType::Float, ctx.inputs[size_t(i)].shape()); };
  // The kernel writes the weight gradients in oneDNN's gate order: straight into the
  // parameters' gradients where that is CNTK's order too, converted below where not.
  const bool lstm = d.cell == RnnCell::Lstm, gru = d.cell == RnnCell::Gru;
  NDArrayView gwx = param_grad(l.w), gb = param_grad(l.b);
  NDArrayView gwh = gru ? NDArrayView(DataType::Float, NDShape{H * G * H}) : param_grad(l.h);
  // No input gradient where nobody asks for it (a one-hot input, say).
  const bool want_dx = ctx.grad_wanted.empty() || ctx.grad_wanted[0];
  NDArrayView dx;
  if (want_dx) dx = NDArrayView(DataType::Float, NDShape{T, B}.concat(ctx.inputs[0].shape().sub(2)));
  NDArrayView dh0(DataType::Float, NDShape{B, H}), dc0;
  kernels::RnnBackwardArgs a;
  a.dy = dy.data<float>();
  a.grads = {{gwx.data<float>(), gwh.data<float>(), gb.data<float>()}};
  a.dx = want_dx ? dx.data<float>() : nullptr;
  a.dh0 = dh0.data<float>();
  if (l.c0 >= 0) {
    dc0 = NDArrayView(DataType::Float, NDShape{B, H});
    a.dc0 = dc0.data<float>();
  }
  kernels::rnn_backward(d, *st.saved, a);
  std::vector<NDArrayView> g(ctx.inputs.size());
  g[0] = dx;
  g[size_t(l.w)] = gwx, g[size_t(l.h)] = gwh, g[size_t(l.b)] = gb;
  if (lstm) {
    auto cntk_gates = [&](int i, const NDArrayView& v, int64_t rows) {
      g[size_t(i)] = param_grad(i);
      kernels::lstm_gates_fused_to_cntk(v.data<float>(), g[size_t(i)].data<float>(), rows, H);
    };
    cntk_gates(l.w, gwx, C);
    cntk_gates(l.h, gwh, H);
    cntk_gates(l.b, gb, 1);
  } else if (gru) {
    g[size_t(l.h)] = param_grad(l.h);
    g[size_t(l.h1)] = param_grad(l.h1);
    kernels::gru_iter_fused_to_cntk(gwh.data<float>(), g[size_t(l.h)].data<float>(), g[size_t(l.h1)].data<float>(), H);
  }
  // A continued sequence started from the previous call's state: no gradient flows
  // back into the previous minibatch, nor into the initial state.
  for (int64_t b = 0; b < B; ++b)
    if (continues_at(ctx, b)) {
      std::fill(dh0.data<float>() + b * H, dh0.data<float>() + (b + 1) * H, 0.f);
      if (dc0.defined()) std::fill(dc0.data<float>() + b * H, dc0.data<float>() + (b + 1) * H, 0.f);
    }
  g[size_t(l.h0)] = delay_initial_gradient(initial_state_context(ctx, l.h0), dh0);
  if (l.c0 >= 0) g[size_t(l.c0)] = delay_initial_gradient(initial_state_context(ctx, l.c0), dc0);
  return g;
}

struct FusedOps {
  std::map<std::pair<int, bool>, OpDef> ops;
  FusedOps() {
    for (RnnCell cell : {RnnCell::Lstm, RnnCell::Gru, RnnCell::RnnTanh, RnnCell::RnnRelu, RnnCell::RnnSigmoid})
      for (bool back : {false, true}) {
        const FusedLayout l = layout_of(cell, back);
        OpDef def;
        def.name = "FusedRecurrence";
        def.infer = [](InferContext& ctx) -> std::vector<OutputInfo> {
          ctx.fail("a fused recurrence is a plan step, not a graph node");
        };
        def.sparse_inputs = true;  // densify_all_but_sequence
        def.forward = [l](ComputeContext& ctx) { return fused_forward(l, ctx); };
        def.backward = [l](ComputeContext& ctx, size_t i) {
          if (!ctx.scratch) ctx.scratch = std::make_shared<std::vector<NDArrayView>>(fused_gradients(l, ctx));
          return (*std::static_pointer_cast<std::vector<NDArrayView>>(ctx.scratch))[i];
        };
        ops.emplace(std::make_pair(int(cell), back), std::move(def));
      }
  }
};

const FusedOps& fused_ops() {
  static const FusedOps* f = new FusedOps();  // never destroyed: plans may outlive static teardown
  return *f;
}

// Structural matching. A step block fuses when its inner graph computes exactly the
// cell oneDNN computes, read from its wiring: which variable feeds which input of which
// op, the gates' slices of the stacked projections, the activations, the constants and
// the weights' shapes. Names (of ops' instances, of parameters) play no part, so a block
// wired otherwise (gates in another order, another reset wiring, peepholes, a
// projection, self-stabilization) is not mistaken for the cell and runs step by step.
// Looked through: a one-input Combine and a block that passes its argument through
// (the Stabilizer of a layer built without self-stabilization).
Variable resolve(Variable v) {
  for (int depth = 0; depth < 64 && v.is_output(); ++depth) {
    FunctionPtr g = v.owner();
    if (!g) break;
    if (!g->is_block() && !g->is_composite() && g->op_name() == "Combine" && g->direct_inputs().size() == 1) {
      v = g->direct_inputs()[0];
      continue;
    }
    if (!g->is_block() || g->outputs().size() != 1) break;
    Variable inner = resolve(g->block_root()->outputs()[0]);
    const Variable* outer = nullptr;
    for (auto& [ph, arg] : g->block_arguments_mapping())
      if (inner.is_placeholder() && ph.get() == inner.get()) outer = &arg;
    if (!outer) break;
    v = *outer;
  }
  return v;
}

bool same(const Variable& a, const Variable& b) { return resolve(a).get() == resolve(b).get(); }

// The primitive function computing v if its op is `op` with `arity` inputs, else null.
Function* node(const Variable& v, const char* op, size_t arity) {
  Variable r = resolve(v);
  if (!r.is_output()) return nullptr;
  FunctionPtr g = r.owner();
  if (!g || g->is_block() || g->is_composite() || g->op_name() != op || g->direct_inputs().size() != arity)
    return nullptr;
  return g.get();
}

const Variable& in(Function* f, size_t i) { return f->direct_inputs()[i]; }

// A commutative binary op (Plus, ElementTimes) whose operands satisfy `a` and `b` in
// either order.
template <class A, class B>
bool commutative(const Variable& v, const char* op, A&& a, B&& b) {
  Function* f = node(v, op, 2);
  return f && ((a(in(f, 0)) && b(in(f, 1))) || (a(in(f, 1)) && b(in(f, 0))));
}

// The operands of a tree of Plus nodes.
void sum_terms(const Variable& v, std::vector<Variable>& terms) {
  if (Function* f = node(v, "Plus", 2)) {
    sum_terms(in(f, 0), terms);
    sum_terms(in(f, 1), terms);
  } else {
    terms.push_back(resolve(v));
  }
}

// A weight of exactly `shape`: a parameter or constant without dynamic axes.
bool weight(const Variable& v, const NDShape& shape, Variable* out = nullptr) {
  Variable r = resolve(v);
  if (!(r.is_parameter() || r.is_constant()) || !r.dynamic_axes().empty() || r.shape() != shape) return false;
  if (out) *out = r;
  return true;
}

// Times(x, w) of a vector x by a weight of shape `shape` into a vector (outputRank 1).
bool product(const Variable& v, const Variable& x, const NDShape& shape, Variable* w) {
  Function* f = node(v, "Times", 2);
  return f && same(in(f, 0), x) && schema_attr_int(*f, "outputRank") == 1 && weight(in(f, 1), shape, w) &&
         resolve(v).shape() == NDShape{shape[1]};
}

// The sum b + x W + h H (in any order and grouping) of the stacked projections.
bool projections(const Variable& v, const Variable& x, const Variable& h, int64_t C, int64_t Hd, int64_t gx, int64_t gh,
                 CellMatch& m, bool with_h) {
  std::vector<Variable> terms;
  sum_terms(v, terms);
  if (terms.size() != (with_h ? 3u : 2u)) return false;
  bool got_b = false, got_w = false, got_h = false;
  for (auto& t : terms) {
    if (!got_b && weight(t, NDShape{gx * Hd}, &m.b))
      got_b = true;
    else if (!got_w && product(t, x, NDShape{C, gx * Hd}, &m.W))
      got_w = true;
    else if (with_h && !got_h && product(t, h, NDShape{Hd, gh * Hd}, &m.H))
      got_h = true;
    else
      return false;
  }
  return got_b && got_w && (got_h || !with_h);
}

// Slice k (of size Hd) along the only static axis of the stacked projections `src`.
bool gate(const Variable& v, const Variable& src, int64_t k, int64_t Hd) {
  Function* f = node(v, "Slice", 1);
  if (!f || !same(in(f, 0), src)) return false;
  const Dictionary& a = f->attributes();
  if (a.count("axisVec") || !a.count("axis") || !a.count("beginIndex") || !a.count("endIndex")) return false;
  const Axis& axis = schema_attr(f->op(), f->op_name(), a, "axis").as_axis();
  const int64_t n = resolve(src).shape().rank() == 1 ? resolve(src).shape()[0] : -1;
  // The only static axis: 0, or -1 counted from the end (NumPy order).
  if (!axis.is_static() || (axis.static_index() != 0 && axis.static_index() != -1) || n < 0 ||
      schema_attr_int(*f, "sliceStrides") != 1)
    return false;
  int64_t b = schema_attr_int(*f, "beginIndex"), e = schema_attr_int(*f, "endIndex");
  if (b < 0) b += n;
  if (e <= 0) e += n;
  return b == k * Hd && e == (k + 1) * Hd;
}

bool unary(const Variable& v, const char* op, const std::function<bool(const Variable&)>& arg) {
  Function* f = node(v, op, 1);
  return f && arg(in(f, 0));
}

bool ones(const Variable& v) {
  Variable r = resolve(v);
  if (!r.is_constant() || !r.dynamic_axes().empty() || r.shape().total_size() != 1) return false;
  return r.value().item() == 1.0;
}

// LSTM without peepholes, self-stabilization or projection, tanh activations, CNTK's gate
// order in the stacked projection P = b + x W + h H: input, cell input, forget, output.
//   c = sigmoid(P[2]) * c' + sigmoid(P[0]) * tanh(P[1]);  h = sigmoid(P[3]) * tanh(c)
bool match_lstm(const Variable& h_out, const Variable& c_out, const Variable& dh, const Variable& dc, const Variable& x,
                int64_t C, int64_t Hd, CellMatch& m) {
  Function* ct = node(c_out, "Plus", 2);
  if (!ct) return false;
  // P is whatever the output gate slices: every gate must slice that same sum.
  Variable P;
  auto output_gate = [&](const Variable& s) {
    Function* sig = node(s, "StableSigmoid", 1);
    Function* sl = sig ? node(in(sig, 0), "Slice", 1) : nullptr;
    if (!sl) return false;
    P = resolve(in(sl, 0));
    return gate(in(sig, 0), P, 3, Hd);
  };
  auto tanh_c = [&](const Variable& t) { return unary(t, "Tanh", [&](const Variable& a) { return same(a, c_out); }); };
  if (!commutative(h_out, "ElementTimes", output_gate, tanh_c)) return false;
  auto sig_gate = [&](int64_t k) {
    return [&, k](const Variable& s) {
      return unary(s, "StableSigmoid", [&](const Variable& a) { return gate(a, P, k, Hd); });
    };
  };
  auto tanh_gate = [&](const Variable& t) {
    return unary(t, "Tanh", [&](const Variable& a) { return gate(a, P, 1, Hd); });
  };
  auto is_dc = [&](const Variable& v) { return same(v, dc); };
  auto forget = [&](const Variable& v) { return commutative(v, "ElementTimes", sig_gate(2), is_dc); };
  auto input = [&](const Variable& v) { return commutative(v, "ElementTimes", sig_gate(0), tanh_gate); };
  if (!commutative(c_out, "Plus", forget, input)) return false;
  m.cell = RnnCell::Lstm;
  return projections(P, x, dh, C, Hd, 4, 4, m, true);
}

// GRU without self-stabilization or projection, tanh candidate, CNTK's wiring (the reset
// gate scales h before H1, as oneDNN's GRU does), Px = b + x W, Ph = h H:
//   z = sigmoid(Px[0] + Ph[0]);  r = sigmoid(Px[1] + Ph[1]);  c = tanh(Px[2] + (h * r) H1)
//   h' = (1 - z) * c + z * h
bool match_gru(const Variable& h_out, const Variable& dh, const Variable& x, int64_t C, int64_t Hd, CellMatch& m) {
  Variable Z, Px, Ph;
  auto is_dh = [&](const Variable& v) { return same(v, dh); };
  // The update gate z, which also fixes Px and Ph (its two slices).
  auto gate_sum = [&](const Variable& v, int64_t k) {
    return unary(v, "StableSigmoid", [&](const Variable& s) {
      Function* p = node(s, "Plus", 2);
      if (!p) return false;
      for (int side = 0; side < 2; ++side) {
        Function* sx = node(in(p, size_t(side)), "Slice", 1);
        Function* sh = node(in(p, size_t(1 - side)), "Slice", 1);
        if (!sx || !sh) continue;
        if (k == 0) {
          Px = resolve(in(sx, 0));
          Ph = resolve(in(sh, 0));
        }
        if (gate(in(p, size_t(side)), Px, k, Hd) && gate(in(p, size_t(1 - side)), Ph, k, Hd)) return true;
      }
      return false;
    });
  };
  auto update = [&](const Variable& v) {
    if (!gate_sum(v, 0)) return false;
    Z = resolve(v);
    return true;
  };
  auto keep = [&](const Variable& v) {
    return commutative(
        v, "ElementTimes", [&](const Variable& z) { return same(z, Z); }, is_dh);
  };
  auto candidate = [&](const Variable& c) {
    return unary(c, "Tanh", [&](const Variable& s) {
      return commutative(
          s, "Plus", [&](const Variable& g) { return gate(g, Px, 2, Hd); },
          [&](const Variable& t) {
            Function* f = node(t, "Times", 2);
            return f && schema_attr_int(*f, "outputRank") == 1 &&
                   commutative(in(f, 0), "ElementTimes", is_dh, [&](const Variable& r) { return gate_sum(r, 1); }) &&
                   weight(in(f, 1), NDShape{Hd, Hd}, &m.H1);
          });
    });
  };
  auto one_minus_z = [&](const Variable& v) {
    Function* f = node(v, "Minus", 2);
    return f && ones(in(f, 0)) && same(in(f, 1), Z);
  };
  auto blend = [&](const Variable& v) { return commutative(v, "ElementTimes", one_minus_z, candidate); };
  // z first: (1 - z) refers to it.
  Function* top = node(h_out, "Plus", 2);
  if (!top) return false;
  bool ok = false;
  for (int side = 0; side < 2 && !ok; ++side) {
    Function* k = node(in(top, size_t(side)), "ElementTimes", 2);
    if (!k) continue;
    for (int zs = 0; zs < 2 && !ok; ++zs)
      if (update(in(k, size_t(zs))) && is_dh(in(k, size_t(1 - zs))) && keep(in(top, size_t(side))) &&
          blend(in(top, size_t(1 - side))))
        ok = true;
  }
  if (!ok) return false;
  m.cell = RnnCell::Gru;
  CellMatch px;
  // Px = b + x W; Ph = h H (no bias: CNTK's GRU has one, on Px).
  if (!projections(Px, x, dh, C, Hd, 3, 2, px, false) || !product(Ph, dh, NDShape{Hd, 2 * Hd}, &m.H)) return false;
  m.W = px.W;
  m.b = px.b;
  return true;
}

// RNNStep: h = act(b + x W + h' H) with act tanh, relu or sigmoid.
bool match_rnn(const Variable& h_out, const Variable& dh, const Variable& x, int64_t C, int64_t Hd, CellMatch& m) {
  const std::pair<const char*, RnnCell> acts[] = {
      {"Tanh", RnnCell::RnnTanh}, {"ReLU", RnnCell::RnnRelu}, {"StableSigmoid", RnnCell::RnnSigmoid}};
  for (auto& [op, cell] : acts)
    if (Function* f = node(h_out, op, 1)) {
      m.cell = cell;
      return projections(in(f, 0), x, dh, C, Hd, 1, 1, m, true);
    }
  return false;
}

bool match_cell(const FunctionPtr& f, CellMatch& m, std::string& why) {
  const auto& args = f->block_arguments_mapping();
  auto inner = f->block_root()->outputs();
  const size_t nstates = inner.size();
  if (args.size() != nstates + 1 || inner.size() != nstates) {
    why = "unexpected arguments or outputs";
    return false;
  }
  // The arguments are (h, [c,] x), as the layers bind them; their roles are checked by
  // the wiring below.
  const Variable& x = args[nstates].first;
  const Variable& h = inner[0];
  if (x.shape().rank() != 1 || h.shape().rank() != 1 || x.shape()[0] < 0 || h.shape()[0] < 0) {
    why = "input or state is not a vector";
    return false;
  }
  const int64_t C = x.shape()[0], Hd = h.shape()[0];
  bool ok = false;
  if (nstates == 2)
    ok = inner[1].shape() == h.shape() && match_lstm(h, inner[1], args[0].first, args[1].first, x, C, Hd, m);
  else
    ok = match_gru(h, args[0].first, x, C, Hd, m) || match_rnn(h, args[0].first, x, C, Hd, m);
  if (!ok) why = "the inner graph is not wired as the cell oneDNN computes";
  return ok;
}

bool all_float(const std::vector<Variable>& vs) {
  for (auto& v : vs)
    if (v.dtype() != DataType::Float) return false;
  return true;
}

bool reject(const FunctionPtr& f, const std::string& why) {
  if (rnn_fusion_debug())
    std::fprintf(stderr, "rnn fusion: %s (%s) not fused: %s\n", f->op_name().c_str(), f->uid().c_str(), why.c_str());
  return false;
}

}  // namespace

bool match_fused_rnn(const FunctionPtr& f, const VariableUses& uses, FusedRnnMatch& m, bool any_float) {
  // A candidate is any block whose first argument is a delay of its first output (the
  // step of a recurrence, whatever it is named); its wiring decides (match_cell).
  if (!f->is_block()) return false;
  const auto& args = f->block_arguments_mapping();
  const auto outs = f->outputs();
  const size_t nstates = outs.size();
  if (nstates < 1 || nstates > 2 || args.size() != nstates + 1 || !args[0].second.is_output()) return false;
  if (FunctionPtr d = args[0].second.owner();
      !d || !is_delay_op(d->op()) || d->direct_inputs().empty() || d->direct_inputs()[0].get() != outs[0].get())
    return false;
  auto use_count = [&](const Variable& v) {
    auto it = uses.find(v.get());
    return it == uses.end() ? 0 : it->second;
  };
  // State k is a delay by one step of output k, all in one direction.
  int direction = 0;
  std::vector<Variable> inits;
  for (size_t k = 0; k < nstates; ++k) {
    const Variable& outer = args[k].second;
    if (!outer.is_output()) return reject(f, "state argument is not a delay");
    FunctionPtr dl = outer.owner();
    if (!dl || !is_delay_op(dl->op()) || dl->direct_inputs().size() != 2)
      return reject(f, "state argument is not a delay");
    if (dl->direct_inputs()[0].get() != outs[k].get())
      return reject(f, "state is not a delay of the step's own output");
    DelaySpec ds = delay_spec(*dl);
    if (ds.offset != 1) return reject(f, "delay by more than one step");
    int dir = ds.past ? 1 : -1;
    if (direction != 0 && dir != direction) return reject(f, "delays in two directions");
    direction = dir;
    const Variable& init = dl->direct_inputs()[1];
    if (init.dynamic_axes().size() > 1) return reject(f, "the initial state is a sequence");
    const NDShape& is = init.shape();
    if (is.is_unknown() || is.rank() > 1 || (is.rank() == 1 && is[0] != 1 && is[0] != outs[k].shape()[0]))
      return reject(f, "initial state of shape " + is.str());
    inits.push_back(init);
    // Only h is an output of the fused step: any other use of c keeps the loop.
    if (k > 0 && (use_count(outs[k]) != 1 || use_count(outer) != 1))
      return reject(f, "the cell state is read elsewhere");
  }
  const Variable& x = args[nstates].second;
  const Variable& h = outs[0];
  if (x.dynamic_axes().size() != 2 || x.shape().rank() != 1 || h.shape().rank() != 1)
    return reject(f, "input or state is not a vector sequence");
  if (!(x.dynamic_axes() == h.dynamic_axes())) return reject(f, "input and state have different dynamic axes");
  if (nstates == 2 && outs[1].shape() != h.shape()) return reject(f, "cell_shape differs from shape");
  CellMatch cm;
  std::string why;
  if (!match_cell(f, cm, why)) return reject(f, why);
  const bool gru = cm.cell == RnnCell::Gru;
  m.inputs = {x, cm.W, cm.H};
  if (gru) m.inputs.push_back(cm.H1);
  m.inputs.push_back(cm.b);
  for (auto& i : inits) m.inputs.push_back(i);
  std::vector<Variable> typed = m.inputs;
  typed.push_back(h);
  if (!any_float && !all_float(typed)) return reject(f, "not float32");
  m.op = &fused_ops().ops.at({int(cm.cell), direction < 0});
  m.cell = cm.cell;
  m.backward = direction < 0;
  return true;
}

}  // namespace cntk
