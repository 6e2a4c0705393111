// The forward record behind rnn.h's opaque RnnSaved, shared by the recurrences' two
// implementations: oneDNN's RNN primitives (rnn.cpp) and the step-by-step LSTM
// (lstm_steps.cpp). Internal to src/kernels/cpu.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/rnn.h"

namespace cntk::kernels {

// A float buffer left uninitialized, for what is written in full (outputs, workspace):
// zero-filling megabytes per call would cost as much as a short sequence's compute. It
// only grows, so a reused buffer maps no new memory.
class RawBuffer {
 public:
  void reset(size_t n) {
    if (n > cap_) {
      p_.reset(new float[n]);
      cap_ = n;
    }
  }
  float* data() { return p_.get(); }
  const float* data() const { return p_.get(); }

 private:
  std::unique_ptr<float[]> p_;
  size_t cap_ = 0;
};

// One (layer, direction)'s forward record.
struct RnnUnitSaved {
  // The unit's input [T, B, C] with padding zeroed: in its direction's order for
  // oneDNN, in the caller's order for the step-by-step LSTM.
  RawBuffer src_layer;
  // oneDNN's outputs, states and workspace.
  RawBuffer dst_layer, dst_iter, dst_iter_c, workspace;
  std::vector<float> src_iter, src_iter_c;
  // The step-by-step LSTM's, one row per (t, b) of the caller's order (lstm_steps.cpp):
  // the gates after their activations [T*B, 4, H], the cell state each step starts from
  // and tanh of the one it ends with [T*B, H], the output state it starts from followed
  // by a 1 [T*B, H + 1].
  RawBuffer gates, c_prev, tanh_c, h_prev;
  // A sparse input's rows (RnnSparseRows), kept for the input weights' gradient.
  std::vector<int64_t> sparse_starts, sparse_indices;
  std::vector<float> sparse_values;
  std::vector<float> w_x_copy, w_h_copy, bias_copy;  // plain (ldigo / ldgo) copies, unless the caller keeps them
  const float *w_x = nullptr, *w_h = nullptr, *bias = nullptr;  // the copies, or the caller's weights

  // Refers to the caller's weights when they are kept (RnnForwardArgs::keep), else copies them.
  void hold_weights(const RnnLayerWeights& w, bool kept, int64_t C, int64_t G, int64_t Gb, int64_t H) {
    if (kept) {
      w_x = w.w_x, w_h = w.w_h, bias = w.bias;
      return;
    }
    w_x_copy.assign(w.w_x, w.w_x + C * G * H);
    w_h_copy.assign(w.w_h, w.w_h + H * G * H);
    bias_copy.assign(w.bias, w.bias + Gb * H);
    w_x = w_x_copy.data(), w_h = w_h_copy.data(), bias = bias_copy.data();
  }
};

struct RnnSaved {
  RnnDims dims;
  bool bf16 = false;          // run under the bfloat16 math mode (its backward pass runs so too)
  bool steps = false;         // run by the step-by-step LSTM (its backward pass runs so too)
  bool sparse_input = false;  // the step-by-step LSTM's input was RnnSparseRows (kept on unit 0)
  std::vector<int64_t> lengths;
  std::vector<RnnUnitSaved> units;            // layers*D
  std::shared_ptr<const void> weights_owner;  // RnnForwardArgs::keep
};

// The step-by-step LSTM (lstm_steps.cpp), which rnn_forward and rnn_backward choose
// (RnnKernel). `saved` comes with its dims, lengths and units set; a.x may be null when
// a.x_sparse is given.
void lstm_steps_forward(const RnnDims& d, const RnnForwardArgs& a, RnnSaved& saved);
void lstm_steps_backward(const RnnDims& d, const RnnSaved& saved, const RnnBackwardArgs& a);

}  // namespace cntk::kernels
