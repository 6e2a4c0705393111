// libFuzzer target for the CBF reader: any bytes either read as a CBF file or raise cntk::IOError.
// Build and run: make fuzz-cbf FUZZ_SECONDS=600 (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/cbf_deserializer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto d = cntk::io::CBFDeserializer::from_memory("fuzz-input", std::vector<uint8_t>(data, data + size));
    for (size_t c = 0; c < d->chunks().size(); ++c) d->load_chunk(c);
    // The same file with one stream selected (chunk sample counts are then recounted).
    if (!d->file_streams().empty()) {
      auto one = cntk::io::CBFDeserializer::from_memory("fuzz-input", std::vector<uint8_t>(data, data + size),
                                                        {{"x", d->file_streams().back().name}});
      one->chunks();
    }
  } catch (const cntk::IOError&) {
  }
  return 0;
}
