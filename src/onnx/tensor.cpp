#include "onnx/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "onnx/export.h"

namespace cntk::onnx_io {

using ::onnx::TensorProto;

ElemType elem_type_of(DataType t) {
  switch (t) {
    case DataType::Float: return ElemType::Float;
    case DataType::Double: return ElemType::Double;
    case DataType::Float16: return ElemType::Float16;
    case DataType::Int8: return ElemType::Int8;
    case DataType::Int16: return ElemType::Int16;
    default: throw ValueError(std::string("ONNX: no ONNX element type for ") + to_string(t));
  }
}

DataType engine_type_of(int32_t onnx_type, const std::string& what) {
  switch (onnx_type) {
    case TensorProto::FLOAT: return DataType::Float;
    case TensorProto::DOUBLE: return DataType::Double;
    case TensorProto::FLOAT16: return DataType::Float16;
    default: break;
  }
  // Narrow floats, booleans and integers are computed as float32 (graph inputs and outputs; the
  // reader's Cast rounds to their values). FLOAT8E8M0 has no reader form yet.
  if ((is_float_type(onnx_type) && onnx_type != TensorProto::FLOAT8E8M0) || is_integer_type(onnx_type) ||
      onnx_type == TensorProto::BOOL)
    return DataType::Float;
  throw ValueError(what + ": ONNX element type " + std::to_string(onnx_type) + " (" +
                   TensorProto::DataType_Name(TensorProto::DataType(onnx_type)) +
                   ") has no engine type (float16, float32, float64 and integer types are read)");
}

bool is_float_type(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT:
    case TensorProto::DOUBLE:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::FLOAT8E4M3FN:
    case TensorProto::FLOAT8E4M3FNUZ:
    case TensorProto::FLOAT8E5M2:
    case TensorProto::FLOAT8E5M2FNUZ:
    case TensorProto::FLOAT8E8M0:
    case TensorProto::FLOAT4E2M1: return true;
    default: return false;
  }
}

bool is_integer_type(int32_t t) {
  switch (t) {
    case TensorProto::UINT8:
    case TensorProto::INT8:
    case TensorProto::UINT16:
    case TensorProto::INT16:
    case TensorProto::INT32:
    case TensorProto::INT64:
    case TensorProto::UINT32:
    case TensorProto::UINT64:
    case TensorProto::INT4:
    case TensorProto::UINT4:
    case TensorProto::INT2:
    case TensorProto::UINT2: return true;
    default: return false;
  }
}

namespace {

size_t onnx_elem_size(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32: return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64: return 8;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::INT16:
    case TensorProto::UINT16: return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL: return 1;
    default: return 0;
  }
}

int64_t checked_numel(const TensorProto& t, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) throw ValueError(what + ": tensor '" + t.name() + "' has a negative dimension " + std::to_string(d));
    if (d != 0 && n > (int64_t(1) << 40) / d) throw ValueError(what + ": tensor '" + t.name() + "' is too large");
    n *= d;
  }
  return n;
}

