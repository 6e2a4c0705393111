#include "io/minibatch_source.h"

#include "cntk/profiler.h"
#include "core/rng.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>

namespace cntk::io {
namespace {

constexpr size_t kUnused = ~size_t(0);

// A draw in [0, n) from CNTK's generator (rng::Engine, specified bit for bit), as CNTK's randomizers draw.
inline size_t draw(rng::Engine& rng, size_t n) { return size_t(rng() % uint64_t(n)); }

// One sequence's contribution to a minibatch: the samples [begin, end) of each of its streams
// (clipped to the stream's length); `begins` is false for a continued (truncated) sequence.
struct Piece {
  const Sequence* seq;
  size_t begin, end;
  bool begins;
};

template <class T>
const std::vector<T>& values_of(const SequenceStream& s);
template <>
const std::vector<float>& values_of<float>(const SequenceStream& s) {
  return s.values_f;
}
template <>
const std::vector<double>& values_of<double>(const SequenceStream& s) {
  return s.values_d;
}

// Packs one stream of the pieces into [B, T, *shape] with a mask.
template <class T>
StreamMinibatch pack(const StreamInfo& info, size_t stream, const std::vector<Piece>& pieces) {
  StreamMinibatch out;
  const int64_t B = int64_t(pieces.size());
  out.num_sequences = pieces.size();
  if (B == 0) return out;
  std::vector<int64_t> lens(pieces.size()), first(pieces.size());
  int64_t maxlen = 1;
  for (size_t b = 0; b < pieces.size(); ++b) {
    const SequenceStream& s = pieces[b].seq->streams[stream];
    size_t lo = std::min(pieces[b].begin, s.num_samples), hi = std::min(pieces[b].end, s.num_samples);
    first[b] = int64_t(lo);
    lens[b] = int64_t(hi - lo);
    maxlen = std::max(maxlen, lens[b]);
    out.num_samples += hi - lo;
  }
  const NDShape shape = NDShape{B, maxlen}.concat(info.sample_shape);
  const int64_t dim = int64_t(info.dim());
  NDArrayView data;
  if (!info.sparse) {
    data = NDArrayView::zeros(info.dtype, shape);
    T* dst = data.data<T>();
    for (size_t b = 0; b < pieces.size(); ++b) {
      const auto& src = values_of<T>(pieces[b].seq->streams[stream]);
      if (lens[b])
        std::memcpy(dst + int64_t(b) * maxlen * dim, src.data() + first[b] * dim, size_t(lens[b] * dim) * sizeof(T));
    }
  } else {
    // Rows of the last axis: a sample of shape [..., D] is prod(leading) rows of D columns.
    const int64_t D = info.sample_shape[info.sample_shape.rank() - 1];
    const int64_t rows = dim / D;
    std::vector<int64_t> starts{0}, indices;
    std::vector<T> values;
    std::vector<std::pair<int64_t, T>> sample;
    for (size_t b = 0; b < pieces.size(); ++b) {
      const SequenceStream& s = pieces[b].seq->streams[stream];
      const auto& vals = values_of<T>(s);
      for (int64_t t = 0; t < maxlen; ++t) {
        sample.clear();
        if (t < lens[b]) {
          size_t smp = size_t(first[b] + t);
          for (size_t k = s.offsets[smp]; k < s.offsets[smp + 1]; ++k) sample.emplace_back(s.indices[k], vals[k]);
          std::stable_sort(sample.begin(), sample.end(),
                           [](const auto& x, const auto& y) { return x.first < y.first; });
        }
        size_t k = 0;
        for (int64_t r = 0; r < rows; ++r) {
          for (; k < sample.size() && sample[k].first < (r + 1) * D; ++k) {
            indices.push_back(sample[k].first - r * D);
            values.push_back(sample[k].second);
          }
          starts.push_back(int64_t(indices.size()));
        }
      }
    }
    data = NDArrayView::sparse(info.dtype, shape, std::move(starts), std::move(indices), values.data());
  }
  auto mask = std::make_shared<NDMask>(NDMask::from_lengths(lens, maxlen));
  for (size_t b = 0; b < pieces.size(); ++b)
    if (!pieces[b].begins && lens[b] > 0) mask->set(int64_t(b), 0, MaskKind::Valid);
  out.data = Value(std::move(data), std::move(mask));
  return out;
}

// A broadcast stream's single sample repeated n times (see StreamInfo::broadcast); `primary` names the key.
void broadcast_sample(SequenceStream& st, size_t n, const StreamInfo& info, const Deserializer& primary, uint64_t key) {
  if (st.num_samples != 1)
    throw IOError("MinibatchSource: stream '" + info.name + "' is broadcast over sequences, but sequence " +
                  primary.key_name(key) + " has " + std::to_string(st.num_samples) + " samples in it (one expected)");
  auto repeat = [n](auto& v) {
    const size_t m = v.size();
    v.resize(m * n);
    for (size_t i = 1; i < n; ++i) std::copy(v.begin(), v.begin() + long(m), v.begin() + long(i * m));
  };
  if (info.sparse) {
    const size_t nnz = st.indices.size();
    repeat(st.indices);
    st.offsets.resize(n + 1);
    for (size_t i = 0; i <= n; ++i) st.offsets[i] = i * nnz;
  }
  repeat(st.values_f);
  repeat(st.values_d);
  st.num_samples = n;
}

}  // namespace

Value drop_sequence_axis(const Value& v) {
  const NDShape& s = v.shape();
  if (s.rank() < 2 || s[1] != 1)
    throw ValueError("minibatch data of shape " + s.str() + " has sequences longer than one sample");
  if (v.mask() && v.mask()->masked_count() != 0)
    throw ValueError("minibatch data has empty sequences and cannot be a plain batch");
  NDShape batch = NDShape{s[0]}.concat(s.sub(2));
  const NDArrayView& d = v.data();
  if (!d.is_sparse()) return Value(d.reshape(batch));
  const SparseCSC& sp = d.sparse_data();
  return Value(NDArrayView::sparse(d.dtype(), batch, sp.starts, sp.indices, sp.values ? sp.values->data() : nullptr));
}

Value frames_of(const Value& v) {
  const NDShape& s = v.shape();
  if (s.rank() < 2) throw ValueError("minibatch data of shape " + s.str() + " has no sequence axis");
  const NDMask* mask = v.mask().get();
  if (s[1] == 1 && !(mask && mask->masked_count() != 0)) return drop_sequence_axis(v);
  const int64_t batch = s[0], steps = s[1];
  std::vector<int64_t> frames;  // the valid (sequence, step) entries, as b * steps + t
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t)
      if (!mask || mask->at(b, t) != MaskKind::Invalid) frames.push_back(b * steps + t);
  const NDShape sample = s.sub(2), out_shape = NDShape{int64_t(frames.size())}.concat(sample);
  const NDArrayView& d = v.data();
  if (!d.is_sparse()) {
    const NDArrayView src = d.contiguous();
    NDArrayView out(d.dtype(), out_shape);
    const size_t bytes = size_t(sample.total_size()) * element_size(d.dtype());
    const char* from = static_cast<const char*>(src.raw_data());
    char* to = static_cast<char*>(out.raw_data());
    for (size_t i = 0; i < frames.size(); ++i) std::memcpy(to + i * bytes, from + size_t(frames[i]) * bytes, bytes);
    return Value(out);
  }
  // Compressed rows of the [outer, D] matrix: each frame owns `rows` consecutive rows.
  const SparseCSC& sp = d.sparse_data();
  const int64_t rows = (int64_t(sp.starts.size()) - 1) / (batch * steps);
  const size_t item = element_size(d.dtype());
  const char* values = sp.values ? static_cast<const char*>(sp.values->data()) : nullptr;
  std::vector<int64_t> starts{0}, indices;
  std::vector<char> kept;
  for (int64_t f : frames)
    for (int64_t r = f * rows; r < (f + 1) * rows; ++r) {
      for (int64_t k = sp.starts[size_t(r)]; k < sp.starts[size_t(r) + 1]; ++k) {
        indices.push_back(sp.indices[size_t(k)]);
        if (values) kept.insert(kept.end(), values + size_t(k) * item, values + size_t(k + 1) * item);
      }
      starts.push_back(int64_t(indices.size()));
    }
  return Value(
      NDArrayView::sparse(d.dtype(), out_shape, std::move(starts), std::move(indices), values ? kept.data() : nullptr));
}

