#include "io/image_deserializer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
#include <sstream>

namespace cntk::io {
namespace {

// ---------------------------------------------------------------------------------------------------
// Randomness: a splitmix64 stream seeded from (seed, sweep, sequence, transform), so a sequence's
// transform does not depend on which sequences were loaded before it, nor on the thread decoding it.

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  Rng(uint64_t seed, uint64_t sweep, uint64_t index, uint64_t transform)
      : state_(mix(seed ^ mix(sweep ^ mix(index ^ mix(transform))))) {}
  uint64_t next() { return mix(state_ += 0x9e3779b97f4a7c15ULL); }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  int integer(int lo, int hi) {  // [lo, hi]
    return lo + int(std::min<uint64_t>(uint64_t(uniform() * double(hi - lo + 1)), uint64_t(hi - lo)));
  }
  bool coin() { return (next() >> 63) != 0; }

 private:
  uint64_t state_;
};

bool iequals(const std::string& a, const char* b) {
  size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------------
// Resizing, separable, with OpenCV's sampling geometry (pixel centres at +0.5) and border replication.

enum class Interp { Nearest, Linear, Cubic, Lanczos };

Interp parse_interp(const std::string& s) {
  if (iequals(s, "nearest")) return Interp::Nearest;
  if (iequals(s, "linear")) return Interp::Linear;
  if (iequals(s, "cubic")) return Interp::Cubic;
  if (iequals(s, "lanczos")) return Interp::Lanczos;
  throw ValueError("scale transform: interpolation '" + s + "' is not one of nearest, linear, cubic, lanczos");
}

struct Taps {
  int n = 1;
  std::vector<int> index;  // dst * n source positions (clamped)
  std::vector<float> weight;
};

Taps make_taps(int src, int dst, Interp mode) {
  Taps t;
  t.n = mode == Interp::Nearest ? 1 : mode == Interp::Linear ? 2 : mode == Interp::Cubic ? 4 : 8;
  t.index.resize(size_t(dst) * size_t(t.n));
  t.weight.resize(t.index.size());
  const double scale = double(src) / double(dst);
  auto clamp = [&](long i) { return int(std::clamp<long>(i, 0, src - 1)); };
  for (int d = 0; d < dst; ++d) {
    int* idx = &t.index[size_t(d) * size_t(t.n)];
    float* w = &t.weight[size_t(d) * size_t(t.n)];
    if (mode == Interp::Nearest) {
      idx[0] = clamp(long(std::floor(d * scale)));
      w[0] = 1;
      continue;
    }
    double f = (d + 0.5) * scale - 0.5;
    long x0 = long(std::floor(f));
    double u = f - double(x0);
    if (mode == Interp::Linear) {
      idx[0] = clamp(x0);
      idx[1] = clamp(x0 + 1);
      w[0] = float(1 - u);
      w[1] = float(u);
    } else if (mode == Interp::Cubic) {
      constexpr double A = -0.75;
      double c0 = ((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A;
      double c1 = ((A + 2) * u - (A + 3)) * u * u + 1;
      double c2 = ((A + 2) * (1 - u) - (A + 3)) * (1 - u) * (1 - u) + 1;
      double c[4] = {c0, c1, c2, 1 - c0 - c1 - c2};
      for (int k = 0; k < 4; ++k) {
        idx[k] = clamp(x0 - 1 + k);
        w[k] = float(c[k]);
      }
    } else {  // Lanczos, 8 taps
      double c[8], sum = 0;
      for (int k = 0; k < 8; ++k) {
        double x = u + 3 - k;  // distance from the sample point to tap x0 - 3 + k
        if (std::abs(x) < 1e-9) {
          c[k] = 1;
        } else {
          double px = std::numbers::pi * x;
          c[k] = 4 * std::sin(px) * std::sin(px / 4) / (px * px);
        }
        sum += c[k];
      }
      for (int k = 0; k < 8; ++k) {
        idx[k] = clamp(x0 - 3 + k);
        w[k] = float(c[k] / sum);
      }
    }
  }
  return t;
}

Image resize(const Image& in, int width, int height, Interp mode) {
  const int C = in.channels;
  Taps tx = make_taps(in.width, width, mode), ty = make_taps(in.height, height, mode);
  Image tmp;
  tmp.width = width;
  tmp.height = in.height;
  tmp.channels = C;
  tmp.data.assign(size_t(width) * size_t(in.height) * size_t(C), 0.f);
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < C; ++c) {
        float s = 0;
        for (int k = 0; k < tx.n; ++k)
          s += tx.weight[size_t(x) * size_t(tx.n) + size_t(k)] *
               in.at(y, tx.index[size_t(x) * size_t(tx.n) + size_t(k)], c);
        tmp.at(y, x, c) = s;
      }
  Image out;
  out.width = width;
  out.height = height;
  out.channels = C;
  out.data.assign(size_t(width) * size_t(height) * size_t(C), 0.f);
  for (int y = 0; y < height; ++y)
    for (int k = 0; k < ty.n; ++k) {
      float w = ty.weight[size_t(y) * size_t(ty.n) + size_t(k)];
      int sy = ty.index[size_t(y) * size_t(ty.n) + size_t(k)];
      const float* src = &tmp.data[size_t(sy) * size_t(width) * size_t(C)];
      float* dst = &out.data[size_t(y) * size_t(width) * size_t(C)];
      for (size_t i = 0; i < size_t(width) * size_t(C); ++i) dst[i] += w * src[i];
    }
  return out;
}

Image sub_image(const Image& in, int x0, int y0, int w, int h) {
  Image out;
  out.width = w;
  out.height = h;
  out.channels = in.channels;
  out.data.resize(size_t(w) * size_t(h) * size_t(in.channels));
  for (int y = 0; y < h; ++y)
    std::copy_n(&in.data[(size_t(y0 + y) * size_t(in.width) + size_t(x0)) * size_t(in.channels)],
                size_t(w) * size_t(in.channels), &out.data[size_t(y) * size_t(w) * size_t(in.channels)]);
  return out;
}

void flip_horizontal(Image& img) {
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width / 2; ++x)
      for (int c = 0; c < img.channels; ++c) std::swap(img.at(y, x, c), img.at(y, img.width - 1 - x, c));
}

// ---------------------------------------------------------------------------------------------------
// Crop: the window size from cropSize or the side/area and aspect ratios, then its position.

double jitter(const ImageTransform& t, double lo, double hi, Rng& rng) {
  if (iequals(t.jitter_type, "uniratio") && lo != hi) return rng.uniform(lo, hi);
  return lo;
}

void crop_size(const ImageTransform& t, int rows, int cols, Rng& rng, int& w, int& h) {
  if (t.crop_width > 0 && t.crop_height > 0) {
    w = std::min(cols, t.crop_width);
    h = std::min(rows, t.crop_height);
    return;
  }
  const bool side = t.side_min > 0, area = t.area_min > 0;
  for (int attempt = 0; attempt < 10; ++attempt) {
    w = cols;
    h = rows;
    if (side) {
      w = h = int(std::round(std::min(rows, cols) * jitter(t, t.side_min, t.side_max, rng)));
    } else if (area) {
      w = h = int(std::round(std::sqrt(double(rows) * double(cols) * jitter(t, t.area_min, t.area_max, rng))));
    }
    double aspect = jitter(t, t.aspect_min, t.aspect_max, rng);
    if (aspect != 1.0) {
      double a = double(w) * double(h);
      bool wide = rng.coin();
      int longer = int(std::sqrt(a / aspect)), shorter = int(std::sqrt(a * aspect));
      w = wide ? longer : shorter;
      h = wide ? shorter : longer;
    }
    w = std::max(w, 1);
    h = std::max(h, 1);
    if (w <= cols && h <= rows) return;
  }
  w = cols;  // no window fits: the whole image
  h = rows;
}

Image apply_crop(const ImageTransform& t, Image img, size_t index, Rng& rng) {
  int w = 0, h = 0;
  crop_size(t, img.height, img.width, rng, w, h);
  int x = 0, y = 0;
  bool flip = false;
  const bool multiview = iequals(t.crop_type, "multiview10");
  if (iequals(t.crop_type, "center")) {
    x = (img.width - w) / 2;
    y = (img.height - h) / 2;
  } else if (multiview) {
    int view = int(index % 10);
    switch (view % 5) {
      case 0: break;                      // top left
      case 1: x = img.width - w; break;   // top right
      case 2: y = img.height - h; break;  // bottom left
      case 3:
        x = img.width - w;
        y = img.height - h;
        break;                                                     // bottom right
      default: x = (img.width - w) / 2; y = (img.height - h) / 2;  // centre
    }
    flip = view >= 5;
  } else {  // randomside, randomarea, random: a random position (and by default a random flip)
    x = rng.integer(0, img.width - w);
    y = rng.integer(0, img.height - h);
  }
  if (!multiview && t.hflip.value_or(!iequals(t.crop_type, "center"))) flip = rng.coin();
  Image out = sub_image(img, x, y, w, h);
  if (flip) flip_horizontal(out);
  return out;
}

Image apply_scale(const ImageTransform& t, const Image& img, Rng& rng, bool integral) {
  Interp mode = parse_interp(
      t.interpolations[t.interpolations.size() == 1 ? 0 : size_t(rng.integer(0, int(t.interpolations.size()) - 1))]);
  Image out;
  if (iequals(t.scale_mode, "fill")) {
    out = resize(img, t.width, t.height, mode);
  } else {
    // crop: the centre of the image with the target's aspect, scaled to the target (the same as scaling
    // the image to cover the target and cutting the centre, without building the large image).
    // pad: scale until both sides fit inside the target, centre it and pad (with pad_value, or by
    // replicating the border when it is -1).
    const bool crop = iequals(t.scale_mode, "crop");
    if (crop) {
      int cw = img.width, ch = img.height;
      if (double(img.width) * t.height > double(img.height) * t.width)
        cw = std::clamp(int(std::lround(double(img.height) * t.width / t.height)), 1, img.width);
      else
        ch = std::clamp(int(std::lround(double(img.width) * t.height / t.width)), 1, img.height);
      out = resize(sub_image(img, (img.width - cw) / 2, (img.height - ch) / 2, cw, ch), t.width, t.height, mode);
    } else {
      double s = std::min(double(t.width) / img.width, double(t.height) / img.height);
      int tw = std::clamp(int(std::lround(img.width * s)), 1, t.width);
      int th = std::clamp(int(std::lround(img.height * s)), 1, t.height);
      Image r = resize(img, tw, th, mode);
      out.width = t.width;
      out.height = t.height;
      out.channels = img.channels;
      out.data.assign(size_t(t.width) * size_t(t.height) * size_t(img.channels), float(std::max(t.pad_value, 0)));
      int left = (t.width - r.width) / 2, top = (t.height - r.height) / 2;
      for (int y = 0; y < t.height; ++y)
        for (int x = 0; x < t.width; ++x) {
          bool inside = y >= top && y < top + r.height && x >= left && x < left + r.width;
          if (!inside && t.pad_value >= 0) continue;
          int ry = std::clamp(y - top, 0, r.height - 1), rx = std::clamp(x - left, 0, r.width - 1);
          for (int c = 0; c < img.channels; ++c) out.at(y, x, c) = r.at(ry, rx, c);
        }
    }
  }
  if (integral)  // 8-bit images stay 8-bit through a resize, as in CNTK (OpenCV saturates)
    for (float& v : out.data) v = std::clamp(std::nearbyint(v), 0.f, 255.f);
  return out;
}

void apply_color(const ImageTransform& t, Image& img, Rng& rng) {
  if (t.brightness_radius > 0 || t.contrast_radius > 0) {
    double beta = 0, alpha = 1;
    if (t.brightness_radius > 0) {
      double sum = 0;
      for (float v : img.data) sum += v;
      beta = rng.uniform(-t.brightness_radius, t.brightness_radius) * sum / double(img.data.size());
    }
    if (t.contrast_radius > 0) alpha = 1 + rng.uniform(-t.contrast_radius, t.contrast_radius);
    for (float& v : img.data) v = float(std::clamp(v * alpha + beta, 0.0, 255.0));
  }
  if (t.saturation_radius > 0 && img.channels == 3) {
    // Scaling HSV saturation by r with hue and value kept: each channel c -> V - s'/s (V - c),
    // where s = (V - min) / V and s' = min(s r, 1).
    double ratio = 1 + rng.uniform(-t.saturation_radius, t.saturation_radius);
    for (size_t p = 0; p < img.data.size(); p += 3) {
      float* px = &img.data[p];
      float v = std::max({px[0], px[1], px[2]}), m = std::min({px[0], px[1], px[2]});
      if (v <= 0 || v == m) continue;
      double s = double(v - m) / v, s2 = std::min(s * ratio, 1.0), k = s2 / s;
      for (int c = 0; c < 3; ++c) px[c] = float(v - k * (v - px[c]));
    }
  }
}

// ---------------------------------------------------------------------------------------------------

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The text between <tag ...> and </tag> within [from, to); npos if absent.
bool xml_element(const std::string& xml, const std::string& tag, size_t from, size_t to, size_t& b, size_t& e) {
  size_t p = from;
  while ((p = xml.find("<" + tag, p)) != std::string::npos && p < to) {
    char next = xml[p + 1 + tag.size()];
    if (next == '>' || next == ' ' || next == '\t' || next == '\n' || next == '\r') {
      size_t open_end = xml.find('>', p);
      size_t close = xml.find("</" + tag + ">", p);
      if (open_end == std::string::npos || close == std::string::npos || close > to || open_end > close) return false;
      b = open_end + 1;
      e = close;
      return true;
    }
    p += 1;
  }
  return false;
}

}  // namespace

bool decode_base64(const char* begin, const char* end, std::vector<uint8_t>& out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (end > begin && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n')) --end;
  out.clear();
  out.reserve(size_t(end - begin) / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  const char* p = begin;
  for (; p < end && *p != '='; ++p) {
    int v = value(*p);
    if (v < 0) return false;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t((acc >> bits) & 0xFF));
    }
  }
  size_t padding = 0;
  for (; p < end; ++p, ++padding)
    if (*p != '=') return false;
  return padding <= 2 && (size_t(p - begin) % 4 == 0 || padding == 0) && bits < 6;
}

MeanImage read_mean_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IOError("cannot open mean file '" + path + "'");
  std::string xml((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) { return IOError("mean file '" + path + "': " + what); };
  auto int_field = [&](const char* tag, size_t from, size_t to) {
    size_t b, e;
    if (!xml_element(xml, tag, from, to, b, e)) throw bad(std::string("no <") + tag + "> element");
    std::string s = trim(xml.substr(b, e - b));
    int v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v <= 0)
      throw bad(std::string("<") + tag + "> is not a positive integer: '" + s + "'");
    return v;
  };
  MeanImage m;
  m.channels = int_field("Channel", 0, xml.size());
  m.rows = int_field("Row", 0, xml.size());
  m.cols = int_field("Col", 0, xml.size());
  size_t mb, me;
  if (!xml_element(xml, "MeanImg", 0, xml.size(), mb, me)) throw bad("no <MeanImg> matrix");
  int rows = int_field("rows", mb, me), cols = int_field("cols", mb, me);
  size_t db, de;
  if (!xml_element(xml, "dt", mb, me, db, de)) throw bad("<MeanImg> has no <dt>");
  std::string dt = trim(xml.substr(db, de - db));
  int dt_channels = 1;
  size_t k = 0;
  while (k < dt.size() && std::isdigit(static_cast<unsigned char>(dt[k]))) ++k;
  if (k > 0) dt_channels = std::atoi(dt.substr(0, k).c_str());
  if (k + 1 != dt.size() || (dt[k] != 'f' && dt[k] != 'd') || dt_channels < 1 || dt_channels > 4)
    throw bad("<dt> '" + dt + "' is not a float or double matrix type");
  if (!xml_element(xml, "data", mb, me, db, de)) throw bad("<MeanImg> has no <data>");
  uint64_t expected = uint64_t(m.channels) * uint64_t(m.rows) * uint64_t(m.cols);
  if (uint64_t(rows) * uint64_t(cols) * uint64_t(dt_channels) != expected)
    throw bad("the MeanImg matrix (" + std::to_string(rows) + "x" + std::to_string(cols) + "x" +
              std::to_string(dt_channels) + ") does not hold Channel*Row*Col = " + std::to_string(expected) +
              " values");
  if (expected > (uint64_t(1) << 28)) throw bad("the mean image is too large");
  m.data.reserve(size_t(expected));
  const char* p = xml.data() + db;
  const char* end = xml.data() + de;
  while (p < end) {
    while (p < end && std::isspace(static_cast<unsigned char>(*p))) ++p;
    if (p == end) break;
    const char* q = p;
    while (q < end && !std::isspace(static_cast<unsigned char>(*q))) ++q;
    double v = 0;
    auto r = std::from_chars(p, q, v);
    if (r.ec != std::errc() || r.ptr != q) throw bad("bad number '" + std::string(p, q) + "' in <data>");
    m.data.push_back(float(v));
    p = q;
  }
  if (m.data.size() != expected)
    throw bad("<data> holds " + std::to_string(m.data.size()) + " values, expected " + std::to_string(expected));
  return m;
}

