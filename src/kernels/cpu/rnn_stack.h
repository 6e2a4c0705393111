// The kernel of OptimizedRNNStack: a stack of LSTM, GRU or plain RNN layers, each one-
// or two-directional, over time-major sequences of different lengths, with all weights
// in one flat vector in the packed layout CNTK's cuDNN path uses. float32 runs on
// oneDNN's RNN primitives (rnn.h) after repacking the weights, unless the environment
// sets CNTK_RNN_FUSION=0; float64 (and that case) runs on reference loops.
//
// Weight layout (the flat vector is the parameter's memory):
//   matrices, for each layer l, for each direction d (forward first):
//     W  [G*H, I_l]  input weights, gate blocks of H rows stacked in the cell's gate order
//     R  [G*H, H]    recurrent weights, same gate order
//   then biases, for each layer l, for each direction d:
//     bW [G*H], bR [G*H]  (cuDNN keeps two bias vectors; for LSTM and plain RNNs only
//                          their sum matters, for GRU bR's candidate part is gated by r)
// where H is the hidden size, I_0 the input size, I_l = D*H above (D directions) and G the
// number of gates: LSTM 4 (i, f, g, o), GRU 3 (r, z, n), RNN 1.
//
// Equations (cuDNN's): LSTM  c = f*c' + i*g,  h = o*tanh(c)  (i, f, o sigmoid; g tanh);
// GRU  r, z sigmoid,  n = tanh(W_n x + bW_n + r*(R_n h' + bR_n)),  h = (1-z)*n + z*h';
// RNN  h = act(W x + R h' + bW + bR) with tanh or relu. States start at zero; the
// right-to-left direction runs over each sequence's own valid steps, last to first.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cntk/tensor.h"
#include "kernels/cpu/rnn.h"

namespace cntk::kernels {

// The cell named by CNTK's recurrentOp attribute: "lstm" (Lstm), "gru" (LbrGru: cuDNN's
// GRU is oneDNN's linear-before-reset GRU), "rnnTanh", "rnnReLU"; ValueError naming the
// accepted values otherwise.
RnnCell rnn_cell_from_name(const std::string& name);

struct RnnStackDims {
  RnnCell cell = RnnCell::Lstm;
  int64_t input_size = 0;
  int64_t hidden = 0;
  int64_t layers = 1;
  bool bidirectional = false;

  int64_t gates() const { return cell == RnnCell::Lstm ? 4 : cell == RnnCell::LbrGru ? 3 : 1; }
  int64_t dirs() const { return bidirectional ? 2 : 1; }
  int64_t layer_input(int64_t l) const { return l == 0 ? input_size : dirs() * hidden; }
  int64_t output_size() const { return dirs() * hidden; }
  // Total number of weights (matrices and both bias vectors of every layer and direction).
  int64_t weight_count() const;
};

// Where one layer-direction's blocks start in the flat weight vector.
struct RnnBlockOffsets {
  int64_t w, r, bw, br;
};
RnnBlockOffsets rnn_block_offsets(const RnnStackDims& d, int64_t layer, int64_t dir);

// What forward keeps for backward (opaque to callers).
struct RnnStackTape;

// Each sequence's final states: h (and c for LSTM) of every layer and direction after
// that unit's last step of the sequence (the forward direction's state after the
// sequence's last item, the backward direction's after its first), [B, L*D, H] with
// index l*D + d; zero for an empty sequence.
struct RnnStackFinal {
  NDArrayView h, c;  // c: LSTM only
};

// x: [T, B, I] dense (any strides), lengths: one per sequence (<= T; empty = all T),
// weights: weight_count() elements. Returns y [T, B, D*H] with zeros at padded steps.
// When `tape` is non-null, it receives what backward needs; when `final_states` is
// non-null, it receives the final states. oneDNN's dst_iter is the state after step T-1
// of the padded batch, not after each sequence's own last step: float32 with final
// states runs on oneDNN one layer per call and reads each final h from its layer's
// output (GRU and plain RNNs); an LSTM's final c is no output, so an LSTM with final
// states runs on the reference loops.
NDArrayView rnn_stack_forward(const RnnStackDims& d, const NDArrayView& x, const std::vector<int64_t>& lengths,
                              const NDArrayView& weights, std::shared_ptr<RnnStackTape>* tape,
                              RnnStackFinal* final_states = nullptr);

struct RnnStackGrads {
  NDArrayView dx;  // [T, B, I]
  NDArrayView dw;  // same shape as the weights
};

// Gradients given dy [T, B, D*H] (values at padded steps are ignored) and the tape of the
// forward pass over the same x, lengths and weights; `d_final` (optional, [B, L*D, H]
// each, c for LSTM only) are the gradients of the final states, which needs a tape of
// a forward that returned them.
RnnStackGrads rnn_stack_backward(const RnnStackDims& d, const NDArrayView& x, const std::vector<int64_t>& lengths,
                                 const NDArrayView& weights, const NDArrayView& dy, const RnnStackTape& tape,
                                 const RnnStackFinal* d_final = nullptr);

}  // namespace cntk::kernels