MinibatchSource::MinibatchSource(MinibatchSourceConfig config) : config_(std::move(config)) {
  if (config_.deserializers.empty()) throw ValueError("MinibatchSource: give at least one deserializer");
  if (config_.frame_mode && config_.truncation_length > 0)
    throw ValueError("MinibatchSource: frame_mode cannot be combined with truncation_length (BPTT)");
  if (config_.max_samples == kFullDataSweep) {  // CNTK's FULL_DATA_SWEEP: exactly one pass over the data
    config_.max_samples = kInfinitelyRepeat;
    config_.max_sweeps = std::min<uint64_t>(config_.max_sweeps, 1);
  } else if (config_.max_samples != kInfinitelyRepeat && config_.max_sweeps != kInfinitelyRepeat) {
    throw ValueError("MinibatchSource: max_samples and max_sweeps are mutually exclusive; give only one");
  }
  if (config_.randomize && config_.randomization_window_in_chunks == 0 && config_.randomization_window_in_samples == 0)
    config_.randomize = false;
  for (size_t d = 0; d < config_.deserializers.size(); ++d) {
    if (!config_.deserializers[d]) throw ValueError("MinibatchSource: deserializer " + std::to_string(d) + " is null");
    for (const auto& s : config_.deserializers[d]->streams()) {
      for (const auto& t : streams_)
        if (t.name == s.name)
          throw ValueError("MinibatchSource: two deserializers give a stream named '" + s.name + "'");
      if (s.broadcast && d == 0)
        throw ValueError("MinibatchSource: stream '" + s.name +
                         "' is broadcast to the primary deserializer's sequences, "
                         "so its deserializer cannot be the first (primary) one");
      if (s.defines_mb_size && mb_size_stream_ >= 0)
        throw ValueError("MinibatchSource: streams '" + streams_[size_t(mb_size_stream_)].name + "' and '" + s.name +
                         "' both define the minibatch size (defines_mb_size); at most one may");
      if (s.defines_mb_size) mb_size_stream_ = int(streams_.size());
      streams_.push_back(s);
      stream_owner_.push_back(d);
    }
  }
  if (streams_.empty()) throw ValueError("MinibatchSource: the deserializers give no stream");
  chunks_ = config_.deserializers[0]->chunks();
  if (chunks_.empty()) throw ValueError("MinibatchSource: the primary deserializer has no data");
  size_t units = 0;
  for (const auto& c : chunks_) {
    if ((config_.frame_mode ? c.num_samples : c.num_sequences) >= (size_t(1) << 32))
      throw ValueError("MinibatchSource: a chunk holds too many sequences; use smaller chunks");
    units += config_.frame_mode ? c.num_samples : c.num_sequences;
  }
  if (units == 0) throw ValueError("MinibatchSource: the primary deserializer has no data");
  // Secondary deserializers are joined by sequence key.
  key_index_.resize(config_.deserializers.size());
  for (size_t d = 1; d < config_.deserializers.size(); ++d) {
    auto& dz = *config_.deserializers[d];
    size_t n = dz.chunks().size();
    for (size_t c = 0; c < n; ++c) {
      auto keys = dz.chunk_keys(c);
      for (size_t i = 0; i < keys.size(); ++i) key_index_[d].emplace(keys[i], std::make_pair(c, i));
    }
  }
}

