// Decoders for the uncompressed image containers (BMP, binary PNM, baseline TIFF) that need no
// library: their pixels are stored as they are, behind a small header.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/image_codec.h"

namespace cntk::io {

// Whether `bytes` start with a BMP ("BM"), binary PNM ("P5"/"P6") or TIFF ("II*\0"/"MM\0*") signature.
bool is_uncompressed_image(const uint8_t* bytes, size_t size);

// Decodes into three channels, B, G, R (a grey image is repeated), values 0..255, as decode_image does.
// Supported: BMP with 24 or 32 bits per pixel and no compression (bottom-up or top-down rows); PNM P5
// (grey) and P6 (colour) with a maximum value of 255; TIFF with uncompressed 8-bit chunky strips, grey
// or RGB (extra samples such as alpha dropped). IOError naming `name` for anything else or corrupt data.
Image decode_uncompressed_image(const uint8_t* bytes, size_t size, const std::string& name);

}  // namespace cntk::io
