// Dictionary <-> CNTK's v2 protobuf messages (cntk_v2.proto), and files.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cntk/serialize.h"
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "cntk_v2.pb.h"
#include "serialize/attribute_types.h"

namespace cntk {

namespace pb = CNTK::proto;

namespace {

// Axis::static_axis_idx sentinels of CNTK's Axis (Common.cpp).
constexpr int32_t kDynamicAxisIdx = INT_MAX;
constexpr int32_t kAllStaticAxesIdx = INT_MAX - 1;
constexpr int32_t kUnknownAxesIdx = INT_MAX - 2;
constexpr int32_t kEndStaticAxisIdx = INT_MAX - 3;
constexpr int32_t kAllAxesIdx = INT_MAX - 4;
// CNTK's layout for dictionaries over protobuf's 2 GB message limit: the magic number and
// the metadata message's length (little-endian 32-bit each), the metadata message (every
// NDArrayView without its values), then the values of each NDArrayView in the order the
// message lists them (maps in key order): float, float16 (widened) and double values as
// little-endian 4 or 8 bytes, int8 as bytes, int16 as sign-extended varints.
constexpr uint32_t kLargeModelMagic = 0x636e746bU;
// Where tensor values go instead of into the message (writing), or which views wait for
// them (reading); null for the ordinary single-message layout.
thread_local std::vector<NDArrayView>* t_values_apart = nullptr;
// Messages nest at most this deep (protobuf's own limit is 100).
constexpr int kMaxDepth = 64;

struct Reader {
  const std::string& source;
  [[noreturn]] void fail(const std::string& what) const { throw IOError(source + ": " + what); }
};

// ------------------------------------------------------------- engine -> proto

void to_proto(const NDShape& s, pb::NDShape* out) {
  for (size_t i = s.rank(); i-- > 0;) out->add_shape_dim(uint64_t(s[i]));
}

void to_proto(const Axis& a, pb::Axis* out) {
  switch (a.kind()) {
    case Axis::Kind::Static:
      if (a.static_index() == Axis::kNewLeading) {
        out->set_static_axis_idx(kEndStaticAxisIdx);
      } else {
        // NumPy axis i is CNTK's axis -i-1 (and back): CNTK counts from the fastest axis.
        out->set_static_axis_idx(-a.static_index() - 1);
        out->set_name("staticAxisIdx=" + std::to_string(-a.static_index() - 1));
      }
      break;
    case Axis::Kind::Dynamic:
      if (a.name() == "UnknownAxes") {  // CNTK marks a placeholder's not-yet-known axes by index
        out->set_static_axis_idx(kUnknownAxesIdx);
        out->set_name("UnknownAxes");
        break;
      }
      out->set_static_axis_idx(kDynamicAxisIdx);
      out->set_name(a.name());
      out->set_is_ordered_dynamic_axis(a.is_ordered());
      break;
    case Axis::Kind::AllStatic:
      out->set_static_axis_idx(kAllStaticAxesIdx);
      out->set_name("AllStaticAxes");
      break;
    case Axis::Kind::All:
      out->set_static_axis_idx(kAllAxesIdx);
      out->set_name("AllAxes");
      break;
  }
}

void to_proto(const NDArrayView& view, pb::NDArrayView* out) {
  NDArrayView v = view.to_dense().contiguous();
  to_proto(v.shape(), out->mutable_shape());
  out->set_storage_format(pb::NDArrayView::Dense);
  int64_t n = v.numel();
  if (t_values_apart) {
    switch (v.dtype()) {
      case DataType::Float: out->set_data_type(pb::NDArrayView::Float); break;
      case DataType::Double: out->set_data_type(pb::NDArrayView::Double); break;
      case DataType::Float16: out->set_data_type(pb::NDArrayView::Float16); break;
      case DataType::Int8: out->set_data_type(pb::NDArrayView::Int8); break;
      case DataType::Int16: out->set_data_type(pb::NDArrayView::Int16); break;
      default: throw ValueError("cannot serialize an NDArrayView of data type " + std::string(to_string(v.dtype())));
    }
    t_values_apart->push_back(v);
    return;
  }
  switch (v.dtype()) {
    case DataType::Float: {
      out->set_data_type(pb::NDArrayView::Float);
      auto* dst = out->mutable_float_values()->mutable_value();
      dst->Resize(int(n), 0.0f);
      if (n) std::memcpy(dst->mutable_data(), v.data<float>(), size_t(n) * sizeof(float));
      break;
    }
    case DataType::Double: {
      out->set_data_type(pb::NDArrayView::Double);
      auto* dst = out->mutable_double_values()->mutable_value();
      dst->Resize(int(n), 0.0);
      if (n) std::memcpy(dst->mutable_data(), v.data<double>(), size_t(n) * sizeof(double));
      break;
    }
    case DataType::Float16: {
      // CNTK writes float16 values widened to float.
      out->set_data_type(pb::NDArrayView::Float16);
      auto* dst = out->mutable_float_values()->mutable_value();
      dst->Reserve(int(n));
      const uint16_t* src = v.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) dst->Add(half_to_float(src[i]));
      break;
    }
    case DataType::Int8:  // CNTK keeps int8 data as raw bytes and int16 data as sint32 values
      out->set_data_type(pb::NDArrayView::Int8);
      out->mutable_bytes_value()->set_value(std::string(static_cast<const char*>(v.raw_data()), size_t(n)));
      break;
    case DataType::Int16: {
      out->set_data_type(pb::NDArrayView::Int16);
      auto* dst = out->mutable_sint32_values()->mutable_value();
      dst->Reserve(int(n));
      const int16_t* src = v.data<int16_t>();
      for (int64_t i = 0; i < n; ++i) dst->Add(src[i]);
      break;
    }
    default: throw ValueError("cannot serialize an NDArrayView of data type " + std::string(to_string(v.dtype())));
  }
}

void to_proto(const DictValue& v, pb::DictionaryValue* out, const std::string& key);

void to_proto(const Dictionary& d, pb::Dictionary* out) {
  out->set_version(1);
  for (auto& [k, v] : d) to_proto(v, &(*out->mutable_data())[k], k);
}

void to_proto(const DictValue& v, pb::DictionaryValue* out, const std::string& key) {
  out->set_version(1);
  const auto& s = v.storage();
  if (std::holds_alternative<std::monostate>(s)) {
    out->set_value_type(pb::DictionaryValue::None);
  } else if (auto* b = std::get_if<bool>(&s)) {
    out->set_value_type(pb::DictionaryValue::Bool);
    out->set_bool_value(*b);
  } else if (auto* i = std::get_if<int64_t>(&s)) {
    // The engine keeps one integer type; CNTK reads some keys as int and the rest as size_t.
    if (is_int_typed_key(key) && *i >= INT32_MIN && *i <= INT32_MAX) {
      out->set_value_type(pb::DictionaryValue::Int);
      out->set_int_value(int32_t(*i));
    } else if (*i < 0 && *i >= INT32_MIN) {
      out->set_value_type(pb::DictionaryValue::Int);
      out->set_int_value(int32_t(*i));
    } else {
      out->set_value_type(pb::DictionaryValue::SizeT);
      out->set_size_t_value(uint64_t(*i));
    }
  } else if (auto* d = std::get_if<double>(&s)) {
    if (is_float_typed_key(key)) {
      out->set_value_type(pb::DictionaryValue::Float);
      out->set_float_value(float(*d));
    } else {
      out->set_value_type(pb::DictionaryValue::Double);
      out->set_double_value(*d);
    }
  } else if (auto* str = std::get_if<std::string>(&s)) {
    out->set_value_type(pb::DictionaryValue::String);
    out->set_string_value(*str);
  } else if (auto* shape = std::get_if<NDShape>(&s)) {
    out->set_value_type(pb::DictionaryValue::NDShape);
    to_proto(*shape, out->mutable_nd_shape_value());
  } else if (auto* ax = std::get_if<Axis>(&s)) {
    out->set_value_type(pb::DictionaryValue::Axis);
    to_proto(*ax, out->mutable_axis_value());
  } else if (auto* list = std::get_if<std::shared_ptr<DictValue::List>>(&s)) {
    out->set_value_type(pb::DictionaryValue::Vector);
    auto* vec = out->mutable_vector_value();
    for (auto& e : **list) to_proto(e, vec->add_value(), key);
  } else if (auto* dict = std::get_if<std::shared_ptr<Dictionary>>(&s)) {
    out->set_value_type(pb::DictionaryValue::Dictionary);
    to_proto(**dict, out->mutable_dictionary_value());
  } else if (auto* arr = std::get_if<NDArrayView>(&s)) {
    out->set_value_type(pb::DictionaryValue::NDArrayView);
    to_proto(*arr, out->mutable_nd_array_view_value());
  }
}

// ------------------------------------------------------------- proto -> engine

// Dimensions are kept bit for bit (CNTK's markers are the top values of size_t); the
// function loader checks the shapes a graph uses (check_graph_shape in serialize.h).
NDShape from_proto(const pb::NDShape& s, const Reader& r) {
  if (s.shape_dim_size() > 1024) r.fail("a shape has " + std::to_string(s.shape_dim_size()) + " axes (at most 1024)");
  std::vector<int64_t> dims(size_t(s.shape_dim_size()));
  for (int i = 0; i < s.shape_dim_size(); ++i) dims[dims.size() - 1 - size_t(i)] = int64_t(s.shape_dim(i));
  return NDShape(dims);
}

Axis from_proto(const pb::Axis& a, const Reader& r) {
  int32_t idx = a.static_axis_idx();
  switch (idx) {
    case kDynamicAxisIdx: return Axis::dynamic(a.name(), a.is_ordered_dynamic_axis());
    case kAllStaticAxesIdx: return Axis::all_static_axes();
    case kAllAxesIdx: return Axis::all_axes();
    case kEndStaticAxisIdx: return Axis::new_leading_axis();
    case kUnknownAxesIdx: return Axis::dynamic("UnknownAxes");
    default: return Axis(int(-int64_t(idx) - 1));  // in range for every int32 idx
  }
}

NDArrayView from_proto(const pb::NDArrayView& a, const Reader& r) {
  if (a.storage_format() != pb::NDArrayView::Dense)
    r.fail("sparse NDArrayView values (storage format " + std::to_string(int(a.storage_format())) +
           ") are not supported");
  NDShape shape = from_proto(a.shape(), r);
  int64_t n = 1;
  for (auto d : shape.dims()) {
    if (d < 0) r.fail("an NDArrayView has the dimension " + std::to_string(uint64_t(d)));
    if (d > 0 && n > (int64_t(1) << 40) / d)
      r.fail("an NDArrayView with " + std::to_string(shape.rank()) + " axes is too large");
    n *= d;
  }
  if (t_values_apart && n > 0 && a.float_values().value_size() == 0 && a.double_values().value_size() == 0 &&
      a.bytes_value().value().empty() && a.sint32_values().value_size() == 0) {
    // Values stored after the message: the view is filled in when they are read.
    DataType t = a.data_type() == pb::NDArrayView::Float     ? DataType::Float
                 : a.data_type() == pb::NDArrayView::Double  ? DataType::Double
                 : a.data_type() == pb::NDArrayView::Float16 ? DataType::Float16
                 : a.data_type() == pb::NDArrayView::Int8    ? DataType::Int8
                 : a.data_type() == pb::NDArrayView::Int16   ? DataType::Int16
                                                             : DataType::Unknown;
    if (t == DataType::Unknown)
      r.fail("NDArrayView data type " + std::to_string(int(a.data_type())) + " is not supported");
    NDArrayView v(t, shape);
    t_values_apart->push_back(v);
    return v;
  }
  auto expect = [&](int64_t got, const char* kind) {
    if (got != n)
      r.fail("an NDArrayView of shape " + shape.str() + " holds " + std::to_string(got) + " " + kind + " values (" +
             std::to_string(n) + " expected)");
  };
  switch (a.data_type()) {
    case pb::NDArrayView::Float: {
      expect(a.float_values().value_size(), "float");
      NDArrayView v(DataType::Float, shape);
      if (n) std::memcpy(v.data<float>(), a.float_values().value().data(), size_t(n) * sizeof(float));
      return v;
    }
    case pb::NDArrayView::Double: {
      expect(a.double_values().value_size(), "double");
      NDArrayView v(DataType::Double, shape);
      if (n) std::memcpy(v.data<double>(), a.double_values().value().data(), size_t(n) * sizeof(double));
      return v;
    }
    case pb::NDArrayView::Float16: {
      expect(a.float_values().value_size(), "float16");
      NDArrayView v(DataType::Float16, shape);
      uint16_t* dst = v.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) dst[i] = float_to_half(a.float_values().value(int(i)));
      return v;
    }
    case pb::NDArrayView::Int8: {
      expect(int64_t(a.bytes_value().value().size()), "int8");
      NDArrayView v(DataType::Int8, shape);
      if (n) std::memcpy(v.raw_data(), a.bytes_value().value().data(), size_t(n));
      return v;
    }
    case pb::NDArrayView::Int16: {
      expect(a.sint32_values().value_size(), "int16");
      NDArrayView v(DataType::Int16, shape);
      int16_t* dst = v.data<int16_t>();
      for (int64_t i = 0; i < n; ++i) {
        int32_t x = a.sint32_values().value(int(i));
        if (x < INT16_MIN || x > INT16_MAX) r.fail("an int16 NDArrayView holds the value " + std::to_string(x));
        dst[i] = int16_t(x);
      }
      return v;
    }
    default:
      r.fail("NDArrayView data type " + std::to_string(int(a.data_type())) +
             " is not supported (float32, float64, float16, int8 and int16 are)");
  }
}

