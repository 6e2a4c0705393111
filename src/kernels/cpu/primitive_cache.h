// A bounded, thread-safe cache of compiled kernels (oneDNN primitives and their
// descriptors) keyed by shape and settings. Creating a primitive JIT-compiles code, so
// every kernel keeps the ones it made; shapes vary (sequence lengths, batch sizes), so
// the cache is bounded and drops the least recently used entry when full.
//
// `get` returns a copy: oneDNN primitives are shared handles, so a copy is cheap and
// stays valid after another thread evicts the entry it came from. Kernels hold their
// cache in a never-destroyed static (`new`): primitives may still run during static
// teardown.
#pragma once
#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <utility>

namespace cntk::kernels {

template <class Key, class Value>
class PrimitiveCache {
 public:
  explicit PrimitiveCache(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // The entry of `key`, made by `make()` when absent. `make` runs outside the lock
  // (compiling takes milliseconds; other keys need not wait): two threads missing the
  // same key may both make it, and the first one stored is kept. An exception from
  // `make` propagates and stores nothing.
  template <class Make>
  Value get(const Key& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = index_.find(key); it != index_.end()) {
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
      }
    }
    Value v = make();
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    order_.emplace_front(key, std::move(v));
    index_.emplace(key, order_.begin());
    if (index_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return index_.size();
  }
  size_t capacity() const { return capacity_; }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    index_.clear();
    order_.clear();
  }

 private:
  using Entry = std::pair<Key, Value>;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> order_;  // most recently used first
  std::map<Key, typename std::list<Entry>::iterator> index_;
};

}  // namespace cntk::kernels