MinibatchSource::~MinibatchSource() { join_worker(); }

void MinibatchSource::join_worker() {
  if (worker_.joinable()) worker_.join();
}

void MinibatchSource::close() {
  join_worker();
  pending_ = {};
  pending_error_ = nullptr;
}

std::vector<uint32_t> MinibatchSource::chunk_order(uint64_t sweep) const {
  std::vector<uint32_t> order(chunks_.size());
  std::iota(order.begin(), order.end(), 0u);
  if (!config_.randomize) return order;
  // CNTK's chunk shuffle, seeded anew each sweep: every place swaps with a place drawn from the whole
  // range (not Fisher-Yates), so that the same seed gives CNTK's order.
  rng::Engine rng(config_.randomization_seed + sweep);
  for (size_t i = 0; i < order.size(); ++i) std::swap(order[i], order[draw(rng, order.size())]);
  return order;
}

std::vector<MinibatchSource::Unit> MinibatchSource::sweep_order(uint64_t sweep) const {
  auto units = [&](size_t c) { return config_.frame_mode ? chunks_[c].num_samples : chunks_[c].num_sequences; };
  const std::vector<uint32_t> corder = chunk_order(sweep);
  const size_t n = corder.size();
  std::vector<Unit> out;
  // The chunks' units laid out in chunk order: place p holds units [start[p], start[p + 1]).
  std::vector<size_t> start(n + 1, 0), sample_start(n + 1, 0);
  for (size_t p = 0; p < n; ++p) {
    start[p + 1] = start[p] + units(corder[p]);
    sample_start[p + 1] = sample_start[p] + chunks_[corder[p]].num_samples;
  }
  out.reserve(start[n]);
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < units(corder[p]); ++i) out.push_back({corder[p], uint32_t(i)});
  if (!config_.randomize) return out;
  // Each place's randomization window [begin[p], end[p]) of places, as CNTK computes it: centred on p,
  // `randomization_window_in_chunks` wide (moved inside the range at the ends), or spanning about half
  // of `randomization_window_in_samples` samples on each side.
  std::vector<size_t> begin(n), end(n);
  if (const size_t ws = config_.randomization_window_in_samples) {
    const size_t half = ws / 2;
    for (size_t p = 0; p < n; ++p) {
      size_t b = p ? begin[p - 1] : 0, e = p ? end[p - 1] : 1;
      while (sample_start[p] - sample_start[b] > half) ++b;
      b = std::min(b, p);
      e = std::max(e, p + 1);
      while (e < n && sample_start[e + 1] - sample_start[p] < half) ++e;
      begin[p] = b;
      end[p] = e;
    }
  } else {
    const size_t half = config_.randomization_window_in_chunks / 2;
    const size_t width = std::max<size_t>(config_.randomization_window_in_chunks, 1);
    for (size_t p = 0; p < n; ++p) {
      begin[p] = p > half ? p - half : 0;
      end[p] = begin[p] + width;
      if (end[p] > n) {
        end[p] = n;
        begin[p] = n > width ? n - width : 0;
      }
    }
  }
  // CNTK's sequence shuffle: position t (in place pt) swaps with a position drawn from pt's window,
  // redrawn until each unit lands in a place whose window holds the unit's own chunk.
  std::vector<size_t> place_of_chunk(chunks_.size());
  for (size_t p = 0; p < n; ++p) place_of_chunk[corder[p]] = p;
  auto place_at = [&](size_t t) { return size_t(std::upper_bound(start.begin(), start.end(), t) - start.begin()) - 1; };
  auto fits = [&](size_t place, const Unit& u) {
    size_t home = place_of_chunk[u.chunk];
    return begin[place] <= home && home < end[place];
  };
  rng::Engine rng(config_.randomization_seed + sweep);
  for (size_t t = 0, pt = 0; t < out.size(); ++t) {
    while (start[pt + 1] <= t) ++pt;
    const size_t lo = start[begin[pt]], hi = start[end[pt]];
    for (;;) {
      const size_t j = lo + draw(rng, hi - lo);
      if (!fits(pt, out[j]) || !fits(place_at(j), out[t])) continue;
      std::swap(out[t], out[j]);
      break;
    }
  }
  return out;
}