// The bytes of external data (location, offset, length) relative to base_dir.
std::string read_external(const TensorProto& t, const std::string& base_dir, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::stoll(kv.value());
    else if (kv.key() == "length")
      length = std::stoll(kv.value());
  }
  if (location.empty()) throw ValueError(what + ": tensor '" + t.name() + "' has external data without a location");
  if (location.find("..") != std::string::npos || (!location.empty() && location[0] == '/'))
    throw ValueError(what + ": tensor '" + t.name() + "' has external data outside the model's folder: " + location);
  std::string path = base_dir + "/" + location;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError(what + ": cannot open the external data file '" + path + "' of tensor '" + t.name() + "'");
  in.seekg(0, std::ios::end);
  const int64_t size = int64_t(in.tellg());
  if (length < 0) length = size - offset;
  if (offset < 0 || offset + length > size)
    throw IOError(what + ": external data of tensor '" + t.name() + "' lies beyond the end of '" + path + "'");
  std::string bytes(size_t(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  return bytes;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Element k of the tensor's data as double, from raw bytes of ONNX type `type`.
double raw_element(const char* p, int32_t type) {
  switch (type) {
    case TensorProto::FLOAT: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TensorProto::DOUBLE: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case TensorProto::INT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TensorProto::UINT32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TensorProto::INT64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
    case TensorProto::UINT64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
    case TensorProto::INT16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case TensorProto::UINT16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case TensorProto::INT8: return double(int8_t(*p));
    case TensorProto::UINT8:
    case TensorProto::BOOL: return double(uint8_t(*p));
    case TensorProto::FLOAT16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return half_to_float(v);
    }
    case TensorProto::BFLOAT16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      uint32_t bits = uint32_t(v) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    default: return 0;
  }
}

// Element types narrower than a byte or a float16, packed in bytes: bits per value, and
// the decoding of one value's bits (float8 formats, float4e2m1, 4- and 2-bit integers).
struct NarrowType {
  int bits;
  double (*decode)(uint32_t);
};
template <int E, int M, int Bias, char Special>  // Special: 'f' (FN: NaN at all ones), 'u' (FNUZ), 'i' (IEEE), 0
double decode_small_float(uint32_t b) {
  const uint32_t sign = (b >> (E + M)) & 1u, e = (b >> M) & ((1u << E) - 1), m = b & ((1u << M) - 1);
  if (Special == 'u' && b == (1u << (E + M))) return std::numeric_limits<double>::quiet_NaN();
  if (Special == 'f' && e == (1u << E) - 1 && m == (1u << M) - 1) return std::numeric_limits<double>::quiet_NaN();
  if (Special == 'i' && e == (1u << E) - 1)
    return m ? std::numeric_limits<double>::quiet_NaN()
             : (sign ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
  const double v = e == 0 ? std::ldexp(double(m), 1 - Bias - M) : std::ldexp(double((1u << M) + m), int(e) - Bias - M);
  return sign ? -v : v;
}
template <int Bits, bool Signed>
double decode_small_int(uint32_t b) {
  return Signed && (b >> (Bits - 1)) ? double(int(b) - (1 << Bits)) : double(b);
}
std::optional<NarrowType> narrow_type(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT8E4M3FN: return NarrowType{8, decode_small_float<4, 3, 7, 'f'>};
    case TensorProto::FLOAT8E4M3FNUZ: return NarrowType{8, decode_small_float<4, 3, 8, 'u'>};
    case TensorProto::FLOAT8E5M2: return NarrowType{8, decode_small_float<5, 2, 15, 'i'>};
    case TensorProto::FLOAT8E5M2FNUZ: return NarrowType{8, decode_small_float<5, 2, 16, 'u'>};
    case TensorProto::FLOAT4E2M1: return NarrowType{4, decode_small_float<2, 1, 1, 0>};
    case TensorProto::INT4: return NarrowType{4, decode_small_int<4, true>};
    case TensorProto::UINT4: return NarrowType{4, decode_small_int<4, false>};
    case TensorProto::INT2: return NarrowType{2, decode_small_int<2, true>};
    case TensorProto::UINT2: return NarrowType{2, decode_small_int<2, false>};
    default: return std::nullopt;
  }
}

// The tensor's values as doubles (and as exact integers in `ints` where asked).
void read_values(const TensorProto& t, const std::string& base_dir, const std::string& what, int64_t n,
                 std::vector<double>* out, std::vector<int64_t>* ints) {
  const int32_t type = t.data_type();
  const size_t es = onnx_elem_size(type);
  const auto narrow = narrow_type(type);
  if (es == 0 && !narrow) engine_type_of(type, what);  // raises with the type's name
  auto put = [&](int64_t k, double v, int64_t iv) {
    if (out) (*out)[size_t(k)] = v;
    if (ints) (*ints)[size_t(k)] = iv;
  };
  std::string external;
  const std::string* raw = nullptr;
  if (t.data_location() == TensorProto::EXTERNAL) {
    external = read_external(t, base_dir, what);
    raw = &external;
  } else if (t.has_raw_data()) {
    raw = &t.raw_data();
  }
  auto size_error = [&](int64_t have) {
    return ValueError(what + ": tensor '" + t.name() + "' holds " + std::to_string(have) +
                      " values but its shape needs " + std::to_string(n));
  };
  if (narrow) {
    // Packed low bits first, in raw bytes or one byte per int32_data entry.
    const int64_t per_byte = 8 / narrow->bits, bytes = raw ? int64_t(raw->size()) : int64_t(t.int32_data_size());
    if (bytes != (n + per_byte - 1) / per_byte) throw size_error(bytes * per_byte);
    if (out) out->assign(size_t(n), 0.0);
    if (ints) ints->assign(size_t(n), 0);
    for (int64_t k = 0; k < n; ++k) {
      const uint32_t byte =
          raw ? uint8_t((*raw)[size_t(k / per_byte)]) : uint32_t(t.int32_data(int(k / per_byte))) & 0xffu;
      const double v = narrow->decode((byte >> (narrow->bits * (k % per_byte))) & ((1u << narrow->bits) - 1));
      put(k, v, float_to_i64(v));
    }
    return;
  }
  // The stored count is checked before anything of the shape's size is allocated: a shape
  // can claim far more values than the file holds.
  const int64_t stored =
      raw ? int64_t(raw->size() / es)
          : std::max({int64_t(t.float_data_size()), int64_t(t.int32_data_size()), int64_t(t.int64_data_size()),
                      int64_t(t.double_data_size()), int64_t(t.uint64_data_size()), int64_t(t.string_data_size())});
  if (stored != n) throw size_error(stored);
  if (out) out->assign(size_t(n), 0.0);
  if (ints) ints->assign(size_t(n), 0);
  if (raw) {
    if (int64_t(raw->size()) != n * int64_t(es)) throw size_error(int64_t(raw->size() / es));
    for (int64_t k = 0; k < n; ++k) {
      const char* p = raw->data() + k * int64_t(es);
      int64_t iv = 0;
      if (type == TensorProto::INT64)
        std::memcpy(&iv, p, 8);
      else if (type == TensorProto::UINT64) {
        uint64_t u;
        std::memcpy(&u, p, 8);
        iv = int64_t(u);
      }
      const double v = raw_element(p, type);
      if (type != TensorProto::INT64 && type != TensorProto::UINT64) iv = float_to_i64(v);
      put(k, v, iv);
    }
    return;
  }
  switch (type) {
    case TensorProto::FLOAT:
      if (t.float_data_size() != n) throw size_error(t.float_data_size());
      for (int64_t k = 0; k < n; ++k) put(k, t.float_data(int(k)), float_to_i64(t.float_data(int(k))));
      break;
    case TensorProto::DOUBLE:
      if (t.double_data_size() != n) throw size_error(t.double_data_size());
      for (int64_t k = 0; k < n; ++k) put(k, t.double_data(int(k)), float_to_i64(t.double_data(int(k))));
      break;
    case TensorProto::INT64:
      if (t.int64_data_size() != n) throw size_error(t.int64_data_size());
      for (int64_t k = 0; k < n; ++k) put(k, double(t.int64_data(int(k))), t.int64_data(int(k)));
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      if (t.uint64_data_size() != n) throw size_error(t.uint64_data_size());
      for (int64_t k = 0; k < n; ++k) put(k, double(t.uint64_data(int(k))), int64_t(t.uint64_data(int(k))));
      break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      // 16-bit floats are kept as their bit patterns in int32_data.
      if (t.int32_data_size() != n) throw size_error(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k) {
        const uint16_t bits = uint16_t(t.int32_data(int(k)));
        double v;
        if (type == TensorProto::FLOAT16) {
          v = half_to_float(bits);
        } else {
          const uint32_t wide = uint32_t(bits) << 16;
          float f;
          std::memcpy(&f, &wide, 4);
          v = f;
        }
        put(k, v, float_to_i64(v));
      }
      break;
    default:  // int8/16/32, uint8/16, bool: int32_data
      if (t.int32_data_size() != n) throw size_error(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k) put(k, double(t.int32_data(int(k))), t.int32_data(int(k)));
  }
}

NDShape dims_of(const TensorProto& t) { return NDShape(std::vector<int64_t>(t.dims().begin(), t.dims().end())); }

}  // namespace

