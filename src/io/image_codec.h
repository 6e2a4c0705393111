// JPEG and PNG decoding (libjpeg-turbo, libpng) into the float images the image deserializer transforms,
// and small encoders used to write test images.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cntk::io {

// An image as rows of pixels, channels interleaved (HWC), colour channels in OpenCV's B, G, R order.
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<float> data;  // height * width * channels values
  float& at(int y, int x, int c) {
    return data[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
  float at(int y, int x, int c) const {
    return data[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
};

// Decodes a JPEG or PNG (recognized by its signature) into `channels` channels: 3 gives B, G, R (a grey
// image is repeated), 1 gives grey: a JPEG's luma plane, a PNG's 0.299 R + 0.587 G + 0.114 B rounded (as
// OpenCV's cvtColor). Alpha is dropped.
// Values are the 8-bit samples 0..255 (16-bit PNG samples are scaled to 8 bits). `name` is used in errors.
// Raises IOError on unsupported or corrupt data.
Image decode_image(const uint8_t* bytes, size_t size, int channels, const std::string& name);
Image read_image_file(const std::string& path, int channels);

// Encoders for tests and tools. `hwc` holds height * width * channels bytes, channels 1 (grey) or 3 (B, G, R).
void write_png(const std::string& path, const uint8_t* hwc, int width, int height, int channels);
void write_jpeg(const std::string& path, const uint8_t* hwc, int width, int height, int channels, int quality = 95);

}  // namespace cntk::io
