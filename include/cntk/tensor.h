// NDArrayView: a typed, shaped view of storage on a device. Dense views may be
// strided (slices); kernels ask for contiguous() data. Sparse views hold one-hot
// style data in CSC form, as CNTK stores it (see SparseCSC).
#pragma once
#include <cstring>
#include <memory>

#include "cntk/common.h"
#include "cntk/device.h"

namespace cntk {

// A block of bytes from the caching allocator; returned to the pool when freed.
class Storage {
 public:
  explicit Storage(size_t bytes);
  // Borrows memory owned elsewhere (a NumPy array); `keepalive` holds its owner.
  Storage(void* data, size_t bytes, std::shared_ptr<void> keepalive)
      : data_(data), bytes_(bytes), keepalive_(std::move(keepalive)) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_;
  size_t bytes_;
  std::shared_ptr<void> keepalive_;  // set for borrowed memory, which is not returned to the pool
};

// How many storage blocks came from the system rather than the allocator's free
// lists (tests check that a repeated minibatch allocates nothing new).
size_t storage_system_allocations();

// Counts writes into existing tensors made by users through NDArrayView's API (the bindings'
// copy_from and fill: a parameter's `data` written in place bumps no value_version). Caches derived
// from parameter values (the fused recurrences' converted weights) key on it besides the version.
uint64_t user_write_epoch();
void note_user_write();

// Sparse data of a tensor with NumPy shape [..., D]: the tensor is read as a
// matrix of (outer = product of leading dims) rows by D columns in compressed
// row form. In CNTK's column-major terms this is exactly its CSC layout: each
// sample is a column and the indices address its first (fastest) axis.
struct SparseCSC {
  std::vector<int64_t> starts;   // outer + 1 offsets into indices/values
  std::vector<int64_t> indices;  // position along the last axis
  std::shared_ptr<Storage> values;
  int64_t nnz() const { return starts.empty() ? 0 : starts.back(); }
};

class NDArrayView {
 public:
  NDArrayView() = default;
  // Allocates uninitialised storage of a known shape.
  NDArrayView(DataType dtype, const NDShape& shape, DeviceDescriptor device = DeviceDescriptor::cpu());

  static NDArrayView zeros(DataType dtype, const NDShape& shape);
  static NDArrayView full(DataType dtype, const NDShape& shape, double value);
  static NDArrayView scalar(DataType dtype, double value) { return full(dtype, NDShape{}, value); }
  // A read-only view of borrowed contiguous memory (no copy).
  static NDArrayView borrow(DataType dtype, const NDShape& shape, void* data, std::shared_ptr<void> keepalive);
  // Sparse from compressed rows of the [outer, D] matrix (see SparseCSC).
  static NDArrayView sparse(DataType dtype, const NDShape& shape, std::vector<int64_t> starts,
                            std::vector<int64_t> indices, const void* values);

  bool defined() const { return dtype_ != DataType::Unknown; }
  DataType dtype() const { return dtype_; }
  const NDShape& shape() const { return shape_; }
  size_t rank() const { return shape_.rank(); }
  int64_t numel() const { return numel_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  DeviceDescriptor device() const { return DeviceDescriptor::cpu(); }
  bool is_sparse() const { return sparse_ != nullptr; }
  const SparseCSC& sparse_data() const;
  bool is_read_only() const { return read_only_; }
  void set_read_only(bool r) { read_only_ = r; }
  bool is_contiguous() const;

  // Raw element access for contiguous dense views.
  template <class T>
  T* data() {
    check_dense_contiguous();
    return static_cast<T*>(storage_->data()) + offset_;
  }
  template <class T>
  const T* data() const {
    check_dense_contiguous();
    return static_cast<const T*>(storage_->data()) + offset_;
  }
  void* raw_data() {
    check_dense_contiguous();
    return static_cast<char*>(storage_->data()) + offset_ * element_size(dtype_);
  }
  const void* raw_data() const {
    check_dense_contiguous();
    return static_cast<const char*>(storage_->data()) + offset_ * element_size(dtype_);
  }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  NDArrayView contiguous() const;                   // self if already contiguous, else a compact copy
  NDArrayView copy() const;                         // always a new buffer (dense or sparse)
  NDArrayView to_dense() const;                     // sparse -> dense; dense -> self
  NDArrayView reshape(const NDShape& shape) const;  // view when contiguous
  NDArrayView slice(size_t axis, int64_t begin, int64_t end, int64_t stride = 1) const;  // view
  NDArrayView permute(const std::vector<int>& perm) const;                               // view with permuted strides
  NDArrayView broadcast_to(const NDShape& shape) const;                                  // view with 0 strides
  NDArrayView drop_axis(size_t axis) const;  // view without an axis of size 1
  NDArrayView cast(DataType t) const;
  void copy_from(const NDArrayView& src);  // shapes must match; handles strides
  void fill(double value);
  double item() const;  // value of a single-element view, as double
  bool same_storage(const NDArrayView& o) const { return storage_ == o.storage_; }

 private:
  void check_dense_contiguous() const;
  DataType dtype_ = DataType::Unknown;
  NDShape shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  std::shared_ptr<Storage> storage_;
  std::shared_ptr<SparseCSC> sparse_;
  bool read_only_ = false;
};

// Dispatch on a runtime data type to a templated body: CNTK_DISPATCH_FLOAT(t, T, body).
#define CNTK_DISPATCH_FLOAT(dtype, T, ...)                                                            \
  [&]() {                                                                                             \
    switch (dtype) {                                                                                  \
      case ::cntk::DataType::Float: {                                                                 \
        using T = float;                                                                              \
        return __VA_ARGS__();                                                                         \
      }                                                                                               \
      case ::cntk::DataType::Double: {                                                                \
        using T = double;                                                                             \
        return __VA_ARGS__();                                                                         \
      }                                                                                               \
      default:                                                                                        \
        throw ::cntk::NotImplementedError(std::string("computation in ") + ::cntk::to_string(dtype) + \
                                          " is not supported");                                       \
    }                                                                                                 \
  }()

// IEEE half <-> float conversion (storage type for float16).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace cntk