NDArrayView tensor_to_view(const TensorProto& t, const std::string& base_dir, const std::string& what) {
  const DataType dt = engine_type_of(t.data_type(), what);
  const int64_t n = checked_numel(t, what);
  const bool direct_raw = t.data_location() != TensorProto::EXTERNAL && t.has_raw_data() &&
                          ((dt == DataType::Float && t.data_type() == TensorProto::FLOAT) ||
                           (dt == DataType::Double && t.data_type() == TensorProto::DOUBLE) ||
                           (dt == DataType::Float16 && t.data_type() == TensorProto::FLOAT16));
  if (direct_raw) {
    if (int64_t(t.raw_data().size()) != n * int64_t(element_size(dt)))
      throw ValueError(what + ": tensor '" + t.name() + "' holds " + std::to_string(t.raw_data().size()) +
                       " bytes but its shape needs " + std::to_string(n * int64_t(element_size(dt))));
    NDArrayView v(dt, dims_of(t));
    if (n) std::memcpy(v.raw_data(), t.raw_data().data(), t.raw_data().size());
    return v;
  }
  std::vector<double> values;
  read_values(t, base_dir, what, n, &values, nullptr);
  if (dt == DataType::Float16) {
    // float16 through float32, then the engine's own conversion.
    NDArrayView f(DataType::Float, dims_of(t));
    for (int64_t k = 0; k < n; ++k) f.data<float>()[k] = float(values[size_t(k)]);
    return f.cast(DataType::Float16);
  }
  NDArrayView v(dt, dims_of(t));
  CNTK_DISPATCH_FLOAT(dt, T, [&] {
    T* p = v.data<T>();
    for (int64_t k = 0; k < n; ++k) p[k] = T(values[size_t(k)]);
    return 0;
  });
  return v;
}