const std::vector<MinibatchSource::Unit>& MinibatchSource::order_for(uint64_t sweep) {
  if (order_sweep_ != sweep) {
    order_ = sweep_order(sweep);
    order_sweep_ = sweep;
    last_use_.assign(chunks_.size(), kUnused);
    for (size_t p = 0; p < order_.size(); ++p) last_use_[order_[p].chunk] = p;
    const auto corder = chunk_order(sweep);
    chunk_place_.assign(chunks_.size(), 0);
    for (size_t p = 0; p < corder.size(); ++p) chunk_place_[corder[p]] = p;
  }
  return order_;
}

const MinibatchSource::LoadedChunk& MinibatchSource::chunk(uint32_t id) {
  // A chunk is loaded once per sweep: deserializers may give other data in another sweep (random
  // image transforms), and a minibatch that crosses sweeps may hold a chunk of each.
  auto it = cache_.find(id);
  if (it != cache_.end() && it->second->sweep == order_sweep_) return *it->second;
  auto lc = std::make_shared<LoadedChunk>();
  lc->sweep = order_sweep_;
  for (auto& d : config_.deserializers) d->set_sweep(order_sweep_);
  lc->sequences = config_.deserializers[0]->load_chunk(id);
  auto& seqs = lc->sequences;
  if (seqs.size() != chunks_[id].num_sequences)
    throw IOError("MinibatchSource: chunk " + std::to_string(id) + " has " + std::to_string(seqs.size()) +
                  " sequences, its index said " + std::to_string(chunks_[id].num_sequences));
  const size_t primary_streams = config_.deserializers[0]->streams().size();
  for (auto& s : seqs)
    if (s.streams.size() != primary_streams)
      throw IOError("MinibatchSource: the primary deserializer gave a sequence with the wrong number of streams");
  // Join the secondary deserializers' streams by sequence key.
  for (size_t d = 1; d < config_.deserializers.size(); ++d) {
    auto& dz = *config_.deserializers[d];
    std::map<size_t, std::vector<Sequence>> loaded;
    for (auto& s : seqs) {
      auto k = key_index_[d].find(s.key);
      if (k == key_index_[d].end())
        throw IOError("MinibatchSource: sequence " + config_.deserializers[0]->key_name(s.key) +
                      " of the primary deserializer has no data in deserializer " + std::to_string(d) +
                      " (deserializers are joined by sequence key)");
      auto [c, i] = k->second;
      auto lit = loaded.find(c);
      if (lit == loaded.end()) lit = loaded.emplace(c, dz.load_chunk(c)).first;
      if (i >= lit->second.size())
        throw IOError("MinibatchSource: deserializer " + std::to_string(d) + " lost a sequence");
      for (auto& st : lit->second[i].streams) s.streams.push_back(st);
    }
  }
  for (auto& s : seqs)
    if (s.streams.size() != streams_.size())
      throw IOError("MinibatchSource: a deserializer gave a sequence with the wrong number of streams");
  for (size_t k = primary_streams; k < streams_.size(); ++k)
    if (streams_[k].broadcast)
      for (auto& s : seqs)
        broadcast_sample(s.streams[k], s.streams[0].num_samples, streams_[k], *config_.deserializers[0], s.key);
  if (config_.frame_mode) {
    lc->sample_start.reserve(seqs.size() + 1);
    lc->sample_start.push_back(0);
    for (const auto& s : seqs) {
      size_t n = s.num_samples();
      for (size_t k = 0; k < s.streams.size(); ++k)
        if (s.streams[k].num_samples != n)
          throw ValueError(
              "MinibatchSource: frame mode needs every stream of a sequence to have the same number of "
              "samples; sequence " +
              config_.deserializers[0]->key_name(s.key) + " has " + std::to_string(s.streams[k].num_samples) +
              " in stream '" + streams_[k].name + "' and " + std::to_string(n) + " in another");
      lc->sample_start.push_back(lc->sample_start.back() + n);
    }
    if (lc->sample_start.back() != chunks_[id].num_samples)
      throw IOError("MinibatchSource: chunk " + std::to_string(id) + " has " + std::to_string(lc->sample_start.back()) +
                    " samples, its index said " + std::to_string(chunks_[id].num_samples));
  }
  return *(cache_[id] = std::move(lc));
}

