// libFuzzer target for the model loaders: arbitrary bytes go through the v2 Dictionary parser
// and the Function builder, or (bytes that start as CNTK's v1 files do) the v1 network reader. Malformed input must end
// in one of the engine's typed errors (IOError, NotImplementedError, ...), never in a crash, a sanitizer report or
// another exception. Run with `make fuzz-model FUZZ_SECONDS=600`.
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "cntk/serialize.h"

namespace {

// The functions of a recurrent loop hold each other (docs/architecture.md), and a fuzzed file
// can close a loop through any function (forward references are allowed for loops): drop
// every function's hold on the functions it reads, as the loop tests do for delays, so that
// LeakSanitizer reports only real leaks.
void break_loops(const cntk::FunctionPtr& f) {
  std::vector<cntk::FunctionPtr> todo{f->is_composite() ? f->root_function() : f};
  std::unordered_set<cntk::Function*> seen;
  while (!todo.empty()) {
    cntk::FunctionPtr fn = todo.back();
    todo.pop_back();
    if (!fn || !seen.insert(fn.get()).second) continue;
    if (fn->is_block()) todo.push_back(fn->block_root()->root_function());
    for (auto& in : fn->mutable_direct_inputs()) {
      if (!in.is_output()) continue;
      todo.push_back(in.owner());
      in = cntk::Variable(in.impl());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    cntk::FunctionPtr f = cntk::load_function_from_bytes(bytes, "<fuzz>");
    try {
      for (auto& v : f->outputs()) (void)v.shape();
      // What loads must save again.
      (void)cntk::save_function_to_bytes(f);
    } catch (...) {
      break_loops(f);
      throw;
    }
    break_loops(f);
  } catch (const cntk::Error&) {
  }
  return 0;
}