std::vector<int64_t> tensor_to_i64(const TensorProto& t, const std::string& base_dir, const std::string& what) {
  const int64_t n = checked_numel(t, what);
  std::vector<int64_t> ints;
  std::vector<double> values;
  read_values(t, base_dir, what, n, &values, &ints);
  if (is_float_type(t.data_type()))
    for (size_t k = 0; k < values.size(); ++k)
      if (double(ints[k]) != values[k])
        throw ValueError(what + ": tensor '" + t.name() + "' must hold integers, but holds " +
                         std::to_string(values[k]));
  return ints;
}

void view_to_tensor(const NDArrayView& v0, TensorProto& t) {
  const NDArrayView v = v0.to_dense().contiguous();
  t.clear_dims();
  for (int64_t d : v.shape().dims()) t.add_dims(d);
  t.set_data_type(int32_t(elem_type_of(v.dtype())));
  t.set_raw_data(std::string(static_cast<const char*>(v.raw_data()), size_t(v.numel()) * element_size(v.dtype())));
}

void i64_to_tensor(const std::vector<int64_t>& values, const std::vector<int64_t>& dims, TensorProto& t) {
  t.clear_dims();
  for (int64_t d : dims) t.add_dims(d);
  t.set_data_type(TensorProto::INT64);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t)));
}

void move_to_external(TensorProto& t, const std::string& base_dir, const std::string& location) {
  const std::string path = base_dir + "/" + location;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IOError("ONNX: cannot write the external data file '" + path + "'");
  out.write(t.raw_data().data(), std::streamsize(t.raw_data().size()));
  if (!out) throw IOError("ONNX: writing the external data file '" + path + "' failed");
  const size_t length = t.raw_data().size();
  t.clear_raw_data();
  t.set_data_location(TensorProto::EXTERNAL);
  auto* loc = t.add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  auto* off = t.add_external_data();
  off->set_key("offset");
  off->set_value("0");
  auto* len = t.add_external_data();
  len->set_key("length");
  len->set_value(std::to_string(length));
}

}  // namespace cntk::onnx_io
