// ONNX GridSample and AffineGrid. GridSample's grid is data (a graph input, often a learned
// AffineGrid's output), so the sampling is composed from elementwise engine ops rather than
// a gather of known indices: per spatial axis the grid's coordinate becomes the taps of the
// interpolation (floor, Keys' cubic or rounding) and each tap a one-hot row over the axis'
// positions (Equal against the positions) times its coefficient. The padding mode maps the
// taps' positions to input positions (a constant matrix: zeros drop outside taps, border
// clamps them, reflection mirrors them). Per image the axes' weights multiply into one
// [positions, output cells] matrix that Times applies to the image: the result is
// differentiable in the image and, through the coefficients, in the grid.
#include <algorithm>
#include <array>
#include <cmath>

#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;
Variable out(const FunctionPtr& f) { return f->output(); }

struct Ops {
  ImportContext& c;
  DataType dt;
  Variable k(double v) const { return Variable::constant(NDArrayView::scalar(dt, v), ""); }
  Variable op(const char* name, const Variable& a, const Variable& b) const { return out(c.primitive(name, {a, b})); }
  Variable add(const Variable& a, double v) const { return op("Plus", a, k(v)); }
  Variable mul(const Variable& a, double v) const { return op("ElementTimes", a, k(v)); }
  Variable floor(const Variable& a) const { return out(c.primitive("Floor", {a})); }
  Variable select(const Variable& cond, const Variable& a, const Variable& b) const {
    return out(c.primitive("Select", {cond, a, b}));
  }
  Variable reshape(const Variable& a, const std::vector<int64_t>& dims) const {
    return out(c.primitive("Reshape", {a}, {{"newShape", NDShape(dims)}}));
  }
  Variable constant(const std::vector<double>& v, const std::vector<int64_t>& dims, const std::string& what) const {
    NDArrayView a(DataType::Double, NDShape(dims));
    std::copy(v.begin(), v.end(), a.data<double>());
    return Variable::constant(a.cast(dt), c.name() + "/" + what);
  }
  // a * t^3 + b * t^2 + d * t + e
  Variable cubic(const Variable& t, double a, double b, double d, double e) const {
    return add(op("ElementTimes", add(op("ElementTimes", add(mul(t, a), b), t), d), t), e);
  }
};

// v[begin:end] along static axis `axis`.
Variable slice(const Ops& o, const Variable& v, int64_t axis, int64_t begin, int64_t end) {
  return out(o.c.primitive(
      "Slice", {v},
      {{"axisVec", axis_list({axis})}, {"beginIndexVec", int_list({begin})}, {"endIndexVec", int_list({end})}}));
}

// An image [C, S] (S: its spatial axes `lens` flattened) sampled at P points whose per-axis
// weights are w[k] [P, lens[k]]: the axes' weights multiplied into one [P, S] matrix (axis k
// broadcast over the others), transposed and applied: [C, P].
Variable sample(const Ops& o, const Variable& image, const std::vector<Variable>& w, const std::vector<int64_t>& lens,
                int64_t P) {
  const size_t n = lens.size();
  int64_t S = 1;
  Variable m;
  for (size_t k = 0; k < n; ++k) {
    std::vector<int64_t> dims(n + 1, 1);
    dims[0] = P;
    dims[1 + k] = lens[k];
    S *= lens[k];
    Variable wk = o.reshape(w[k], dims);
    m = m.defined() ? o.op("ElementTimes", m, wk) : wk;
  }
  m = o.reshape(m, {P, S});
  m = out(o.c.primitive("TransposeAxes", {m}, Dictionary{{"axis1", Axis(0)}, {"axis2", Axis(1)}}));
  return out(o.c.primitive("Times", {image, m}));
}

