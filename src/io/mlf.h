// HTK master label files (MLF) and CNTK's HTKMLFDeserializer over them. See src/io/README.md.
//
// An MLF is `#!MLF!#` then entries: a quoted utterance name ("*/name.lab"), label lines
// `start end label [more columns]`, and a line `.`. Times are in 100 ns units (HTK) or, when an entry's
// start and end differ by less than 99999, frame numbers (CNTK reads both, as its MLF reader does).
// Labels are looked up in a label mapping file (one state name per line, its line number is the class);
// without one, the label lines must have four columns and the fourth is the class number.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "deserializer.h"

namespace cntk::io {

struct MLFRange {
  uint32_t first = 0;   // first frame
  uint32_t frames = 0;  // may be 0
  uint32_t label = 0;   // class index
};

struct MLFUtterance {
  std::string key;  // the quoted name without quotes, "*/" and extension
  std::vector<MLFRange> ranges;
  uint32_t num_frames = 0;  // end of the last range
  std::string where;        // "file:line" of its name
};

// The state list (CNTK's labelMappingFile): name -> line index among the non-empty lines.
std::unordered_map<std::string, uint32_t> read_label_mapping(const std::string& path);
std::unordered_map<std::string, uint32_t> parse_label_mapping(std::string_view text, const std::string& path);

// Parses the text of one MLF. `states` empty: four-column lines with numeric classes. Classes must be
// below `dim`. Raises IOError "file:line: ..." for anything malformed; entries with no label line are
// skipped with a warning (as CNTK).
std::vector<MLFUtterance> parse_mlf(std::string_view text, const std::string& path,
                                    const std::unordered_map<std::string, uint32_t>& states, size_t dim,
                                    std::vector<std::string>* warnings);

struct HTKMLFStreamDef {
  std::string name;
  std::vector<std::string> mlf_files;
  std::string label_mapping_file;  // empty: four-column MLF lines with class numbers
  size_t dim = 0;
  bool phone_boundaries = false;  // the first frame of each label range gets the value 2 (CNTK, for CTC)
  DataType dtype = DataType::Float;
  bool defines_mb_size = false;
  size_t frames_per_chunk = 15 * 60 * 100;
};

// Labels as one-hot sparse samples (dimension dim). The MLFs are parsed once when it is built and kept
// in memory as label ranges (a few bytes per range), so chunks load without reading files.
class HTKMLFDeserializer : public Deserializer {
 public:
  explicit HTKMLFDeserializer(HTKMLFStreamDef def);

  const std::vector<StreamInfo>& streams() const override { return infos_; }
  const std::vector<ChunkInfo>& chunks() override { return chunks_; }
  std::vector<Sequence> load_chunk(size_t chunk_id) override;
  std::vector<uint64_t> chunk_keys(size_t chunk_id) override;
  std::string key_name(uint64_t key) const override;
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  HTKMLFStreamDef def_;
  std::vector<StreamInfo> infos_;
  std::vector<MLFUtterance> utts_;
  std::vector<ChunkInfo> chunks_;
  std::vector<size_t> chunk_start_;                  // first utterance of each chunk (+ end)
  std::vector<std::pair<uint64_t, size_t>> by_key_;  // sorted: key -> utterance
  std::vector<std::string> warnings_;
};

}  // namespace cntk::io
