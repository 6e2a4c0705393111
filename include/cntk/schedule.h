// Training parameter schedules: a learning rate, momentum or other
// hyper-parameter as a function of training progress, as CNTK defines them.
//
// A schedule is a step function over a count of samples (or, when its epoch
// size is kFullDataSweep, over a count of data sweeps). Each value comes with a
// reference minibatch size: the number of samples the value was designed for.
// kIgnoredMinibatchSize (0) means "apply as is to whatever minibatch arrives".
#pragma once
#include <cmath>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cntk/common.h"

namespace cntk {

template <class T>
class TrainingParameterSchedule {
 public:
  static constexpr size_t kFullDataSweep = 0;
  static constexpr size_t kIgnoredMinibatchSize = 0;

  // A constant value.
  TrainingParameterSchedule(T value = T(), size_t minibatch_size = kIgnoredMinibatchSize)
      : minibatch_size_(minibatch_size), epoch_size_(kFullDataSweep) {
    schedule_[0] = value;
  }
  // values[i] holds for the i-th block of epoch_size samples (or the i-th sweep);
  // the last value holds from then on.
  TrainingParameterSchedule(const std::vector<T>& values, size_t epoch_size = kFullDataSweep,
                            size_t minibatch_size = kIgnoredMinibatchSize)
      : minibatch_size_(minibatch_size), epoch_size_(epoch_size) {
    std::vector<std::pair<size_t, T>> pairs;
    for (const T& v : values) pairs.emplace_back(1, v);
    build(pairs);
  }
  // (count, value) pairs: each value holds for count epochs of epoch_size samples
  // (or count sweeps). Only the last count may be 0; it is read as 1.
  TrainingParameterSchedule(const std::vector<std::pair<size_t, T>>& pairs, size_t epoch_size = kFullDataSweep,
                            size_t minibatch_size = kIgnoredMinibatchSize)
      : minibatch_size_(minibatch_size), epoch_size_(epoch_size) {
    build(pairs);
  }

  // The value after `count` samples (or sweeps, for a sweep-based schedule).
  const T& operator[](size_t count) const {
    auto it = schedule_.upper_bound(count);
    if (it == schedule_.end()) --it;
    return it->second;
  }

  bool is_sweep_based() const { return epoch_size_ == kFullDataSweep; }
  size_t epoch_size() const { return epoch_size_; }
  size_t minibatch_size() const { return minibatch_size_; }
  void set_minibatch_size(size_t n) { minibatch_size_ = n; }
  // The step function: each key is the count at which the following entry's value ends.
  const std::map<size_t, T>& entries() const { return schedule_; }
  std::map<size_t, T>& mutable_entries() { return schedule_; }
  void set_epoch_size(size_t n) { epoch_size_ = n; }

  TrainingParameterSchedule& transform(const std::function<T(const T&)>& f) {
    for (auto& kv : schedule_) kv.second = f(kv.second);
    return *this;
  }

  bool operator==(const TrainingParameterSchedule& o) const {
    return schedule_ == o.schedule_ && epoch_size_ == o.epoch_size_ && minibatch_size_ == o.minibatch_size_;
  }

 private:
  void build(const std::vector<std::pair<size_t, T>>& pairs) {
    if (pairs.empty()) throw ValueError("training parameter schedule: the schedule is empty");
    const size_t unit = epoch_size_ == kFullDataSweep ? 1 : epoch_size_;
    size_t units = 0;
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (i + 1 < pairs.size() && pairs[i].first == 0)
        throw ValueError("training parameter schedule: only the last entry may have a count of 0");
      units += pairs[i].first != 0 ? pairs[i].first : 1;
      schedule_[unit * units] = pairs[i].second;
    }
  }

  std::map<size_t, T> schedule_;
  size_t minibatch_size_;
  size_t epoch_size_;
};

using LearningRateSchedule = TrainingParameterSchedule<double>;
using MomentumSchedule = TrainingParameterSchedule<double>;
using MinibatchSizeSchedule = TrainingParameterSchedule<size_t>;

// exp(-1 / time_constant); 0 for a time constant of 0.
inline double momentum_from_time_constant(double time_constant) {
  return time_constant == 0.0 ? 0.0 : std::exp(-1.0 / time_constant);
}

// Momentum given as the time constant (in samples) of a unit-gain IIR filter:
// a per-sample schedule (reference minibatch size 1).
MomentumSchedule momentum_as_time_constant_schedule(double time_constant);
MomentumSchedule momentum_as_time_constant_schedule(const std::vector<double>& time_constants,
                                                    size_t epoch_size = MomentumSchedule::kFullDataSweep);
MomentumSchedule momentum_as_time_constant_schedule(const std::vector<std::pair<size_t, double>>& time_constants,
                                                    size_t epoch_size = MomentumSchedule::kFullDataSweep);

}  // namespace cntk