// The reflection of x into [lo, hi] by its nearer border, repeatedly, as ONNX's reference
// reflects (a triangle wave of period 2 (hi - lo)); hi == lo maps everything to lo.
double reflect(double x, double lo, double hi) {
  const double r = hi - lo;
  if (r <= 0) return lo;
  const double t = std::fmod(x - lo, 2 * r);
  const double m = t < 0 ? t + 2 * r : t;
  return lo + r - std::abs(m - r);
}

Variable reflect(const Ops& o, const Variable& x, double lo, double hi) {
  const double r = hi - lo;
  if (r <= 0) return o.add(o.mul(x, 0), lo);
  Variable t = o.add(x, -lo);
  Variable m = o.op("Minus", t, o.mul(o.floor(o.mul(t, 1 / (2 * r))), 2 * r));
  Variable tri = o.op("Minus", o.k(r), out(o.c.primitive("Abs", {o.add(m, -r)})));
  return o.add(tri, lo);
}

// Round half to even (NumPy's rint, as ONNX's reference rounds nearest sampling).
Variable rint(const Ops& o, const Variable& x) {
  Variable r = o.floor(o.add(x, 0.5));
  Variable tie = o.op("Equal", o.op("Minus", r, x), o.k(0.5));
  Variable odd = o.op("Equal", o.op("Minus", r, o.mul(o.floor(o.mul(r, 0.5)), 2)), o.k(1));
  return o.select(o.op("ElementTimes", tie, odd), o.add(r, -1), r);
}

// The [N, P, len] weights of one axis: row (n, p) mixes the axis' positions for output cell p
// of image n, whose normalized coordinate along the axis is g [N, P, 1].
Variable axis_weights(const Ops& o, Variable g, int64_t len, const std::string& mode, const std::string& padding,
                      bool align) {
  const double d = double(len);
  Variable x = align ? o.mul(o.add(g, 1), 0.5 * (d - 1)) : o.mul(o.add(o.mul(g, d), d - 1), 0.5);
  if (mode == "nearest") x = rint(o, x);
  const double lo = align ? 0 : -0.5, hi = align ? d - 1 : d - 0.5;
  if (padding != "zeros") {
    Variable below = o.op("Less", x, o.k(lo)), above = o.op("Greater", x, o.k(hi));
    if (padding == "border") {
      x = o.select(below, o.k(0), o.select(above, o.k(d - 1), x));
    } else {
      Variable outside = o.op("Plus", below, above);
      x = o.select(outside, reflect(o, x, lo, hi), x);
    }
  }
  // Taps (position, coefficient) of the interpolation.
  std::vector<std::pair<Variable, Variable>> taps;
  if (mode == "nearest") {
    taps.push_back({x, o.add(o.mul(x, 0), 1)});
  } else {
    Variable x0 = o.floor(x), f = o.op("Minus", x, x0);
    if (mode == "linear") {
      taps.push_back({x0, o.op("Minus", o.k(1), f)});
      taps.push_back({o.add(x0, 1), f});
    } else {
      const double a = -0.75;  // Keys' coefficient, as ONNX fixes it for GridSample
      Variable s = o.op("Minus", o.k(1), f);
      taps.push_back({o.add(x0, -1), o.cubic(o.add(f, 1), a, -5 * a, 8 * a, -4 * a)});
      taps.push_back({x0, o.cubic(f, a + 2, -(a + 3), 0, 1)});
      taps.push_back({o.add(x0, 1), o.cubic(s, a + 2, -(a + 3), 0, 1)});
      taps.push_back({o.add(x0, 2), o.cubic(o.add(s, 1), a, -5 * a, 8 * a, -4 * a)});
    }
  }
  // Tap positions reach at most 2 beyond either end once border or reflection has brought x
  // back near the axis; under zeros padding farther taps match no position and weigh nothing.
  const int64_t first = -2, count = len + 4;
  std::vector<double> positions(static_cast<size_t>(count)), map(static_cast<size_t>(count * len), 0.0);
  for (int64_t j = 0; j < count; ++j) {
    const int64_t p = first + j;
    positions[size_t(j)] = double(p);
    int64_t to = p;
    if (padding == "border") to = std::clamp<int64_t>(p, 0, len - 1);
    if (padding == "reflection") to = int64_t(reflect(double(p), lo, hi));
    if (to >= 0 && to < len) map[size_t(j * len + to)] = 1;
  }
  Variable pos = o.constant(positions, {count}, "positions");
  Variable w;
  for (auto& [p, coef] : taps) {
    Variable t = o.op("ElementTimes", o.op("Equal", p, pos), coef);
    w = w.defined() ? o.op("Plus", w, t) : t;
  }
  return out(o.c.primitive("Times", {w, o.constant(map, {count, len}, "padding")}));
}

