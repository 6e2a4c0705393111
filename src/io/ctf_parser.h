// Streaming parser for the CNTK Text Format (CTF).
//
// The file is read in fixed-size chunks; only the unfinished tail line of a chunk is carried over,
// so memory stays bounded by the chunk size plus the longest line. See src/io/README.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cntk/common.h"
#include "deserializer.h"

namespace cntk::io {

// One input stream of a CTF file, as named after '|' on each line.
struct CTFStreamConfig {
  std::string alias;  // the name after '|'
  size_t dim = 0;     // values per dense sample; index bound for sparse
  bool sparse = false;
  DataType dtype = DataType::Float;  // Float or Double
};

struct CTFOptions {
  size_t chunk_size = size_t(1) << 20;  // bytes read from the file at a time
  // Malformed lines tolerated (each skipped and recorded in warnings()) before IOError is raised.
  size_t max_errors = 0;
  // CNTK 2.7's reader requires "index:value" in sparse streams; by default a bare index means value 1.
  bool require_sparse_values = false;
  // Where to start reading: a byte offset at the start of a line and the number of lines before it
  // (so that messages and line-number ids stay those of the whole file). Used to load one chunk.
  uint64_t start_offset = 0;
  size_t start_line = 0;
  // Whether the file's first line has a sequence id (-1: decided by the first line read). Must be
  // given when starting past the first line: it decides how lines without an id are grouped.
  int file_has_ids = -1;
};

// The samples of one stream within one sequence (see deserializer.h).
using CTFStreamData = SequenceStream;

struct CTFSequence {
  bool has_id = false;
  uint64_t id = 0;                     // the sequence id, or the line number when the file carries none
  size_t first_line = 0;               // 1-based line number of the first line of the sequence
  uint64_t offset = 0;                 // byte offset of that line in the file
  std::vector<CTFStreamData> streams;  // in the order of the configured streams
};

class CTFParser {
 public:
  CTFParser(std::string path, std::vector<CTFStreamConfig> streams, CTFOptions options = {});
  ~CTFParser();
  CTFParser(const CTFParser&) = delete;
  CTFParser& operator=(const CTFParser&) = delete;

  // Fills seq with the next sequence; false at the end of the file.
  bool next(CTFSequence& seq);

  const std::vector<CTFStreamConfig>& streams() const { return streams_; }
  // One message per skipped malformed line (only when options.max_errors > 0).
  const std::vector<std::string>& warnings() const { return warnings_; }
  size_t error_count() const { return warnings_.size(); }
  // Whether the first line read had a sequence id (false before any line was read).
  bool file_has_ids() const { return file_has_ids_; }
  const std::string& path() const { return path_; }

 private:
  bool read_line(const char*& begin, const char*& end);               // next raw line, without '\n' / '\r'
  bool parse_line(const char* p, const char* end, CTFSequence& seq);  // false: blank/comment-only
  [[noreturn]] void fail(const std::string& what) const;
  void record_error(const std::string& what);
  int find_stream(const char* name, size_t len) const;

  std::string path_;
  std::vector<CTFStreamConfig> streams_;
  CTFOptions options_;
  std::FILE* file_ = nullptr;
  bool eof_ = false;
  std::vector<char> buf_;
  size_t buf_begin_ = 0, buf_end_ = 0;
  size_t line_no_ = 0;
  uint64_t buf_file_pos_ = 0;  // file offset of buf_[0]
  uint64_t line_offset_ = 0;   // file offset of the line last returned by read_line
  std::vector<std::string> warnings_;
  std::vector<uint8_t> seen_;  // streams already given on the current line
  std::vector<size_t> mark_;   // per stream sizes before the current line, to undo it
  CTFSequence pending_;        // the sequence being assembled
  bool pending_valid_ = false;
  bool ids_decided_ = false;  // set by the first non-blank line
  bool file_has_ids_ = false;
  CTFSequence line_seq_;  // scratch: one line's samples
};

}  // namespace cntk::io
