// ONNX's DFT (opsets 17 and 20) and STFT as linear maps along the transformed axis: the real and
// imaginary parts (the last dimension, 1 or 2) times constant cosine and sine matrices,
// summed over the input axis. Forward, inverse (scaled by 1/N), one-sided forward (the first
// N/2 + 1 frequencies) and one-sided inverse (a real signal from half a spectrum, as NumPy's
// irfft). The input is cut or zero-extended to dft_length as NumPy's n does.
#include <cmath>
#include <numbers>

#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;

Variable out(const FunctionPtr& f) { return f->output(); }

// The DFT of x ([.., 1 or 2], static) along static axis a, of length n.
Vars dft_along(ImportContext& c, Variable x, int64_t a, int64_t n, bool inverse, bool onesided) {
  const std::vector<int64_t> d = x.shape().dims();
  const int64_t rank = int64_t(d.size());
  const int64_t len = d[size_t(a)];
  // Output length; the input entries used (frequencies for the one-sided inverse).
  const int64_t k_out = inverse ? n : onesided ? n / 2 + 1 : n;
  const int64_t used = std::min(len, inverse && onesided ? n / 2 + 1 : n);
  // cos and sin of 2 pi k j / n from k j mod n, exact at the quarter turns.
  auto cos_sin = [&](int64_t k, int64_t j) {
    const int64_t m = (k * j) % n;
    if (m == 0) return std::pair{1.0, 0.0};
    if (2 * m == n) return std::pair{-1.0, 0.0};
    if (4 * m == n) return std::pair{0.0, 1.0};
    if (4 * m == 3 * n) return std::pair{0.0, -1.0};
    const double t = 2 * std::numbers::pi * double(m) / double(n);
    return std::pair{std::cos(t), std::sin(t)};
  };
  // y_r = sum (A x_r + B x_i), y_i = sum (Cm x_r + D x_i) over the input axis.
  std::vector<int64_t> mdims{k_out, len};
  for (int64_t k = a + 1; k < rank; ++k) mdims.push_back(1);
  const size_t msize = size_t(k_out * len);
  std::vector<double> A(msize, 0.0), B(msize, 0.0), C(msize, 0.0), D(msize, 0.0);
  const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / double(n) : 1.0;
  for (int64_t k = 0; k < k_out; ++k)
    for (int64_t j = 0; j < used; ++j) {
      // Forward: y[k] = sum_j x[j] e^{-i theta}, theta = 2 pi k j / n; inverse: x[k] = 1/n sum_j y[j] e^{+i theta};
      // the one-sided inverse weighs the frequencies that stand for two (not 0 or n/2) twice.
      const auto [cs, sn] = cos_sin(k, j);
      const double w = scale * (inverse && onesided && j != 0 && 2 * j != n ? 2.0 : 1.0);
      const size_t at = size_t(k * len + j);
      A[at] = w * cs, B[at] = -sign * w * sn, C[at] = sign * w * sn, D[at] = w * cs;
    }
  // Computed in float64 (as ONNX's reference does) and rounded once at the end: cancelling
  // sums in float32 leave errors far above the zeros they should give.
  const DataType dt = x.dtype();
  auto cast = [&](const Variable& v, DataType t) {
    return v.dtype() == t ? v : out(c.primitive("Cast", {v}, {{"newDataType", int64_t(t)}}));
  };
  x = cast(x, DataType::Double);
  auto matrix = [&](const std::vector<double>& m, const char* what) {
    NDArrayView v(DataType::Double, NDShape(mdims));
    std::copy(m.begin(), m.end(), v.data<double>());
    return Variable::constant(v, c.name() + "/" + what);
  };
  auto part = [&](int64_t i) {
    return out(c.primitive("Slice", {x}, {{"axis", Axis(int(rank - 1))}, {"beginIndex", i}, {"endIndex", i + 1}}));
  };
  std::vector<int64_t> xd = d;  // one part: [.., 1, len, .., 1]
  xd.back() = 1;
  xd.insert(xd.begin() + a, 1);
  auto lifted = [&](const Variable& v) { return out(c.primitive("Reshape", {v}, {{"newShape", NDShape(xd)}})); };
  Variable xr = lifted(part(0));
  std::optional<Variable> xi;
  if (d.back() == 2) xi = lifted(part(1));
  auto apply = [&](const std::vector<double>& mr, const std::vector<double>& mi, const char* what) {
    Variable s = out(c.primitive("ElementTimes", {xr, matrix(mr, what)}));
    if (xi) s = out(c.primitive("Plus", {s, out(c.primitive("ElementTimes", {*xi, matrix(mi, what)}))}));
    return out(c.primitive("ReduceElements", {s},
                           {{"reductionOpName", std::string("Sum")},
                            {"reductionKeepDimensions", false},
                            {"axisVec", axis_list({a + 1})}}));
  };
  Variable yr = apply(A, B, "re");
  if (inverse && onesided) return {cast(yr, dt)};  // a real signal
  Variable yi = apply(C, D, "im");
  return {cast(out(c.primitive("Splice", {yr, yi}, {{"axis", Axis(int(rank - 1))}})), dt)};
}

