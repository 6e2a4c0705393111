// The CNTK Binary Format (CBF): the reader (a Deserializer) and the CTF -> CBF converter.
//
// Layout (all integers little-endian), as CNTK 2.7's CNTKBinaryReader reads it and its ctf2bin.py writes it:
//   u64 magic 0x636e746b5f62696e ("cntk_bin" read as a little-endian u64), u32 version (1)
//   chunk data, chunk after chunk
//   header: u64 magic, u32 number of chunks, u32 number of streams,
//           per stream: u8 encoding (0 dense, 1 sparse CSC), u32 name length, name bytes,
//                       u8 element type (0 float, 1 double), u32 sample dimension
//           chunk table, per chunk: i64 offset of the chunk, u32 sequences, u32 samples
//   i64 offset of the header (the last 8 bytes of the file)
// A chunk is: u32 samples per sequence (the longest of its streams), one per sequence; then for each
// stream in header order, for each sequence:
//   dense:  u32 samples, samples * dim values
//   sparse: u32 samples, i32 nnz, nnz values, nnz i32 indices (each < dim), samples i32 nnz counts
// See src/io/README.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cntk/common.h"
#include "deserializer.h"

namespace cntk::io {

// One stream as the file's header describes it.
struct CBFStreamHeader {
  std::string name;
  bool sparse = false;
  DataType dtype = DataType::Float;
  uint32_t dim = 0;
};

struct CBFChunkEntry {
  uint64_t offset = 0;  // start of the chunk (its per-sequence sample counts)
  uint64_t end = 0;     // one past the chunk's last byte (the next chunk or the header)
  uint32_t num_sequences = 0;
  uint32_t num_samples = 0;
};

// A stream to expose: `name` is the stream's name to the user, `field` its name in the file.
struct CBFStreamSelection {
  std::string name;
  std::string field;
};

class CBFDeserializer : public Deserializer {
 public:
  // Opens `path` and reads its header and chunk table. With no selection every stream of the file is
  // exposed under its own name, in file order; otherwise only the selected ones, renamed, in selection order.
  explicit CBFDeserializer(std::string path, std::vector<CBFStreamSelection> selection = {});
  // The same over bytes in memory (`name` is used in error messages); for tests and fuzzing.
  static std::shared_ptr<CBFDeserializer> from_memory(std::string name, std::vector<uint8_t> bytes,
                                                      std::vector<CBFStreamSelection> selection = {});
  ~CBFDeserializer() override;
  CBFDeserializer(const CBFDeserializer&) = delete;
  CBFDeserializer& operator=(const CBFDeserializer&) = delete;

  const std::vector<StreamInfo>& streams() const override { return streams_; }
  const std::vector<ChunkInfo>& chunks() override;
  std::vector<Sequence> load_chunk(size_t chunk_id) override;

  const std::vector<CBFStreamHeader>& file_streams() const { return file_streams_; }
  const std::vector<CBFChunkEntry>& chunk_table() const { return table_; }

 private:
  struct Memory {};
  CBFDeserializer(Memory, std::string name, std::vector<uint8_t> bytes, std::vector<CBFStreamSelection> selection);
  void init(std::vector<CBFStreamSelection> selection);
  void read_at(uint64_t offset, void* dst, size_t n) const;
  // Decodes one chunk's bytes into every file stream (all[s][i]: stream s, sequence i), validating them.
  std::vector<Sequence> decode(size_t chunk_id, const std::vector<uint8_t>& bytes) const;
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  int fd_ = -1;
  std::vector<uint8_t> memory_;  // the file's bytes when built from memory
  uint64_t size_ = 0;
  std::vector<CBFStreamHeader> file_streams_;
  std::vector<size_t> selected_;  // file stream index per exposed stream
  std::vector<StreamInfo> streams_;
  std::vector<CBFChunkEntry> table_;
  std::vector<uint64_t> first_key_;  // global index of each chunk's first sequence
  std::vector<ChunkInfo> chunks_;
  bool chunks_ready_ = false;
};

// One stream of the CTF input for the converter: `name` goes into the CBF header, `alias` is the name
// after '|' in the CTF file (CNTK's ctf2bin header file: name, alias, dense|sparse, dimension).
struct CBFConvertStream {
  std::string name;
  std::string alias;
  bool sparse = false;
  size_t dim = 0;
};

// Converts a CTF file into a CBF file. A chunk is closed once its data reaches `chunk_size` bytes (the
// last one may be smaller), as ctf2bin.py's --chunk_size does. Values are parsed as double and stored
// as `precision` (Float or Double); sparse entries of a sample are stored sorted by index (stable).
// Returns the number of chunks written.
size_t convert_ctf_to_cbf(const std::string& ctf_path, const std::string& cbf_path,
                          const std::vector<CBFConvertStream>& streams, size_t chunk_size = size_t(32) << 20,
                          DataType precision = DataType::Float);

}  // namespace cntk::io
