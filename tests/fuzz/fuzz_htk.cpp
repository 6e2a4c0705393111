// libFuzzer target for the HTK feature-file and MLF parsers (make fuzz-htk).
//
// The first input byte picks what the rest is: an HTK parameter file (header and frames decoded from
// memory), an MLF (parsed with a small label mapping, or with numeric classes), a label mapping file,
// or SCP lines. Any input must parse or raise cntk::IOError; nothing may crash, hang or read out of
// bounds. Decoded values are checked for one property: an HTK file that reads gives num_frames * dim values.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "io/htk_features.h"
#include "io/mlf.h"

using namespace cntk;
using namespace cntk::io;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 4;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (mode) {
      case 0: {
        auto f = HTKFeatureFile::from_memory(std::vector<uint8_t>(data + 1, data + size), "fuzz.htk");
        if (f.values.size() != size_t(f.header.num_frames) * f.header.dim) std::abort();
        break;
      }
      case 1: {
        static const std::unordered_map<std::string, uint32_t> states = {{"sil", 0}, {"a", 1}, {"b", 2}, {"sp", 3}};
        std::vector<std::string> warnings;
        for (const auto& u : parse_mlf(text, "fuzz.mlf", (data[0] & 4) ? states : decltype(states){}, 1 + data[0] % 7, &warnings)) {
          uint64_t frames = 0;
          for (const auto& r : u.ranges) {
            if (r.first != frames) std::abort();  // ranges must follow each other from 0
            frames += r.frames;
          }
          if (frames != u.num_frames || frames == 0) std::abort();
        }
        break;
      }
      case 2:
        parse_label_mapping(text, "fuzz.list");
        break;
      default: {
        std::string line;
        size_t n = 0;
        for (char c : text) {
          if (c != '\n') {
            line += c;
            continue;
          }
          SCPEntry e;
          if (parse_scp_line(line, "/scp", "fuzz.scp:" + std::to_string(++n), e) && e.has_range && e.first > e.last)
            std::abort();
          line.clear();
        }
        break;
      }
    }
  } catch (const IOError&) {
  }
  return 0;
}