Vars dft(ImportContext& c) {
  Variable x = c.input(0);
  const std::vector<int64_t> d = x.shape().dims();
  const int64_t rank = int64_t(d.size());
  if (rank < 2 || (d.back() != 1 && d.back() != 2)) c.fail("the last dimension must be 1 (real) or 2 (complex)");
  for (int64_t v : d)
    if (v <= 0) c.fail("free dimensions are not supported");
  int64_t onnx_axis = c.opset() >= 20 ? -2 : c.attr_int("axis", 1);
  if (c.opset() >= 20 && c.has_input(2)) {
    auto v = c.constant_input_i64(2);
    if (!v || v->size() != 1) c.fail("its axis input must be a known scalar");
    onnx_axis = (*v)[0];
  }
  const int64_t a = static_axis_of(c, 0, onnx_axis);
  if (a == rank - 1) c.fail("the axis must not be the last (real/imaginary) dimension");
  const bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  const int64_t len = d[size_t(a)];
  int64_t n = inverse && onesided ? 2 * (len - 1) : len;
  if (c.has_input(1)) {
    auto v = c.constant_input_i64(1);
    if (!v || v->size() != 1) c.fail("its dft_length input must be a known scalar");
    n = (*v)[0];
  }
  if (n <= 0) c.fail("dft_length must be positive");
  return dft_along(c, x, a, n, inverse, onesided);
}

// STFT: frames of frame_length every frame_step along the signal's axis 1, times the window,
// each transformed (one-sided by default): [batch, frames, bins, 2].
Vars stft(ImportContext& c) {
  Variable x = c.input(0);
  const std::vector<int64_t> d = x.shape().dims();
  if (d.size() != 3 || (d[2] != 1 && d[2] != 2) || d[1] <= 0) c.fail("the signal must be [batch, length, 1 or 2]");
  auto scalar = [&](size_t i, const char* what) {
    auto v = c.constant_input_i64(i);
    if (!v || v->size() != 1) c.fail(std::string("its ") + what + " input must be a known scalar");
    return (*v)[0];
  };
  const int64_t step = scalar(1, "frame_step");
  std::optional<Variable> window;
  int64_t flen = 0;
  if (c.has_input(2)) {
    window = c.input(2);
    if (window->shape().rank() != 1 || window->shape()[0] <= 0) c.fail("the window must be a known-length vector");
    flen = window->shape()[0];
  }
  if (c.has_input(3)) {
    const int64_t l = scalar(3, "frame_length");
    if (flen && l != flen) c.fail("frame_length differs from the window's length");
    flen = l;
  }
  if (!flen) c.fail("a window or a frame_length is needed");
  if (step <= 0 || flen > d[1]) c.fail("frame_step must be positive and the frame no longer than the signal");
  const int64_t frames = (d[1] - flen) / step + 1;
  Vars parts;
  for (int64_t f = 0; f < frames; ++f) {
    Variable s =
        out(c.primitive("Slice", {x}, {{"axis", Axis(1)}, {"beginIndex", f * step}, {"endIndex", f * step + flen}}));
    parts.push_back(out(c.primitive("Reshape", {s}, {{"newShape", NDShape({d[0], 1, flen, d[2]})}})));
  }
  Variable framed = parts.size() == 1 ? parts[0] : out(c.primitive("Splice", parts, {{"axis", Axis(1)}}));
  if (window) {
    Variable w = out(c.primitive("Reshape", {*window}, {{"newShape", NDShape({flen, 1})}}));
    if (w.dtype() != x.dtype()) w = out(c.primitive("Cast", {w}, {{"newDataType", int64_t(x.dtype())}}));
    framed = out(c.primitive("ElementTimes", {framed, w}));
  }
  return dft_along(c, framed, 2, flen, false, c.attr_int("onesided", 1) != 0);
}

}  // namespace

void register_import_dft() {
  register_onnx_import("DFT", dft, 17);
  register_onnx_import("STFT", stft, 17);
}

}  // namespace cntk::onnx_io
