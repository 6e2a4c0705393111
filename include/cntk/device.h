// Devices. Only the CPU computes today; the GPU slot exists so that code written
// for CNTK (DeviceDescriptor.gpu(0)) gets a clear answer instead of a missing name.
#pragma once
#include <string>
#include <vector>

namespace cntk {

enum class DeviceKind : int { CPU = 0, GPU = 1 };

class DeviceDescriptor {
 public:
  static DeviceDescriptor cpu() { return DeviceDescriptor(DeviceKind::CPU, 0); }
  static DeviceDescriptor gpu(int id);  // throws: no GPU backend/device is available
  static std::vector<DeviceDescriptor> all_devices();
  static DeviceDescriptor use_default_device();
  static bool try_set_default_device(const DeviceDescriptor& d, bool acquire_lock = false);
  static bool is_default_device_locked();

  DeviceKind type() const { return kind_; }
  int id() const { return id_; }
  bool is_locked() const { return false; }
  bool operator==(const DeviceDescriptor& o) const { return kind_ == o.kind_ && id_ == o.id_; }
  std::string str() const;

 private:
  DeviceDescriptor(DeviceKind k, int id) : kind_(k), id_(id) {}
  DeviceKind kind_;
  int id_;
};

}  // namespace cntk