Vars grid_sample(ImportContext& c) {
  Variable x = c.input(0), grid = c.input(1);
  if (c.input_dyn(0) > 0 || c.input_dyn(1) > 0)
    c.fail("GridSample over dynamic axes (batch, sequence) is not supported");
  const auto xd = x.shape().dims(), gd = grid.shape().dims();
  if (xd.size() < 3) c.fail("X " + x.shape().str() + " needs N, C and a spatial axis");
  const size_t n = xd.size() - 2;
  if (gd.size() != n + 2 || gd.back() != int64_t(n) || gd[0] != xd[0])
    c.fail("the grid " + grid.shape().str() + " does not match X " + x.shape().str());
  for (int64_t v : xd)
    if (v < 0) c.fail("X " + x.shape().str() + " has a free dimension");
  for (int64_t v : gd)
    if (v < 0) c.fail("the grid " + grid.shape().str() + " has a free dimension");
  std::string mode = c.attr_string("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic") c.fail("mode '" + mode + "' is not supported");
  const std::string padding = c.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    c.fail("padding_mode '" + padding + "' is not supported");
  const bool align = c.attr_int("align_corners", 0) != 0;
  Ops o{c, x.dtype()};
  const int64_t N = xd[0], C = xd[1];
  int64_t P = 1, S = 1;
  for (size_t i = 1; i <= n; ++i) P *= gd[i];
  for (size_t i = 0; i < n; ++i) S *= xd[2 + i];
  Variable g = o.reshape(grid, {N, P, int64_t(n)});
  // The grid's components run from the last spatial axis to the first.
  std::vector<Variable> w(n);
  for (size_t k = 0; k < n; ++k) {
    const int64_t comp = int64_t(n - 1 - k);
    Variable gk = out(c.primitive(
        "Slice", {g},
        {{"axisVec", axis_list({2})}, {"beginIndexVec", int_list({comp})}, {"endIndexVec", int_list({comp + 1})}}));
    w[k] = axis_weights(o, gk, xd[2 + k], mode, padding, align);
  }
  std::vector<Variable> images;
  const std::vector<int64_t> lens(xd.begin() + 2, xd.end());
  for (int64_t b = 0; b < N; ++b) {
    std::vector<Variable> wb;
    for (size_t k = 0; k < n; ++k) wb.push_back(o.reshape(slice(o, w[k], 0, b, b + 1), {P, xd[2 + k]}));
    images.push_back(sample(o, o.reshape(slice(o, x, 0, b, b + 1), {C, S}), wb, lens, P));
  }
  Variable y = images.size() == 1 ? images[0] : out(c.primitive("Splice", images, {{"axis", Axis(0)}}));
  std::vector<int64_t> dims{N, C};
  dims.insert(dims.end(), gd.begin() + 1, gd.end() - 1);
  return {o.reshape(y, dims)};
}

