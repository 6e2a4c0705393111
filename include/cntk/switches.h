// Process-wide engine switches CNTK scripts set (cntk.cntk_py.NAME, cntk.debugging.NAME).
// Each is an atomic read by the engine where it matters; none changes a graph already built.
// The environment variables named below give some of them their start value: they are
// read once, the first time any switch is read, and only the setters change a switch
// afterwards (changing the environment of a running process has no effect).
#pragma once
#include <string_view>

namespace cntk {

// The CPU backend the kernels run on (cntk.cntk_py.set_backend; src/kernels/backend.h):
// "onednn" (the default: oneDNN's primitives for float32, values kept in oneDNN's layouts
// between steps, fused convolution and RNN steps) or "reference" (the own loops for every
// type, float32 included; no primitive, kept layout or fused step: the semantics the
// oneDNN path is tested against). Start value: CNTK_BACKEND. A change applies to every
// kernel call and plan compiled from then on (cached plans of the other backend are
// recompiled). Unknown names raise ValueError.
void set_backend(std::string_view name);
const char* backend_name();

// Checked mode (cntk.debugging.set_checked_mode): every forward step verifies that no NaN
// appears in the valid frames of its outputs and fills the padding frames of sequence
// values with NaN (so that a kernel reading padding shows up as NaN in a valid frame of a
// later step); every backward step verifies the gradients it hands to its inputs.
// A violation raises an Error naming the op. Off by default.
void set_checked_mode(bool enable);
bool checked_mode();

// CNTK forbids changing the default device once a computation used it, unless this was
// called (tests and notebooks that switch devices call it first).
void always_allow_setting_default_device();
bool setting_default_device_always_allowed();

// oneDNN's RNN primitives (cntk.cntk_py.set_rnn_fusion): Recurrence(LSTM/GRU/RNNStep)
// loops run as one fused step, and float32 OptimizedRNNStack runs on them rather than on
// the reference loops. On unless CNTK_RNN_FUSION=0. A change applies to plans compiled
// from then on (cached plans of the other mode are recompiled) and to OptimizedRNNStack
// calls from then on.
void set_rnn_fusion(bool on);
bool rnn_fusion_enabled();
// The planner prints which Recurrence blocks it fused and why others were not
// (CNTK_RNN_FUSION_DEBUG=1; off by default).
void set_rnn_fusion_debug(bool on);
bool rnn_fusion_debug();

// Two independent fused recurrences next to each other in a plan (the two directions of
// a bidirectional layer) run side by side, one per OpenMP thread, forward and backward
// (src/exec/executor.cpp). On unless CNTK_RECURRENCE_CONCURRENCY=0. Applies to every
// pass from then on; the results are the same either way.
void set_recurrence_concurrency(bool on);
bool recurrence_concurrency();

// float32 LSTMs (fused Recurrence(LSTM) steps and OptimizedRNNStack) run on OpenCNTK's
// own step-by-step LSTM rather than oneDNN's LSTM primitive (src/kernels/cpu/lstm_steps.cpp:
// no product for a one-hot input, none for an input gradient nobody asks for). On unless
// CNTK_LSTM_STEPS=0. The bfloat16 math mode always runs on oneDNN's primitive. Applies to
// every forward pass from then on; a backward pass runs on its forward pass's choice.
void set_lstm_steps(bool on);
bool lstm_steps_enabled();

// The arithmetic of float32 matrix products (cntk.cntk_py.set_float32_math): "float32"
// (the default) or "bfloat16": every float32 product the oneDNN backend computes (Times,
// TransposeTimes, Dense, their gradients) reads its two operands rounded to bfloat16
// (to nearest even) and accumulates in float32, the result float32; parameters, gradients,
// learner state and every other op stay float32 (mixed precision with float32 master
// weights). It takes effect only where the CPU has bfloat16 instructions (AVX512_BF16 or
// AMX; bf16_math_available); elsewhere, and on the reference backend, products
// stay float32. Start value: CNTK_FLOAT32_MATH. Unknown names raise ValueError.
void set_float32_math(std::string_view mode);
const char* float32_math();
// Whether this CPU computes bfloat16 products in hardware (AVX512_BF16 or AMX, as oneDNN
// detects them; DNNL_MAX_CPU_ISA can withhold them).
bool bf16_math_available();
// Whether float32 products compute in bfloat16 now: the switch asks for it, the CPU has
// it and the oneDNN backend runs.
bool bf16_math_active();

// Convolution -> bias -> activation chains planned as one oneDNN primitive. On unless
// CNTK_NO_FUSION is set to something other than 0. Applies to plans compiled from then on.
void set_conv_fusion(bool on);
bool conv_fusion_enabled();

// Consecutive oneDNN steps keep oneDNN's own (blocked) layout between them. On unless
// CNTK_DNNL_BLOCKED=0. Applies to plans compiled from then on.
void set_dnnl_layouts(bool on);
bool dnnl_layouts_enabled();

}  // namespace cntk
