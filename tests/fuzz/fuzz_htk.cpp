// libFuzzer target for the HTK feature-file and MLF parsers (make fuzz-htk).
//
// The first input byte picks what the rest is: an HTK parameter file (header and frames decoded from
// memory, or written to a file that the deserializer reads through an SCP line, with a frame range and a
// context window), an MLF (parsed, and read by the deserializer, with a small label mapping or numeric
// classes), a label mapping file, or SCP lines. Any input must parse or raise cntk::IOError; nothing may
// crash, hang or read out of bounds. What reads is checked for its sizes, its label ranges (they follow
// each other from frame 0) and its classes (below the dimension).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "io/htk_features.h"
#include "io/mlf.h"

using namespace cntk;
using namespace cntk::io;

namespace {

std::string temp_path(const char* ext) {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/fuzz_htk_" + std::to_string(getpid()) + ext;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 5;
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
        for (const auto& u :
             parse_mlf(text, "fuzz.mlf", (data[0] & 4) ? states : decltype(states){}, 1 + data[0] % 7, &warnings)) {
          uint64_t frames = 0;
          for (const auto& r : u.ranges) {
            if (r.first != frames) std::abort();  // ranges must follow each other from 0
            frames += r.frames;
          }
          if (frames != u.num_frames || frames == 0) std::abort();
        }
        // The same text through the deserializer (chunks of two frames, phone boundaries on or off).
        const std::string path = temp_path(".mlf");
        write_file(path, std::string(text));
        HTKMLFStreamDef def;
        def.name = "l";
        def.mlf_files = {path};
        def.dim = 1 + data[0] % 7;
        def.phone_boundaries = (data[0] & 8) != 0;
        def.frames_per_chunk = 2;
        if (data[0] & 4) {
          const std::string list = temp_path(".list");
          write_file(list, "sil\na\nb\nsp\n");
          def.label_mapping_file = list;
        }
        HTKMLFDeserializer d(def);
        for (size_t c = 0; c < d.chunks().size(); ++c)
          for (const auto& s : d.load_chunk(c)) {
            const auto& st = s.streams[0];
            if (st.indices.size() != st.num_samples || st.offsets.size() != st.num_samples + 1 ||
                st.values_f.size() != st.num_samples)
              std::abort();
            for (int32_t i : st.indices)
              if (i < 0 || size_t(i) >= def.dim) std::abort();
          }
        break;
      }
      case 2: parse_label_mapping(text, "fuzz.list"); break;
      case 4: {
        // The bytes as a file on disk read by the deserializer through an SCP line: a frame range and a
        // context window from the mode byte, all chunks loaded (splicing, decoding, range checks).
        const std::string path = temp_path(".htk"), scp = temp_path(".scp");
        write_file(path, std::string(text));
        const uint32_t first = (data[0] >> 3) & 3, last = first + ((data[0] >> 5) & 7);
        write_file(scp, "k=" + path + "[" + std::to_string(first) + "," + std::to_string(last) + "]\nw=" + path + "\n");
        HTKFeatureStreamDef def;
        def.name = "f";
        def.scp_files = {scp};
        def.left_context = (data[0] >> 3) & 1;
        def.right_context = (data[0] >> 4) & 3;
        try {
          def.dim = read_htk_header(path).dim;
        } catch (const IOError&) {
          def.dim = 1;
        }
        def.dtype = (data[0] & 0x80) ? DataType::Double : DataType::Float;
        def.frames_per_chunk = 2;
        if (def.left_context + def.right_context == 0) def.left_context = 1;
        try {
          HTKFeatureDeserializer d(def);
          for (size_t c = 0; c < d.chunks().size(); ++c)
            for (const auto& s : d.load_chunk(c)) {
              const auto& st = s.streams[0];
              const size_t n = st.num_samples * d.streams()[0].dim();
              if ((def.dtype == DataType::Double ? st.values_d.size() : st.values_f.size()) != n) std::abort();
            }
        } catch (const ValueError&) {
          // a range past the frames, or no frame at all
        }
        break;
      }
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
