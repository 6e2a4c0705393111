// CTF -> CBF conversion (what CNTK's Scripts/ctf2bin.py does), over the streaming CTF parser.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "io/cbf_deserializer.h"
#include "io/ctf_parser.h"

namespace cntk::io {
namespace {

constexpr uint64_t kMagic = 0x636e746b5f62696eULL;
constexpr uint32_t kVersion = 1;

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) throw IOError("cannot create CBF file '" + path + "': " + std::strerror(errno));
  }
  ~Writer() {
    if (f_) std::fclose(f_);
  }
  void bytes(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) throw IOError("error writing CBF file '" + path_ + "'");
    pos_ += n;
  }
  template <class T>
  void put(T v) {
    bytes(&v, sizeof v);
  }
  uint64_t pos() const { return pos_; }
  void close() {
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) throw IOError("error closing CBF file '" + path_ + "'");
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  uint64_t pos_ = 0;
};

}  // namespace

size_t convert_ctf_to_cbf(const std::string& ctf_path, const std::string& cbf_path,
                          const std::vector<CBFConvertStream>& streams, size_t chunk_size, DataType precision) {
  if (precision != DataType::Float && precision != DataType::Double)
    throw ValueError("convert_ctf_to_cbf: precision must be float or double");
  if (streams.empty()) throw ValueError("convert_ctf_to_cbf: no streams given");
  std::vector<CTFStreamConfig> config;
  for (const auto& s : streams) {
    if (s.name.empty()) throw ValueError("convert_ctf_to_cbf: a stream has no name");
    if (s.sparse && s.dim > size_t(INT32_MAX))
      throw ValueError("convert_ctf_to_cbf: sparse stream '" + s.name + "' is too wide for int32 indices");
    if (s.dim > UINT32_MAX) throw ValueError("convert_ctf_to_cbf: stream '" + s.name + "' is too wide");
    // Parsed as double and stored as `precision`, as ctf2bin.py does (Python float, then struct.pack).
    config.push_back({s.alias, s.dim, s.sparse, DataType::Double});
  }
  CTFParser parser(ctf_path, config);  // validates aliases and dimensions
  const bool single = precision == DataType::Float;
  const size_t es = single ? 4 : 8;

  Writer out(cbf_path);
  out.put(kMagic);
  out.put(kVersion);

  struct Chunk {
    uint64_t offset;
    uint32_t sequences, samples;
  };
  std::vector<Chunk> table;
  std::vector<CTFSequence> pending;
  size_t pending_bytes = 0;

  auto put_values = [&](const double* v, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (single)
        out.put(float(v[i]));
      else
        out.put(v[i]);
    }
  };
  auto flush = [&] {
    Chunk c{out.pos(), uint32_t(pending.size()), 0};
    for (const auto& seq : pending) {
      size_t len = 0;
      for (const auto& st : seq.streams) len = std::max(len, st.num_samples);
      out.put(uint32_t(len));
      c.samples += uint32_t(len);
    }
    for (size_t s = 0; s < streams.size(); ++s) {
      for (const auto& seq : pending) {
        const auto& st = seq.streams[s];
        out.put(uint32_t(st.num_samples));
        if (!streams[s].sparse) {
          put_values(st.values_d.data(), st.values_d.size());
          continue;
        }
        out.put(int32_t(st.indices.size()));
        // Each sample's entries sorted by index (stable), as CNTK's sparse matrices expect.
        std::vector<size_t> order(st.indices.size());
        std::iota(order.begin(), order.end(), size_t(0));
        for (size_t j = 0; j < st.num_samples; ++j)
          std::stable_sort(order.begin() + ptrdiff_t(st.offsets[j]), order.begin() + ptrdiff_t(st.offsets[j + 1]),
                           [&](size_t a, size_t b) { return st.indices[a] < st.indices[b]; });
        for (size_t k : order) {
          if (single)
            out.put(float(st.values_d[k]));
          else
            out.put(st.values_d[k]);
        }
        for (size_t k : order) out.put(int32_t(st.indices[k]));
        for (size_t j = 0; j < st.num_samples; ++j) out.put(int32_t(st.offsets[j + 1] - st.offsets[j]));
      }
    }
    table.push_back(c);
    pending.clear();
    pending_bytes = 0;
  };

  CTFSequence seq;
  while (parser.next(seq)) {
    size_t bytes = 4;
    for (size_t s = 0; s < streams.size(); ++s) {
      const auto& st = seq.streams[s];
      bytes += streams[s].sparse ? 8 + st.indices.size() * (es + 4) + st.num_samples * 4 : 4 + st.values_d.size() * es;
    }
    if (pending.size() == UINT32_MAX) flush();
    pending.push_back(seq);
    pending_bytes += bytes;
    if (pending_bytes >= chunk_size) flush();
  }
  if (!pending.empty() || table.empty()) flush();

  const uint64_t header_offset = out.pos();
  out.put(kMagic);
  out.put(uint32_t(table.size()));
  out.put(uint32_t(streams.size()));
  for (const auto& s : streams) {
    out.put(uint8_t(s.sparse ? 1 : 0));
    out.put(uint32_t(s.name.size()));
    out.bytes(s.name.data(), s.name.size());
    out.put(uint8_t(single ? 0 : 1));
    out.put(uint32_t(s.dim));
  }
  for (const auto& c : table) {
    out.put(int64_t(c.offset));
    out.put(c.sequences);
    out.put(c.samples);
  }
  out.put(int64_t(header_offset));
  out.close();
  return table.size();
}

}  // namespace cntk::io
