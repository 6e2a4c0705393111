// The bytes of a CNTK v1 model file (ComputationNetwork::Save / Read and each node's
// Save / Load in CNTK's ComputationNetworkLib): little-endian scalars, strings as
// zero-terminated UTF-16, sections between "B..." / "E..." marker strings, matrices as
// "BMAT" elemSize "unnamed" format rows cols values "EMAT" (column-major).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cwctype>

#include "cntk/common.h"
#include "serialize/v1_model.h"

namespace cntk::v1 {

namespace {

// Bounds on what a file may claim, so that a corrupt count fails cleanly instead of
// allocating without end.
constexpr uint64_t kMaxRank = 64;
constexpr uint64_t kMaxDim = uint64_t(1) << 40;
constexpr uint64_t kMaxElements = uint64_t(1) << 34;
constexpr size_t kMaxString = 1 << 16;
// The dynamic axis a Where node names when the file gives none (CNTK's default).
constexpr const char* kWhereAxis = "WhereNodeAxis";

std::string utf8_from_utf16(const std::u16string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    uint32_t c = s[i];
    if (c >= 0xD800 && c < 0xDC00 && i + 1 < s.size() && s[i + 1] >= 0xDC00 && s[i + 1] < 0xE000)
      c = 0x10000 + ((c - 0xD800) << 10) + (s[++i] - 0xDC00);
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += char(0xE0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    } else {
      out += char(0xF0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3F));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::u16string utf16_from_utf8(const std::string& s) {
  std::u16string out;
  for (size_t i = 0; i < s.size();) {
    auto b = uint8_t(s[i]);
    uint32_t c;
    size_t n;
    if (b < 0x80)
      c = b, n = 1;
    else if ((b >> 5) == 6)
      c = b & 0x1F, n = 2;
    else if ((b >> 4) == 14)
      c = b & 0x0F, n = 3;
    else
      c = b & 0x07, n = 4;
    for (size_t k = 1; k < n && i + k < s.size(); ++k) c = (c << 6) | (uint8_t(s[i + k]) & 0x3F);
    i += n;
    if (c >= 0x10000) {
      c -= 0x10000;
      out += char16_t(0xD800 + (c >> 10));
      out += char16_t(0xDC00 + (c & 0x3FF));
    } else {
      out += char16_t(c);
    }
  }
  return out;
}

// ------------------------------------------------------------------ reading

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& source) : b_(bytes), source_(source) {}

  [[noreturn]] void fail(const std::string& msg) const { fail_at(pos_, msg); }
  [[noreturn]] void fail_at(size_t pos, const std::string& msg) const {
    std::string where = node_.empty() ? "" : " (node '" + node_ + "')";
    throw IOError(source_ + ": offset " + std::to_string(pos) + where + ": " + msg);
  }
  [[noreturn]] void unsupported(size_t pos, const std::string& msg) const {
    std::string where = node_.empty() ? "" : " (node '" + node_ + "')";
    throw NotImplementedError(source_ + ": offset " + std::to_string(pos) + where + ": " + msg);
  }
  void set_node(const std::string& n) { node_ = n; }
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }

