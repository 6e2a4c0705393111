#include "io/image_uncompressed.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "cntk/common.h"

namespace cntk::io {
namespace {

// Little- or big-endian integers at an offset, bounds-checked against the buffer.
struct Reader {
  const uint8_t* b;
  size_t n;
  bool big = false;
  const std::string& name;
  [[noreturn]] void corrupt(const std::string& what) const {
    throw IOError("image '" + name + "': cannot decode: " + what);
  }
  uint32_t u(size_t at, int bytes) const {
    if (at + size_t(bytes) > n || at + size_t(bytes) < at) corrupt("truncated header");
    uint32_t v = 0;
    for (int k = 0; k < bytes; ++k) v |= uint32_t(b[at + size_t(big ? bytes - 1 - k : k)]) << (8 * k);
    return v;
  }
};

// Sizes come from untrusted headers: checked as 64-bit values, and against the bytes there are to
// hold `bytes_per_pixel` each, before anything is allocated.
Image make_image(const Reader& r, int64_t width, int64_t height, size_t bytes_per_pixel, size_t available) {
  if (width <= 0 || height <= 0 || width > (int64_t(1) << 28) || height > (int64_t(1) << 28) ||
      width * height > (int64_t(1) << 28))
    r.corrupt("bad size " + std::to_string(width) + "x" + std::to_string(height));
  if (size_t(width) * size_t(height) * bytes_per_pixel > available) r.corrupt("truncated pixel data");
  Image img;
  img.width = int(width);
  img.height = int(height);
  img.channels = 3;
  img.data.resize(size_t(width) * size_t(height) * 3);
  return img;
}

Image decode_bmp(const Reader& r) {
  const uint32_t offset = r.u(10, 4), header = r.u(14, 4);
  if (header < 40) r.corrupt("only BMP files with a BITMAPINFOHEADER or later are supported");
  const auto width = int32_t(r.u(18, 4)), height = int32_t(r.u(22, 4));
  const uint32_t bpp = r.u(28, 2), compression = r.u(30, 4);
  if ((bpp != 24 && bpp != 32) || compression != 0)
    r.corrupt("only uncompressed 24- and 32-bit BMP is supported (" + std::to_string(bpp) + " bits, compression " +
              std::to_string(compression) + ")");
  const bool top_down = height < 0;
  Image img =
      make_image(r, width, top_down ? -int64_t(height) : int64_t(height), bpp / 8, r.n - std::min<size_t>(offset, r.n));
  const size_t stride = (size_t(bpp) * size_t(img.width) + 31) / 32 * 4, step = bpp / 8;
  if (offset + stride * size_t(img.height) > r.n) r.corrupt("truncated pixel data");
  for (int y = 0; y < img.height; ++y) {
    const uint8_t* row = r.b + offset + stride * size_t(top_down ? y : img.height - 1 - y);
    for (int x = 0; x < img.width; ++x)
      for (int c = 0; c < 3; ++c) img.at(y, x, c) = row[size_t(x) * step + size_t(c)];  // stored B, G, R
  }
  return img;
}

Image decode_pnm(const Reader& r) {
  const bool grey = r.b[1] == '5';
  size_t at = 2;
  auto number = [&] {
    for (;;) {  // whitespace and comments between the header's fields
      while (at < r.n && std::isspace(r.b[at])) ++at;
      if (at < r.n && r.b[at] == '#') {
        while (at < r.n && r.b[at] != '\n') ++at;
      } else {
        break;
      }
    }
    if (at >= r.n || !std::isdigit(r.b[at])) r.corrupt("bad PNM header");
    int64_t v = 0;
    while (at < r.n && std::isdigit(r.b[at]) && v < (int64_t(1) << 30)) v = v * 10 + (r.b[at++] - '0');
    return v;
  };
  const int64_t width = number(), height = number(), maxval = number();
  if (maxval != 255) r.corrupt("only PNM with a maximum value of 255 is supported, not " + std::to_string(maxval));
  ++at;  // the single whitespace before the pixels
  const size_t channels = grey ? 1 : 3;
  Image img = make_image(r, width, height, channels, r.n - std::min(at, r.n));
  const size_t count = size_t(width) * size_t(height);
  if (at + count * channels > r.n) r.corrupt("truncated pixel data");
  for (size_t p = 0; p < count; ++p)
    for (size_t c = 0; c < 3; ++c) img.data[p * 3 + c] = r.b[at + p * channels + (grey ? 0 : 2 - c)];  // stored R, G, B
  return img;
}

Image decode_tiff(Reader r) {
  r.big = r.b[0] == 'M';
  const uint32_t ifd = r.u(4, 4);
  const uint32_t entries = r.u(ifd, 2);
  std::map<uint32_t, std::vector<uint32_t>> tags;  // the first image's tags, as integers
  for (uint32_t e = 0; e < entries; ++e) {
    const size_t at = ifd + 2 + size_t(e) * 12;
    const uint32_t tag = r.u(at, 2), type = r.u(at + 2, 2), count = r.u(at + 4, 4);
    const int size = type == 3 ? 2 : type == 4 ? 4 : type == 1 ? 1 : 0;  // SHORT, LONG, BYTE
    if (size == 0 || count > (1u << 24)) continue;                       // rationals, strings: not needed here
    const size_t base = size_t(count) * size_t(size) <= 4 ? at + 8 : r.u(at + 8, 4);
    auto& v = tags[tag];
    for (uint32_t k = 0; k < count; ++k) v.push_back(r.u(base + size_t(k) * size_t(size), size));
  }
  auto tag = [&](uint32_t t, std::optional<uint32_t> def = {}) {
    auto it = tags.find(t);
    if (it != tags.end() && !it->second.empty()) return it->second[0];
    if (!def) r.corrupt("TIFF tag " + std::to_string(t) + " is missing");
    return *def;
  };
  const uint32_t spp = tag(277, 1), photometric = tag(262);
  if (tag(259, 1) != 1 || tag(284, 1) != 1) r.corrupt("only uncompressed, chunky TIFF is supported");
  for (uint32_t bits : tags[258])
    if (bits != 8) r.corrupt("only 8-bit TIFF samples are supported");
  const bool grey = photometric == 1;
  if (!(grey && spp >= 1) && !(photometric == 2 && spp >= 3))
    r.corrupt("only grey (BlackIsZero) and RGB TIFF is supported (photometric " + std::to_string(photometric) + ")");
  Image img = make_image(r, tag(256), tag(257), spp, r.n);
  std::vector<uint8_t> pixels;
  const auto& offsets = tags[273];
  const auto& counts = tags[279];
  if (offsets.size() != counts.size()) r.corrupt("TIFF strip offsets and byte counts differ in number");
  const size_t count = size_t(img.width) * size_t(img.height);
  for (size_t s = 0; s < offsets.size() && pixels.size() < count * spp; ++s) {
    if (size_t(offsets[s]) + counts[s] > r.n) r.corrupt("truncated pixel data");
    pixels.insert(pixels.end(), r.b + offsets[s], r.b + offsets[s] + counts[s]);
  }
  if (pixels.size() < count * spp) r.corrupt("truncated pixel data");
  for (size_t p = 0; p < count; ++p)
    for (size_t c = 0; c < 3; ++c) img.data[p * 3 + c] = pixels[p * spp + (grey ? 0 : 2 - c)];  // stored R, G, B
  return img;
}

}  // namespace

bool is_uncompressed_image(const uint8_t* bytes, size_t size) {
  if (size < 4) return false;
  return (bytes[0] == 'B' && bytes[1] == 'M') || (bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6')) ||
         std::memcmp(bytes, "II*\0", 4) == 0 || std::memcmp(bytes, "MM\0*", 4) == 0;
}

Image decode_uncompressed_image(const uint8_t* bytes, size_t size, const std::string& name) {
  if (!is_uncompressed_image(bytes, size)) throw IOError("image '" + name + "': not a BMP, PNM or TIFF file");
  const Reader r{bytes, size, false, name};
  if (bytes[0] == 'B') return decode_bmp(r);
  if (bytes[0] == 'P') return decode_pnm(r);
  return decode_tiff(r);
}

}  // namespace cntk::io
