// libFuzzer target for the CTF parser and the CTF deserializer's chunk index (make fuzz-ctf).
//
// The first input byte picks the stream configuration (dense/sparse, dimensions, element type), the
// parser's buffer size, the deserializer's chunk size and the error tolerance; the rest is the file.
// Malformed input must end in cntk::Error (IOError/ValueError), never in a crash or a sanitizer report;
// and when the whole file parses, the deserializer's chunks must hold the same sequences as one parse.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/ctf_deserializer.h"
#include "io/ctf_parser.h"

using namespace cntk;
using namespace cntk::io;

namespace {

std::string temp_path() {
  static std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/fuzz_ctf_" + std::to_string(getpid()) + ".txt";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t cfg = data[0];
  const std::string path = temp_path();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (size > 1) std::fwrite(data + 1, 1, size - 1, f);
    std::fclose(f);
  }
  const bool a_sparse = cfg & 1, b_sparse = cfg & 2;
  const DataType b_type = cfg & 4 ? DataType::Double : DataType::Float;
  const size_t a_dim = 1 + ((cfg >> 3) & 3), b_dim = 3 + ((cfg >> 5) & 1) * 7;
  CTFOptions popt;
  popt.chunk_size = cfg & 0x40 ? 16 : 4096;
  popt.max_errors = cfg & 0x80 ? 3 : 0;
  std::vector<CTFStreamConfig> streams{{"a", a_dim, a_sparse, DataType::Float}, {"b", b_dim, b_sparse, b_type}};

  std::vector<uint64_t> keys;
  size_t samples = 0;
  bool parsed = false;
  try {
    CTFParser parser(path, streams, popt);
    CTFSequence seq;
    while (parser.next(seq)) {
      keys.push_back(seq.id);
      for (const auto& s : seq.streams) {
        samples += s.num_samples;
        if (s.num_samples && (s.values_f.size() + s.values_d.size()) == 0) std::abort();
        if (!s.offsets.empty() && s.offsets.back() != s.indices.size()) std::abort();
      }
    }
    parsed = true;
  } catch (const Error&) {
  }
  if (!parsed || keys.empty()) return 0;

  // The same file through the deserializer, in small chunks.
  CTFDeserializerOptions dopt;
  dopt.chunk_size = 1 + (cfg & 0x3F);
  dopt.max_errors = popt.max_errors;
  std::vector<CTFStreamDef> defs{{"a", "a", NDShape{int64_t(a_dim)}, a_sparse, DataType::Float, false},
                                 {"b", "b", NDShape{int64_t(b_dim)}, b_sparse, b_type, false}};
  try {
    CTFDeserializer d(path, defs, dopt);
    std::vector<uint64_t> got;
    size_t got_samples = 0;
    for (const auto& c : d.chunks())
      for (const auto& s : d.load_chunk(c.id)) {
        got.push_back(s.key);
        for (const auto& st : s.streams) got_samples += st.num_samples;
      }
    if (got != keys || got_samples != samples) std::abort();
  } catch (const Error&) {
    std::abort();  // the file parsed whole, so chunk by chunk it must too
  }
  return 0;
}
