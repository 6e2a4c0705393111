// LatticeDeserializer: CNTK's lattice archives as a Deserializer (see deserializer.h), what
// CNTK 2.7's LatticeDeserializer / LatticeIndexBuilder read.
//
// The index file lists lattice TOC files, one path per line. A TOC line is `KEY=ARCHIVE[OFFSET]`:
// the lattice of utterance KEY starts at byte OFFSET of the archive file ARCHIVE; an empty ARCHIVE
// (`KEY=[OFFSET]`) continues the previous line's archive. A lattice runs to the next line's offset
// in the same archive, or to the end of the file (also when the next line restarts at offset 0).
// Each sequence's one stream carries the lattice's bytes as float32 samples of shape (1,),
// zero-padded to whole samples (decoded by LatticeSequenceWithSoftmax; see
// src/ops/lattice_format.h).
//
// Keys: the utterance name's 64-bit FNV-1a hash, the function the HTK feature and MLF
// deserializers use (src/io/string_key.h), so that lattices join their features and labels by
// name; with `numeric_keys`, names are decimal numbers used as the keys themselves (CNTK's corpus
// with numeric sequence keys), which joins a CTF file's sequence ids.
//
// Chunks: consecutive lattices of one archive up to `chunk_size` bytes (CNTK's 64 MB default).
// Every TOC line, offset and size is checked when indexing, and each lattice must start with the
// tag "LAT " when loaded; problems raise cntk::IOError naming the file (and line) and the problem.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "deserializer.h"

namespace cntk::io {

struct LatticeDeserializerOptions {
  size_t chunk_size = size_t(64) << 20;
  bool numeric_keys = false;
};

class LatticeDeserializer : public Deserializer {
 public:
  LatticeDeserializer(std::string index_path, std::string stream_name, LatticeDeserializerOptions options = {});

  const std::vector<StreamInfo>& streams() const override { return infos_; }
  const std::vector<ChunkInfo>& chunks() override { return chunks_; }
  std::vector<Sequence> load_chunk(size_t chunk_id) override;
  std::vector<uint64_t> chunk_keys(size_t chunk_id) override;

  // The key of an utterance name (string_key_id of string_key.h, as the HTK deserializers use).
  static uint64_t name_key(std::string_view name);
  // The utterance name of a key (for messages); the number itself when no lattice has that key.
  std::string key_name(uint64_t key) const override;

 private:
  struct Entry {
    std::string name;
    uint64_t key = 0;
    size_t archive = 0;
    uint64_t offset = 0, size = 0;
  };
  void read_toc(const std::string& toc_path);

  std::string index_path_;
  LatticeDeserializerOptions options_;
  std::vector<StreamInfo> infos_;
  std::vector<std::string> archives_;
  std::vector<Entry> entries_;
  std::vector<ChunkInfo> chunks_;
  std::vector<size_t> chunk_first_;  // first entry of each chunk; one extra at the end
};

}  // namespace cntk::io
