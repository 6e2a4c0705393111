#include "io/ctf_deserializer.h"

#include <utility>

namespace cntk::io {

CTFDeserializer::CTFDeserializer(std::string path, std::vector<CTFStreamDef> streams, CTFDeserializerOptions options)
    : path_(std::move(path)), options_(options) {
  if (streams.empty()) throw ValueError("CTFDeserializer: no streams given for '" + path_ + "'");
  if (options_.chunk_size == 0) throw ValueError("CTFDeserializer: the chunk size must be positive");
  for (const auto& s : streams) {
    if (s.name.empty()) throw ValueError("CTFDeserializer: a stream of '" + path_ + "' has no name");
    if (s.alias.empty()) throw ValueError("CTFDeserializer: stream '" + s.name + "' has no field name (alias)");
    if (s.shape.rank() == 0 || s.shape.total_size() <= 0)
      throw ValueError("CTFDeserializer: stream '" + s.name + "' needs a positive dimension, got " + s.shape.str());
    for (const auto& i : infos_)
      if (i.name == s.name) throw ValueError("CTFDeserializer: stream name '" + s.name + "' given twice");
    configs_.push_back({s.alias, size_t(s.shape.total_size()), s.sparse, s.dtype});
    infos_.push_back({s.name, s.shape, s.sparse, s.dtype, s.defines_mb_size});
  }

  // One pass over the file: a new chunk starts at the first sequence that begins chunk_size bytes or
  // more after the start of the current chunk.
  CTFParser parser(path_, configs_, parser_options(ChunkPos{}));
  CTFSequence seq;
  while (parser.next(seq)) {
    if (chunks_.empty() || seq.offset - positions_.back().offset >= options_.chunk_size) {
      chunks_.push_back(ChunkInfo{chunks_.size(), 0, 0});
      positions_.push_back(ChunkPos{seq.offset, seq.first_line - 1});
      keys_.emplace_back();
    }
    size_t n = 0;
    for (const auto& s : seq.streams) n = s.num_samples > n ? s.num_samples : n;
    chunks_.back().num_sequences += 1;
    chunks_.back().num_samples += n;
    keys_.back().push_back(seq.id);
  }
  file_has_ids_ = parser.file_has_ids();
  warnings_ = parser.warnings();
  if (chunks_.empty()) throw IOError("CTF file '" + path_ + "' holds no sequence of the configured streams");
}

CTFOptions CTFDeserializer::parser_options(const ChunkPos& pos) const {
  CTFOptions o;
  o.max_errors = options_.max_errors;
  o.require_sparse_values = options_.require_sparse_values;
  o.start_offset = pos.offset;
  o.start_line = pos.line;
  o.file_has_ids = pos.offset == 0 ? -1 : int(file_has_ids_);
  return o;
}

std::vector<Sequence> CTFDeserializer::load_chunk(size_t chunk_id) {
  if (chunk_id >= chunks_.size())
    throw ValueError("CTFDeserializer: chunk " + std::to_string(chunk_id) + " out of range (the file '" + path_ +
                     "' has " + std::to_string(chunks_.size()) + ")");
  CTFParser parser(path_, configs_, parser_options(positions_[chunk_id]));
  const size_t n = chunks_[chunk_id].num_sequences;
  std::vector<Sequence> out;
  out.reserve(n);
  CTFSequence seq;
  while (out.size() < n && parser.next(seq)) {
    Sequence s;
    s.key = seq.id;
    s.streams = std::move(seq.streams);
    seq.streams.clear();
    out.push_back(std::move(s));
  }
  if (out.size() != n || out.back().key != keys_[chunk_id].back())
    throw IOError("CTF file '" + path_ + "' changed since it was indexed (chunk " + std::to_string(chunk_id) + ")");
  return out;
}

std::vector<uint64_t> CTFDeserializer::chunk_keys(size_t chunk_id) {
  if (chunk_id >= chunks_.size())
    throw ValueError("CTFDeserializer: chunk " + std::to_string(chunk_id) + " out of range");
  return keys_[chunk_id];
}

}  // namespace cntk::io