void MinibatchSource::evict(const Cursor& c) {
  for (auto it = cache_.begin(); it != cache_.end();) {
    uint32_t id = it->first;
    bool keep = order_sweep_ == c.sweep && last_use_[id] != kUnused && last_use_[id] >= c.position;
    for (const auto& s : c.slots) keep = keep || (s.active && s.unit.chunk == id);
    it = keep ? std::next(it) : cache_.erase(it);
  }
}

size_t MinibatchSource::unit_length(const Unit& u) {
  if (config_.frame_mode) return 1;
  const Sequence& s = chunk(u.chunk).sequences[u.index];
  return mb_size_stream_ >= 0 ? s.streams[size_t(mb_size_stream_)].num_samples : s.num_samples();
}

bool MinibatchSource::exhausted(const Cursor& c) const {
  return c.sweep >= config_.max_sweeps || c.total_samples >= config_.max_samples;
}

namespace {

Minibatch assemble(const std::vector<StreamInfo>& streams, const std::vector<Piece>& all, size_t partitions,
                   size_t index, bool sweep_end) {
  std::vector<Piece> mine;
  for (size_t i = index; i < all.size(); i += partitions) mine.push_back(all[i]);
  Minibatch mb;
  for (size_t k = 0; k < streams.size(); ++k) {
    StreamMinibatch s =
        streams[k].dtype == DataType::Double ? pack<double>(streams[k], k, mine) : pack<float>(streams[k], k, mine);
    s.sweep_end = sweep_end;
    mb.streams.push_back(std::move(s));
  }
  return mb;
}

}  // namespace