  template <class T>
  T get(const char* what) {
    if (left() < sizeof(T)) fail("the file ends inside " + std::string(what) + " (truncated file)");
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  uint64_t u64(const char* what) { return get<uint64_t>(what); }
  int32_t i32(const char* what) { return get<int32_t>(what); }
  bool boolean(const char* what) {
    uint8_t v = get<uint8_t>(what);
    if (v > 1) fail_at(pos_ - 1, std::string(what) + " is not a bool (byte " + std::to_string(v) + ")");
    return v != 0;
  }
  double elem(bool dbl, const char* what) { return dbl ? get<double>(what) : double(get<float>(what)); }

  // A zero-terminated string of `Char`s.
  template <class Char>
  std::basic_string<Char> zero_terminated(const char* what) {
    size_t start = pos_;
    std::basic_string<Char> s;
    for (;;) {
      Char c = get<Char>(what);
      if (c == 0) break;
      if (s.size() >= kMaxString) fail_at(start, std::string(what) + " is not a string (no end within 64k characters)");
      s += c;
    }
    return s;
  }
  std::string str(const char* what) { return utf8_from_utf16(zero_terminated<char16_t>(what)); }
  // An 8-bit string (CNTK's std::string entries, e.g. Trace's format strings).
  std::string narrow(const char* what) { return zero_terminated<char>(what); }
  bool try_marker(const std::string& m) {
    size_t save = pos_;
    std::u16string want = utf16_from_utf8(m);
    for (char16_t c : want) {
      if (left() < 2 || get<char16_t>("a marker") != c) {
        pos_ = save;
        return false;
      }
    }
    if (left() < 2 || get<char16_t>("a marker") != 0) {
      pos_ = save;
      return false;
    }
    return true;
  }
  void marker(const std::string& m) {
    size_t at = pos_;
    if (!try_marker(m)) {
      std::string got = left() >= 2 ? peek_str() : std::string("the end of the file");
      fail_at(at, "expected the marker '" + m + "', found " + got + (left() < 2 ? " (truncated file)" : ""));
    }
  }

  // TensorShape::Load: uint32 rank and dims; `legacy` also accepts the old size_t W, H, C form.
  Dims shape(const char* what, bool legacy = false) {
    uint32_t rank = get<uint32_t>(what);
    uint32_t d0 = rank > 0 ? get<uint32_t>(what) : 0;
    Dims dims;
    if (!legacy || d0 != 0) {
      if (rank > kMaxRank) fail(std::string(what) + " has the rank " + std::to_string(rank));
      if (rank > 0) dims.push_back(d0);
      for (uint32_t i = 1; i < rank; ++i) dims.push_back(get<uint32_t>(what));
    } else {
      // CNTK's older layout: three size_t, the first already half read as `rank`; they
      // land in the dims as TensorShape::Load places them.
      uint64_t second = u64(what), third = u64(what);
      dims = {int64_t(third), int64_t(rank), int64_t(second)};
    }
    for (auto d : dims)
      if (uint64_t(d) > kMaxDim) fail(std::string(what) + " has the dimension " + std::to_string(d));
    return dims;
  }

  std::vector<bool> bool_list(const char* what) {
    uint64_t n = u64(what);
    if (n > left()) fail(std::string(what) + " claims " + std::to_string(n) + " entries (truncated file)");
    std::vector<bool> v;
    for (uint64_t i = 0; i < n; ++i) v.push_back(boolean(what));
    return v;
  }

  // Matrix::Read: 'd' then the dense CPUMatrix section.
  std::vector<double> matrix(uint64_t& rows, uint64_t& cols, bool& is_double) {
    size_t at = pos_;
    char type = get<char>("a matrix");
    if (type == 's') unsupported(at, "sparse parameter matrices are not supported");
    if (type != 'd') fail_at(at, "a matrix starts with the type byte 'd', not " + std::to_string(int(uint8_t(type))));
    marker("BMAT");
    uint64_t elsize = u64("a matrix's element size");
    if (elsize != 4 && elsize != 8) fail("a matrix has the element size " + std::to_string(elsize));
    is_double = elsize == 8;
    (void)str("a matrix's name");
    (void)i32("a matrix's format");
    rows = u64("a matrix's rows");
    cols = u64("a matrix's columns");
    if (rows > kMaxDim || cols > kMaxDim || rows * cols > kMaxElements || rows * cols * elsize > left())
      fail("a matrix of " + std::to_string(rows) + " x " + std::to_string(cols) + " does not fit in the file");
    std::vector<double> v(rows * cols);
    for (auto& x : v) x = elem(is_double, "a matrix's values");
    marker("EMAT");
    return v;
  }

 private:
  std::string peek_str() {
    size_t save = pos_;
    std::string s;
    try {
      s = "'" + str("a marker") + "'";
    } catch (const IOError&) {
      s = "no string";
    }
    pos_ = save;
    return s;
  }

  const std::string& b_;
  std::string source_;
  std::string node_;
  size_t pos_ = 0;
};

// ------------------------------------------------------------------ writing

class Writer {
 public:
  template <class T>
  void put(T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void str(const std::string& s) {
    for (char16_t c : utf16_from_utf8(s)) put(c);
    put(char16_t(0));
  }
  void narrow(const std::string& s) {
    out.append(s);
    out.push_back('\0');
  }
  void shape(const Dims& d) {
    put(uint32_t(d.size()));
    for (auto x : d) put(uint32_t(x));
  }
  void bool_list(const std::vector<bool>& v) {
    put(uint64_t(v.size()));
    for (bool b : v) put(uint8_t(b));
  }
  void matrix(const std::vector<double>& v, uint64_t rows, uint64_t cols, bool dbl) {
    put('d');
    str("BMAT");
    put(uint64_t(dbl ? 8 : 4));
    str("unnamed");
    put(int32_t(0));  // dense
    put(rows);
    put(cols);
    for (double x : v) dbl ? put(x) : put(float(x));
    str("EMAT");
  }
  std::string out;
};

Dims dims_of(const Dictionary& a, const char* key) {
  auto it = a.find(key);
  return it == a.end() ? Dims{} : it->second.as_shape().dims();
}
std::vector<bool> bools_of(const Dictionary& a, const char* key) {
  std::vector<bool> v;
  auto it = a.find(key);
  if (it != a.end())
    for (auto& x : it->second.as_list()) v.push_back(x.as_bool());
  return v;
}
DictValue bool_value(const std::vector<bool>& v) {
  DictValue::List l;
  for (bool b : v) l.push_back(DictValue(b));
  return DictValue(std::move(l));
}
DictValue int_list(const std::vector<int64_t>& v) {
  DictValue::List l;
  for (auto x : v) l.push_back(DictValue(x));
  return DictValue(std::move(l));
}

int64_t product(const Dims& d) {
  int64_t n = 1;
  for (auto x : d) n *= x;
  return n;
}

// A Trace node's format strings (CNTK's WriteFormattingOptions), in the file's order.
constexpr const char* kTraceFormatStrings[] = {"prologue",         "epilogue",         "sequenceSeparator",
                                               "sequencePrologue", "sequenceEpilogue", "elementSeparator",
                                               "sampleSeparator",  "precisionFormat"};

// Node types without anything of their own in the file.
bool is_plain(const std::string& op) {
  static const char* const ops[] = {"Plus",
                                    "Minus",
                                    "ElementTimes",
                                    "DiagTimes",
                                    "Sigmoid",
                                    "StableSigmoid",
                                    "Tanh",
                                    "RectifiedLinear",
                                    "Exp",
                                    "Log",
                                    "Abs",
                                    "Sqrt",
                                    "Floor",
                                    "Reciprocal",
                                    "Negate",
                                    "Softmax",
                                    "LogSoftmax",
                                    "Hardmax",
                                    "CrossEntropyWithSoftmax",
                                    "CrossEntropy",
                                    "ClassificationError",
                                    "ErrorPrediction",
                                    "SquareError",
                                    "Logistic",
                                    "Pass",
                                    "StopGradient",
                                    "SumElements",
                                    "CosDistance",
                                    "LogPlus",
                                    "Clip",
                                    "If",
                                    "Equal",
                                    "NotEqual",
                                    "Less",
                                    "LessEqual",
                                    "Greater",
                                    "GreaterEqual",
                                    "ReconcileDynamicAxis",
                                    "PackedIndex",
                                    "GatherPacked",
                                    "ScatterPacked",
                                    "Cosine",
                                    "Sin",
                                    "ExponentialLinearUnit",
                                    "Atanh",
                                    "Asinh",
                                    "Asin",
                                    "Acos",
                                    "Cosh",
                                    "Sinh",
                                    "StraightThrough",
                                    "KhatriRaoProduct"};
  return std::find_if(std::begin(ops), std::end(ops), [&](const char* o) { return op == o; }) != std::end(ops);
}

// Each node type's own entries (its Load), for the file's model version.
void read_payload(Reader& r, Node& n, uint64_t v) {
  Dictionary& a = n.attrs;
  const std::string& op = n.op;
  if (op == "LearnableParameter") {
    Dims layout;
    if (v >= 3) {
      n.lr_mult = r.get<float>("the learning-rate multiplier");
      layout = r.shape("the parameter's shape");
    } else {
      n.lr_mult = r.boolean("the update flag") ? 1.f : 0.f;
      uint64_t rows = r.u64("the parameter's rows"), cols = r.u64("the parameter's columns");
      if (rows != 0) {
        layout = {int64_t(rows), int64_t(cols)};
      } else {
        layout = r.shape("the parameter's shape", true);
        if (cols > 1) layout.push_back(int64_t(cols));
      }
    }
    uint64_t rows, cols;
    bool dbl;
    size_t at = r.pos();
    n.values = r.matrix(rows, cols, dbl);
    if (n.precision.empty()) n.precision = dbl ? "double" : "float";
    if (product(layout) != int64_t(n.values.size()))
      r.fail_at(at, "the parameter's shape holds " + std::to_string(product(layout)) + " values, its matrix " +
                        std::to_string(n.values.size()));
    n.layout = layout;
    a["rows"] = rows;  // how the matrix was stored (dumps print it so)
    a["cols"] = cols;
  } else if (op == "InputValue" || op == "SparseInputValue") {
    uint64_t rows = r.u64("the input's rows");
    (void)r.u64("the input's columns");
    Dims layout = r.shape("the input's shape", true);
    if (rows != 0 && int64_t(rows) != product(layout)) layout = {int64_t(rows)};  // CNTK's fix-up of older files
    n.layout = layout;
    if (v >= 8) {
      uint32_t axes = r.get<uint32_t>("the input's dynamic axis count");
      if (axes == 1)
        n.dynamic_axis = r.str("the input's dynamic axis");
      else if (axes > 1)
        r.fail("an input with " + std::to_string(axes) + " dynamic axes");
    }
    n.lr_mult = v >= 10 ? r.get<float>("the learning-rate multiplier") : 0.f;
  } else if (op == "Times" || op == "TransposeTimes") {
    a["outputRank"] = int64_t(v >= 3 ? r.u64("outputRank") : 1);
    a["inferInputRankToMap"] = int64_t(v >= 12 ? r.i32("inferInputRankToMap") : -1);
  } else if (op == "PastValue" || op == "FutureValue") {
    a["timeStep"] = int64_t(r.i32("the time step"));
    Dims layout;
    if (v > 3) {
      layout = r.shape("the sample shape");
    } else {
      layout = {int64_t(r.u64("the rows"))};
      (void)r.u64("the columns");
    }
    n.layout = layout;
    a["initialState"] = v >= 2 ? r.elem(n.is_double(), "the initial state") : 0.0;
  } else if (op == "Convolution" || op == "Pooling") {
    if (v >= 5) {
      a["kernelShape"] = NDShape(r.shape("the kernel shape"));
      a["mapCount"] = NDShape(r.shape("the map count"));
      a["strides"] = NDShape(r.shape("the strides"));
      a["sharing"] = bool_value(r.bool_list("the sharing flags"));
      a["autoPad"] = bool_value(r.bool_list("the auto-padding flags"));
      a["lowerPad"] = NDShape(r.shape("the lower padding"));
      a["upperPad"] = NDShape(r.shape("the upper padding"));
      a["poolKind"] = int64_t(r.i32("the pooling kind"));
      a["imageLayout"] = int64_t(r.i32("the image layout"));
      a["maxTempMemSizeInSamples"] = int64_t(r.u64("maxTempMemSizeInSamples"));
    }
    a["transpose"] = v >= 9 ? r.boolean("the transpose flag") : false;
    if (v >= 20) a["outputShape"] = NDShape(r.shape("the output shape"));
    a["ceilOutDim"] = v >= 21 ? r.boolean("ceilOutDim") : false;
    a["includePad"] = v >= 23 ? r.boolean("includePad") : false;
    if (op == "Convolution") {
      if (v < 5) {
        // Pre-ND 2-D convolution: kernel width, height, strides, maps, layout, padding.
        int64_t kw = int64_t(r.u64("the kernel width")), kh = int64_t(r.u64("the kernel height"));
        int64_t sw = int64_t(r.u64("the horizontal stride")), sh = int64_t(r.u64("the vertical stride"));
        int64_t maps = r.get<uint32_t>("the map count");
        a["imageLayout"] = int64_t(r.get<uint32_t>("the image layout"));
        bool pad = r.boolean("the padding flag");
        a["maxTempMemSizeInSamples"] = int64_t(r.u64("maxTempMemSizeInSamples"));
        a["poolKind"] = int64_t(0);
        a["convolution2D"] = true;
        a["kernelShape"] = NDShape{kw, kh, 1};
        a["mapCount"] = NDShape{maps};
        a["strides"] = NDShape{sw, sh, 1};
        a["sharing"] = bool_value({true});
        a["autoPad"] = bool_value({pad});
        a["lowerPad"] = NDShape{0};
        a["upperPad"] = NDShape{0};
      } else {
        a["convolution2D"] = r.boolean("the 2-D flag");
        a["dilation"] = NDShape(v >= 18 ? r.shape("the dilation") : Dims{1});
      }
    }
  } else if (op == "BatchNormalization") {
    uint64_t mb_count = 0;
    if (v >= 6) {
      a["spatial"] = r.boolean("the spatial flag");
      a["normalizationTimeConstant"] = r.get<double>("the normalization time constant");
      a["blendTimeConstant"] = r.get<double>("the blend time constant");
      a["imageLayout"] = int64_t(r.i32("the image layout"));
      if (v >= 13) {
        if (v != 19)
          a["runCount"] = int64_t(r.u64("the running count"));
        else
          a["runCount"] = int64_t(r.boolean("the running count flag") ? 0 : 1);
      } else {
        mb_count = r.u64("the minibatch count");
      }
      a["epsilon"] = r.get<double>("epsilon");
      a["useCntkEngine"] = r.boolean("the engine flag");
    } else {
      int32_t written = r.i32("the node version"), readable = r.i32("the node version");
      if (readable > written) r.fail("batch normalization's versions are inconsistent");
      (void)r.boolean("the eval flag");
      a["spatial"] = r.boolean("the spatial flag");
      double tc = r.get<double>("the normalization time constant");
      a["normalizationTimeConstant"] = written >= 0x00010004 ? tc : 0.0;
      a["blendTimeConstant"] = 0.0;
      if (written >= 0x00010002) {
        a["imageLayout"] = int64_t(r.i32("the image layout"));
        mb_count = r.u64("the minibatch count");
      }
      a["epsilon"] = 0.0;
      a["useCntkEngine"] = true;
      if (written >= 0x00010003) {
        a["epsilon"] = r.get<double>("epsilon");
        a["useCntkEngine"] = r.boolean("the engine flag");
      }
    }
    if (v < 13) {
      // Before version 13 the file keeps minibatches seen (CNTK counts 16 samples each) and
      // the inverse standard deviation instead of the variance.
      a["runCount"] = int64_t(16 * mb_count);
      a["varianceIsInvStdDev"] = true;
    }
  } else if (op == "Slice") {
    int32_t num = v >= 22 ? r.i32("the axis count") : 1;
    if (num < 1 || num > int32_t(kMaxRank)) r.fail("a slice over " + std::to_string(num) + " axes");
    std::vector<int64_t> begin, end, axis, stride;
    for (int32_t i = 0; i < num; ++i) {
      int64_t b = r.get<int64_t>("the slice's begin"), h = r.get<int64_t>("the slice's length");
      begin.push_back(b);
      end.push_back(b + h);
      axis.push_back(v >= 3 ? r.i32("the slice's axis") : 1);
      stride.push_back(v >= 27 ? r.i32("the slice's stride") : 1);
    }
    a["beginIndex"] = int_list(begin);
    a["endIndex"] = int_list(end);
    a["axis"] = int_list(axis);
    a["strides"] = int_list(stride);
  } else if (op == "RowStack") {
    a["spliceDim"] = int64_t(v >= 3 ? r.i32("the splice axis") : 1);
  } else if (op == "Reshape") {
    a["beginDim"] = int64_t(r.i32("the begin axis"));
    a["endDim"] = int64_t(r.i32("the end axis"));
    a["replacement"] = NDShape(r.shape("the new shape"));
  } else if (op == "ReduceElements") {
    int32_t num = v >= 27 ? r.i32("the axis count") : 1;
    if (num < 0 || num > int32_t(kMaxRank)) r.fail("a reduction over " + std::to_string(num) + " axes");
    std::vector<int64_t> axes;
    for (int32_t i = 0; i < num; ++i) axes.push_back(r.i32("the reduction axis"));
    a["axes"] = int_list(axes);
    a["operation"] = r.str("the reduction");
    a["keepDimensions"] = v >= 24 ? r.boolean("keepDimensions") : true;
  } else if (op == "Where") {
    // The name of the dynamic axis the node makes (CNTK's default before version 11).
    a["dynamicAxis"] = v >= 11 ? r.str("the Where node's dynamic axis") : std::string(kWhereAxis);
  } else if (op == "Dropout") {
    if (v >= 17) {
      a["rngSeed"] = int64_t(r.u64("the random seed"));
      a["rngOffset"] = int64_t(r.u64("the random offset"));
    } else if (v == 16) {
      // Written with the platform's unsigned long: 8 bytes on Linux, where the offset follows.
      a["rngSeed"] = int64_t(r.u64("the random seed"));
      a["rngOffset"] = int64_t(r.u64("the random offset"));
    }
  } else if (op == "Trace") {
    a["message"] = r.str("the trace message");
    a["logFirst"] = int64_t(r.u64("logFirst"));
    a["logFrequency"] = int64_t(r.u64("logFrequency"));
    a["logGradientToo"] = r.boolean("logGradientToo");
    a["isCategoryLabel"] = r.boolean("the format's category flag");
    a["labelMappingFile"] = r.str("the format's labelMappingFile");
    a["isSparse"] = r.boolean("the format's sparse flag");
    a["transpose"] = r.boolean("the format's transpose flag");
    for (const char* key : kTraceFormatStrings) a[key] = r.narrow(key);
    a["onlyUpToRow"] = int64_t(r.u64("onlyUpToRow"));
    a["onlyUpToT"] = int64_t(r.u64("onlyUpToT"));
  } else if (!is_plain(op)) {
    r.unsupported(n.offset, "the v1 node type '" + op + "', which OpenCNTK cannot load yet");
  }
}

void write_payload(Writer& w, const Node& n) {
  const Dictionary& a = n.attrs;
  const std::string& op = n.op;
  if (op == "LearnableParameter") {
    w.put(n.lr_mult);
    w.shape(n.layout);
    int64_t rows = n.layout.empty() ? 1 : n.layout[0];
    w.matrix(n.values, uint64_t(rows), uint64_t(rows ? int64_t(n.values.size()) / rows : 0), n.is_double());
  } else if (op == "InputValue" || op == "SparseInputValue") {
    w.put(uint64_t(0));
    w.put(uint64_t(0));
    w.shape(n.layout);
    w.put(uint32_t(1));
    w.str(n.dynamic_axis);
    w.put(n.lr_mult);
  } else if (op == "Times" || op == "TransposeTimes") {
    w.put(uint64_t(attr_int(a, "outputRank", 1)));
    w.put(int32_t(attr_int(a, "inferInputRankToMap", -1)));
  } else if (op == "PastValue" || op == "FutureValue") {
    w.put(int32_t(attr_int(a, "timeStep", 1)));
    w.shape(n.layout);
    double s = attr_double(a, "initialState", 0);
    n.is_double() ? w.put(s) : w.put(float(s));
  } else if (op == "Convolution" || op == "Pooling") {
    w.shape(dims_of(a, "kernelShape"));
    w.shape(dims_of(a, "mapCount"));
    w.shape(dims_of(a, "strides"));
    w.bool_list(bools_of(a, "sharing"));
    w.bool_list(bools_of(a, "autoPad"));
    w.shape(dims_of(a, "lowerPad"));
    w.shape(dims_of(a, "upperPad"));
    w.put(int32_t(attr_int(a, "poolKind", 0)));
    w.put(int32_t(attr_int(a, "imageLayout", 0)));
    w.put(uint64_t(attr_int(a, "maxTempMemSizeInSamples", 0)));
    w.put(uint8_t(attr_bool(a, "transpose", false)));
    w.shape(dims_of(a, "outputShape"));
    w.put(uint8_t(attr_bool(a, "ceilOutDim", false)));
    w.put(uint8_t(attr_bool(a, "includePad", false)));
    if (op == "Convolution") {
      w.put(uint8_t(attr_bool(a, "convolution2D", false)));
      Dims dil = dims_of(a, "dilation");
      w.shape(dil.empty() ? Dims{1} : dil);
    }
  } else if (op == "BatchNormalization") {
    w.put(uint8_t(attr_bool(a, "spatial", false)));
    w.put(attr_double(a, "normalizationTimeConstant", 0));
    w.put(attr_double(a, "blendTimeConstant", 0));
    w.put(int32_t(attr_int(a, "imageLayout", 0)));
    w.put(uint64_t(attr_int(a, "runCount", 0)));
    w.put(attr_double(a, "epsilon", 0));
    w.put(uint8_t(attr_bool(a, "useCntkEngine", true)));
  } else if (op == "Slice") {
    auto begin = a.at("beginIndex").as_int_list(), end = a.at("endIndex").as_int_list();
    auto axis = a.at("axis").as_int_list(), stride = a.at("strides").as_int_list();
    w.put(int32_t(axis.size()));
    for (size_t i = 0; i < axis.size(); ++i) {
      w.put(int64_t(begin[i]));
      w.put(int64_t(end[i] - begin[i]));
      w.put(int32_t(axis[i]));
      w.put(int32_t(stride[i]));
    }
  } else if (op == "RowStack") {
    w.put(int32_t(attr_int(a, "spliceDim", 1)));
  } else if (op == "Reshape") {
    w.put(int32_t(attr_int(a, "beginDim", 0)));
    w.put(int32_t(attr_int(a, "endDim", 0)));
    w.shape(dims_of(a, "replacement"));
  } else if (op == "ReduceElements") {
    auto axes = a.at("axes").as_int_list();
    w.put(int32_t(axes.size()));
    for (auto x : axes) w.put(int32_t(x));
    w.str(a.at("operation").as_string());
    w.put(uint8_t(attr_bool(a, "keepDimensions", true)));
  } else if (op == "Where") {
    w.str(attr_string(a, "dynamicAxis", kWhereAxis));
  } else if (op == "Dropout") {
    w.put(uint64_t(attr_int(a, "rngSeed", 0)));
    w.put(uint64_t(attr_int(a, "rngOffset", 0)));
  } else if (op == "Trace") {
    w.str(attr_string(a, "message", ""));
    w.put(uint64_t(attr_int(a, "logFirst", 10)));
    w.put(uint64_t(attr_int(a, "logFrequency", 100)));
    w.put(uint8_t(attr_bool(a, "logGradientToo", false)));
    w.put(uint8_t(attr_bool(a, "isCategoryLabel", false)));
    w.str(attr_string(a, "labelMappingFile", ""));
    w.put(uint8_t(attr_bool(a, "isSparse", false)));
    w.put(uint8_t(attr_bool(a, "transpose", true)));
    for (const char* key : kTraceFormatStrings) w.narrow(attr_string(a, key, ""));
    w.put(uint64_t(attr_int(a, "onlyUpToRow", 100000000)));
    w.put(uint64_t(attr_int(a, "onlyUpToT", 100000000)));
  } else if (!is_plain(op)) {
    throw NotImplementedError("save_as_legacy_model: no v1 layout for the node type '" + op + "'");
  }
}

// The element type of files before version 7, which keep no per-node precision tag: the
// first matrix's element size (as CNTK's DetectLegacyModelDataType).
std::string detect_precision(const std::string& bytes) {
  static const char bmat[] = {'B', 0, 'M', 0, 'A', 0, 'T', 0, 0, 0};
  auto at = bytes.find(std::string(bmat, sizeof bmat));
  if (at == std::string::npos || at + sizeof bmat + 8 > bytes.size()) return "float";
  uint64_t size;
  std::memcpy(&size, bytes.data() + at + sizeof bmat, 8);
  return size == 8 ? "double" : "float";
}

void read_group(Reader& r, const Network& net, std::vector<std::string>& group, const std::string& end_marker) {
  // A group may name a node twice (files of earlier versions of this writer did), so the
  // count is bounded by the bytes left (a name takes at least its terminator).
  uint64_t n = r.u64("a node count");
  if (n > r.left() / 2)
    r.fail("a node group of " + std::to_string(n) + " nodes does not fit in the file (truncated file)");
  for (uint64_t i = 0; i < n; ++i) {
    size_t at = r.pos();
    std::string name = r.str("a node name");
    if (!net.nodes.count(name)) r.fail_at(at, "a node group names the unknown node '" + name + "'");
    group.push_back(name);
  }
  if (!end_marker.empty()) r.marker(end_marker);
}

}  // namespace

bool NoCaseLess::operator()(const std::string& a, const std::string& b) const {
  // CNTK's _wcsicmp: characters compared lower-cased.
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int x = std::tolower(uint8_t(a[i])), y = std::tolower(uint8_t(b[i]));
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

Network read_network(const std::string& bytes, const std::string& source) {
  Reader r(bytes, source);
  Network net;
  r.marker("BCN");
  net.version = 1;
  if (r.try_marker("BVersion")) {
    net.version = r.u64("the model version");
    r.marker("EVersion");
  }
  if (net.version < 1 || net.version > kCurrentVersion)
    r.fail("the model version " + std::to_string(net.version) + " is not one CNTK 2.7 reads (1 to " +
           std::to_string(kCurrentVersion) + ")");
  uint64_t count = r.u64("the node count");
  if (count > r.left() / 4) r.fail("the file claims " + std::to_string(count) + " nodes (truncated file)");
  std::string old_precision = net.version < 7 ? detect_precision(bytes) : "";
  r.marker("BNodeList");
  for (uint64_t i = 0; i < count; ++i) {
    Node n;
    n.offset = r.pos();
    r.set_node("");
    if (net.version >= 7) {
      n.precision = r.str("the node's precision");
      if (n.precision == "half")
        throw NotImplementedError(source + ": offset " + std::to_string(n.offset) +
                                  ": float16 nodes are not supported");
      if (n.precision != "float" && n.precision != "double") {
        if (n.precision.find(',') != std::string::npos)
          throw NotImplementedError(source + ": offset " + std::to_string(n.offset) + ": cast nodes ('" + n.precision +
                                    "') are not supported");
        r.fail_at(n.offset, "unexpected precision tag '" + n.precision + "'");
      }
    } else {
      n.precision = old_precision;
    }
    n.op = r.str("the node's type");
    n.name = r.str("the node's name");
    r.set_node(n.name);
    read_payload(r, n, net.version);
    if (net.nodes.count(n.name)) r.fail_at(n.offset, "two nodes are named '" + n.name + "'");
    std::string key = n.name;
    net.nodes.emplace(key, std::move(n));
  }
  r.set_node("");
  r.marker("ENodeList");

  r.marker("BRelation");
  for (uint64_t i = 0; i < count; ++i) {
    size_t at = r.pos();
    std::string name = r.str("a node name");
    auto it = net.nodes.find(name);
    if (it == net.nodes.end()) r.fail_at(at, "the relations name the unknown node '" + name + "'");
    r.set_node(name);
    uint64_t k = r.u64("the input count");
    if (k > r.left() / 2) r.fail("the node claims " + std::to_string(k) + " inputs (truncated file)");
    std::vector<std::string> inputs;
    for (uint64_t j = 0; j < k; ++j) {
      size_t in_at = r.pos();
      std::string in = r.str("an input name");
      if (!net.nodes.count(in)) r.fail_at(in_at, "input " + std::to_string(j) + " is the unknown node '" + in + "'");
      inputs.push_back(in);
    }
    it->second.inputs = std::move(inputs);
    r.set_node("");
  }
  r.marker("ERelation");

  r.marker("BRootNodes");
  if (r.try_marker("BFeatureNodes")) read_group(r, net, net.features, "EFeatureNodes");
  if (r.try_marker("BLabelNodes")) read_group(r, net, net.labels, "");
  r.marker("ELabelNodes");
  if (r.try_marker("BCriterionNodes") || r.try_marker("BCriteriaNodes")) {
    read_group(r, net, net.criteria, "");
    if (!r.try_marker("ECriteriaNodes")) r.marker("ECriterionNodes");
  }
  if (r.try_marker("BNodesReqMultiSeqHandling")) {
    std::vector<std::string> ignored;
    read_group(r, net, ignored, "ENodesReqMultiSeqHandling");
  }
  if (r.try_marker("BEvalNodes")) read_group(r, net, net.evaluations, "EEvalNodes");
  if (r.try_marker("BOutputNodes")) read_group(r, net, net.outputs, "EOutputNodes");
  if (r.try_marker("BPairNodes")) {
    if (r.u64("the pair node count") > 0) r.fail("pair nodes are no longer supported");
    r.marker("EPairNodes");
  }
  r.marker("ERootNodes");
  r.marker("ECN");
  return net;
}

std::string write_network(const Network& net) {
  Writer w;
  w.str("BCN");
  w.str("BVersion");
  w.put(uint64_t(kCurrentVersion));
  w.str("EVersion");
  w.put(uint64_t(net.nodes.size()));
  w.str("BNodeList");
  for (auto& [name, n] : net.nodes) {
    w.str(n.is_double() ? "double" : "float");
    w.str(n.op);
    w.str(n.name);
    write_payload(w, n);
  }
  w.str("ENodeList");
  w.str("BRelation");
  for (auto& [name, n] : net.nodes) {
    w.str(n.name);
    w.put(uint64_t(n.inputs.size()));
    for (auto& in : n.inputs) w.str(in);
  }
  w.str("ERelation");
  w.str("BRootNodes");
  auto group = [&](const char* b, const char* e, const std::vector<std::string>& g) {
    w.str(b);
    w.put(uint64_t(g.size()));
    for (auto& s : g) w.str(s);
    w.str(e);
  };
  group("BFeatureNodes", "EFeatureNodes", net.features);
  group("BLabelNodes", "ELabelNodes", net.labels);
  group("BCriterionNodes", "ECriterionNodes", net.criteria);
  group("BEvalNodes", "EEvalNodes", net.evaluations);
  group("BOutputNodes", "EOutputNodes", net.outputs);
  w.str("ERootNodes");
  w.str("ECN");
  return w.out;
}

namespace {

// printf's %g as CNTK's baselines have it: written by MSVC, whose exponent has at least
// three digits ("5.92372853e-005").
std::string windows_g(double v, bool dbl) {
  char buf[64];
  std::snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", v);
  std::string s = buf;
  auto e = s.find('e');
  if (e != std::string::npos && s.size() - (e + 2) < 3) s.insert(e + 2, 3 - (s.size() - (e + 2)), '0');
  return s;
}

}  // namespace

std::string dump_network(const Network& net, const LegacyDumpOptions& options) {
  // CNTK writes through its text-mode File: every value gets a space before it, floats
  // as " %.9g" (doubles " %.17g"); a parameter prints as its [rows, cols] matrix.
  std::string out;
  auto tok = [&](const std::string& s) { out += " " + s; };
  char buf[64];
  for (auto& [key, n] : net.nodes) {
    if (options.select && !options.select(n.name)) continue;
    if (options.metadata) {
      tok("\n" + n.name + "=" + n.op);
      if (!n.is_leaf()) {
        tok("(");
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          if (i > 0) tok(",");
          tok(n.inputs[i]);
        }
        tok(")");
      }
    }
    if (n.op == "LearnableParameter") {
      uint64_t rows = uint64_t(attr_int(n.attrs, "rows", n.layout.empty() ? 1 : n.layout[0]));
      uint64_t cols = uint64_t(attr_int(n.attrs, "cols", rows ? int64_t(n.values.size() / rows) : 0));
      if (options.metadata) {
        tok("[" + std::to_string(rows) + "," + std::to_string(cols) + "]  ");
        std::snprintf(buf, sizeof buf, "learningRateMultiplier=%f  NeedsGradient=%s", double(n.lr_mult),
                      n.lr_mult > 0 ? "true" : "false");
        tok(buf);
      }
      if (!options.values) continue;
      if (options.metadata) tok("\n");
      for (uint64_t i = 0; i < rows; ++i) {
        for (uint64_t j = 0; j < cols; ++j) {
          tok(windows_g(n.values[i + rows * j], n.is_double()));
        }
        tok("\n");
      }
      if (options.metadata) tok("####################################################################");
    } else if ((n.op == "InputValue" || n.op == "SparseInputValue") && options.metadata) {
      std::string dims;
      for (size_t i = 0; i < n.layout.size(); ++i) dims += (i ? " x " : "") + std::to_string(n.layout[i]);
      tok("[");
      tok(dims);
      tok("]");
    }
  }
  return out;
}

}  // namespace cntk::v1
