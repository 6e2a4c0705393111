// Process-wide engine switches CNTK scripts set (cntk.cntk_py.NAME, cntk.debugging.NAME).
// Each is an atomic read by the engine where it matters; none changes a graph already built.
#pragma once

namespace cntk {

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

}  // namespace cntk