Minibatch MinibatchSource::produce(Cursor& c, const Request& r) {
  if (config_.truncation_length > 0) return produce_truncated(c, r);
  if (exhausted(c)) return {};
  // Partitions follow CNTK's readers: all partitions walk the same global order, and partition k of n
  // takes its own units of it, up to its share of the size (the remainder goes to the first ones).
  // Without randomization its units are every n-th one read (counted from the position of the last
  // change of request or checkpoint restore, where CNTK's reader restarts its count); with
  // randomization, the units of every n-th chunk of the sweep's chunk order (chunks stay whole on a
  // worker). The units of the others are skipped but count towards max_samples.
  const size_t n = r.partitions;
  if (n > 1 && config_.randomize && r.index >= chunks_.size()) return {};  // no chunk of its own: no data
  const size_t share = n > 1 ? std::max<size_t>(1, r.size / n + (r.size % n > r.index ? 1 : 0)) : r.size;
  // As CNTK's reader, a minibatch runs on across sweep boundaries (the data is read as one endless
  // stream cut by max_samples / max_sweeps); `sweep_end` says that it read past the end of a sweep.
  std::vector<std::pair<Unit, std::shared_ptr<LoadedChunk>>> taken;  // the chunks stay alive while packing
  size_t mb = 0, read = 0, skipped = 0;
  bool sweep_end = false;
  while (mb < share && c.sweep < config_.max_sweeps && c.total_samples + read < config_.max_samples) {
    const auto& order = order_for(c.sweep);
    const Unit u = order[c.position];
    const bool mine = n == 1 || (config_.randomize ? chunk_place_[u.chunk] : c.unit_counter) % n == r.index;
    const size_t len = unit_length(u);
    if (!taken.empty()) {
      if (mine && mb + len > share) break;
      // A single reader's minibatch stops short of max_samples (its first unit may pass it); with
      // partitions, as in CNTK, the walk goes on while the samples read are below it.
      if (n == 1 && c.total_samples + read + len > config_.max_samples) break;
    }
    if (mine) {
      chunk(u.chunk);
      taken.emplace_back(u, cache_.at(u.chunk));
      mb += len;
    } else if (taken.empty() && ++skipped > order.size()) {
      break;  // a whole sweep without a unit of this partition (its chunks are empty)
    }
    read += len;
    ++c.unit_counter;
    if (++c.position == order.size()) {
      sweep_end = true;
      ++c.sweep;
      c.position = 0;
    }
  }
  c.total_samples += read;
  if (taken.empty()) {  // the data ran out before a unit of this partition
    evict(c);
    return {};
  }
  std::vector<Piece> pieces;
  pieces.reserve(taken.size());
  for (const auto& [u, held] : taken) {
    const LoadedChunk& lc = *held;
    if (config_.frame_mode) {
      auto it = std::upper_bound(lc.sample_start.begin(), lc.sample_start.end(), size_t(u.index));
      size_t s = size_t(it - lc.sample_start.begin()) - 1;
      size_t f = u.index - lc.sample_start[s];
      pieces.push_back({&lc.sequences[s], f, f + 1, true});
    } else {
      pieces.push_back({&lc.sequences[u.index], 0, ~size_t(0), true});
    }
  }
  evict(c);
  return assemble(streams_, pieces, 1, 0, sweep_end);
}

