#include "cntk/common.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <cstdlib>
#include <sstream>

namespace cntk {

namespace {

std::shared_ptr<const std::vector<void*>> capture_frames() {
  std::vector<void*> frames(48);
  int n = ::backtrace(frames.data(), int(frames.size()));
  frames.resize(size_t(n > 0 ? n : 0));
  return std::make_shared<const std::vector<void*>>(std::move(frames));
}

// "module(mangled+0x1f) [0x...]" -> the demangled function name (or the line as it is).
std::string frame_name(const char* symbol) {
  std::string s(symbol);
  size_t open = s.find('('), plus = s.find('+', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return s;
  std::string mangled = s.substr(open + 1, plus - open - 1);
  int status = 0;
  char* name = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : mangled;
  std::free(name);
  return out;
}

}  // namespace

Error::Error(const std::string& what) : std::runtime_error(what), frames_(capture_frames()) {}
Error::Error(const char* what) : std::runtime_error(what), frames_(capture_frames()) {}

std::string Error::call_stack() const {
  if (!frames_ || frames_->size() < 2) return "";
  // The first frames are this error's own construction.
  const size_t skip = 2;
  char** symbols = ::backtrace_symbols(frames_->data(), int(frames_->size()));
  if (!symbols) return "";
  std::string out;
  for (size_t i = skip; i < frames_->size(); ++i)
    out += std::string(i == skip ? "    > " : "    - ") + frame_name(symbols[i]) + "\n";
  std::free(symbols);
  return out;
}

size_t element_size(DataType t) {
  switch (t) {
    case DataType::Float: return 4;
    case DataType::Double: return 8;
    case DataType::Float16: return 2;
    case DataType::Int8: return 1;
    case DataType::Int16: return 2;
    default: throw ValueError("element_size: unknown data type");
  }
}

const char* to_string(DataType t) {
  switch (t) {
    case DataType::Float: return "float32";
    case DataType::Double: return "float64";
    case DataType::Float16: return "float16";
    case DataType::Int8: return "int8";
    case DataType::Int16: return "int16";
    default: return "unknown";
  }
}

bool NDShape::has_inferred() const {
  for (auto d : dims_)
    if (d == kInferredDimension) return true;
  return false;
}

bool NDShape::has_free() const {
  for (auto d : dims_)
    if (d == kFreeDimension) return true;
  return false;
}

int64_t NDShape::total_size() const {
  int64_t n = 1;
  for (auto d : dims_) {
    if (d < 0) throw ShapeError("shape " + str() + " has unknown dimensions; its size is undefined");
    n *= d;
  }
  return n;
}

NDShape NDShape::sub(size_t begin, size_t end) const {
  if (begin > end || end > dims_.size()) throw ValueError("NDShape::sub: range out of bounds for " + str());
  return NDShape(std::vector<int64_t>(dims_.begin() + begin, dims_.begin() + end));
}

NDShape NDShape::concat(const NDShape& other) const {
  std::vector<int64_t> d = dims_;
  d.insert(d.end(), other.dims_.begin(), other.dims_.end());
  return NDShape(std::move(d));
}

std::string NDShape::str() const {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) os << ", ";
    os << dims_[i];
  }
  if (dims_.size() == 1) os << ",";
  os << ")";
  return os.str();
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

}  // namespace cntk
