// libFuzzer target for the CNTK v2 model loader: arbitrary bytes go through the
// Dictionary parser and the Function builder. Malformed input must end in one of the
// engine's typed errors (IOError, NotImplementedError, ...), never in a crash, a
// sanitizer report or another exception. Run with `make fuzz-model FUZZ_SECONDS=600`.
#include <cstdint>
#include <string>

#include "cntk/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    cntk::FunctionPtr f = cntk::load_function_from_bytes(bytes, "<fuzz>");
    for (auto& v : f->outputs()) (void)v.shape();
    // What loads must save again.
    (void)cntk::save_function_to_bytes(f);
  } catch (const cntk::Error&) {
  }
  return 0;
}
