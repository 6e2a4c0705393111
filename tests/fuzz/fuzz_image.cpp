// libFuzzer target for image decoding (libjpeg-turbo, libpng; BMP, PNM and TIFF headers) and base64: any bytes either
// decode or raise cntk::IOError. Build and run: make fuzz-image FUZZ_SECONDS=600.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/image_codec.h"
#include "io/image_deserializer.h"
#include "io/image_uncompressed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (int channels : {1, 3}) {
    try {
      cntk::io::decode_image(data, size, channels, "fuzz-input");
    } catch (const cntk::IOError&) {
    }
  }
  try {
    cntk::io::decode_uncompressed_image(data, size, "fuzz-input");
  } catch (const cntk::IOError&) {
  }
  std::vector<uint8_t> out;
  const char* text = reinterpret_cast<const char*>(data);
  if (cntk::io::decode_base64(text, text + size, out) && out.size() * 4 > size * 3 + 3) __builtin_trap();
  return 0;
}
