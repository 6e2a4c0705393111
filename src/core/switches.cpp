#include "cntk/switches.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cntk/common.h"

namespace cntk {

namespace {

bool env_is(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return v && value == v;
}

// A switch with named values: the first is the default.
using Names = const char* const[2];
constexpr Names kBackends = {"onednn", "reference"};
constexpr Names kFloat32Math = {"float32", "bfloat16"};

int index_of(const Names& names, std::string_view name) {
  for (int i = 0; i < 2; ++i)
    if (name == names[i]) return i;
  return -1;
}

// The start value named by the environment variable `var` (the default when unset or
// unknown, which is reported on stderr as no `what`).
int index_from_env(const Names& names, const char* var, const char* what) {
  const char* v = std::getenv(var);
  if (!v || !*v) return 0;
  const int i = index_of(names, v);
  if (i < 0) std::fprintf(stderr, "%s=%s is no %s (%s, %s): using %s\n", var, v, what, names[0], names[1], names[0]);
  return i < 0 ? 0 : i;
}

// Every switch in one place, given its start value from the environment on first use
// (a function-local static: initialized once, safely under concurrent first calls).
struct Switches {
  std::atomic<bool> checked_mode{false};
  std::atomic<bool> always_allow_default_device{false};
  std::atomic<bool> rnn_fusion{!env_is("CNTK_RNN_FUSION", "0")};
  std::atomic<bool> rnn_fusion_debug{env_is("CNTK_RNN_FUSION_DEBUG", "1")};
  std::atomic<bool> recurrence_concurrency{!env_is("CNTK_RECURRENCE_CONCURRENCY", "0")};
  std::atomic<bool> lstm_steps{!env_is("CNTK_LSTM_STEPS", "0")};
  std::atomic<bool> conv_fusion{[] {
    const char* v = std::getenv("CNTK_NO_FUSION");
    return !(v && *v && std::string_view(v) != "0");
  }()};
  std::atomic<bool> dnnl_layouts{!env_is("CNTK_DNNL_BLOCKED", "0")};
  std::atomic<int> backend{index_from_env(kBackends, "CNTK_BACKEND", "backend")};
  std::atomic<int> float32_math{index_from_env(kFloat32Math, "CNTK_FLOAT32_MATH", "math mode")};
};

Switches& switches() {
  static Switches s;
  return s;
}

}  // namespace

void set_checked_mode(bool enable) { switches().checked_mode = enable; }
bool checked_mode() { return switches().checked_mode; }
void always_allow_setting_default_device() { switches().always_allow_default_device = true; }
bool setting_default_device_always_allowed() { return switches().always_allow_default_device; }
void set_rnn_fusion(bool on) { switches().rnn_fusion = on; }
bool rnn_fusion_enabled() { return switches().rnn_fusion; }
void set_rnn_fusion_debug(bool on) { switches().rnn_fusion_debug = on; }
bool rnn_fusion_debug() { return switches().rnn_fusion_debug; }
void set_recurrence_concurrency(bool on) { switches().recurrence_concurrency = on; }
bool recurrence_concurrency() { return switches().recurrence_concurrency; }
void set_lstm_steps(bool on) { switches().lstm_steps = on; }
bool lstm_steps_enabled() { return switches().lstm_steps; }
void set_conv_fusion(bool on) { switches().conv_fusion = on; }
bool conv_fusion_enabled() { return switches().conv_fusion; }
void set_dnnl_layouts(bool on) { switches().dnnl_layouts = on; }
bool dnnl_layouts_enabled() { return switches().dnnl_layouts; }
void set_backend(std::string_view name) {
  const int i = index_of(kBackends, name);
  if (i < 0) throw ValueError("unknown backend '" + std::string(name) + "': expected 'onednn' or 'reference'");
  switches().backend = i;
}
const char* backend_name() { return kBackends[switches().backend.load()]; }
void set_float32_math(std::string_view mode) {
  const int i = index_of(kFloat32Math, mode);
  if (i < 0)
    throw ValueError("unknown float32 math mode '" + std::string(mode) + "': expected 'float32' or 'bfloat16'");
  switches().float32_math = i;
}
const char* float32_math() { return kFloat32Math[switches().float32_math.load()]; }

}  // namespace cntk