Minibatch MinibatchSource::produce_truncated(Cursor& c, const Request& r) {
  const size_t L = config_.truncation_length;
  c.slots.resize(std::max<size_t>(1, r.size / L));
  bool sweep_end = false;
  size_t samples = 0;
  std::vector<std::shared_ptr<LoadedChunk>> hold;
  std::vector<Piece> pieces;
  for (auto& slot : c.slots) {
    if (!slot.active && !exhausted(c) && c.total_samples + samples < config_.max_samples) {
      const auto& order = order_for(c.sweep);
      slot = Slot{true, order[c.position], 0};
      if (++c.position == order.size()) {
        sweep_end = true;
        ++c.sweep;
        c.position = 0;
      }
    }
    if (!slot.active) {
      // A slot whose sequence ended when the data had run out stays an empty gap, so
      // the sequences after it keep their batch positions: a continued piece must sit
      // where its previous piece was (the delays carry state by position).
      pieces.push_back({nullptr, 0, 0, false});
      continue;
    }
    chunk(slot.unit.chunk);
    hold.push_back(cache_.at(slot.unit.chunk));
    const Sequence& seq = hold.back()->sequences[slot.unit.index];
    const size_t len = seq.num_samples();
    const size_t end = std::min(len, slot.offset + L);
    pieces.push_back({&seq, slot.offset, end, slot.offset == 0});
    samples += end - std::min(slot.offset, end);
    slot.offset = end;
    if (slot.offset >= len) slot.active = false;
  }
  while (!pieces.empty() && !pieces.back().seq) pieces.pop_back();  // trailing gaps hold nothing
  if (pieces.empty()) return {};
  for (auto& p : pieces)
    if (!p.seq) p = {pieces.back().seq, ~size_t(0), ~size_t(0), false};  // zero samples of any sequence
  c.total_samples += samples;
  evict(c);
  return assemble(streams_, pieces, r.partitions, r.index, sweep_end);
}

