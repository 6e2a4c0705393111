#include "cntk/device.h"

#include "cntk/common.h"

namespace cntk {

DeviceDescriptor DeviceDescriptor::gpu(int id) {
  throw ValueError("DeviceDescriptor.gpu(" + std::to_string(id) +
                   "): no GPU is available; this build of OpenCNTK computes on the CPU only");
}

std::vector<DeviceDescriptor> DeviceDescriptor::all_devices() { return {cpu()}; }

DeviceDescriptor DeviceDescriptor::use_default_device() { return cpu(); }

// Device locks are held on GPUs only: asking to lock the CPU fails (false), as in CNTK.
bool DeviceDescriptor::try_set_default_device(const DeviceDescriptor& d, bool acquire_lock) {
  return d.type() == DeviceKind::CPU && !acquire_lock;
}

bool DeviceDescriptor::is_default_device_locked() { return false; }

std::string DeviceDescriptor::str() const {
  return kind_ == DeviceKind::CPU ? "CPU" : "GPU[" + std::to_string(id_) + "]";
}

}  // namespace cntk
