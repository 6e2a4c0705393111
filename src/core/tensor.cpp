#include <atomic>
#include "cntk/tensor.h"

#include "core/output_hint.h"

#include <cmath>

namespace cntk {

NDArrayView::NDArrayView(DataType dtype, const NDShape& shape, DeviceDescriptor device) : dtype_(dtype), shape_(shape) {
  if (device.type() != DeviceKind::CPU) throw ValueError("NDArrayView: only the CPU device is available");
  if (dtype == DataType::Unknown) throw TypeError("NDArrayView: unknown data type");
  numel_ = shape.total_size();
  if (NDArrayView dest = detail::take_output_hint(dtype, shape); dest.defined()) {
    *this = std::move(dest);
    return;
  }
  strides_ = contiguous_strides(shape.dims());
  storage_ = std::make_shared<Storage>(numel_ * element_size(dtype));
}

namespace detail {
namespace {
struct OutputHint {
  const NDArrayView* dest = nullptr;
  const NDArrayView* scratch = nullptr;
  bool taken = false, scratch_taken = false;
  bool any_unit_dims = false;  // dest also in shapes that differ from it only in 1s
};
thread_local OutputHint t_hint;

std::vector<int64_t> without_ones(const NDShape& s) {
  std::vector<int64_t> d;
  for (auto n : s.dims())
    if (n != 1) d.push_back(n);
  return d;
}

bool fits(const NDArrayView& v, DataType dtype, const NDShape& shape, bool any_unit_dims) {
  if (v.dtype() != dtype) return false;
  if (v.shape() == shape) return true;
  return any_unit_dims && v.numel() == shape.total_size() && without_ones(v.shape()) == without_ones(shape);
}
}  // namespace

ScopedOutputHint::ScopedOutputHint(const NDArrayView& dest) { t_hint = {&dest, nullptr, false, false, false}; }
ScopedOutputHint::ScopedOutputHint(const NDArrayView& dest, const NDArrayView* scratch) {
  t_hint = {&dest, scratch && scratch->defined() ? scratch : nullptr, false, false, true};
}
ScopedOutputHint::~ScopedOutputHint() { t_hint = {}; }

NDArrayView take_output_hint(DataType dtype, const NDShape& shape) {
  OutputHint& h = t_hint;
  if (h.dest && !h.taken && fits(*h.dest, dtype, shape, h.any_unit_dims)) {
    h.taken = true;
    return h.dest->shape() == shape ? *h.dest : h.dest->reshape(shape);
  }
  if (h.scratch && !h.scratch_taken && fits(*h.scratch, dtype, shape, false)) {
    h.scratch_taken = true;
    return *h.scratch;
  }
  return {};
}
}  // namespace detail

NDArrayView NDArrayView::borrow(DataType dtype, const NDShape& shape, void* data, std::shared_ptr<void> keepalive) {
  NDArrayView v;
  v.dtype_ = dtype;
  v.shape_ = shape;
  v.numel_ = shape.total_size();
  v.strides_ = contiguous_strides(shape.dims());
  v.storage_ = std::make_shared<Storage>(data, v.numel_ * element_size(dtype), std::move(keepalive));
  v.read_only_ = true;
  return v;
}

NDArrayView NDArrayView::zeros(DataType dtype, const NDShape& shape) {
  NDArrayView v(dtype, shape);
  std::memset(v.storage_->data(), 0, v.numel_ * element_size(dtype));
  return v;
}

NDArrayView NDArrayView::full(DataType dtype, const NDShape& shape, double value) {
  NDArrayView v(dtype, shape);
  v.fill(value);
  return v;
}

NDArrayView NDArrayView::sparse(DataType dtype, const NDShape& shape, std::vector<int64_t> starts,
                                std::vector<int64_t> indices, const void* values) {
  if (shape.rank() == 0) throw ValueError("sparse NDArrayView needs rank >= 1");
  int64_t outer = shape.total_size() / std::max<int64_t>(shape[shape.rank() - 1], 1);
  if ((int64_t)starts.size() != outer + 1)
    throw ValueError("sparse NDArrayView: expected " + std::to_string(outer + 1) + " row offsets for shape " +
                     shape.str() + ", got " + std::to_string(starts.size()));
  int64_t nnz = starts.back();
  if ((int64_t)indices.size() != nnz) throw ValueError("sparse NDArrayView: index count does not match offsets");
  int64_t d = shape[shape.rank() - 1];
  for (int64_t i = 0; i < outer; ++i)
    if (starts[i] > starts[i + 1]) throw ValueError("sparse NDArrayView: row offsets must not decrease");
  for (auto ix : indices)
    if (ix < 0 || ix >= d)
      throw ValueError("sparse NDArrayView: index " + std::to_string(ix) + " out of range for dimension " +
                       std::to_string(d));
  NDArrayView v;
  v.dtype_ = dtype;
  v.shape_ = shape;
  v.numel_ = shape.total_size();
  v.strides_ = contiguous_strides(shape.dims());
  v.sparse_ = std::make_shared<SparseCSC>();
  v.sparse_->starts = std::move(starts);
  v.sparse_->indices = std::move(indices);
  v.sparse_->values = std::make_shared<Storage>(nnz * element_size(dtype));
  if (nnz) std::memcpy(v.sparse_->values->data(), values, nnz * element_size(dtype));
  return v;
}

const SparseCSC& NDArrayView::sparse_data() const {
  if (!sparse_) throw ValueError("NDArrayView is not sparse");
  return *sparse_;
}

void NDArrayView::check_dense_contiguous() const {
  if (sparse_) throw ValueError("dense data requested from a sparse NDArrayView");
  if (!storage_) throw ValueError("NDArrayView has no data");
}

bool NDArrayView::is_contiguous() const {
  if (sparse_) return true;
  int64_t expect = 1;
  for (size_t i = shape_.rank(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

namespace {

// Copies a strided view into contiguous destination memory, element by element
// along the innermost axis.
template <class T>
void gather_strided(const T* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, T* dst) {
  size_t r = dims.size();
  int64_t total = 1;
  for (auto d : dims) total *= d;
  if (total == 0) return;
  if (r == 0) {
    dst[0] = src[0];
    return;
  }
  std::vector<int64_t> idx(r, 0);
  int64_t inner = dims[r - 1], istride = strides[r - 1];
  int64_t outer = total / inner;
  int64_t off = 0;
  for (int64_t o = 0; o < outer; ++o) {
    const T* s = src + off;
    if (istride == 1)
      std::memcpy(dst, s, inner * sizeof(T));
    else
      for (int64_t i = 0; i < inner; ++i) dst[i] = s[i * istride];
    dst += inner;
    for (size_t a = r - 1; a-- > 0;) {
      ++idx[a];
      off += strides[a];
      if (idx[a] < dims[a]) break;
      off -= strides[a] * dims[a];
      idx[a] = 0;
    }
  }
}

template <class T>
void copy_typed(const NDArrayView& src, NDArrayView& dst) {
  // dst is contiguous.
  const T* base = static_cast<const T*>(src.storage()->data()) + src.offset();
  gather_strided(base, src.shape().dims(), src.strides(), static_cast<T*>(dst.raw_data()));
}

void copy_any(const NDArrayView& src, NDArrayView& dst) {
  switch (element_size(src.dtype())) {
    case 1: copy_typed<uint8_t>(src, dst); break;
    case 2: copy_typed<uint16_t>(src, dst); break;
    case 4: copy_typed<float>(src, dst); break;
    case 8: copy_typed<double>(src, dst); break;
  }
}

}  // namespace

NDArrayView NDArrayView::contiguous() const {
  if (sparse_ || is_contiguous()) return *this;
  return copy();
}

NDArrayView NDArrayView::copy() const {
  if (sparse_) {
    NDArrayView v = *this;
    v.sparse_ = std::make_shared<SparseCSC>(*sparse_);
    size_t bytes = sparse_->nnz() * element_size(dtype_);
    v.sparse_->values = std::make_shared<Storage>(bytes);
    if (bytes) std::memcpy(v.sparse_->values->data(), sparse_->values->data(), bytes);
    v.read_only_ = false;
    return v;
  }
  NDArrayView out(dtype_, shape_);
  copy_any(*this, out);
  return out;
}

NDArrayView NDArrayView::to_dense() const {
  if (!sparse_) return *this;
  NDArrayView out = zeros(dtype_, shape_);
  int64_t d = shape_.rank() ? shape_[shape_.rank() - 1] : 1;
  int64_t outer = (int64_t)sparse_->starts.size() - 1;
  size_t es = element_size(dtype_);
  char* o = static_cast<char*>(out.raw_data());
  const char* vals = static_cast<const char*>(sparse_->values->data());
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t k = sparse_->starts[r]; k < sparse_->starts[r + 1]; ++k)
      std::memcpy(o + (r * d + sparse_->indices[k]) * es, vals + k * es, es);
  return out;
}

NDArrayView NDArrayView::reshape(const NDShape& shape) const {
  if (shape.total_size() != numel_)
    throw ShapeError("reshape: cannot view " + shape_.str() + " as " + shape.str() + " (sizes differ)");
  if (sparse_) {
    if (shape.rank() && shape_.rank() && shape[shape.rank() - 1] == shape_[shape_.rank() - 1]) {
      NDArrayView v = *this;
      v.shape_ = shape;
      v.strides_ = contiguous_strides(shape.dims());
      return v;
    }
    return to_dense().reshape(shape);
  }
  NDArrayView v = contiguous();
  v.shape_ = shape;
  v.strides_ = contiguous_strides(shape.dims());
  return v;
}

NDArrayView NDArrayView::slice(size_t axis, int64_t begin, int64_t end, int64_t stride) const {
  if (sparse_) return to_dense().slice(axis, begin, end, stride);
  if (axis >= rank()) throw ValueError("slice: axis out of range for shape " + shape_.str());
  if (stride <= 0) throw ValueError("slice: stride must be positive");
  if (begin < 0 || end > shape_[axis] || begin > end)
    throw ValueError("slice: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") out of bounds for axis of size " + std::to_string(shape_[axis]));
  NDArrayView v = *this;
  v.offset_ += begin * strides_[axis];
  v.shape_[axis] = (end - begin + stride - 1) / stride;
  v.strides_[axis] *= stride;
  v.numel_ = v.shape_.total_size();
  return v;
}

NDArrayView NDArrayView::permute(const std::vector<int>& perm) const {
  if (sparse_) return to_dense().permute(perm);
  if (perm.size() != rank()) throw ValueError("permute: permutation rank mismatch for shape " + shape_.str());
  NDArrayView v = *this;
  for (size_t i = 0; i < perm.size(); ++i) {
    v.shape_[i] = shape_[perm[i]];
    v.strides_[i] = strides_[perm[i]];
  }
  return v;
}

NDArrayView NDArrayView::broadcast_to(const NDShape& shape) const {
  if (sparse_) return to_dense().broadcast_to(shape);
  if (shape.rank() < rank()) throw ShapeError("broadcast_to: cannot broadcast " + shape_.str() + " to " + shape.str());
  NDArrayView v = *this;
  size_t pad = shape.rank() - rank();
  v.shape_ = shape;
  v.strides_.assign(shape.rank(), 0);
  for (size_t i = 0; i < rank(); ++i) {
    if (shape_[i] == shape[pad + i])
      v.strides_[pad + i] = strides_[i];
    else if (shape_[i] != 1)
      throw ShapeError("broadcast_to: cannot broadcast " + shape_.str() + " to " + shape.str());
  }
  v.numel_ = shape.total_size();
  return v;
}

NDArrayView NDArrayView::drop_axis(size_t axis) const {
  if (sparse_) return to_dense().drop_axis(axis);
  if (axis >= rank() || shape_[axis] != 1)
    throw ValueError("drop_axis: axis " + std::to_string(axis) + " of shape " + shape_.str() + " is not of size 1");
  NDArrayView v = *this;
  v.shape_.dims().erase(v.shape_.dims().begin() + axis);
  v.strides_.erase(v.strides_.begin() + axis);
  return v;
}

NDArrayView NDArrayView::cast(DataType t) const {
  if (t == dtype_) return *this;
  NDArrayView src = to_dense().contiguous();
  NDArrayView out(t, shape_);
  auto load = [&](int64_t i) -> double {
    switch (dtype_) {
      case DataType::Float: return src.data<float>()[i];
      case DataType::Double: return src.data<double>()[i];
      case DataType::Float16: return half_to_float(src.data<uint16_t>()[i]);
      case DataType::Int8: return src.data<int8_t>()[i];
      case DataType::Int16: return src.data<int16_t>()[i];
      default: return 0;
    }
  };
  for (int64_t i = 0; i < numel_; ++i) {
    double x = load(i);
    switch (t) {
      case DataType::Float: out.data<float>()[i] = (float)x; break;
      case DataType::Double: out.data<double>()[i] = x; break;
      case DataType::Float16: out.data<uint16_t>()[i] = float_to_half((float)x); break;
      case DataType::Int8: out.data<int8_t>()[i] = int8_t(x); break;
      case DataType::Int16: out.data<int16_t>()[i] = int16_t(x); break;
      default: break;
    }
  }
  return out;
}

namespace {
std::atomic<uint64_t> g_user_write_epoch{0};
}  // namespace

uint64_t user_write_epoch() { return g_user_write_epoch.load(std::memory_order_acquire); }
void note_user_write() { g_user_write_epoch.fetch_add(1, std::memory_order_acq_rel); }

void NDArrayView::copy_from(const NDArrayView& src) {
  if (read_only_) throw ValueError("cannot write into a read-only NDArrayView");
  if (src.shape() != shape_)
    throw ShapeError("copy_from: shape " + src.shape().str() + " does not match " + shape_.str());
  NDArrayView s = src.to_dense();
  if (s.dtype() != dtype_) s = s.cast(dtype_);
  if (is_contiguous()) {
    copy_any(s, *this);
    return;
  }
  // Strided destination: go through a compact copy and scatter element-wise.
  NDArrayView c = s.contiguous();
  NDArrayView self_perm = *this;
  size_t es = element_size(dtype_);
  std::vector<int64_t> idx(rank(), 0);
  char* base = static_cast<char*>(storage_->data());
  const char* from = static_cast<const char*>(c.raw_data());
  for (int64_t i = 0; i < numel_; ++i) {
    int64_t off = offset_;
    for (size_t a = 0; a < rank(); ++a) off += idx[a] * strides_[a];
    std::memcpy(base + off * es, from + i * es, es);
    for (size_t a = rank(); a-- > 0;) {
      if (++idx[a] < shape_[a]) break;
      idx[a] = 0;
    }
  }
}

void NDArrayView::fill(double value) {
  if (read_only_) throw ValueError("cannot write into a read-only NDArrayView");
  if (!is_contiguous()) {
    copy_from(full(dtype_, shape_, value));
    return;
  }
  switch (dtype_) {
    case DataType::Float: std::fill_n(data<float>(), numel_, (float)value); break;
    case DataType::Double: std::fill_n(data<double>(), numel_, value); break;
    case DataType::Float16: std::fill_n(data<uint16_t>(), numel_, float_to_half((float)value)); break;
    case DataType::Int8: std::fill_n(data<int8_t>(), numel_, int8_t(value)); break;
    case DataType::Int16: std::fill_n(data<int16_t>(), numel_, int16_t(value)); break;
    default: throw TypeError("fill: unknown data type");
  }
}

double NDArrayView::item() const {
  if (numel_ != 1) throw ValueError("item(): view of shape " + shape_.str() + " does not hold one element");
  NDArrayView c = to_dense().contiguous();
  switch (dtype_) {
    case DataType::Float: return c.data<float>()[0];
    case DataType::Double: return c.data<double>()[0];
    case DataType::Float16: return half_to_float(c.data<uint16_t>()[0]);
    case DataType::Int8: return c.data<int8_t>()[0];
    case DataType::Int16: return c.data<int16_t>()[0];
    default: throw TypeError("item: unknown data type");
  }
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return uint16_t(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return uint16_t(half);
}

}  // namespace cntk