ImageDeserializer::ImageDeserializer(ImageDeserializerConfig config) : config_(std::move(config)) {
  const std::string who = "ImageDeserializer('" + config_.map_file + "')";
  // Without a label stream (label_stream empty) the map file's labels are read but not given.
  const bool labelled = !config_.label_stream.empty();
  if (config_.num_classes > size_t(INT32_MAX)) throw ValueError(who + ": too many classes for int32 label indices");
  if (labelled && config_.num_classes == 0)
    throw ValueError(who + ": the label stream needs a dimension (number of classes) > 0");
  if (config_.image_stream.empty() || config_.image_stream == config_.label_stream)
    throw ValueError(who + ": the image and label streams need two different names");
  if (config_.sequences_per_chunk == 0) config_.sequences_per_chunk = 1;
  bool multiview = false;
  const ImageTransform* first_scale = nullptr;
  const ImageTransform* last_scale = nullptr;
  const ImageTransform* last_fixed_crop = nullptr;  // a crop of fixed crop_size (W:H)
  means_.resize(config_.transforms.size());
  for (size_t i = 0; i < config_.transforms.size(); ++i) {
    auto& t = config_.transforms[i];
    std::string what = who + ": transform " + std::to_string(i) + " ";
    auto ratio_ok = [](double lo, double hi) { return lo > 0 && lo <= hi && hi <= 1.0; };
    switch (t.kind) {
      case ImageTransform::Kind::Crop:
        if (!iequals(t.crop_type, "center") && !iequals(t.crop_type, "randomside") &&
            !iequals(t.crop_type, "randomarea") && !iequals(t.crop_type, "random") &&
            !iequals(t.crop_type, "multiview10"))
          throw ValueError(what + "(crop): crop_type '" + t.crop_type +
                           "' is not one of center, randomside, randomarea, multiview10");
        if (t.crop_width < 0 || t.crop_height < 0) throw ValueError(what + "(crop): crop_size must be >= 0");
        if ((t.side_min != 0 || t.side_max != 0) && !ratio_ok(t.side_min, t.side_max))
          throw ValueError(what + "(crop): side_ratio must be in (0, 1] with min <= max");
        if ((t.area_min != 0 || t.area_max != 0) && !ratio_ok(t.area_min, t.area_max))
          throw ValueError(what + "(crop): area_ratio must be in (0, 1] with min <= max");
        if (t.side_min > 0 && t.area_min > 0)
          throw ValueError(what + "(crop): side_ratio and area_ratio cannot both be given");
        if (!ratio_ok(t.aspect_min, t.aspect_max))
          throw ValueError(what + "(crop): aspect_ratio must be in (0, 1] with min <= max");
        if (!iequals(t.jitter_type, "none") && !iequals(t.jitter_type, "uniratio"))
          throw ValueError(what + "(crop): jitter_type '" + t.jitter_type + "' is not none or uniratio");
        multiview = multiview || iequals(t.crop_type, "multiview10");
        if (t.crop_width > 0 && t.crop_height > 0) last_fixed_crop = &t;
        break;
      case ImageTransform::Kind::Scale:
        if (t.width <= 0 || t.height <= 0 || t.width > (1 << 15) || t.height > (1 << 15))
          throw ValueError(what + "(scale): width and height must be in [1, 32768]");
        if (t.channels != 1 && t.channels != 3) throw ValueError(what + "(scale): channels must be 1 or 3");
        if (t.interpolations.empty()) t.interpolations = {"linear"};
        for (const auto& s : t.interpolations) parse_interp(s);
        if (!iequals(t.scale_mode, "fill") && !iequals(t.scale_mode, "crop") && !iequals(t.scale_mode, "pad"))
          throw ValueError(what + "(scale): scale_mode '" + t.scale_mode + "' is not fill, crop or pad");
        if (t.pad_value < -1 || t.pad_value > 255)
          throw ValueError(what + "(scale): pad_value must be -1 or in [0, 255]");
        if (!first_scale) first_scale = &t;
        last_scale = &t;
        break;
      case ImageTransform::Kind::Mean: means_[i] = std::make_shared<MeanImage>(read_mean_file(t.mean_file)); break;
      case ImageTransform::Kind::Color:
        for (double r : {t.brightness_radius, t.contrast_radius, t.saturation_radius})
          if (!(r >= 0 && r <= 1)) throw ValueError(what + "(color): radii must be in [0, 1]");
        break;
    }
  }
  // The stream's shape: the last of the scales and fixed-size crops fixes width and height; channels
  // come from the scales (images decode as colour, 3 channels, without one).
  for (size_t i = 0; i < config_.transforms.size(); ++i) {
    const auto& t = config_.transforms[i];
    if (&t == last_scale || &t == last_fixed_crop) {
      out_width_ = &t == last_scale ? t.width : t.crop_width;
      out_height_ = &t == last_scale ? t.height : t.crop_height;
    }
  }
  if (!last_scale && !last_fixed_crop)
    throw ValueError(who +
                     ": the image stream needs a scale transform or a crop of fixed crop_size (they fix the "
                     "images' width and height)");
  if (last_scale && first_scale->channels != last_scale->channels)
    throw ValueError(who + ": all scale transforms must give the same number of channels");
  out_channels_ = last_scale ? last_scale->channels : 3;

  // The map file: [sequence id <TAB>] path <TAB> label (base64: [sequence id <TAB>] label <TAB> data),
  // one image per line; blank lines are skipped.
  std::ifstream f(config_.map_file, std::ios::binary);
  if (!f) throw IOError("cannot open image map file '" + config_.map_file + "'");
  std::string line;
  size_t line_no = 0;
  uint64_t pos = 0;
  const char* layout = config_.base64 ? "'label<TAB>base64 image' (optionally 'sequence id<TAB>label<TAB>base64 image')"
                                      : "'path<TAB>label' (optionally 'sequence id<TAB>path<TAB>label')";
  while (std::getline(f, line)) {
    ++line_no;
    const uint64_t line_start = pos;
    pos += line.size() + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    const std::string where = config_.map_file + ":" + std::to_string(line_no) + ": ";
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string field; std::getline(ss, field, '\t');) fields.push_back(field);
    if (fields.size() != 2 && fields.size() != 3)
      throw IOError(where + "expected " + layout + ", found " + std::to_string(fields.size()) +
                    " tab-separated fields");
    Entry e;
    e.line = line_no;
    std::string label = trim(config_.base64 ? fields[fields.size() - 2] : fields.back());
    size_t lbl = 0;
    auto r = std::from_chars(label.data(), label.data() + label.size(), lbl);
    if (label.empty() || r.ec != std::errc() || r.ptr != label.data() + label.size())
      throw IOError(where + "label '" + label + "' is not a non-negative integer");
    if (labelled && lbl >= config_.num_classes)
      throw IOError(where + "label " + label + " is not below the number of classes " +
                    std::to_string(config_.num_classes));
    e.label = lbl;
    bool explicit_key = fields.size() == 3;
    if (explicit_key) {
      std::string key = trim(fields[0]);
      auto rk = std::from_chars(key.data(), key.data() + key.size(), e.key);
      if (key.empty() || rk.ec != std::errc() || rk.ptr != key.data() + key.size())
        throw IOError(where + "sequence id '" + key + "' is not a non-negative integer");
    }
    if (config_.base64) {
      e.offset = line_start + line.rfind('\t') + 1;
      e.length = line.size() - (line.rfind('\t') + 1);
      if (trim(fields.back()).empty()) throw IOError(where + "empty image data");
    } else {
      std::string path = trim(fields[fields.size() - 2]);
      if (path.empty()) throw IOError(where + "empty image path");
      e.path = path;  // a relative path is resolved when the image is read (see resolve())
    }
    for (int view = 0; view < (multiview ? 10 : 1); ++view) {
      if (!explicit_key) e.key = entries_.size();
      entries_.push_back(e);
    }
  }
  if (f.bad()) throw IOError("error reading image map file '" + config_.map_file + "'");

  StreamInfo image;
  image.name = config_.image_stream;
  image.sample_shape = NDShape{out_channels_, out_height_, out_width_};
  image.dtype = DataType::Float;
  StreamInfo labels;
  labels.name = config_.label_stream;
  labels.sample_shape = NDShape{int64_t(config_.num_classes)};
  labels.sparse = true;
  labels.dtype = DataType::Float;
  streams_ = {image};
  if (labelled) streams_.push_back(labels);

  const size_t k = config_.sequences_per_chunk;
  for (size_t b = 0, id = 0; b < entries_.size(); b += k, ++id) {
    size_t n = std::min(k, entries_.size() - b);
    chunks_.push_back(ChunkInfo{id, n, n});
  }
}

