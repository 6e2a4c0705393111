// CTFDeserializer: the CNTK Text Format as a Deserializer (see deserializer.h).
//
// Construction indexes the file in one pass with the CTF parser: chunk boundaries fall on sequence
// boundaries once a chunk holds chunk_size bytes, and each chunk keeps its byte offset and line number,
// so load_chunk seeks there and parses only that chunk. The file is never held in memory whole.
#pragma once
#include <string>
#include <vector>

#include "ctf_parser.h"
#include "deserializer.h"

namespace cntk::io {

// One stream of a CTF file: its name in the minibatch source and its alias in the file.
struct CTFStreamDef {
  std::string name;
  std::string alias;
  NDShape shape;  // the sample shape; the file holds shape.total_size() values (dense) or the index bound (sparse)
  bool sparse = false;
  DataType dtype = DataType::Float;
  bool defines_mb_size = false;
};

struct CTFDeserializerOptions {
  size_t chunk_size = size_t(32) << 20;  // target bytes per chunk (CNTK's default: 32 MB)
  size_t max_errors = 0;                 // malformed lines skipped before an error (see CTFOptions)
  bool require_sparse_values = false;
};

class CTFDeserializer : public Deserializer {
 public:
  CTFDeserializer(std::string path, std::vector<CTFStreamDef> streams, CTFDeserializerOptions options = {});

  const std::vector<StreamInfo>& streams() const override { return infos_; }
  const std::vector<ChunkInfo>& chunks() override { return chunks_; }
  std::vector<Sequence> load_chunk(size_t chunk_id) override;
  std::vector<uint64_t> chunk_keys(size_t chunk_id) override;

  const std::string& path() const { return path_; }
  // Messages of malformed lines skipped while indexing (options.max_errors > 0).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  struct ChunkPos {
    uint64_t offset = 0;  // byte offset of the chunk's first line
    size_t line = 0;      // lines before it
  };
  CTFOptions parser_options(const ChunkPos& pos) const;

  std::string path_;
  std::vector<CTFStreamConfig> configs_;
  std::vector<StreamInfo> infos_;
  CTFDeserializerOptions options_;
  std::vector<ChunkInfo> chunks_;
  std::vector<ChunkPos> positions_;
  std::vector<std::vector<uint64_t>> keys_;  // per chunk
  bool file_has_ids_ = false;
  std::vector<std::string> warnings_;
};

}  // namespace cntk::io
