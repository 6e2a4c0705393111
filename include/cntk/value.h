// Value: data for one variable in one call: a batch, or a batch of sequences of
// differing lengths with a mask. Shapes are CNTK's Python ones: [batch, *shape]
// or [batch, max_len, *shape].
#pragma once
#include <memory>
#include <vector>

#include "cntk/tensor.h"

namespace cntk {

// NDMask values as CNTK defines them.
enum class MaskKind : int8_t { Invalid = 0, Valid = 1, SequenceBegin = 2 };

class NDMask {
 public:
  NDMask() = default;
  NDMask(int64_t batch, int64_t max_len);  // all Valid, each entry starting a sequence at t=0
  static NDMask from_lengths(const std::vector<int64_t>& lengths, int64_t max_len);
  int64_t batch() const { return batch_; }
  int64_t max_len() const { return max_len_; }
  NDShape shape() const { return NDShape{batch_, max_len_}; }
  MaskKind at(int64_t b, int64_t t) const { return MaskKind(data_[b * max_len_ + t]); }
  void set(int64_t b, int64_t t, MaskKind k) { data_[b * max_len_ + t] = int8_t(k); }
  void invalidate_section(int64_t b, int64_t t_begin, int64_t t_end);
  void mark_sequence_begin(int64_t b, int64_t t);
  void clear();                          // all Valid
  std::vector<int64_t> lengths() const;  // valid steps per sequence
  int64_t masked_count() const;
  const std::vector<int8_t>& data() const { return data_; }

 private:
  int64_t batch_ = 0, max_len_ = 0;
  std::vector<int8_t> data_;
};

class Value {
 public:
  Value() = default;
  explicit Value(NDArrayView data, std::shared_ptr<NDMask> mask = nullptr)
      : data_(std::move(data)), mask_(std::move(mask)) {}

  // Packs sequences [len_i, *shape] (all with the same trailing shape) into
  // [batch, max_len, *shape] with a mask.
  static Value from_sequences(const std::vector<NDArrayView>& sequences, bool sequential = true);
  // The class index that stands for an all-zero sample in one_hot (CNTK's Value.ONE_HOT_SKIP).
  static constexpr int64_t one_hot_skip = -1;
  // One-hot sequences (or a batch when `sequential` is false) from class indices.
  static Value one_hot(const std::vector<std::vector<int64_t>>& indices, int64_t num_classes, DataType dtype,
                       bool sequential);

  const NDArrayView& data() const { return data_; }
  const std::shared_ptr<NDMask>& mask() const { return mask_; }
  const NDShape& shape() const { return data_.shape(); }
  DataType dtype() const { return data_.dtype(); }
  bool is_sparse() const { return data_.is_sparse(); }
  bool is_valid() const { return data_.defined(); }
  // Splits the data into per-sequence views with the padding removed.
  // `sequence_axes` is 1 when the data has a sequence axis, 0 for a plain batch.
  std::vector<NDArrayView> unpack(int sequence_axes) const;

 private:
  NDArrayView data_;
  std::shared_ptr<NDMask> mask_;
};

}  // namespace cntk
