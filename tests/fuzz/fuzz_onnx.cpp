// libFuzzer target for the ONNX reader: arbitrary bytes go through load_onnx_from_bytes
// (protobuf parsing, initializers, graph inputs, every op type's rule, constant folding).
// Malformed input must end in one of the engine's typed errors, never in a crash, a sanitizer
// report or another exception. Run with `make fuzz-onnx FUZZ_SECONDS=600`.
#include <cstdint>
#include <string>

#include "cntk/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    // External data is looked up under a folder that does not exist, so the target reads no files.
    cntk::FunctionPtr f = cntk::load_onnx_from_bytes(bytes, "<fuzz>", "/nonexistent-fuzz-dir");
    for (auto& v : f->outputs()) (void)v.shape();
  } catch (const cntk::Error&) {
  }
  return 0;
}
