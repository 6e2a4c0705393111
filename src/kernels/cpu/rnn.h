// Fused recurrent layers on oneDNN's RNN primitives (float32): LSTM, GRU (plain and
// linear-before-reset) and vanilla RNNs (tanh, relu, sigmoid), several layers, one
// direction or both (concatenated), over time-major sequences of different lengths.
//
// Data layout (all plain row-major float32, NumPy order):
//   x  [T, B, input]          y  [T, B, D*hidden]   (D = 2 for Bidirectional, else 1)
//   h0, c0, dh0, dc0          [layers*D, B, hidden]  (index layer*D + direction)
// Sequence b holds lengths[b] valid steps (0 <= lengths[b] <= T), stored at t = 0 ..
// lengths[b]-1; the rest is padding. Outputs at padded steps are written as zero, and
// dy at padded steps is ignored (read as zero). Right-to-left runs over each sequence's
// own valid steps: its first step is t = lengths[b]-1 and its initial state h0 enters
// there. Bidirectional concatenates the forward direction's output (first hidden
// features) and the backward direction's (last hidden features); layer l > 0 reads
// layer l-1's concatenated output, so its input size is D*hidden.
//
// Weights of one (layer, direction) in oneDNN's ldigo layout (gate g's block is columns
// g*hidden .. (g+1)*hidden of a row-major [rows, G*hidden] matrix, so x @ w_x gives all
// gates' pre-activations):
//   w_x  [in_l, G, hidden]   in_l = input for layer 0, D*hidden above
//   w_h  [hidden, G, hidden]
//   bias [Gb, hidden]        Gb = G, except LbrGru: 4 (u, r, c~ on the input side, then
//                            the recurrent c~ bias that is added before the reset multiply)
// Gate order (oneDNN's): LSTM i, f, c~, o (G = 4); GRU and LbrGru u, r, c~ (G = 3);
// vanilla RNN one gate. The equations are oneDNN's:
//   LSTM    i,f,o = sigmoid(.), c~ = tanh(.), c = f*c_prev + i*c~, h = o*tanh(c)
//   GRU     u,r = sigmoid(x Wx + h_prev Wh + b); c~ = tanh(x Wx_c + (r*h_prev) Wh_c + b_c);
//           h = u*h_prev + (1-u)*c~                         (CNTK's GRU is exactly this)
//   LbrGru  c~ = tanh(x Wx_c + b_c + r*(h_prev Wh_c + b_c')), rest as GRU (cuDNN's GRU)
//   RNN     h = act(x Wx + h_prev Wh + b)
// CNTK stacks its LSTM gates as i, c~, f, o and its GRU's W as u, r, c~ with H [hidden,
// 2*hidden] (u, r) and H1 [hidden, hidden] (c~) apart: the helpers at the end convert.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace cntk::kernels {

enum class RnnCell { Lstm = 0, Gru = 1, LbrGru = 2, RnnTanh = 3, RnnRelu = 4, RnnSigmoid = 5 };
enum class RnnDirection { Forward = 0, Backward = 1, Bidirectional = 2 };

// Gates per cell (G) and bias rows (Gb), as above.
int rnn_gates(RnnCell cell);
int rnn_bias_gates(RnnCell cell);
inline int rnn_directions(RnnDirection d) { return d == RnnDirection::Bidirectional ? 2 : 1; }
const char* to_string(RnnCell cell);

struct RnnDims {
  RnnCell cell = RnnCell::Lstm;
  RnnDirection direction = RnnDirection::Forward;
  int64_t layers = 1, input = 1, hidden = 1;
  int64_t steps = 1, batch = 1;  // T, B
  int64_t directions() const { return rnn_directions(direction); }
  int64_t layer_input(int64_t layer) const { return layer == 0 ? input : directions() * hidden; }
  int64_t output() const { return directions() * hidden; }
};

// Weights of one (layer, direction); RnnDims-sized as described above.
struct RnnLayerWeights {
  const float* w_x = nullptr;
  const float* w_h = nullptr;
  const float* bias = nullptr;
};
// Gradients of one (layer, direction), same layouts; overwritten (not accumulated).
struct RnnLayerGrads {
  float* w_x = nullptr;
  float* w_h = nullptr;
  float* bias = nullptr;
};

// What the backward pass needs from the forward pass (oneDNN's workspace, each layer's
// inputs and outputs). Opaque; keep it alive from rnn_forward to rnn_backward.
struct RnnSaved;

