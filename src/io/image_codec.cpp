#include "io/image_codec.h"

#include <jpeglib.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "cntk/common.h"

namespace cntk::io {
namespace {

// Largest image accepted: 32768 pixels a side and 2^26 pixels (e.g. 8192 x 8192) in all, so a corrupt
// header cannot make the decoder allocate gigabytes before the data runs out.
bool size_ok(uint64_t w, uint64_t h) {
  return w > 0 && h > 0 && w <= (1u << 15) && h <= (1u << 15) && w * h <= (1u << 26);
}

// libjpeg reports errors through a callback that must not return: jump back to the decoding call.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr info) {
  auto* err = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, err->message);
  std::longjmp(err->jump, 1);
}

void jpeg_quiet(j_common_ptr, int) {}  // warnings (e.g. extraneous bytes) are not printed

struct Decoded {
  int width = 0, height = 0, channels = 3;
  std::vector<uint8_t> pixels;  // height * width * channels: B, G, R or grey
  std::string error;
};

// Nothing with a destructor lives in this frame: `out` belongs to the caller, so longjmp is safe here.
// grey: decode the luma plane directly (JCS_GRAYSCALE), as OpenCV's grey JPEG reads do.
bool decode_jpeg(const uint8_t* bytes, size_t size, bool grey, Decoded* out) {
  jpeg_decompress_struct info;
  JpegError err;
  info.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_quiet;
  if (setjmp(err.jump)) {
    out->error = err.message;
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes, static_cast<unsigned long>(size));
  jpeg_read_header(&info, TRUE);
  if (!size_ok(info.image_width, info.image_height)) {
    std::snprintf(err.message, sizeof err.message, "image size %ux%u is not supported", unsigned(info.image_width),
                  unsigned(info.image_height));
    std::longjmp(err.jump, 1);
  }
  info.out_color_space = grey ? JCS_GRAYSCALE : JCS_EXT_BGR;
  jpeg_start_decompress(&info);
  if (info.output_components != (grey ? 1 : 3)) {
    std::snprintf(err.message, sizeof err.message, "unexpected %d output components", info.output_components);
    std::longjmp(err.jump, 1);
  }
  out->width = int(info.output_width);
  out->height = int(info.output_height);
  out->channels = grey ? 1 : 3;
  out->pixels.resize(size_t(out->width) * size_t(out->height) * size_t(out->channels));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = out->pixels.data() + size_t(info.output_scanline) * size_t(out->width) * size_t(out->channels);
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

bool decode_png(const uint8_t* bytes, size_t size, Decoded* out) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, bytes, size)) {
    out->error = img.message;
    return false;
  }
  img.format = PNG_FORMAT_BGRA;  // alpha is read and then dropped, as OpenCV's colour reads do
  if (!size_ok(img.width, img.height)) {
    out->error = "image size " + std::to_string(img.width) + "x" + std::to_string(img.height) + " is not supported";
    png_image_free(&img);
    return false;
  }
  std::vector<uint8_t> bgra(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, bgra.data(), 0, nullptr)) {
    out->error = img.message;
    png_image_free(&img);
    return false;
  }
  out->width = int(img.width);
  out->height = int(img.height);
  size_t n = size_t(out->width) * size_t(out->height);
  out->pixels.resize(n * 3);
  for (size_t i = 0; i < n; ++i) std::memcpy(&out->pixels[i * 3], &bgra[i * 4], 3);
  return true;
}

struct JpegWriteState {
  std::FILE* file = nullptr;
};

bool encode_jpeg(const char* path, const uint8_t* hwc, int width, int height, int channels, int quality,
                 std::string* error) {
  jpeg_compress_struct info;
  JpegError err;
  JpegWriteState* volatile state = new JpegWriteState;
  info.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  if (setjmp(err.jump)) {
    *error = err.message;
    jpeg_destroy_compress(&info);
    if (state->file) std::fclose(state->file);
    delete state;
    return false;
  }
  jpeg_create_compress(&info);
  state->file = std::fopen(path, "wb");
  if (!state->file) {
    std::snprintf(err.message, sizeof err.message, "cannot create the file");
    std::longjmp(err.jump, 1);
  }
  jpeg_stdio_dest(&info, state->file);
  info.image_width = JDIMENSION(width);
  info.image_height = JDIMENSION(height);
  info.input_components = channels;
  info.in_color_space = channels == 3 ? JCS_EXT_BGR : JCS_GRAYSCALE;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(hwc + size_t(info.next_scanline) * size_t(width) * size_t(channels));
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  bool ok = std::fclose(state->file) == 0;
  delete state;
  if (!ok) *error = "write error";
  return ok;
}

}  // namespace

Image decode_image(const uint8_t* bytes, size_t size, int channels, const std::string& name) {
  if (channels != 1 && channels != 3)
    throw ValueError("image decoding: channels must be 1 or 3, not " + std::to_string(channels));
  Decoded d;
  bool ok;
  if (size >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    ok = decode_jpeg(bytes, size, channels == 1, &d);
  } else if (size >= 8 && std::memcmp(bytes, "\x89PNG\r\n\x1a\n", 8) == 0) {
    ok = decode_png(bytes, size, &d);
  } else {
    throw IOError("image '" + name + "': not a JPEG or PNG file (unrecognized signature)");
  }
  if (!ok) throw IOError("image '" + name + "': cannot decode: " + d.error);
  Image img;
  img.width = d.width;
  img.height = d.height;
  img.channels = channels;
  size_t n = size_t(d.width) * size_t(d.height);
  img.data.resize(n * size_t(channels));
  if (d.channels == channels) {
    for (size_t i = 0; i < n * size_t(channels); ++i) img.data[i] = float(d.pixels[i]);
  } else {
    for (size_t i = 0; i < n; ++i) {  // fixed-point BT.601 luma, rounded
      unsigned b = d.pixels[i * 3], g = d.pixels[i * 3 + 1], r = d.pixels[i * 3 + 2];
      img.data[i] = float((r * 4899u + g * 9617u + b * 1868u + 8192u) >> 14);
    }
  }
  return img;
}

Image read_image_file(const std::string& path, int channels) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IOError("cannot open image '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw IOError("error reading image '" + path + "'");
  return decode_image(bytes.data(), bytes.size(), channels, path);
}

void write_png(const std::string& path, const uint8_t* hwc, int width, int height, int channels) {
  if ((channels != 1 && channels != 3) || width <= 0 || height <= 0)
    throw ValueError("write_png: need a width, a height and 1 or 3 channels");
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = png_uint_32(width);
  img.height = png_uint_32(height);
  img.format = channels == 3 ? PNG_FORMAT_BGR : PNG_FORMAT_GRAY;
  if (!png_image_write_to_file(&img, path.c_str(), 0, hwc, 0, nullptr))
    throw IOError("cannot write PNG '" + path + "': " + img.message);
}

void write_jpeg(const std::string& path, const uint8_t* hwc, int width, int height, int channels, int quality) {
  if ((channels != 1 && channels != 3) || width <= 0 || height <= 0 || quality < 1 || quality > 100)
    throw ValueError("write_jpeg: need a width, a height, 1 or 3 channels and a quality in [1, 100]");
  std::string error;
  if (!encode_jpeg(path.c_str(), hwc, width, height, channels, quality, &error))
    throw IOError("cannot write JPEG '" + path + "': " + error);
}

}  // namespace cntk::io