// AffineGrid: theta [N, n, n + 1] applied to the homogeneous coordinates of the output's cells
// (last spatial axis first), a constant [n + 1, cells] matrix.
Vars affine_grid(ImportContext& c) {
  Variable theta = c.input(0);
  auto size = c.constant_input_i64(1);
  if (!size) c.fail("the size input must be known while reading");
  if (size->size() != 4 && size->size() != 5) c.fail("size must be [N, C, H, W] or [N, C, D, H, W]");
  const size_t n = size->size() - 2;
  const auto td = theta.shape().dims();
  if (c.input_dyn(0) > 0 || td.size() != 3 || td[1] != int64_t(n) || td[2] != int64_t(n + 1))
    c.fail("theta " + theta.shape().str() + " must be [N, " + std::to_string(n) + ", " + std::to_string(n + 1) + "]");
  const bool align = c.attr_int("align_corners", 0) != 0;
  std::vector<int64_t> sp(size->begin() + 2, size->end());
  int64_t cells = 1;
  for (int64_t v : sp) cells *= v;
  std::vector<double> base(size_t((n + 1) * cells));
  for (int64_t e = 0; e < cells; ++e) {
    int64_t rest = e;
    for (size_t k = n; k-- > 0;) {
      const int64_t i = rest % sp[k], d = sp[k];
      rest /= d;
      const double v =
          align ? (d > 1 ? -1 + 2.0 * double(i) / double(d - 1) : -1) : -1 + (2.0 * double(i) + 1) / double(d);
      base[size_t(int64_t(n - 1 - k) * cells + e)] = v;  // row 0: the last axis' coordinate
    }
    base[size_t(int64_t(n) * cells + e)] = 1;
  }
  Ops o{c, theta.dtype()};
  Variable y = out(c.primitive("Times", {theta, o.constant(base, {int64_t(n + 1), cells}, "base")}));  // [N, n, cells]
  y = out(c.primitive("TransposeAxes", {y}, Dictionary{{"axis1", Axis(1)}, {"axis2", Axis(2)}}));
  std::vector<int64_t> dims{td[0]};
  dims.insert(dims.end(), sp.begin(), sp.end());
  dims.push_back(int64_t(n));
  return {o.reshape(y, dims)};
}

