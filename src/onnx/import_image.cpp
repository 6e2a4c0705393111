// ONNX reader rules for image ops: ImageDecoder.
//
// ImageDecoder's output shape is the encoded image's size, known only once the bytes are
// decoded, so the rule decodes a known input (an initializer, a Constant node, or computed from
// them) while reading, and the node becomes a constant; bytes fed at run time are refused. JPEG
// and PNG go through the image reader's decoders (src/io/image_codec: libjpeg-turbo, libpng);
// BMP, binary PNM and uncompressed TIFF through src/io/image_uncompressed. JPEG 2000 and WebP,
// which would need libraries of their own, are refused.
#include <cstring>
#include <string>
#include <vector>

#include "io/image_codec.h"
#include "io/image_uncompressed.h"
#include "onnx/import.h"

namespace cntk::onnx_io {
namespace {

using ::onnx::TensorProto;
using Vars = std::vector<Variable>;

// The container a byte string starts with, for formats the reader does not decode.
std::string format_name(const std::vector<uint8_t>& b) {
  auto starts = [&](const char* sig, size_t n, size_t at = 0) {
    return b.size() >= at + n && std::memcmp(b.data() + at, sig, n) == 0;
  };
  if (starts("BM", 2)) return "BMP";
  if (starts("II*\0", 4) || starts("MM\0*", 4)) return "TIFF";
  if (starts("RIFF", 4) && starts("WEBP", 4, 8)) return "WebP";
  if (starts("\0\0\0\x0cjP  ", 8) || starts("\xff\x4f\xff\x51", 4)) return "JPEG 2000";
  if (b.size() >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7') return std::string("PNM P") + char(b[1]);
  return "unrecognized";
}

// ImageDecoder (opset 20): encoded bytes (uint8, 1-D) -> [height, width, channels] uint8 in
// RGB (default), BGR or Grayscale order.
Vars image_decoder(ImportContext& c) {
  const std::string pixel_format = c.attr_string("pixel_format", "RGB");
  if (pixel_format != "RGB" && pixel_format != "BGR" && pixel_format != "Grayscale")
    c.fail("pixel_format must be RGB, BGR or Grayscale, not '" + pixel_format + "'");
  if (c.input_elem_type(0) != TensorProto::UINT8) c.fail("the encoded stream must be uint8");
  const auto known = c.constant_input(0);
  if (!known)
    c.fail(
        "only encoded bytes known while reading (an initializer or a Constant) are decoded: the output's shape is "
        "the image's size");
  const NDArrayView v = known->cast(DataType::Double).contiguous();
  std::vector<uint8_t> bytes(size_t(v.numel()));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(v.data<double>()[i]);

  const bool jpeg = bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
  const bool png = bytes.size() >= 8 && std::memcmp(bytes.data(), "\x89PNG\r\n\x1a\n", 8) == 0;
  const bool uncompressed = io::is_uncompressed_image(bytes.data(), bytes.size());
  if (!jpeg && !png && !uncompressed)
    throw NotImplementedError("ONNX import: node '" + c.name() + "' (ImageDecoder): " + format_name(bytes) +
                              " data is not decoded (JPEG, PNG, BMP, binary PNM and uncompressed TIFF are)");
  io::Image img;
  try {
    // Always three channels: ONNX's Grayscale is the luma of the decoded colours (as Pillow's
    // convert("L")), not a JPEG's own luma plane, which the image reader's one-channel decode gives.
    img = uncompressed ? io::decode_uncompressed_image(bytes.data(), bytes.size(), c.name())
                       : io::decode_image(bytes.data(), bytes.size(), 3, c.name());
  } catch (const IOError& e) {
    c.fail(e.what());
  }
  const int64_t h = img.height, w = img.width;
  const int64_t ch = pixel_format == "Grayscale" ? 1 : 3;
  NDArrayView out(DataType::Float, NDShape({h, w, ch}));
  float* o = out.data<float>();
  for (int64_t p = 0; p < h * w; ++p) {
    const float* bgr = img.data.data() + p * 3;
    if (ch == 1) {
      // Pillow's ITU-R 601-2 luma in 16-bit fixed point: L = R 0.299 + G 0.587 + B 0.114, rounded.
      const auto r = uint32_t(bgr[2]), g = uint32_t(bgr[1]), b = uint32_t(bgr[0]);
      o[p] = float((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
    } else {
      for (int k = 0; k < 3; ++k) o[p * 3 + k] = pixel_format == "BGR" ? bgr[k] : bgr[2 - k];
    }
  }
  c.set_output_elem_type(0, TensorProto::UINT8);
  return {Variable::constant(out, c.name())};
}

}  // namespace

void register_import_image() { register_onnx_import("ImageDecoder", image_decoder, 20); }

}  // namespace cntk::onnx_io