Dictionary from_proto(const pb::Dictionary& d, const Reader& r, int depth);

DictValue from_proto(const pb::DictionaryValue& v, const Reader& r, int depth) {
  if (depth > kMaxDepth) r.fail("values nest more than " + std::to_string(kMaxDepth) + " levels deep");
  using T = pb::DictionaryValue;
  switch (v.value_type()) {
    case T::None: return DictValue();
    case T::Bool: return DictValue(v.bool_value());
    case T::Int: return DictValue(int64_t(v.int_value()));
    case T::SizeT: return DictValue(int64_t(v.size_t_value()));
    case T::Float: return DictValue(double(v.float_value()));
    case T::Double: return DictValue(v.double_value());
    case T::String: return DictValue(v.string_value());
    case T::NDShape: return DictValue(from_proto(v.nd_shape_value(), r));
    case T::Axis: return DictValue(from_proto(v.axis_value(), r));
    case T::Vector: {
      DictValue::List list;
      list.reserve(size_t(v.vector_value().value_size()));
      for (auto& e : v.vector_value().value()) list.push_back(from_proto(e, r, depth + 1));
      return DictValue(std::move(list));
    }
    case T::Dictionary: return DictValue(from_proto(v.dictionary_value(), r, depth + 1));
    case T::NDArrayView: return DictValue(from_proto(v.nd_array_view_value(), r));
    // A value type from a later format version: CNTK's reader leaves such values empty
    // (forward compatibility), and so does this one.
    default: return DictValue();
  }
}

