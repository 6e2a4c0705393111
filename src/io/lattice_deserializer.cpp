#include "lattice_deserializer.h"
#include "string_key.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "cntk/common.h"

namespace cntk::io {
namespace {

constexpr uint64_t kMaxLatticeBytes = 500000000;  // CNTK refuses lattices of 0.5 GB and more

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

uint64_t LatticeDeserializer::name_key(std::string_view name) { return string_key_id(name); }

LatticeDeserializer::LatticeDeserializer(std::string index_path, std::string stream_name,
                                         LatticeDeserializerOptions options)
    : index_path_(std::move(index_path)), options_(options) {
  if (stream_name.empty()) throw ValueError("LatticeDeserializer: the stream name is empty");
  if (options_.chunk_size == 0) throw ValueError("LatticeDeserializer: chunk_size must be positive");
  StreamInfo info;
  info.name = std::move(stream_name);
  info.sample_shape = NDShape{1};
  info.dtype = DataType::Float;
  infos_.push_back(info);

  std::ifstream index(index_path_);
  if (!index) throw IOError(index_path_ + ": cannot open the lattice index file");
  std::string line;
  size_t n = 0;
  while (std::getline(index, line)) {
    ++n;
    std::string toc = trim(line);
    if (!toc.empty()) read_toc(toc);
  }
  if (entries_.empty())
    throw IOError(index_path_ + ": the lattice index names no lattice (" + std::to_string(n) + " lines)");

  std::unordered_map<uint64_t, size_t> seen;
  for (size_t i = 0; i < entries_.size(); ++i) {
    auto [it, fresh] = seen.emplace(entries_[i].key, i);
    if (!fresh)
      throw IOError(index_path_ + ": the lattices '" + entries_[it->second].name + "' and '" + entries_[i].name +
                    "' have the same key" + (entries_[it->second].name == entries_[i].name ? " (listed twice)" : ""));
  }

  // chunks: runs of one archive, closed once they hold chunk_size bytes
  size_t bytes = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    bool start = i == 0 || entries_[i].archive != entries_[i - 1].archive || bytes >= options_.chunk_size;
    if (start) {
      chunk_first_.push_back(i);
      chunks_.push_back(ChunkInfo{chunks_.size(), 0, 0});
      bytes = 0;
    }
    bytes += entries_[i].size;
    chunks_.back().num_sequences += 1;
    chunks_.back().num_samples += (entries_[i].size + 3) / 4;
  }
  chunk_first_.push_back(entries_.size());
}

void LatticeDeserializer::read_toc(const std::string& toc_path) {
  std::ifstream toc(toc_path);
  if (!toc) throw IOError(index_path_ + ": cannot open the lattice TOC file '" + toc_path + "'");
  std::string line;
  size_t n = 0, first_of_run = entries_.size();
  bool have_archive = false;
  auto close_run = [&](uint64_t end_of_last) {
    // sizes of the run's lattices: up to the next offset, the last one to `end_of_last`
    for (size_t i = first_of_run; i < entries_.size(); ++i) {
      uint64_t end = i + 1 < entries_.size() ? entries_[i + 1].offset : end_of_last;
      Entry& e = entries_[i];
      const std::string& a = archives_[e.archive];
      if (end <= e.offset)
        throw IOError(toc_path + ": the lattice '" + e.name + "' at byte " + std::to_string(e.offset) + " of '" + a +
                      "' is empty, past the end of the archive, or its offsets are not increasing");
      if (end - e.offset >= kMaxLatticeBytes)
        throw IOError(toc_path + ": the lattice '" + e.name + "' in '" + a + "' is 0.5 GB or larger");
      e.size = end - e.offset;
    }
    first_of_run = entries_.size();
  };
  auto archive_size = [&](size_t a) -> uint64_t {
    std::error_code ec;
    uint64_t s = std::filesystem::file_size(archives_[a], ec);
    if (ec) throw IOError(toc_path + ": cannot read the lattice archive '" + archives_[a] + "' (" + ec.message() + ")");
    return s;
  };
  while (std::getline(toc, line)) {
    ++n;
    std::string s = trim(line);
    if (s.empty()) continue;
    std::string where = toc_path + ":" + std::to_string(n) + ": ";
    size_t eq = s.find('=');
    size_t lb = eq == std::string::npos ? eq : s.find('[', eq);
    size_t rb = lb == std::string::npos ? lb : s.find(']', lb);
    if (eq == std::string::npos || lb == std::string::npos || rb == std::string::npos || rb != s.size() - 1)
      throw IOError(where + "expected 'KEY=ARCHIVE[OFFSET]', got '" + s + "'");
    std::string name = s.substr(0, eq), path = s.substr(eq + 1, lb - eq - 1), off = s.substr(lb + 1, rb - lb - 1);
    if (name.empty()) throw IOError(where + "the key is empty");
    if (off.empty() || off.find_first_not_of("0123456789") != std::string::npos || off.size() > 18)
      throw IOError(where + "the offset '" + off + "' is not a byte offset");
    uint64_t offset = std::stoull(off);
    bool new_archive = !path.empty() || offset == 0;
    if (new_archive && have_archive) close_run(archive_size(entries_.back().archive));
    if (!path.empty()) {
      archives_.push_back(path);
      have_archive = true;
    } else if (!have_archive) {
      throw IOError(where + "the first line must name the archive ('KEY=ARCHIVE[OFFSET]')");
    }
    Entry e;
    e.name = name;
    e.archive = archives_.size() - 1;
    e.offset = offset;
    if (options_.numeric_keys) {
      if (name.find_first_not_of("0123456789") != std::string::npos || name.size() > 19)
        throw IOError(where + "the key '" + name + "' is not a number (numeric keys were asked for)");
      e.key = std::stoull(name);
    } else {
      e.key = name_key(name);
    }
    entries_.push_back(std::move(e));
  }
  if (toc.bad()) throw IOError(toc_path + ": read error");
  if (have_archive) close_run(archive_size(entries_.back().archive));
}

std::string LatticeDeserializer::key_name(uint64_t key) const {
  for (const Entry& e : entries_)
    if (e.key == key) return e.name;
  return std::to_string(key);
}

std::vector<uint64_t> LatticeDeserializer::chunk_keys(size_t chunk_id) {
  if (chunk_id >= chunks_.size()) throw ValueError("LatticeDeserializer: no chunk " + std::to_string(chunk_id));
  std::vector<uint64_t> keys;
  for (size_t i = chunk_first_[chunk_id]; i < chunk_first_[chunk_id + 1]; ++i) keys.push_back(entries_[i].key);
  return keys;
}

std::vector<Sequence> LatticeDeserializer::load_chunk(size_t chunk_id) {
  if (chunk_id >= chunks_.size()) throw ValueError("LatticeDeserializer: no chunk " + std::to_string(chunk_id));
  size_t first = chunk_first_[chunk_id], last = chunk_first_[chunk_id + 1];
  const std::string& path = archives_[entries_[first].archive];
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IOError(path + ": cannot open the lattice archive");
  std::vector<Sequence> out;
  for (size_t i = first; i < last; ++i) {
    const Entry& e = entries_[i];
    size_t samples = size_t((e.size + 3) / 4);
    Sequence seq;
    seq.key = e.key;
    seq.streams.resize(1);
    SequenceStream& st = seq.streams[0];
    st.num_samples = samples;
    st.values_f.assign(samples, 0.0f);
    f.seekg(std::streamoff(e.offset));
    f.read(reinterpret_cast<char*>(st.values_f.data()), std::streamsize(e.size));
    if (!f || uint64_t(f.gcount()) != e.size)
      throw IOError(path + ": the lattice '" + e.name + "' (bytes " + std::to_string(e.offset) + " to " +
                    std::to_string(e.offset + e.size) + ") is past the end of the file");
    if (e.size < 4 || std::memcmp(st.values_f.data(), "LAT ", 4) != 0)
      throw IOError(path + ": the lattice '" + e.name + "' at byte " + std::to_string(e.offset) +
                    " does not start with the tag 'LAT '");
    out.push_back(std::move(seq));
  }
  return out;
}

}  // namespace cntk::io