// A path starting with "..." has it replaced by the map file's directory (as CNTK's readers do); a
// relative image path is looked up beside the map file first, then from the working directory.
std::string ImageDeserializer::resolve(const std::string& path) const {
  std::filesystem::path p(path), base = std::filesystem::path(config_.map_file).parent_path();
  if (path.rfind("...", 0) == 0) return (base.empty() ? std::string(".") : base.string()) + path.substr(3);
  if (p.is_relative() && !base.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(base / p, ec)) return (base / p).string();
  }
  return path;
}

Image ImageDeserializer::transform(Image img, size_t index) const {
  bool integral = true;                // still 8-bit values (decoded, cropped, resized)
  uint64_t ordinal[4] = {0, 0, 0, 0};  // transforms of each kind so far
  for (size_t i = 0; i < config_.transforms.size(); ++i) {
    const auto& t = config_.transforms[i];
    // Draws are keyed by the transform's kind and its rank among the transforms of that kind, so the
    // k-th crop of two deserializers over the same map draws alike (synchronized crops of two streams).
    const uint64_t kind = uint64_t(t.kind);
    Rng rng(config_.seed, sweep_, index, kind << 32 | ordinal[kind]++);
    switch (t.kind) {
      case ImageTransform::Kind::Crop: img = apply_crop(t, std::move(img), index, rng); break;
      case ImageTransform::Kind::Scale:
        if (img.channels != t.channels)
          throw IOError("has " + std::to_string(img.channels) + " channels where scale expects " +
                        std::to_string(t.channels));
        img = apply_scale(t, img, rng, integral);
        break;
      case ImageTransform::Kind::Mean: {
        const MeanImage& m = *means_[i];
        if (m.rows != img.height || m.cols != img.width || m.channels != img.channels)
          throw IOError("is " + std::to_string(img.width) + "x" + std::to_string(img.height) + "x" +
                        std::to_string(img.channels) + " (width x height x channels) when the mean image '" +
                        t.mean_file + "' is " + std::to_string(m.cols) + "x" + std::to_string(m.rows) + "x" +
                        std::to_string(m.channels));
        for (size_t k = 0; k < img.data.size(); ++k) img.data[k] -= m.data[k];
        integral = false;
        break;
      }
      case ImageTransform::Kind::Color:
        apply_color(t, img, rng);
        integral = false;
        break;
    }
  }
  return img;
}

