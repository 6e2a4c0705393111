// Basic vocabulary shared by every layer: errors, element types, shapes.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cntk {

// Typed errors; the Python binding maps each to the matching Python exception.
// Each keeps the call stack where it was raised (CNTK's errors reported theirs).
struct Error : std::runtime_error {
  explicit Error(const std::string& what);
  explicit Error(const char* what);
  // The native call stack where the error was raised, innermost frame first, one per line.
  std::string call_stack() const;

 private:
  std::shared_ptr<const std::vector<void*>> frames_;
};
struct ValueError : Error {  // -> ValueError (bad shapes, bad arguments)
  using Error::Error;
};
struct ShapeError : ValueError {  // -> ValueError, raised by shape inference
  using ValueError::ValueError;
};
struct TypeError : Error {  // -> TypeError
  using Error::Error;
};
struct NotImplementedError : Error {  // -> NotImplementedError
  using Error::Error;
};
struct IOError : Error {  // -> IOError
  using Error::Error;
};

// Element types; the numbering is CNTK's (DataType enum in CNTKLibrary.h).
// Int8 and Int16 are storage types (parameters, constants and saved values, as in CNTK):
// kernels compute in the float types only.
enum class DataType : int { Unknown = 0, Float = 1, Double = 2, Float16 = 4, Int8 = 5, Int16 = 6 };

size_t element_size(DataType t);
const char* to_string(DataType t);

// Shapes are kept in NumPy order (last axis fastest), as CNTK's Python API shows them.
class NDShape {
 public:
  static constexpr int64_t kInferredDimension = -1;  // to be filled in by shape inference
  static constexpr int64_t kFreeDimension = -3;      // any size, fixed only by the data
  static constexpr int64_t kUnknownDimension = -2;   // the single dim of NDShape::unknown()
  static NDShape unknown() { return NDShape{kUnknownDimension}; }
  bool is_unknown() const { return dims_.size() == 1 && dims_[0] == kUnknownDimension; }

  NDShape() = default;
  NDShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit NDShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }
  bool has_inferred() const;
  bool has_free() const;
  bool is_known() const { return !has_inferred() && !has_free(); }
  int64_t total_size() const;  // product of dims; throws if not known
  NDShape sub(size_t begin, size_t end) const;
  NDShape sub(size_t begin) const { return sub(begin, rank()); }
  NDShape concat(const NDShape& other) const;
  bool operator==(const NDShape& o) const { return dims_ == o.dims_; }
  bool operator!=(const NDShape& o) const { return dims_ != o.dims_; }
  std::string str() const;  // "(2, 3)"

 private:
  std::vector<int64_t> dims_;
};

// Contiguous row-major strides, in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims);

}  // namespace cntk