// RoiAlign: per region of interest an output_height x output_width grid of bins, each
// sampling sampling_ratio^2 points bilinearly (ONNX's clamping: a point more than one cell
// outside is zero, one less than a cell outside reads the edge). The regions and their batch
// indices are data: each image is picked by a one-hot product over N, each axis' sample
// points become [rois, points, positions] weights as GridSample's, and the image is
// contracted with them axis by axis. avg averages the samples (the weights summed over the
// samples of a bin); max takes, as ONNX's reference, the largest of the four weighted
// corner values over the samples.
Vars roi_align(ImportContext& c) {
  Variable x = c.input(0), rois = c.input(1), batch = c.input(2);
  if (c.input_dyn(0) > 0 || c.input_dyn(1) > 0 || c.input_dyn(2) > 0)
    c.fail("RoiAlign over dynamic axes (batch, sequence) is not supported");
  const auto xd = x.shape().dims(), rd = rois.shape().dims();
  if (xd.size() != 4 || rd.size() != 2 || rd[1] != 4) c.fail("X must be [N, C, H, W] and rois [num_rois, 4]");
  for (int64_t v : xd)
    if (v < 0) c.fail("X " + x.shape().str() + " has a free dimension");
  if (rd[0] < 0) c.fail("the number of rois must be known while reading");
  const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], R = rd[0];
  const int64_t P = c.attr_int("output_height", 1), Q = c.attr_int("output_width", 1);
  const int64_t ratio = c.attr_int("sampling_ratio", 0);
  if (ratio <= 0)
    c.fail("sampling_ratio 0 (a sample count from each roi's size, known only with the rois' values) is not supported");
  const double scale = c.attr_float("spatial_scale", 1.f);
  const std::string mode = c.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") c.fail("mode '" + mode + "' is not supported");
  const bool half_pixel =
      c.opset() >= 16 && c.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  Ops o{c, x.dtype()};
  auto column = [&](int64_t k) {
    return out(c.primitive(
        "Slice", {rois},
        {{"axisVec", axis_list({1})}, {"beginIndexVec", int_list({k})}, {"endIndexVec", int_list({k + 1})}}));
  };
  auto positions = [&](int64_t len) {
    std::vector<double> v(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) v[size_t(i)] = double(i);
    return o.constant(v, {len}, "positions");
  };
  // The sample coordinates of one axis, [R, bins * ratio]; and the per-axis pieces of the
  // bilinear sampling there: whether a point counts, and its clamped coordinate.
  struct Samples {
    Variable valid, at;
  };
  auto axis = [&](int64_t first_col, int64_t bins, int64_t len) {
    const double off = half_pixel ? 0.5 : 0;
    Variable start = o.add(o.mul(column(first_col), scale), -off),
             end = o.add(o.mul(column(first_col + 2), scale), -off);
    Variable extent = o.op("Minus", end, start);
    if (!half_pixel) extent = o.select(o.op("Less", extent, o.k(1)), o.k(1), extent);
    std::vector<double> t;
    for (int64_t b = 0; b < bins; ++b)
      for (int64_t i = 0; i < ratio; ++i) t.push_back((double(b) + (double(i) + 0.5) / double(ratio)) / double(bins));
    Variable y = o.op("Plus", start, o.op("ElementTimes", extent, o.constant(t, {bins * ratio}, "samples")));
    Variable valid = o.op("ElementTimes", o.op("GreaterEqual", y, o.k(-1)), o.op("LessEqual", y, o.k(double(len))));
    Variable at = o.select(o.op("Less", y, o.k(0)), o.k(0),
                           o.select(o.op("Greater", y, o.k(double(len - 1))), o.k(double(len - 1)), y));
    return Samples{o.reshape(valid, {R, bins * ratio, 1}), o.reshape(at, {R, bins * ratio, 1})};
  };
  Samples ay = axis(1, P, H), ax = axis(0, Q, W);
  // Each roi's image [R, C, H, W].
  Variable pick = o.op("Equal", o.reshape(batch, {R, 1}), positions(N));
  Variable img = o.reshape(out(c.primitive("Times", {pick, o.reshape(x, {N, C * H * W})})), {R, C, H, W});
  // img contracted with wy [R, A, H] and wx [R, B, W]: [R, C, A, B].
  auto contract = [&](const Variable& wy, int64_t A, const Variable& wx, int64_t B) {
    Dictionary sum{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(4)}};
    Variable t = o.op("ElementTimes", o.reshape(img, {R, C, H, 1, W}), o.reshape(wx, {R, 1, 1, B, W}));
    t = out(c.primitive("ReduceElements", {t}, sum));  // [R, C, H, B]
    t = o.op("ElementTimes", o.reshape(t, {R, C, 1, H, B}), o.reshape(wy, {R, 1, A, H, 1}));
    Dictionary sum3{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(3)}};
    return out(c.primitive("ReduceElements", {t}, sum3));
  };
  if (mode == "avg") {
    auto weights = [&](const Samples& a, int64_t bins, int64_t len) {
      Variable tent = o.op("Minus", o.k(1), out(c.primitive("Abs", {o.op("Minus", a.at, positions(len))})));
      tent = o.select(o.op("Less", tent, o.k(0)), o.k(0), tent);
      Variable w = o.reshape(o.op("ElementTimes", tent, a.valid), {R, bins, ratio, len});
      Dictionary sum{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(2)}};
      return o.mul(out(c.primitive("ReduceElements", {w}, sum)), 1.0 / double(ratio));
    };
    return {contract(weights(ay, P, H), P, weights(ax, Q, W), Q)};
  }
  // max: the corners low/high of each axis, their one-hot rows and their weights.
  auto corners = [&](const Samples& a, int64_t len) {
    Variable low = o.floor(a.at), high = o.select(o.op("Less", low, o.k(double(len - 1))), o.add(low, 1), low);
    Variable l = o.op("Minus", a.at, low);
    Variable pos = positions(len);
    return std::array<std::pair<Variable, Variable>, 2>{
        std::pair{o.op("Equal", low, pos), o.op("ElementTimes", o.op("Minus", o.k(1), l), a.valid)},
        std::pair{o.op("Equal", high, pos), o.op("ElementTimes", l, a.valid)}};
  };
  auto cy = corners(ay, H), cx = corners(ax, W);
  const int64_t A = P * ratio, B = Q * ratio;
  Variable best;
  for (auto& [oy, wy] : cy)
    for (auto& [ox, wx] : cx) {
      Variable v = contract(oy, A, ox, B);  // [R, C, A, B]
      v = o.op("ElementTimes", v, o.op("ElementTimes", o.reshape(wy, {R, 1, A, 1}), o.reshape(wx, {R, 1, 1, B})));
      best = best.defined() ? o.select(o.op("Less", best, v), v, best) : v;
    }
  Dictionary max{
      {"reductionOpName", std::string("Max")}, {"reductionKeepDimensions", false}, {"axisVec", axis_list({3, 5})}};
  return {out(c.primitive("ReduceElements", {o.reshape(best, {R, C, P, ratio, Q, ratio})}, max))};
}