Dictionary from_proto(const pb::Dictionary& d, const Reader& r, int depth) {
  // In key order, the order in which values stored apart follow the message.
  std::vector<const std::string*> keys;
  for (auto& [k, v] : d.data()) keys.push_back(&k);
  std::sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  Dictionary out;
  for (auto* k : keys) out[*k] = from_proto(d.data().at(*k), r, depth + 1);
  return out;
}

// Sets t_values_apart for the lifetime of the guard.
struct ValuesApart {
  explicit ValuesApart(std::vector<NDArrayView>* v) { t_values_apart = v; }
  ~ValuesApart() { t_values_apart = nullptr; }
};

std::string serialize_deterministic(const google::protobuf::Message& msg) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    msg.SerializeToCodedStream(&coded);
    if (coded.HadError()) throw IOError("could not serialize a dictionary");
  }
  return out;
}

// CNTK's large layout (see kLargeModelMagic) of `msg` (the metadata) and `views`.
std::string large_layout_bytes(const pb::Dictionary& msg, const std::vector<NDArrayView>& views) {
  size_t meta = msg.ByteSizeLong();
  if (meta >= size_t(INT_MAX)) throw ValueError("the dictionary's metadata alone needs more than 2 GB");
  size_t total = 8 + meta;
  for (auto& v : views) total += size_t(v.numel()) * (v.dtype() == DataType::Float16 ? 4 : element_size(v.dtype()));
  std::string out;
  out.reserve(total);
  auto put32 = [&](uint32_t x) {
    char b[4];
    for (int i = 0; i < 4; ++i) b[i] = char((x >> (8 * i)) & 0xFF);
    out.append(b, 4);
  };
  put32(kLargeModelMagic);
  put32(uint32_t(meta));
  out += serialize_deterministic(msg);
  static_assert(std::endian::native == std::endian::little, "raw values are written little-endian");
  for (auto& v : views) {
    size_t n = size_t(v.numel());
    switch (v.dtype()) {
      case DataType::Float:
      case DataType::Double:
      case DataType::Int8: out.append(static_cast<const char*>(v.raw_data()), n * element_size(v.dtype())); break;
      case DataType::Float16:
        for (size_t i = 0; i < n; ++i) {
          float f = half_to_float(v.data<uint16_t>()[i]);
          out.append(reinterpret_cast<const char*>(&f), 4);
        }
        break;
      case DataType::Int16:
        for (size_t i = 0; i < n; ++i) {
          // protobuf's WriteVarint32SignExtended: negative values take ten bytes
          uint64_t x = uint64_t(int64_t(v.data<int16_t>()[i]));
          do {
            out.push_back(char((x & 0x7F) | (x > 0x7F ? 0x80 : 0)));
            x >>= 7;
          } while (x);
        }
        break;
      default: throw ValueError("cannot serialize an NDArrayView of data type " + std::string(to_string(v.dtype())));
    }
  }
  return out;
}