std::vector<uint64_t> ImageDeserializer::chunk_keys(size_t chunk_id) {
  if (chunk_id >= chunks_.size())
    throw ValueError("ImageDeserializer('" + config_.map_file + "'): chunk " + std::to_string(chunk_id) +
                     " does not exist (" + std::to_string(chunks_.size()) + " chunks)");
  const size_t begin = chunk_id * config_.sequences_per_chunk;
  std::vector<uint64_t> keys;
  for (size_t i = 0; i < chunks_[chunk_id].num_sequences; ++i) keys.push_back(entries_[begin + i].key);
  return keys;
}

std::vector<Sequence> ImageDeserializer::load_chunk(size_t chunk_id) {
  if (chunk_id >= chunks_.size())
    throw ValueError("ImageDeserializer('" + config_.map_file + "'): chunk " + std::to_string(chunk_id) +
                     " does not exist (" + std::to_string(chunks_.size()) + " chunks)");
  const size_t begin = chunk_id * config_.sequences_per_chunk, n = chunks_[chunk_id].num_sequences;
  std::vector<Sequence> out(n);
  std::vector<std::string> errors(n);
  std::vector<std::vector<uint8_t>> encoded(config_.base64 ? n : 0);  // base64 images, decoded to file bytes
  if (config_.base64) {
    std::ifstream f(config_.map_file, std::ios::binary);
    if (!f) throw IOError("cannot open image map file '" + config_.map_file + "'");
    std::string text;
    for (size_t i = 0; i < n; ++i) {
      const Entry& e = entries_[begin + i];
      text.resize(e.length);
      f.seekg(std::streamoff(e.offset));
      if (!f.read(text.data(), std::streamsize(e.length)))
        throw IOError(config_.map_file + ":" + std::to_string(e.line) + ": cannot read the image data (file changed?)");
      if (!decode_base64(text.data(), text.data() + text.size(), encoded[i]))
        throw IOError(config_.map_file + ":" + std::to_string(e.line) + ": the image data is not valid base64");
    }
  }
  const size_t plane = size_t(out_height_) * size_t(out_width_);
#pragma omp parallel for schedule(dynamic)
  for (long j = 0; j < long(n); ++j) {
    const size_t i = size_t(j);
    const Entry& e = entries_[begin + i];
    Sequence& seq = out[i];
    seq.key = e.key;
    seq.streams.resize(streams_.size());
    try {
      Image img = transform(config_.base64 ? decode_image(encoded[i].data(), encoded[i].size(), out_channels_,
                                                          "base64 image of line " + std::to_string(e.line))
                                           : read_image_file(resolve(e.path), out_channels_),
                            begin + i);
      if (img.width != out_width_ || img.height != out_height_ || img.channels != out_channels_)
        throw IOError("is " + std::to_string(img.width) + "x" + std::to_string(img.height) + "x" +
                      std::to_string(img.channels) + " after its transforms, not the stream's " +
                      std::to_string(out_width_) + "x" + std::to_string(out_height_) + "x" +
                      std::to_string(out_channels_));
      auto& s = seq.streams[0];
      s.num_samples = 1;
      s.values_f.resize(plane * size_t(out_channels_));
      for (size_t p = 0; p < plane; ++p)  // HWC -> CHW
        for (int c = 0; c < out_channels_; ++c)
          s.values_f[size_t(c) * plane + p] = img.data[p * size_t(out_channels_) + size_t(c)];
      if (streams_.size() < 2) continue;
      auto& l = seq.streams[1];
      l.num_samples = 1;
      l.indices = {int32_t(e.label)};
      l.values_f = {1.f};
      l.offsets = {0, 1};
    } catch (const std::exception& ex) {
      std::string msg = ex.what();
      // Decoder errors already name the file; transform errors are completed here.
      errors[i] = msg.rfind("image '", 0) == 0 || msg.rfind("cannot open image", 0) == 0
                      ? config_.map_file + ":" + std::to_string(e.line) + ": " + msg
                      : config_.map_file + ":" + std::to_string(e.line) + ": image '" +
                            (config_.base64 ? "base64 image of line " + std::to_string(e.line) : e.path) + "' " + msg;
    }
  }
  for (const auto& err : errors)
    if (!err.empty()) throw IOError(err);
  return out;
}

}  // namespace cntk::io