// DeformConv: a convolution whose kernel taps sample the image at offset positions. Each
// tap's position (the window's cell plus the offset the node gives per offset group, tap and
// output cell) is sampled bilinearly with zeros outside (as GridSample with aligned corners
// at pixel coordinates), times the mask; the sampled columns [C, taps * cells] then meet the
// kernel [M, C / group * taps] as one Times per group. Differentiable in the image, the
// offsets, the mask, the kernel and the bias.
Vars deform_conv(ImportContext& c) {
  Variable x = c.input(0), w = c.input(1), offset = c.input(2);
  for (size_t i = 0; i < 5; ++i)
    if (c.has_input(i) && c.input_dyn(i) > 0) c.fail("DeformConv over dynamic axes (batch, sequence) is not supported");
  const auto xd = x.shape().dims(), wd = w.shape().dims(), od = offset.shape().dims();
  if (xd.size() < 3 || wd.size() != xd.size() || od.size() != xd.size())
    c.fail("X, W and offset must be [N, C, spatial...], [M, C / group, kernel...] and [N, 2 * taps, out...]");
  for (auto* d : {&xd, &wd, &od})
    for (int64_t v : *d)
      if (v < 0) c.fail("DeformConv over free dimensions is not supported");
  const size_t n = xd.size() - 2;
  const int64_t N = xd[0], C = xd[1], M = wd[0];
  const int64_t group = c.attr_int("group", 1), og = c.attr_int("offset_group", 1);
  const auto kernel = c.attr_ints("kernel_shape", std::vector<int64_t>(wd.begin() + 2, wd.end()));
  const auto strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  const auto dil = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  const auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || dil.size() != n || pads.size() != 2 * n)
    c.fail("kernel_shape, strides, dilations and pads must cover the spatial axes");
  int64_t K = 1, O = 1, S = 1;
  for (size_t a = 0; a < n; ++a) K *= kernel[a], O *= od[2 + a], S *= xd[2 + a];
  if (group < 1 || og < 1 || C % group != 0 || M % group != 0 || C % og != 0 || wd[1] * group != C)
    c.fail("the channels do not split into group and offset_group");
  if (od[1] != og * K * int64_t(n)) c.fail("offset must have offset_group * " + std::to_string(n) + " * taps channels");
  if (c.has_input(4) && c.input(4).shape().total_size() != N * og * K * O)
    c.fail("mask must be [N, offset_group * taps, out...]");
  Ops o{c, x.dtype()};
  // offset [N, og, K, n, O]; per axis a the tap positions [K * O] without offsets.
  Variable offs = o.reshape(offset, {N, og, K, int64_t(n), O});
  Variable mask = c.has_input(4) ? o.reshape(c.input(4), {N, og, K * O}) : Variable();
  std::vector<Variable> coords(n), positions(n);
  for (size_t a = 0; a < n; ++a) {
    std::vector<double> base(static_cast<size_t>(K * O)), pos(static_cast<size_t>(xd[2 + a]));
    for (int64_t t = 0; t < K; ++t)
      for (int64_t e = 0; e < O; ++e) {
        int64_t tap = t, cell = e, ta = 0, ca = 0;
        for (size_t b = n; b-- > 0;) {
          if (b == a) ta = tap % kernel[b], ca = cell % od[2 + b];
          tap /= kernel[b], cell /= od[2 + b];
        }
        base[size_t(t * O + e)] = double(ca * strides[a] - pads[a] + ta * dil[a]);
      }
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = double(i);
    Variable off = o.reshape(slice(o, offs, 3, int64_t(a), int64_t(a) + 1), {N, og, K * O, 1});
    coords[a] = o.op("Plus", off, o.reshape(o.constant(base, {K * O}, "taps"), {K * O, 1}));
    positions[a] = o.constant(pos, {xd[2 + a]}, "positions");
  }
  const std::vector<int64_t> lens(xd.begin() + 2, xd.end());
  Variable kernel_rows = o.reshape(w, {M, wd[1] * K});
  std::vector<Variable> images;
  for (int64_t b = 0; b < N; ++b) {
    std::vector<Variable> cols;  // per offset group: [C / og, K * O]
    for (int64_t g = 0; g < og; ++g) {
      std::vector<Variable> wa;
      for (size_t a = 0; a < n; ++a) {
        Variable y = o.reshape(slice(o, slice(o, coords[a], 0, b, b + 1), 1, g, g + 1), {K * O, 1});
        Variable tent = o.op("Minus", o.k(1), out(c.primitive("Abs", {o.op("Minus", y, positions[a])})));
        wa.push_back(o.select(o.op("Less", tent, o.k(0)), o.k(0), tent));
      }
      Variable img = o.reshape(slice(o, slice(o, x, 0, b, b + 1), 1, g * (C / og), (g + 1) * (C / og)), {C / og, S});
      Variable col = sample(o, img, wa, lens, K * O);
      if (mask.defined())
        col = o.op("ElementTimes", col, o.reshape(slice(o, slice(o, mask, 0, b, b + 1), 1, g, g + 1), {K * O}));
      cols.push_back(col);
    }
    Variable all = cols.size() == 1 ? cols[0] : out(c.primitive("Splice", cols, {{"axis", Axis(0)}}));
    std::vector<Variable> parts;
    for (int64_t g = 0; g < group; ++g) {
      Variable cg = o.reshape(slice(o, all, 0, g * (C / group), (g + 1) * (C / group)), {C / group * K, O});
      parts.push_back(
          out(c.primitive("Times", {slice(o, kernel_rows, 0, g * (M / group), (g + 1) * (M / group)), cg})));
    }
    images.push_back(parts.size() == 1 ? parts[0] : out(c.primitive("Splice", parts, {{"axis", Axis(0)}})));
  }
  Variable y = images.size() == 1 ? images[0] : out(c.primitive("Splice", images, {{"axis", Axis(0)}}));
  std::vector<int64_t> dims{N, M};
  dims.insert(dims.end(), od.begin() + 2, od.end());
  y = o.reshape(y, dims);
  if (c.has_input(3)) {
    std::vector<int64_t> bd(n + 1, 1);
    bd[0] = M;
    y = o.op("Plus", y, o.reshape(c.input(3), bd));
  }
  return {y};
}

}  // namespace

void register_import_grid() {
  register_onnx_import("GridSample", grid_sample, 16);
  register_onnx_import("AffineGrid", affine_grid, 20);
  register_onnx_import("RoiAlign", roi_align, 10);
  register_onnx_import("DeformConv", deform_conv, 19);
}

}  // namespace cntk::onnx_io