// Fills `views` from the values that follow the metadata, from `pos` on.
void read_values_apart(const std::string& bytes, size_t pos, const std::vector<NDArrayView>& views, const Reader& r) {
  auto need = [&](size_t k) {
    if (bytes.size() - pos < k) r.fail("the values stored after the model's metadata end early");
  };
  for (auto v : views) {
    size_t n = size_t(v.numel());
    switch (v.dtype()) {
      case DataType::Float:
      case DataType::Double:
      case DataType::Int8: {
        size_t k = n * element_size(v.dtype());
        need(k);
        std::memcpy(v.raw_data(), bytes.data() + pos, k);
        pos += k;
        break;
      }
      case DataType::Float16:
        need(4 * n);
        for (size_t i = 0; i < n; ++i, pos += 4) {
          float f;
          std::memcpy(&f, bytes.data() + pos, 4);
          v.data<uint16_t>()[i] = float_to_half(f);
        }
        break;
      case DataType::Int16:
        for (size_t i = 0; i < n; ++i) {
          uint64_t x = 0;
          for (int shift = 0;; shift += 7) {
            need(1);
            uint8_t b = uint8_t(bytes[pos++]);
            if (shift < 64) x |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) break;
            if (shift > 63) r.fail("a malformed int16 value after the model's metadata");
          }
          v.data<int16_t>()[i] = int16_t(int64_t(x));
        }
        break;
      default: r.fail("unsupported data type among the values stored after the metadata");
    }
  }
  if (pos != bytes.size()) r.fail(std::to_string(bytes.size() - pos) + " bytes follow the model's values");
}

}  // namespace

