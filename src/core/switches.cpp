#include "cntk/switches.h"

#include <atomic>

namespace cntk {

namespace {
std::atomic<bool> g_checked_mode{false};
std::atomic<bool> g_always_allow_default_device{false};
}  // namespace

void set_checked_mode(bool enable) { g_checked_mode = enable; }
bool checked_mode() { return g_checked_mode; }
void always_allow_setting_default_device() { g_always_allow_default_device = true; }
bool setting_default_device_always_allowed() { return g_always_allow_default_device; }

}  // namespace cntk
