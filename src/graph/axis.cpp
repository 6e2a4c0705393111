#include "cntk/axis.h"

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "cntk/common.h"

namespace cntk {

Axis Axis::new_unique_dynamic_axis(const std::string& name, bool ordered) {
  static std::atomic<int> counter{0};
  return dynamic(name + "_" + std::to_string(counter++), ordered);
}

const std::string* Axis::intern(const std::string& name) {
  static std::mutex mu;
  static auto* names = new std::unordered_set<std::string>();  // never freed: axes outlive static teardown
  std::lock_guard<std::mutex> lock(mu);
  return &*names->insert(name).first;
}

std::string Axis::name() const {
  if (kind_ == Kind::Static) return "staticAxisIdx=" + std::to_string(index_);
  return *name_;
}

int normalize_axis(int axis, size_t rank, const char* op) {
  int r = int(rank);
  int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  return a;
}

}  // namespace cntk