std::string dictionary_to_bytes(const Dictionary& d) {
  {
    // Over protobuf's 2 GB message limit, the values are stored after the message (as CNTK).
    std::vector<NDArrayView> views;
    pb::Dictionary meta;
    {
      ValuesApart apart(&views);
      to_proto(d, &meta);
    }
    size_t total = meta.ByteSizeLong() + 64 * views.size();
    for (auto& v : views) total += size_t(v.numel()) * element_size(v.dtype()) * (v.dtype() == DataType::Int16 ? 2 : 1);
    if (total >= size_t(INT_MAX)) return large_layout_bytes(meta, views);
  }
  pb::Dictionary msg;
  to_proto(d, &msg);
  size_t size = msg.ByteSizeLong();
  if (size >= size_t(INT_MAX))
    throw ValueError("the dictionary needs more than 2 GB, more than one protobuf message holds");
  // Deterministic: map entries in key order, so that saving the same model twice gives the same bytes.
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    msg.SerializeWithCachedSizes(&coded);
    if (coded.HadError()) throw IOError("could not serialize a dictionary");
  }
  return out;
}

Dictionary dictionary_from_bytes(const std::string& bytes, const std::string& source) {
  Reader r{source};
  if (bytes.empty()) r.fail("the data is empty (not a CNTK v2 model or dictionary)");
  if (bytes.size() >= 8) {
    uint32_t magic = 0, meta = 0;
    std::memcpy(&magic, bytes.data(), 4);
    std::memcpy(&meta, bytes.data() + 4, 4);
    if (magic == kLargeModelMagic) {
      if (meta > bytes.size() - 8) r.fail("the model's metadata is cut short");
      pb::Dictionary msg;
      bool parsed;
      {
        google::protobuf::LogSilencer quiet;
        parsed = msg.ParseFromArray(bytes.data() + 8, int(meta));
      }
      if (!parsed) r.fail("the metadata of a model over 2 GB is not a valid CNTK v2 protobuf Dictionary");
      std::vector<NDArrayView> views;
      Dictionary d;
      {
        ValuesApart apart(&views);
        d = from_proto(msg, r, 0);
      }
      read_values_apart(bytes, 8 + size_t(meta), views, r);
      return d;
    }
  }
  if (bytes.size() >= size_t(INT_MAX)) r.fail("the data is larger than 2 GB");
  pb::Dictionary msg;
  bool parsed;
  {
    // The failure is reported below as an IOError; protobuf's own log line would only repeat it.
    google::protobuf::LogSilencer quiet;
    parsed = msg.ParseFromString(bytes);
  }
  if (!parsed)
    r.fail("not a valid CNTK v2 protobuf Dictionary (truncated, corrupted or another format; " +
           std::to_string(bytes.size()) + " bytes)");
  return from_proto(msg, r, 0);
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError(path + ": cannot open the file for reading: " + std::strerror(errno));
  // One buffer of the file's size (models may take several GB).
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) throw IOError(path + ": cannot tell the file's size");
  in.seekg(0, std::ios::beg);
  std::string out(size_t(size), '\0');
  if (size > 0 && !in.read(out.data(), size)) throw IOError(path + ": read error");
  return out;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw IOError(path + ": cannot create '" + tmp + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string err = std::strerror(errno);
      ::close(fd);
      std::remove(tmp.c_str());
      throw IOError(path + ": write error: " + err);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    throw IOError(path + ": cannot flush the file: " + err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    throw IOError(path + ": cannot rename '" + tmp + "' into place: " + err);
  }
}