// Which implementation runs a stack. OneDnn: oneDNN's RNN primitives (every cell).
// Steps: OpenCNTK's own step-by-step LSTM (lstm_steps.cpp; LSTM only, float32): per step
// one product h_prev x w_h and the cell's elementwise math in one pass; the input side
// as one product over all steps, or as a row gather for sparse inputs, and no input
// gradient where none is asked for. Auto: Steps for LSTMs unless the bfloat16 math mode
// is active or lstm_steps_enabled() is off (cntk/switches.h), OneDnn otherwise. Both
// compute the equations above; the backward pass runs on the forward pass's choice.
enum class RnnKernel { Auto = 0, OneDnn = 1, Steps = 2 };

// x as sparse rows (one-hot inputs): row r = t*B + b of the [T*B, input] matrix holds the
// entries indices[starts[r] .. starts[r+1]) with their values (SparseCSC's form).
struct RnnSparseRows {
  const int64_t* starts = nullptr;  // T*B + 1 offsets
  const int64_t* indices = nullptr;
  const float* values = nullptr;
};

struct RnnForwardArgs {
  const float* x = nullptr;  // [T, B, input]
  RnnSparseRows x_sparse;    // used instead of x when x is nullptr and starts is given
  RnnKernel kernel = RnnKernel::Auto;
  const int64_t* lengths = nullptr;      // [B]; nullptr: every sequence has T steps
  std::vector<RnnLayerWeights> weights;  // layers*D entries, index layer*D + direction
  const float* h0 = nullptr;             // [layers*D, B, hidden]; nullptr: zero
  const float* c0 = nullptr;             // LSTM only; nullptr: zero
  float* y = nullptr;                    // [T, B, D*hidden], written
  // Each unit's state after its last step t = T-1 (padding included: exact only for the
  // sequences of length T; the step-by-step kernel carries the state through padding, so
  // there it is every sequence's own), [layers*D, B, hidden], written; nullptr: not wanted.
  float* h_final = nullptr;
  float* c_final = nullptr;  // LSTM only
  bool training = true;      // false: inference, nothing saved
  // The weights' owner. When set, the caller promises that the weights stay unchanged
  // while the returned record lives: the record then refers to them (holding `keep`)
  // instead of copying them for the backward pass.
  std::shared_ptr<const void> keep;
};

// Runs the stack; returns what rnn_backward needs (nullptr when !training). Throws
// cntk::ValueError for inconsistent dims (names the dims).
std::shared_ptr<RnnSaved> rnn_forward(const RnnDims& d, const RnnForwardArgs& a);

struct RnnBackwardArgs {
  const float* dy = nullptr;         // [T, B, D*hidden]
  std::vector<RnnLayerGrads> grads;  // layers*D entries, or empty: no weight gradients
  float* dx = nullptr;               // [T, B, input], written; nullptr: not wanted
  float* dh0 = nullptr;              // [layers*D, B, hidden]; nullptr: not wanted
  float* dc0 = nullptr;              // LSTM only; nullptr: not wanted
};

// Gradients of sum(dy * y) with respect to x, the weights, h0 and c0, for the forward
// pass `saved` came from (same dims, weights, lengths).
void rnn_backward(const RnnDims& d, const RnnSaved& saved, const RnnBackwardArgs& a);

// ---------------------------------------------------------------- weight layouts
// `rows` is the leading extent of a [rows, G*hidden] gate-stacked matrix (a bias is
// rows = 1). Each call writes dst (distinct from src).

// CNTK LSTM (i, c~, f, o) <-> oneDNN (i, f, c~, o).
template <class T>
void lstm_gates_cntk_to_fused(const T* src, T* dst, int64_t rows, int64_t hidden);
template <class T>
void lstm_gates_fused_to_cntk(const T* src, T* dst, int64_t rows, int64_t hidden);
// Any gate permutation: dst block g = src block order[g], for `gates` blocks.
template <class T>
void permute_gate_blocks(const T* src, T* dst, int64_t rows, int64_t hidden, const int* order, int gates);
// CNTK GRU recurrent weights H [hidden, 2*hidden] (u, r) and H1 [hidden, hidden] (c~)
// <-> oneDNN w_h [hidden, 3, hidden]. CNTK's W [in, 3*hidden] and b [3*hidden] are
// already in oneDNN's order (u, r, c~).
template <class T>
void gru_iter_cntk_to_fused(const T* H, const T* H1, T* w_h, int64_t hidden);
template <class T>
void gru_iter_fused_to_cntk(const T* w_h, T* H, T* H1, int64_t hidden);

}  // namespace cntk::kernels
