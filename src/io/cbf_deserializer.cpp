#include "io/cbf_deserializer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

namespace cntk::io {

static_assert(std::endian::native == std::endian::little, "the CBF reader assumes a little-endian host");

namespace {

constexpr uint64_t kMagic = 0x636e746b5f62696eULL;
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPrologue = 12;        // magic + version
constexpr uint64_t kChunkEntrySize = 16;  // i64 offset, u32 sequences, u32 samples

// Bounds-checked little-endian reading over a byte range; `fail` names what was being read.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  size_t left() const { return size_t(end_ - p_); }
  const uint8_t* pos() const { return p_; }
  template <class T>
  bool get(T& out) {
    if (left() < sizeof(T)) return false;
    std::memcpy(&out, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  // Takes n items of `item` bytes; false (nothing taken) if they do not fit.
  bool take(uint64_t n, size_t item, const uint8_t*& out) {
    if (item != 0 && n > left() / item) return false;
    out = p_;
    p_ += n * item;
    return true;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace

void CBFDeserializer::fail(const std::string& what) const { throw IOError("CBF file '" + path_ + "': " + what); }

CBFDeserializer::CBFDeserializer(std::string path, std::vector<CBFStreamSelection> selection) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw IOError("cannot open CBF file '" + path_ + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw IOError("CBF file '" + path_ + "' is not a regular file");
  }
  size_ = uint64_t(st.st_size);
  try {
    init(std::move(selection));
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

CBFDeserializer::CBFDeserializer(Memory, std::string name, std::vector<uint8_t> bytes,
                                 std::vector<CBFStreamSelection> selection)
    : path_(std::move(name)), memory_(std::move(bytes)) {
  size_ = memory_.size();
  init(std::move(selection));
}

std::shared_ptr<CBFDeserializer> CBFDeserializer::from_memory(std::string name, std::vector<uint8_t> bytes,
                                                              std::vector<CBFStreamSelection> selection) {
  return std::shared_ptr<CBFDeserializer>(
      new CBFDeserializer(Memory{}, std::move(name), std::move(bytes), std::move(selection)));
}

CBFDeserializer::~CBFDeserializer() {
  if (fd_ >= 0) ::close(fd_);
}

void CBFDeserializer::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset) fail("read past the end of the file");
  if (fd_ < 0) {
    if (n) std::memcpy(dst, memory_.data() + offset, n);
    return;
  }
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    ssize_t r = ::pread(fd_, p, n, off_t(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail(r < 0 ? std::string("read error: ") + std::strerror(errno) : "the file shrank while reading");
    p += r;
    n -= size_t(r);
    offset += uint64_t(r);
  }
}

void CBFDeserializer::init(std::vector<CBFStreamSelection> selection) {
  // Prologue: magic and version; the header's offset is the file's last 8 bytes.
  if (size_ < kPrologue + 16 + 8) fail("too short to be a CBF file (" + std::to_string(size_) + " bytes)");
  uint64_t magic = 0;
  uint32_t version = 0;
  read_at(0, &magic, 8);
  if (magic != kMagic) fail("not a CNTK binary format file (wrong magic number)");
  read_at(8, &version, 4);
  if (version != kVersion) fail("format version " + std::to_string(version) + " is not supported (only version 1 is)");
  int64_t header_offset = 0;
  read_at(size_ - 8, &header_offset, 8);
  if (header_offset < int64_t(kPrologue) || uint64_t(header_offset) > size_ - 8 - 16)
    fail("header offset " + std::to_string(header_offset) + " is outside the file (size " + std::to_string(size_) +
         ")");

  // The header and chunk table run from the header offset to the final 8 bytes.
  std::vector<uint8_t> header(size_t(size_ - 8 - uint64_t(header_offset)));
  read_at(uint64_t(header_offset), header.data(), header.size());
  Cursor c(header.data(), header.size());
  uint32_t num_chunks = 0, num_streams = 0;
  c.get(magic);
  if (magic != kMagic) fail("no magic number at the header (offset " + std::to_string(header_offset) + ")");
  if (!c.get(num_chunks) || !c.get(num_streams)) fail("truncated header");
  if (num_streams == 0) fail("the header declares no streams");
  for (uint32_t i = 0; i < num_streams; ++i) {
    std::string where = "stream " + std::to_string(i) + " of the header";
    uint8_t encoding = 0, type = 0;
    uint32_t name_len = 0;
    const uint8_t* name = nullptr;
    if (!c.get(encoding) || !c.get(name_len) || !c.take(name_len, 1, name) || !c.get(type)) fail("truncated " + where);
    CBFStreamHeader s;
    s.name.assign(reinterpret_cast<const char*>(name), name_len);
    if (!c.get(s.dim)) fail("truncated " + where);
    if (encoding > 1) fail(where + " ('" + s.name + "') has unknown encoding " + std::to_string(encoding));
    if (type > 1) fail(where + " ('" + s.name + "') has unknown element type " + std::to_string(type));
    if (s.dim == 0) fail(where + " ('" + s.name + "') has sample dimension 0");
    if (encoding == 1 && s.dim > uint32_t(INT32_MAX))
      fail(where + " ('" + s.name + "') has a sparse dimension too large for int32 indices");
    s.sparse = encoding == 1;
    s.dtype = type == 0 ? DataType::Float : DataType::Double;
    for (const auto& o : file_streams_)
      if (o.name == s.name) fail("stream name '" + s.name + "' appears twice in the header");
    file_streams_.push_back(std::move(s));
  }
  if (c.left() != uint64_t(num_chunks) * kChunkEntrySize)
    fail("the chunk table should hold " + std::to_string(num_chunks) + " entries (" +
         std::to_string(uint64_t(num_chunks) * kChunkEntrySize) + " bytes) but " + std::to_string(c.left()) +
         " bytes remain in the header");
  table_.resize(num_chunks);
  first_key_.resize(num_chunks);
  uint64_t keys = 0;
  for (uint32_t i = 0; i < num_chunks; ++i) {
    int64_t off = 0;
    c.get(off);
    c.get(table_[i].num_sequences);
    c.get(table_[i].num_samples);
    if (off < int64_t(kPrologue) || off > header_offset)
      fail("chunk " + std::to_string(i) + " starts at offset " + std::to_string(off) +
           ", outside the data section [12, " + std::to_string(header_offset) + "]");
    if (i > 0 && uint64_t(off) < table_[i - 1].offset)
      fail("chunk " + std::to_string(i) + " starts before chunk " + std::to_string(i - 1));
    table_[i].offset = uint64_t(off);
    first_key_[i] = keys;
    keys += table_[i].num_sequences;
  }
  for (uint32_t i = 0; i < num_chunks; ++i)
    table_[i].end = i + 1 < num_chunks ? table_[i + 1].offset : uint64_t(header_offset);

  // The exposed streams.
  if (selection.empty()) {
    for (size_t i = 0; i < file_streams_.size(); ++i)
      selection.push_back({file_streams_[i].name, file_streams_[i].name});
  }
  for (const auto& sel : selection) {
    size_t k = 0;
    while (k < file_streams_.size() && file_streams_[k].name != sel.field) ++k;
    if (k == file_streams_.size()) {
      std::string names;
      for (const auto& s : file_streams_) names += (names.empty() ? "'" : ", '") + s.name + "'";
      throw ValueError("CBF file '" + path_ + "' has no stream '" + sel.field + "' (it has " + names + ")");
    }
    for (const auto& s : streams_)
      if (s.name == sel.name) throw ValueError("CBF deserializer: stream name '" + sel.name + "' given twice");
    const auto& fs = file_streams_[k];
    StreamInfo info;
    info.name = sel.name.empty() ? fs.name : sel.name;
    info.sample_shape = NDShape{int64_t(fs.dim)};
    info.sparse = fs.sparse;
    info.dtype = fs.dtype;
    streams_.push_back(std::move(info));
    selected_.push_back(k);
  }
}

const std::vector<ChunkInfo>& CBFDeserializer::chunks() {
  if (chunks_ready_) return chunks_;
  chunks_.resize(table_.size());
  bool all = selected_.size() == file_streams_.size();
  for (size_t i = 0; i < table_.size(); ++i) {
    chunks_[i].id = i;
    chunks_[i].num_sequences = table_[i].num_sequences;
    if (all) {
      chunks_[i].num_samples = table_[i].num_samples;
    } else {  // the table counts every stream; count the selected ones
      size_t n = 0;
      for (const auto& s : load_chunk(i)) n += s.num_samples();
      chunks_[i].num_samples = n;
    }
  }
  chunks_ready_ = true;
  return chunks_;
}

std::vector<Sequence> CBFDeserializer::load_chunk(size_t chunk_id) {
  if (chunk_id >= table_.size())
    throw ValueError("CBF file '" + path_ + "': chunk " + std::to_string(chunk_id) + " does not exist (" +
                     std::to_string(table_.size()) + " chunks)");
  const auto& e = table_[chunk_id];
  std::vector<uint8_t> bytes(size_t(e.end - e.offset));
  read_at(e.offset, bytes.data(), bytes.size());
  return decode(chunk_id, bytes);
}

std::vector<Sequence> CBFDeserializer::decode(size_t chunk_id, const std::vector<uint8_t>& bytes) const {
  const auto& e = table_[chunk_id];
  const std::string where = "chunk " + std::to_string(chunk_id);
  const size_t n = e.num_sequences;
  Cursor c(bytes.data(), bytes.size());
  const uint8_t* lengths_raw = nullptr;
  if (!c.take(n, 4, lengths_raw))
    fail(where + " is truncated: " + std::to_string(n) + " sequence lengths do not fit in its " +
         std::to_string(bytes.size()) + " bytes");
  std::vector<uint32_t> lengths(n);
  if (n) std::memcpy(lengths.data(), lengths_raw, n * 4);
  uint64_t total = 0;
  for (uint32_t l : lengths) total += l;
  if (total != e.num_samples)
    fail(where + ": its sequences hold " + std::to_string(total) + " samples but the chunk table says " +
         std::to_string(e.num_samples));

  std::vector<Sequence> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].key = first_key_[chunk_id] + i;
    out[i].streams.resize(selected_.size());
  }
  // Where each file stream lands among the exposed ones (-1: not exposed, decoded only to skip it).
  std::vector<int> target(file_streams_.size(), -1);
  for (size_t k = 0; k < selected_.size(); ++k) target[selected_[k]] = int(k);

  for (size_t s = 0; s < file_streams_.size(); ++s) {
    const auto& fs = file_streams_[s];
    const size_t es = fs.dtype == DataType::Float ? 4 : 8;
    const std::string swhere = where + ", stream '" + fs.name + "'";
    for (size_t i = 0; i < n; ++i) {
      const std::string seq = swhere + ", sequence " + std::to_string(i);
      uint32_t samples = 0;
      if (!c.get(samples)) fail(seq + ": truncated (no sample count)");
      if (samples > lengths[i])
        fail(seq + ": " + std::to_string(samples) + " samples, more than the sequence's " + std::to_string(lengths[i]));
      SequenceStream* dst = target[s] >= 0 ? &out[i].streams[size_t(target[s])] : nullptr;
      auto copy_values = [&](const uint8_t* src, size_t count) {
        if (!dst) return;
        if (fs.dtype == DataType::Float) {
          dst->values_f.resize(count);
          if (count) std::memcpy(dst->values_f.data(), src, count * 4);
        } else {
          dst->values_d.resize(count);
          if (count) std::memcpy(dst->values_d.data(), src, count * 8);
        }
      };
      if (!fs.sparse) {
        const uint8_t* values = nullptr;
        uint64_t count = uint64_t(samples) * fs.dim;
        if (!c.take(count, es, values))
          fail(seq + ": truncated (" + std::to_string(samples) + " dense samples of dimension " +
               std::to_string(fs.dim) + " do not fit)");
        copy_values(values, size_t(count));
        if (dst) dst->num_samples = samples;
        continue;
      }
      int32_t nnz = 0;
      if (!c.get(nnz)) fail(seq + ": truncated (no non-zero count)");
      if (nnz < 0) fail(seq + ": negative non-zero count " + std::to_string(nnz));
      const uint8_t *values = nullptr, *indices = nullptr, *counts = nullptr;
      if (!c.take(uint64_t(nnz), es, values) || !c.take(uint64_t(nnz), 4, indices) || !c.take(samples, 4, counts))
        fail(seq + ": truncated (" + std::to_string(nnz) + " non-zeros in " + std::to_string(samples) +
             " samples do not fit)");
      std::vector<int32_t> idx(static_cast<size_t>(nnz));
      if (nnz) std::memcpy(idx.data(), indices, size_t(nnz) * 4);
      for (int32_t k : idx)
        if (k < 0 || uint32_t(k) >= fs.dim)
          fail(seq + ": sparse index " + std::to_string(k) + " is outside [0, " + std::to_string(fs.dim) + ")");
      std::vector<size_t> offsets(size_t(samples) + 1, 0);
      for (uint32_t j = 0; j < samples; ++j) {
        int32_t cnt = 0;
        std::memcpy(&cnt, counts + size_t(j) * 4, 4);
        if (cnt < 0) fail(seq + ": negative non-zero count in sample " + std::to_string(j));
        offsets[j + 1] = offsets[j] + size_t(cnt);
        if (offsets[j + 1] > size_t(nnz))
          fail(seq + ": the samples' non-zero counts exceed the sequence's " + std::to_string(nnz));
      }
      if (offsets[samples] != size_t(nnz))
        fail(seq + ": the samples' non-zero counts add up to " + std::to_string(offsets[samples]) + ", not " +
             std::to_string(nnz));
      if (!dst) continue;
      copy_values(values, size_t(nnz));
      dst->indices = std::move(idx);
      dst->offsets = std::move(offsets);
      dst->num_samples = samples;
      if (samples == 0) dst->offsets.clear();
    }
  }
  if (c.left() != 0) fail(where + ": " + std::to_string(c.left()) + " bytes are left over after its last stream");
  return out;
}

}  // namespace cntk::io
