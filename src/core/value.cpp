#include "cntk/value.h"

#include <algorithm>

namespace cntk {

NDMask::NDMask(int64_t batch, int64_t max_len) : batch_(batch), max_len_(max_len) {
  if (batch < 0 || max_len < 0)
    throw ValueError("NDMask: batch size and length must not be negative, got " + std::to_string(batch) + " and " +
                     std::to_string(max_len));
  data_.resize(batch * max_len);
  clear();
}

void NDMask::clear() {
  for (int64_t b = 0; b < batch_; ++b)
    for (int64_t t = 0; t < max_len_; ++t) set(b, t, t == 0 ? MaskKind::SequenceBegin : MaskKind::Valid);
}

NDMask NDMask::from_lengths(const std::vector<int64_t>& lengths, int64_t max_len) {
  NDMask m((int64_t)lengths.size(), max_len);
  for (size_t b = 0; b < lengths.size(); ++b) m.invalidate_section((int64_t)b, lengths[b], max_len);
  return m;
}

void NDMask::invalidate_section(int64_t b, int64_t t_begin, int64_t t_end) {
  if (b < 0 || b >= batch_ || t_begin < 0 || t_end > max_len_)
    throw ValueError("NDMask.invalidate_section: section out of range");
  for (int64_t t = t_begin; t < t_end; ++t) set(b, t, MaskKind::Invalid);
}

void NDMask::mark_sequence_begin(int64_t b, int64_t t) {
  if (b < 0 || b >= batch_ || t < 0 || t >= max_len_) throw ValueError("NDMask.mark_sequence_begin: out of range");
  set(b, t, MaskKind::SequenceBegin);
}

std::vector<int64_t> NDMask::lengths() const {
  std::vector<int64_t> out(batch_, 0);
  for (int64_t b = 0; b < batch_; ++b)
    for (int64_t t = 0; t < max_len_; ++t)
      if (at(b, t) != MaskKind::Invalid) out[b] = t + 1;
  return out;
}

int64_t NDMask::masked_count() const { return std::count(data_.begin(), data_.end(), int8_t(MaskKind::Invalid)); }

Value Value::from_sequences(const std::vector<NDArrayView>& seqs, bool sequential) {
  if (seqs.empty()) throw ValueError("Value: no sequences given");
  if (!sequential) throw ValueError("Value.from_sequences: use a dense batch for non-sequence data");
  DataType dt = seqs[0].dtype();
  NDShape item = seqs[0].shape().sub(1);
  int64_t max_len = 0;
  std::vector<int64_t> lens;
  for (auto& s : seqs) {
    if (s.rank() < 1) throw ValueError("Value: each sequence needs a leading length axis");
    if (s.shape().sub(1) != item)
      throw ValueError("Value: sequences have differing element shapes " + item.str() + " and " +
                       s.shape().sub(1).str());
    if (s.dtype() != dt) throw TypeError("Value: sequences have differing data types");
    lens.push_back(s.shape()[0]);
    max_len = std::max(max_len, s.shape()[0]);
  }
  int64_t B = (int64_t)seqs.size();
  NDShape full = NDShape{B, max_len}.concat(item);
  bool sparse = seqs[0].is_sparse();
  auto mask = std::make_shared<NDMask>(NDMask::from_lengths(lens, max_len));
  if (sparse) {
    // Concatenate the compressed rows, padding short sequences with empty rows.
    int64_t per_step = item.total_size() / std::max<int64_t>(item.rank() ? item[item.rank() - 1] : 1, 1);
    std::vector<int64_t> starts{0}, indices;
    std::vector<char> values;
    size_t es = element_size(dt);
    for (auto& s : seqs) {
      if (!s.is_sparse()) throw ValueError("Value: cannot mix sparse and dense sequences");
      const SparseCSC& sp = s.sparse_data();
      int64_t rows = (int64_t)sp.starts.size() - 1;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = sp.starts[r]; k < sp.starts[r + 1]; ++k) {
          indices.push_back(sp.indices[k]);
          const char* v = static_cast<const char*>(sp.values->data()) + k * es;
          values.insert(values.end(), v, v + es);
        }
        starts.push_back((int64_t)indices.size());
      }
      for (int64_t r = rows; r < max_len * per_step; ++r) starts.push_back((int64_t)indices.size());
    }
    return Value(NDArrayView::sparse(dt, full, std::move(starts), std::move(indices), values.data()), mask);
  }
  NDArrayView data = NDArrayView::zeros(dt, full);
  for (int64_t b = 0; b < B; ++b) {
    if (lens[b] == 0) continue;
    data.slice(0, b, b + 1).slice(1, 0, lens[b]).copy_from(seqs[b].reshape(NDShape{1, lens[b]}.concat(item)));
  }
  return Value(data, mask);
}

