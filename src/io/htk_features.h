// HTK feature files and SCP lists, and CNTK's HTKFeatureDeserializer over them. See src/io/README.md.
//
// An HTK parameter file is a 12-byte header (nSamples int32, sampPeriod int32 in 100 ns units, sampSize
// int16 bytes per frame, parmKind int16) followed by nSamples frames of float32 values. HTK writes it
// big-endian; CNTK also reads little-endian files, guessing the byte order from the sample period, and so
// does this reader. Compressed files (_C) hold two float vectors A and B after the header and int16 values
// x with value (x + B) / A; they count those two vectors as four frames.
//
// An SCP line names one utterance: `key=path[start,end]` (frames start..end of an archive file, both
// included), `key=path` (the whole file) or `path` (the key is the path). The key loses its extension
// (from its last '.') as in CNTK; "..." in a path stands for the SCP file's folder.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "deserializer.h"

namespace cntk::io {

// The header of an HTK parameter file, checked against the file's size.
struct HTKHeader {
  uint32_t num_frames = 0;     // data frames (compressed files: without the four frames of A and B)
  uint32_t sample_period = 0;  // 100 ns units
  uint16_t sample_size = 0;    // bytes per frame
  uint16_t parm_kind = 0;
  bool big_endian = true;
  bool compressed = false;
  size_t dim = 0;                  // values per frame
  uint64_t data_offset = 0;        // byte offset of the first frame
  std::vector<float> scale, bias;  // compressed files: A and B
  std::string kind_name() const;   // "MFCC_E_D", "USER", ... (CNTK's names)
};

// Bytes of a header before its variable part (the GUID of FESTREAM files, A and B of compressed ones).
constexpr size_t kHTKHeaderBytes = 12;

// Parses a header from the file's first bytes. `prefix` may be shorter than the whole header (then
// `needed` is set to the bytes required and the header is incomplete; call again with that many);
// `file_size` is the size of the whole file. Raises IOError naming `path` for any inconsistency.
HTKHeader parse_htk_header(const uint8_t* prefix, size_t prefix_size, uint64_t file_size, const std::string& path,
                           size_t* needed);

// Decodes `num_frames` frames stored at `bytes` into float values (num_frames * dim).
void decode_htk_frames(const HTKHeader& h, const uint8_t* bytes, size_t num_frames, float* out);

// Reads the header of the file at `path`.
HTKHeader read_htk_header(const std::string& path);

// A whole HTK file in memory: its header and all frames decoded (used by the fuzz target and tests).
struct HTKFeatureFile {
  HTKHeader header;
  std::vector<float> values;  // header.num_frames * header.dim
  static HTKFeatureFile from_memory(const std::vector<uint8_t>& bytes, const std::string& path);
};

// One SCP entry.
struct SCPEntry {
  std::string key;   // the logical name, extension removed
  std::string path;  // the physical file
  bool has_range = false;
  uint32_t first = 0, last = 0;  // frame range, both included (when has_range)
};

// Parses one line of an SCP file (no trailing newline). `scp_dir` replaces "..." in the path; `where`
// ("file:line") prefixes error messages. Returns false for a blank line.
bool parse_scp_line(const std::string& line, const std::string& scp_dir, const std::string& where, SCPEntry& out);

// Context splicing: each output frame is frames t-left .. t+right of `frames` (num_frames x dim), frames
// outside the utterance replaced by its first or last frame (as CNTK). `out` holds num_frames * dim * (1 + left +
// right).
template <class T>
void splice_context(const float* frames, size_t num_frames, size_t dim, size_t left, size_t right, T* out);

struct HTKFeatureStreamDef {
  std::string name;
  std::vector<std::string> scp_files;
  size_t dim = 0;                              // values per frame in the files (see context)
  size_t left_context = 0, right_context = 0;  // both 0: derived from dim as CNTK does (see README)
  bool broadcast = false;  // one frame per utterance, repeated over the primary's (see StreamInfo::broadcast)
  bool defines_mb_size = false;
  size_t max_sequence_length = 65535;  // longer utterances are skipped (CNTK's max_sequence_length)
  DataType dtype = DataType::Float;
  size_t frames_per_chunk = 15 * 60 * 100;  // CNTK: 15 minutes of 10 ms frames
};

class HTKFeatureDeserializer : public Deserializer {
 public:
  explicit HTKFeatureDeserializer(HTKFeatureStreamDef def);

  const std::vector<StreamInfo>& streams() const override { return infos_; }
  const std::vector<ChunkInfo>& chunks() override { return chunks_; }
  std::vector<Sequence> load_chunk(size_t chunk_id) override;
  std::vector<uint64_t> chunk_keys(size_t chunk_id) override;
  std::string key_name(uint64_t key) const override;

  // What indexing skipped: duplicate keys (every copy dropped, as CNTK) and over-long utterances.
  const std::vector<std::string>& warnings() const { return warnings_; }
  size_t file_dim() const { return file_dim_; }
  size_t left_context() const { return left_; }
  size_t right_context() const { return right_; }

 private:
  struct Utterance {
    uint64_t key;
    uint32_t file;           // index in files_
    uint32_t first, frames;  // frames first .. first + frames - 1 of the file
  };
  struct File {
    std::string path;
    HTKHeader header;
    std::string where;  // the SCP line that first named it
  };

  HTKFeatureStreamDef def_;
  std::vector<StreamInfo> infos_;
  std::vector<File> files_;
  std::vector<ChunkInfo> chunks_;
  std::vector<std::vector<Utterance>> chunk_utts_;
  std::vector<std::pair<uint64_t, std::string>> names_;  // sorted by key
  std::vector<std::string> warnings_;
  size_t file_dim_ = 0, left_ = 0, right_ = 0;
};

}  // namespace cntk::io
