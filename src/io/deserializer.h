// The interface every data deserializer implements (CTF, CBF, images, user deserializers).
//
// A deserializer exposes its data as streams (features, labels, ...) and splits it into chunks:
// runs of whole sequences that are loaded together. The minibatch source (src/io/minibatch_source.*)
// randomizes chunk order and sequences within a window of chunks, cuts minibatches, partitions them
// between workers and prefetches them; deserializers only index and load chunks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cntk/common.h"

namespace cntk::io {

// One stream a deserializer produces.
struct StreamInfo {
  std::string name;                  // the stream's name (the key of StreamDefs / the BrainScript input)
  NDShape sample_shape;              // NumPy order; dim() == product of the shape
  bool sparse = false;               // sparse samples: index < dim()
  DataType dtype = DataType::Float;  // Float or Double
  bool defines_mb_size = false;
  // One sample per sequence, repeated by the minibatch source to the length of the primary
  // deserializer's sequence with the same key (CNTK's HTK expandToUtterance, e.g. i-vectors).
  bool broadcast = false;
  size_t dim() const { return static_cast<size_t>(sample_shape.total_size()); }
};

// The samples of one stream within one sequence.
// Dense: values holds num_samples * dim numbers. Sparse: sample s has the entries
// [offsets[s], offsets[s+1]) of indices and values. Values are in values_f (Float) or values_d (Double).
struct SequenceStream {
  size_t num_samples = 0;
  std::vector<float> values_f;
  std::vector<double> values_d;
  std::vector<int32_t> indices;  // sparse only
  std::vector<size_t> offsets;   // sparse only; num_samples + 1 entries once a sample exists

  void clear() {
    num_samples = 0;
    values_f.clear();
    values_d.clear();
    indices.clear();
    offsets.clear();
  }
};

// One sequence: a key (the sequence id in the file, used to join deserializers) and one entry per stream,
// in the order of Deserializer::streams().
struct Sequence {
  uint64_t key = 0;
  std::vector<SequenceStream> streams;
  // Samples of the sequence: the longest of its streams (the minibatch size counts these).
  size_t num_samples() const {
    size_t n = 0;
    for (const auto& s : streams) n = s.num_samples > n ? s.num_samples : n;
    return n;
  }
};

struct ChunkInfo {
  size_t id = 0;  // 0 .. chunks().size()-1, in file order
  size_t num_sequences = 0;
  size_t num_samples = 0;  // sum of Sequence::num_samples() over the chunk
};

class Deserializer {
 public:
  virtual ~Deserializer() = default;
  virtual const std::vector<StreamInfo>& streams() const = 0;
  // The chunk index; built once (it may read the whole input once, without keeping it).
  virtual const std::vector<ChunkInfo>& chunks() = 0;
  // Loads one chunk's sequences, in file order. Must be safe to call from a background thread
  // (one call at a time per deserializer) and must not depend on which chunks were loaded before.
  virtual std::vector<Sequence> load_chunk(size_t chunk_id) = 0;
  // The keys of one chunk's sequences, in file order. The minibatch source uses them to join
  // deserializers by sequence key; the default loads the chunk, an index may answer without it.
  // Called by the minibatch source before it loads chunks for sweep `sweep` (0-based): deserializers with
  // random transforms (images) draw anew each sweep; the others ignore it.
  virtual void set_sweep(uint64_t /*sweep*/) {}
  // A key as error messages show it (deserializers with string keys, such as HTK's, give the name).
  virtual std::string key_name(uint64_t key) const { return std::to_string(key); }
  virtual std::vector<uint64_t> chunk_keys(size_t chunk_id) {
    std::vector<uint64_t> keys;
    for (const auto& s : load_chunk(chunk_id)) keys.push_back(s.key);
    return keys;
  }
};

using DeserializerPtr = std::shared_ptr<Deserializer>;

}  // namespace cntk::io