Value Value::one_hot(const std::vector<std::vector<int64_t>>& indices, int64_t num_classes, DataType dtype,
                     bool sequential) {
  if (num_classes <= 0) throw ValueError("Value.one_hot: num_classes must be positive");
  std::vector<NDArrayView> seqs;
  double one_d = 1.0;
  float one_f = 1.0f;
  uint16_t one_h = float_to_half(1.0f);
  const void* one = dtype == DataType::Double  ? (const void*)&one_d
                    : dtype == DataType::Float ? (const void*)&one_f
                                               : (const void*)&one_h;
  size_t es = element_size(dtype);
  for (auto& seq : indices) {
    std::vector<int64_t> starts{0}, idx;
    for (auto i : seq) {
      if (i == one_hot_skip) {  // a zero sample: the row has no entry
        starts.push_back((int64_t)idx.size());
        continue;
      }
      if (i < 0 || i >= num_classes)
        throw ValueError("Value.one_hot: index " + std::to_string(i) + " out of range for " +
                         std::to_string(num_classes) + " classes");
      idx.push_back(i);
      starts.push_back((int64_t)idx.size());
    }
    std::vector<char> vals(idx.size() * es);
    for (size_t k = 0; k < idx.size(); ++k) std::memcpy(vals.data() + k * es, one, es);
    seqs.push_back(NDArrayView::sparse(dtype, NDShape{(int64_t)seq.size(), num_classes}, starts, idx, vals.data()));
  }
  if (sequential) return from_sequences(seqs, true);
  // A plain batch: one sample per entry.
  std::vector<int64_t> starts{0}, idx;
  for (auto& seq : indices) {
    if (seq.size() != 1) throw ValueError("Value.one_hot: a non-sequence batch needs one index per sample");
    if (seq[0] != one_hot_skip) idx.push_back(seq[0]);
    starts.push_back((int64_t)idx.size());
  }
  std::vector<char> vals(idx.size() * es);
  for (size_t k = 0; k < idx.size(); ++k) std::memcpy(vals.data() + k * es, one, es);
  return Value(NDArrayView::sparse(dtype, NDShape{(int64_t)indices.size(), num_classes}, starts, idx, vals.data()));
}

std::vector<NDArrayView> Value::unpack(int sequence_axes) const {
  std::vector<NDArrayView> out;
  NDArrayView d = data_.to_dense();
  int64_t B = d.shape()[0];
  std::vector<int64_t> lens;
  if (sequence_axes && mask_) lens = mask_->lengths();
  for (int64_t b = 0; b < B; ++b) {
    NDArrayView s = d.slice(0, b, b + 1);
    if (sequence_axes) {
      int64_t len = mask_ ? lens[b] : d.shape()[1];
      s = s.slice(1, 0, len).reshape(d.shape().sub(1).dims().size() ? NDShape{len}.concat(d.shape().sub(2))
                                                                    : NDShape{len});
    } else {
      s = s.reshape(d.shape().sub(1));
    }
    out.push_back(s.contiguous());
  }
  return out;
}

}  // namespace cntk