void save_dictionary(const Dictionary& d, const std::string& path) {
  write_file_atomically(path, dictionary_to_bytes(d));
}

Dictionary load_dictionary(const std::string& path) { return dictionary_from_bytes(read_file_bytes(path), path); }

std::string dictionary_value_to_bytes(const DictValue& v) {
  pb::DictionaryValue msg;
  to_proto(v, &msg, "");
  if (msg.ByteSizeLong() >= size_t(INT_MAX))
    throw ValueError("the value needs more than 2 GB, more than one protobuf message holds");
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    msg.SerializeToCodedStream(&coded);
    if (coded.HadError()) throw IOError("could not serialize a dictionary value");
  }
  return out;
}

DictValue dictionary_value_from_bytes(const std::string& bytes, const std::string& source) {
  Reader r{source};
  if (bytes.size() >= size_t(INT_MAX)) r.fail("the data is larger than 2 GB");
  pb::DictionaryValue msg;
  bool parsed;
  {
    google::protobuf::LogSilencer quiet;
    parsed = msg.ParseFromString(bytes);
  }
  if (!parsed) r.fail("not a valid CNTK v2 protobuf DictionaryValue (" + std::to_string(bytes.size()) + " bytes)");
  return from_proto(msg, r, 0);
}

void save_dictionary_value(const DictValue& v, const std::string& path) {
  write_file_atomically(path, dictionary_value_to_bytes(v));
}

DictValue load_dictionary_value(const std::string& path) {
  return dictionary_value_from_bytes(read_file_bytes(path), path);
}

}  // namespace cntk