Minibatch MinibatchSource::next_minibatch(size_t size_in_samples, size_t num_partitions, size_t partition_index) {
  if (size_in_samples == 0) throw ValueError("MinibatchSource.next_minibatch: the minibatch size must be positive");
  if (num_partitions == 0 || partition_index >= num_partitions)
    throw ValueError("MinibatchSource.next_minibatch: partition_index " + std::to_string(partition_index) +
                     " is out of range for " + std::to_string(num_partitions) + " partitions");
  const Request r{size_in_samples, num_partitions, partition_index};
  // A new request (size or partition) restarts the partitions' unit count at the current position.
  if (!(r == last_request_)) delivered_.unit_counter = delivered_.position;
  last_request_ = r;
  Minibatch out;
  bool have = false;
  if (worker_.joinable()) {
    worker_.join();
    if (pending_request_ == r) {
      if (pending_error_) {
        auto e = pending_error_;
        pending_error_ = nullptr;
        std::rethrow_exception(e);
      }
      out = std::move(pending_);
      delivered_ = pending_cursor_;
      have = true;
    }
    pending_ = {};
    pending_error_ = nullptr;
  }
  if (!have) {
    Cursor c = delivered_;
    out = produce(c, r);
    delivered_ = c;
  }
  if (config_.prefetch && !out.empty()) {
    pending_request_ = r;
    pending_cursor_ = delivered_;
    worker_ = std::thread([this] {
      CNTK_PROFILE_PHASE(Prefetch);
      try {
        pending_ = produce(pending_cursor_, pending_request_);
      } catch (...) {
        pending_error_ = std::current_exception();
      }
    });
  }
  return out;
}

Dictionary MinibatchSource::checkpoint_state() const {
  Dictionary d;
  d["sweep"] = int64_t(delivered_.sweep);
  d["position"] = int64_t(delivered_.position);
  d["total_samples"] = int64_t(delivered_.total_samples);
  DictValue::List slots;
  for (const auto& s : delivered_.slots) {
    slots.push_back(DictValue::List{DictValue(s.active), DictValue(int64_t(s.unit.chunk)),
                                    DictValue(int64_t(s.unit.index)), DictValue(int64_t(s.offset))});
  }
  d["slots"] = std::move(slots);
  d["num_chunks"] = int64_t(chunks_.size());
  d["randomization_seed"] = int64_t(config_.randomization_seed);
  return d;
}

void MinibatchSource::restore_from_checkpoint(const Dictionary& state) {
  close();
  auto get = [&](const char* key) -> int64_t {
    auto it = state.find(key);
    if (it == state.end()) throw ValueError(std::string("MinibatchSource checkpoint: missing '") + key + "'");
    return it->second.as_int();
  };
  if (size_t(get("num_chunks")) != chunks_.size() || uint64_t(get("randomization_seed")) != config_.randomization_seed)
    throw ValueError(
        "MinibatchSource checkpoint: it was taken from a source over other data or with another "
        "randomization seed");
  Cursor c;
  c.sweep = uint64_t(get("sweep"));
  c.position = size_t(get("position"));
  c.total_samples = uint64_t(get("total_samples"));
  c.unit_counter = c.position;  // as CNTK's reader, partitions count units from the restored position
  size_t units = 0;
  for (const auto& ch : chunks_) units += config_.frame_mode ? ch.num_samples : ch.num_sequences;
  if (c.position >= units) throw ValueError("MinibatchSource checkpoint: position out of range");
  auto it = state.find("slots");
  if (it != state.end()) {
    for (const auto& e : it->second.as_list()) {
      const auto& l = e.as_list();
      if (l.size() != 4) throw ValueError("MinibatchSource checkpoint: malformed slot");
      Slot s;
      s.active = l[0].as_bool();
      s.unit = {uint32_t(l[1].as_int()), uint32_t(l[2].as_int())};
      s.offset = size_t(l[3].as_int());
      if (s.unit.chunk >= chunks_.size() || s.unit.index >= chunks_[s.unit.chunk].num_sequences)
        throw ValueError("MinibatchSource checkpoint: slot out of range");
      c.slots.push_back(s);
    }
  }
  delivered_ = c;
  last_request_ = {0, 0, 0};
}

}  // namespace cntk::io
