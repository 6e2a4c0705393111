// CNTK's LearnableParameter initializations from text matrices and bilinear kernels, and its
// TraceNode (special_nodes.h).
#include "brainscript/special_nodes.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cntk/common.h"
#include "cntk/function.h"
#include "cntk/user_function.h"
#include "cntk/value.h"

namespace cntk::brainscript::detail {
namespace {

std::string matrix_shape(size_t rows, size_t cols) {
  return "[" + std::to_string(rows) + " x " + std::to_string(cols) + "]";
}

std::string dims_text(const std::vector<size_t>& dims) {
  std::string s;
  for (size_t d : dims) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return "[" + s + "]";
}

// A view of `values` (engine order) in `dtype`.
NDArrayView view_of(const std::vector<double>& values, const NDShape& shape, DataType dtype) {
  NDArrayView v(DataType::Double, shape);
  std::copy(values.begin(), values.end(), v.data<double>());
  return dtype == DataType::Double ? v : v.cast(dtype);
}

}  // namespace

TextMatrix parse_text_matrix(const std::string& text, const std::string& source) {
  TextMatrix m;
  std::vector<std::vector<double>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<double> row;
    const char* p = line.data();
    const char* end = p + line.size();
    while (true) {
      while (p < end && std::isspace(static_cast<unsigned char>(*p))) ++p;
      if (p == end) break;
      const char* start = p;
      if (*p == '+') ++p;  // strtod's spelling, which from_chars lacks
      double v = 0;
      auto [next, ec] = std::from_chars(p, end, v);
      if (ec != std::errc() || (next < end && !std::isspace(static_cast<unsigned char>(*next))))
        throw ValueError("malformed number '" + std::string(start, std::min<size_t>(15, size_t(end - start))) +
                         "' in row " + std::to_string(rows.size()) + " of " + source);
      row.push_back(v);
      p = next;
    }
    if (row.empty()) continue;  // blank lines may structure a tensor's slices
    if (!rows.empty() && row.size() != rows[0].size())
      throw ValueError("row " + std::to_string(rows.size()) + " of " + source + " has " + std::to_string(row.size()) +
                       " numbers, the rows before it " + std::to_string(rows[0].size()));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw ValueError(source + " holds no matrix");
  m.rows = rows.size();
  m.cols = rows[0].size();
  m.values.resize(m.rows * m.cols);
  for (size_t c = 0; c < m.cols; ++c)
    for (size_t r = 0; r < m.rows; ++r) m.values[c * m.rows + r] = rows[r][c];
  return m;
}

TextMatrix read_text_matrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError("cannot read the matrix file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_text_matrix(text.str(), "'" + path + "'");
}

NDArrayView parameter_from_matrix(std::vector<size_t>& dims, const TextMatrix& m, const std::string& source,
                                  DataType dtype) {
  const std::vector<size_t> given = dims;
  if (std::find(dims.begin(), dims.end(), size_t(0)) != dims.end() || dims.empty()) {
    if (dims.empty()) dims.push_back(0);
    if (dims.size() == 1 && m.cols != 1) dims.push_back(0);
    if (dims[0] == 0) dims[0] = m.rows;
    size_t zero = 0, product = 1;
    for (size_t k = 1; k < dims.size(); ++k) {
      if (dims[k]) {
        product *= dims[k];
      } else if (zero == 0) {
        zero = k;
      } else {
        throw ValueError("a parameter of shape " + dims_text(given) + " from " + source +
                         ": more than one dimension to infer");
      }
    }
    if (zero) {
      if (m.cols % product) {
        throw ValueError("a parameter of shape " + dims_text(given) + " cannot hold the " +
                         matrix_shape(m.rows, m.cols) + " matrix of " + source);
      }
      dims[zero] = m.cols / product;
    }
  }
  size_t cols = 1;
  for (size_t k = 1; k < dims.size(); ++k) cols *= dims[k];
  if (dims[0] != m.rows || cols != m.cols)
    throw ValueError(source + " holds a " + matrix_shape(m.rows, m.cols) + " matrix, but the parameter's shape " +
                     dims_text(dims) + " needs " + matrix_shape(dims[0], cols));
  return view_of(m.values, NDShape(std::vector<int64_t>(dims.rbegin(), dims.rend())), dtype);
}

NDArrayView bilinear_kernel(const std::vector<size_t>& dims, DataType dtype) {
  bool extra = false;
  for (size_t k = 4; k < dims.size(); ++k) extra |= dims[k] != 1;
  if (dims.size() < 4 || extra)
    throw ValueError("init='bilinear' needs a [kernelSize x kernelSize x channels x channels] kernel, not " +
                     dims_text(dims));
  if (dims[0] != dims[1]) throw ValueError("init='bilinear': the kernel must be square, not " + dims_text(dims));
  if (dims[2] != dims[3])
    throw ValueError("init='bilinear': the kernel's input and output channels must agree, not " + dims_text(dims));
  const size_t k = dims[0], channels = dims[2];
  const double factor = double((k + 1) / 2), center = (double(k) - 1) / 2;
  // Engine order (out, in, h, w): CNTK's column-major [w x h x in x out].
  std::vector<double> values(channels * channels * k * k, 0.0);
  for (size_t c = 0; c < channels; ++c)
    for (size_t h = 0; h < k; ++h)
      for (size_t w = 0; w < k; ++w)
        values[((c * channels + c) * k + h) * k + w] =
            (1 - std::abs(double(w) - center) / factor) * (1 - std::abs(double(h) - center) / factor);
  return view_of(values, NDShape(std::vector<int64_t>(dims.rbegin(), dims.rend())), dtype);
}

namespace {

// CNTK's printing of a node: "name = Op (inputs) : [input shapes] -> [shape x *]", shapes
// first-fastest as BrainScript writes them.
std::string shape_description(const Variable& v) {
  std::string s;
  const auto& d = v.shape().dims();
  for (auto it = d.rbegin(); it != d.rend(); ++it) s += (s.empty() ? "" : " x ") + std::to_string(*it);
  return "[" + s + (v.dynamic_axes().empty() ? "" : " x *") + "]";
}
std::string node_label(const Variable& v) { return v.name().empty() ? v.uid() : v.name(); }
std::string prototype(const Variable& v) {
  std::string s = node_label(v) + " = ";
  if (!v.owner()) return s + (v.is_input() ? "InputValue" : "LearnableParameter") + "() : -> " + shape_description(v);
  const auto& ins = v.owner()->direct_inputs();
  s += v.owner()->op_name() + " (";
  for (size_t i = 0; i < ins.size(); ++i) s += (i ? ", " : "") + node_label(ins[i]);
  s += ") : ";
  for (size_t i = 0; i < ins.size(); ++i) s += (i ? ", " : "") + shape_description(ins[i]);
  return s + " -> " + shape_description(v);
}

class TraceBackend : public UserFunctionBackend {
 public:
  explicit TraceBackend(TraceOptions o) : o_(std::move(o)) {}
  std::string op_name() const override { return "Trace"; }
  std::vector<Variable> infer_outputs(Function& self, const std::vector<Variable>& inputs) override {
    auto impl = std::make_shared<VariableImpl>();
    impl->kind = VariableKind::Output;
    impl->shape = inputs.at(0).shape();
    impl->dtype = inputs.at(0).dtype();
    impl->dynamic_axes = inputs.at(0).dynamic_axes();
    impl->needs_gradient = true;
    impl->name = self.name();
    impl->uid = new_uid("Output");
    return {Variable(impl)};
  }
  std::shared_ptr<void> forward(Function& self, const std::vector<cntk::Value>& inputs, bool,
                                std::vector<cntk::Value>& outputs) override {
    ++minibatches_;
    log(self, inputs.at(0), false);
    outputs = {cntk::Value(inputs.at(0).data().copy(), inputs.at(0).mask())};  // a buffer of its own
    return nullptr;
  }
  std::vector<cntk::Value> backward(Function& self, const std::shared_ptr<void>&, const std::vector<cntk::Value>& roots,
                                    const std::vector<bool>&) override {
    if (o_.log_gradient && roots.at(0).is_valid()) log(self, roots[0], true);
    return {roots.at(0)};
  }
  FunctionPtr clone(Function& self, const std::vector<Variable>& inputs) override {
    return Function::user_defined(std::make_shared<TraceBackend>(o_), inputs, {}, self.name());
  }
  // The settings under the member names of CNTK's TraceNode, which the v1 writer saves.
  Dictionary serialize(Function&) override {
    Dictionary d;
    d["op_name"] = std::string("Trace");
    d["message"] = o_.say;
    d["logFirst"] = int64_t(o_.log_first);
    d["logFrequency"] = int64_t(o_.log_frequency);
    d["logGradientToo"] = o_.log_gradient;
    const WriteFormat& f = o_.format;
    d["isCategoryLabel"] = f.category;
    d["labelMappingFile"] = f.label_mapping_file;
    d["isSparse"] = f.sparse;
    d["transpose"] = f.transpose;
    d["prologue"] = f.prologue;
    d["epilogue"] = f.epilogue;
    d["sequenceSeparator"] = f.sequence_separator;
    d["sequencePrologue"] = f.sequence_prologue;
    d["sequenceEpilogue"] = f.sequence_epilogue;
    d["elementSeparator"] = f.element_separator;
    d["sampleSeparator"] = f.sample_separator;
    d["precisionFormat"] = f.precision;
    d["onlyUpToRow"] = int64_t(f.only_up_to_row);
    d["onlyUpToT"] = int64_t(f.only_up_to_t);
    return d;
  }

 private:
  // CNTK's TraceNode::Log: the prologue once, then a header and the values (or the gradient)
  // of the first logFirst minibatches and every logFrequency-th, in the node's write format.
  void log(Function& self, const cntk::Value& value, bool gradient) const {
    const std::string name = self.name().empty() ? "Trace" : self.name();
    const size_t n = minibatches_;
    if (n == 1 && !gradient) std::fputs(WriteFormat::processed(o_.format.prologue, name, n).c_str(), stderr);
    if (!(n <= o_.log_first || (o_.log_frequency && (n - 1) % o_.log_frequency == 0))) return;
    const Variable in = self.direct_inputs().at(0);
    std::fprintf(stderr, "------- Trace[] %s %s--> %s\n", o_.say.c_str(), gradient ? "(gradient) " : "",
                 prototype(in).c_str());
    o_.format.print(stderr, in, value, name, n);
  }

  TraceOptions o_;
  size_t minibatches_ = 0;
};

}  // namespace

Variable trace(const Variable& x, TraceOptions options, const std::string& name) {
  return Function::user_defined(std::make_shared<TraceBackend>(std::move(options)), {x}, {}, name)->output();
}

}  // namespace cntk::brainscript::detail
