// MinibatchSource: joins deserializers by sequence key, randomizes, cuts minibatches, partitions the data
// between workers and prefetches the next one on a background thread. See src/io/README.md.
#pragma once
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "cntk/dictionary.h"
#include "cntk/value.h"
#include "deserializer.h"

namespace cntk::io {

constexpr uint64_t kInfinitelyRepeat = ~uint64_t(0);         // 2**64 - 1, as CNTK
constexpr uint64_t kFullDataSweep = ~uint64_t(0) - 2;        // 2**64 - 3, as CNTK
constexpr size_t kDefaultRandomizationWindowInChunks = 128;  // CNTK's: 4 GB of 32 MB chunks

struct MinibatchSourceConfig {
  std::vector<DeserializerPtr> deserializers;  // the first is the primary: its chunks drive the order
  uint64_t max_samples = kInfinitelyRepeat;
  uint64_t max_sweeps = kInfinitelyRepeat;
  bool randomize = true;
  size_t randomization_window_in_chunks = kDefaultRandomizationWindowInChunks;
  size_t randomization_window_in_samples = 0;  // when non-zero, used instead of the window in chunks
  uint64_t randomization_seed = 0;
  bool frame_mode = false;
  size_t truncation_length = 0;  // BPTT: sequences cut in pieces of this many samples
  bool prefetch = true;
};

// One stream's part of a minibatch. `data` is [num_sequences, max_len, *sample_shape] with a mask
// (frame mode: max_len 1); undefined when this partition got no sequence.
struct StreamMinibatch {
  Value data;
  size_t num_sequences = 0;
  size_t num_samples = 0;
  bool sweep_end = false;
};

struct Minibatch {
  std::vector<StreamMinibatch> streams;  // in the order of MinibatchSource::streams(); empty at the end
  bool empty() const { return streams.empty(); }
};

// [B, 1, *shape] data as a plain batch [B, *shape] (every sequence one sample long).
Value drop_sequence_axis(const Value& v);
// Minibatch data [B, T, *shape] as a plain batch of its frames [F, *shape]: the valid steps of
// every sequence in order. A network without sequence operations reads sequence data so, each
// frame on its own.
Value frames_of(const Value& v);

class MinibatchSource {
 public:
  explicit MinibatchSource(MinibatchSourceConfig config);
  ~MinibatchSource();
  MinibatchSource(const MinibatchSource&) = delete;
  MinibatchSource& operator=(const MinibatchSource&) = delete;

  const std::vector<StreamInfo>& streams() const { return streams_; }
  // The next minibatch of about `size_in_samples` samples (sequence mode: whole sequences while the
  // size is not exceeded, at least one). With partitions (workers), partition k reads its own units of
  // the global order (see README: Partitions) up to its share of the size. Empty once max_samples /
  // max_sweeps are reached (counted over all partitions), or when partition k has no data.
  Minibatch next_minibatch(size_t size_in_samples, size_t num_partitions = 1, size_t partition_index = 0);

  // Whether neither max_samples nor max_sweeps limits the data.
  bool is_infinite() const {
    return config_.max_samples == kInfinitelyRepeat && config_.max_sweeps == kInfinitelyRepeat;
  }
  // The position after the last minibatch returned (randomization included).
  Dictionary checkpoint_state() const;
  void restore_from_checkpoint(const Dictionary& state);
  // Waits for a running prefetch and drops it.
  void close();

  // The global order of a sweep: (chunk, index) units; index is a sequence (frame mode: a sample) of the chunk.
  struct Unit {
    uint32_t chunk;
    uint32_t index;
  };
  std::vector<Unit> sweep_order(uint64_t sweep) const;
  // The chunks in the order a sweep visits them (file order without randomization).
  std::vector<uint32_t> chunk_order(uint64_t sweep) const;

 private:
  struct Slot {  // truncation: a sequence being cut into pieces
    bool active = false;
    Unit unit{0, 0};
    size_t offset = 0;
  };
  struct Cursor {
    uint64_t sweep = 0;
    size_t position = 0;         // next unit of the sweep order
    uint64_t total_samples = 0;  // samples read so far, by all partitions
    uint64_t unit_counter = 0;   // partitions without randomization: unit k belongs to partition k % n
    std::vector<Slot> slots;
  };
  struct Request {
    size_t size, partitions, index;
    bool operator==(const Request&) const = default;
  };
  struct LoadedChunk {
    std::vector<Sequence> sequences;   // all deserializers' streams, joined
    std::vector<size_t> sample_start;  // frame mode: first sample of each sequence (+ total)
    uint64_t sweep = 0;                // the sweep it was loaded for
  };

  Minibatch produce(Cursor& c, const Request& r);
  Minibatch produce_truncated(Cursor& c, const Request& r);
  const std::vector<Unit>& order_for(uint64_t sweep);
  const LoadedChunk& chunk(uint32_t id);
  void evict(const Cursor& c);
  size_t unit_length(const Unit& u);  // samples counted for the minibatch size
  bool exhausted(const Cursor& c) const;
  void join_worker();

  MinibatchSourceConfig config_;
  std::vector<StreamInfo> streams_;
  std::vector<size_t> stream_owner_;  // deserializer of each stream
  std::vector<ChunkInfo> chunks_;     // the primary's
  // Secondary deserializers: key -> (chunk, index) per deserializer.
  std::vector<std::map<uint64_t, std::pair<size_t, size_t>>> key_index_;
  int mb_size_stream_ = -1;  // the stream with defines_mb_size, if any

  std::vector<Unit> order_;
  uint64_t order_sweep_ = ~uint64_t(0);
  std::vector<size_t> last_use_;     // per chunk: last position in order_ (or SIZE_MAX when unused)
  std::vector<size_t> chunk_place_;  // per chunk: its place in the sweep's chunk order
  std::map<uint32_t, std::shared_ptr<LoadedChunk>> cache_;

  Cursor delivered_;               // after the last minibatch returned
  Request last_request_{0, 0, 0};  // of the last call (none yet: size 0)
  // Prefetch: the next minibatch, produced on worker_ for the request pending_request_.
  std::thread worker_;
  Request pending_request_{0, 0, 0};
  Minibatch pending_;
  Cursor pending_cursor_;
  std::exception_ptr pending_error_;
};

}  // namespace cntk::io
