#include "io/htk_features.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "io/string_key.h"

namespace cntk::io {

namespace {

// HTK parameter kinds (HTK book, section 5.10): the basic kind in the low 6 bits, qualifiers above.
constexpr int kBaseMask = 077;
constexpr int kMFCC = 6, kFBANK = 7, kUSER = 9, kPLP = 11, kFESTREAM = 12;
constexpr int kHasEnergy = 0100, kHasNullE = 0200, kHasDelta = 0400, kHasAccs = 01000, kCompressed = 02000,
              kZeroMean = 04000, kHasCRC = 010000, kHasZeroC = 020000, kHasVQ = 040000, kHasThird = 0100000;

uint32_t load_u32(const uint8_t* p, bool big) {
  return big ? (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3])
             : (uint32_t(p[3]) << 24) | (uint32_t(p[2]) << 16) | (uint32_t(p[1]) << 8) | uint32_t(p[0]);
}
uint16_t load_u16(const uint8_t* p, bool big) {
  return big ? uint16_t((p[0] << 8) | p[1]) : uint16_t((p[1] << 8) | p[0]);
}
float load_f32(const uint8_t* p, bool big) {
  uint32_t u = load_u32(p, big);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  throw IOError("HTK feature file '" + path + "': " + what);
}

uint64_t file_size_of(const std::string& path, std::FILE* f) {
  if (std::fseek(f, 0, SEEK_END) != 0) bad_file(path, "cannot seek");
  long n = std::ftell(f);
  if (n < 0) bad_file(path, "cannot tell its size");
  std::rewind(f);
  return uint64_t(n);
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

FilePtr open_file(const std::string& path, const std::string& what) {
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw IOError(what + " '" + path + "': cannot open it (" + std::strerror(errno) + ")");
  return f;
}

bool parse_u32(std::string_view s, uint32_t& v) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::string HTKHeader::kind_name() const {
  static const char* names[] = {"WAVEFORM", "LPC",     "LPREFC", "LPCEPSTRA", "LPDELCEP", "IREFC", "MFCC",
                                "FBANK",    "MELSPEC", "USER",   "DISCRETE",  "PLP",      "USER"};
  int base = parm_kind & kBaseMask;
  std::string k = base < 13 ? names[base] : "kind" + std::to_string(base);
  if (parm_kind & kHasEnergy) k += "_E";
  if (parm_kind & kHasDelta) k += "_D";
  if (parm_kind & kHasNullE) k += "_N";
  if (parm_kind & kHasAccs) k += "_A";
  if (parm_kind & kHasThird) k += "_T";
  if (parm_kind & kZeroMean) k += "_Z";
  if (parm_kind & kHasZeroC) k += "_0";
  return k;
}

HTKHeader parse_htk_header(const uint8_t* prefix, size_t prefix_size, uint64_t file_size, const std::string& path,
                           size_t* needed) {
  *needed = 0;
  if (file_size < kHTKHeaderBytes)
    bad_file(path, "truncated header (" + std::to_string(file_size) + " bytes, an HTK header has 12)");
  if (prefix_size < kHTKHeaderBytes) {
    *needed = kHTKHeaderBytes;
    return {};
  }
  HTKHeader h;
  // CNTK's guess of the byte order: the reading of the sample period that gives the smaller number.
  uint32_t period_be = load_u32(prefix + 4, true), period_le = load_u32(prefix + 4, false);
  h.big_endian = period_be < period_le;
  const bool be = h.big_endian;
  uint32_t n = load_u32(prefix, be);
  h.sample_period = be ? period_be : period_le;
  h.sample_size = load_u16(prefix + 8, be);
  h.parm_kind = load_u16(prefix + 10, be);
  if (int32_t(n) < 0) bad_file(path, "negative frame count " + std::to_string(int32_t(n)) + " in the header");
  const int base = h.parm_kind & kBaseMask;
  if (base != kMFCC && base != kFBANK && base != kUSER && base != kPLP && base != kFESTREAM)
    bad_file(path, "parameter kind " + std::to_string(h.parm_kind) + " (" + h.kind_name() +
                       ") is not one CNTK reads (MFCC, FBANK, PLP, USER)");
  if (h.parm_kind & kHasVQ) bad_file(path, "vector-quantized data (_V) is not supported");
  h.compressed = (h.parm_kind & kCompressed) != 0;
  const size_t bytes_per_value = h.compressed ? 2 : 4;
  if (h.sample_size == 0 || h.sample_size % bytes_per_value != 0)
    bad_file(path, "sample size " + std::to_string(h.sample_size) + " bytes is not a positive multiple of " +
                       std::to_string(bytes_per_value) +
                       (h.compressed ? " (compressed int16 values)" : " (float32 values)"));
  h.dim = h.sample_size / bytes_per_value;
  size_t header_bytes = kHTKHeaderBytes + (h.parm_kind == kFESTREAM ? 16 : 0);  // FESTREAM: a GUID follows
  if (h.compressed) header_bytes += 8 * h.dim;
  if (file_size < header_bytes)
    bad_file(path, "truncated header (" + std::to_string(file_size) + " bytes, its kind needs " +
                       std::to_string(header_bytes) + ")");
  if (prefix_size < header_bytes) {
    *needed = header_bytes;
    return {};
  }
  if (h.compressed) {
    // The A and B vectors take the place of four frames.
    if (n < 4) bad_file(path, "compressed file with " + std::to_string(n) + " frames in the header (at least 4)");
    n -= 4;
    const uint8_t* p = prefix + header_bytes - 8 * h.dim;
    h.scale.resize(h.dim);
    h.bias.resize(h.dim);
    for (size_t k = 0; k < h.dim; ++k) h.scale[k] = load_f32(p + 4 * k, be);
    for (size_t k = 0; k < h.dim; ++k) h.bias[k] = load_f32(p + 4 * (h.dim + k), be);
    for (size_t k = 0; k < h.dim; ++k)
      if (!(h.scale[k] != 0.0f) || !std::isfinite(h.scale[k]) || !std::isfinite(h.bias[k]))
        bad_file(path, "compression scale or bias " + std::to_string(k) + " is zero or not finite");
  }
  h.num_frames = n;
  h.data_offset = header_bytes;
  const uint64_t data_bytes = uint64_t(n) * h.sample_size;
  if (file_size - header_bytes < data_bytes)
    bad_file(path, "truncated data: the header says " + std::to_string(n) + " frames of " +
                       std::to_string(h.sample_size) + " bytes (" + std::to_string(data_bytes) +
                       " bytes), the file holds " + std::to_string(file_size - header_bytes) + " after its header");
  return h;
}

void decode_htk_frames(const HTKHeader& h, const uint8_t* bytes, size_t num_frames, float* out) {
  const bool be = h.big_endian;
  const size_t n = num_frames * h.dim;
  if (!h.compressed) {
    for (size_t i = 0; i < n; ++i) out[i] = load_f32(bytes + 4 * i, be);
    return;
  }
  for (size_t t = 0; t < num_frames; ++t)
    for (size_t k = 0; k < h.dim; ++k) {
      const size_t i = t * h.dim + k;
      const auto x = int16_t(load_u16(bytes + 2 * i, be));
      out[i] = (float(x) + h.bias[k]) / h.scale[k];
    }
}

HTKHeader read_htk_header(const std::string& path) {
  FilePtr f = open_file(path, "HTK feature file");
  const uint64_t size = file_size_of(path, f.get());
  std::vector<uint8_t> buf(kHTKHeaderBytes);
  size_t got = std::fread(buf.data(), 1, std::min<uint64_t>(size, buf.size()), f.get());
  size_t needed = 0;
  HTKHeader h = parse_htk_header(buf.data(), got, size, path, &needed);
  if (needed == 0) return h;
  buf.resize(needed);
  std::rewind(f.get());
  got = std::fread(buf.data(), 1, needed, f.get());
  h = parse_htk_header(buf.data(), got, size, path, &needed);
  if (needed != 0) bad_file(path, "cannot read its header");
  return h;
}

HTKFeatureFile HTKFeatureFile::from_memory(const std::vector<uint8_t>& bytes, const std::string& path) {
  HTKFeatureFile f;
  size_t needed = 0;
  f.header = parse_htk_header(bytes.data(), bytes.size(), bytes.size(), path, &needed);
  if (needed != 0) bad_file(path, "cannot read its header");
  f.values.resize(size_t(f.header.num_frames) * f.header.dim);
  decode_htk_frames(f.header, bytes.data() + f.header.data_offset, f.header.num_frames, f.values.data());
  return f;
}

bool parse_scp_line(const std::string& raw, const std::string& scp_dir, const std::string& where, SCPEntry& out) {
  std::string line = raw;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
  size_t lead = line.find_first_not_of(" \t");
  if (lead == std::string::npos) return false;
  line.erase(0, lead);
  out = SCPEntry{};
  const size_t eq = line.find('=');
  std::string logical;
  if (eq == std::string::npos) {
    logical = out.path = line;
  } else {
    logical = line.substr(0, eq);
    std::string rest = line.substr(eq + 1);
    const size_t lb = rest.find('[');
    out.path = rest.substr(0, lb);
    if (lb != std::string::npos) {
      const size_t comma = rest.find(',', lb);
      const size_t rb = rest.find(']', lb);
      if (comma == std::string::npos || rb == std::string::npos || comma > rb || rb + 1 != rest.size() ||
          !parse_u32(std::string_view(rest).substr(lb + 1, comma - lb - 1), out.first) ||
          !parse_u32(std::string_view(rest).substr(comma + 1, rb - comma - 1), out.last))
        throw IOError(where + ": malformed SCP entry '" + line + "' (expected key=path[start,end] with frame numbers)");
      if (out.first > out.last)
        throw IOError(where + ": SCP entry '" + line + "' has its start frame after its end frame");
      out.has_range = true;
    }
  }
  if (logical.empty() || out.path.empty())
    throw IOError(where + ": malformed SCP entry '" + line + "' (empty key or path)");
  out.key = logical.substr(0, logical.find_last_of('.'));  // as CNTK: the extension goes
  if (out.key.empty()) out.key = logical;
  const size_t dots = out.path.find("...");
  if (dots != std::string::npos) out.path = out.path.substr(0, dots) + scp_dir + out.path.substr(dots + 3);
  return true;
}

template <class T>
void splice_context(const float* frames, size_t num_frames, size_t dim, size_t left, size_t right, T* out) {
  const size_t width = 1 + left + right;
  for (size_t t = 0; t < num_frames; ++t)
    for (size_t j = 0; j < width; ++j) {
      // Frame t - left + j, held at the utterance's edges.
      size_t src = t + j < left ? 0 : std::min(t + j - left, num_frames - 1);
      const float* in = frames + src * dim;
      T* o = out + (t * width + j) * dim;
      for (size_t k = 0; k < dim; ++k) o[k] = T(in[k]);
    }
}
template void splice_context<float>(const float*, size_t, size_t, size_t, size_t, float*);
template void splice_context<double>(const float*, size_t, size_t, size_t, size_t, double*);

// ---------------------------------------------------------------- the deserializer

HTKFeatureDeserializer::HTKFeatureDeserializer(HTKFeatureStreamDef def) : def_(std::move(def)) {
  if (def_.name.empty()) throw ValueError("HTKFeatureDeserializer: the stream has no name");
  if (def_.scp_files.empty()) throw ValueError("HTKFeatureDeserializer: stream '" + def_.name + "' has no SCP file");
  if (def_.dim == 0) throw ValueError("HTKFeatureDeserializer: stream '" + def_.name + "' needs a positive dimension");
  if (def_.frames_per_chunk == 0) throw ValueError("HTKFeatureDeserializer: frames_per_chunk must be positive");
  if (def_.dtype != DataType::Float && def_.dtype != DataType::Double)
    throw TypeError("HTKFeatureDeserializer: stream '" + def_.name + "' must be float32 or float64");

  std::vector<Utterance> utts;
  std::unordered_map<std::string, uint32_t> file_index;
  std::unordered_map<uint64_t, std::pair<std::string, std::string>> seen;  // key id -> (name, where)
  std::unordered_map<uint64_t, size_t> duplicates;                         // key id -> copies
  for (const auto& scp : def_.scp_files) {
    std::ifstream in(scp);
    if (!in) throw IOError("HTK SCP file '" + scp + "': cannot open it");
    const std::filesystem::path scp_path(scp);
    const std::string scp_dir = scp_path.parent_path().string();
    std::string line;
    size_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      const std::string where = scp + ":" + std::to_string(line_no);
      SCPEntry e;
      if (!parse_scp_line(line, scp_dir, where, e)) continue;
      // Relative paths: from the working directory (as CNTK), else beside the SCP file.
      std::string path = e.path;
      std::error_code ec1, ec2;  // the non-throwing forms: an unreadable path is reported when it is opened
      if (std::filesystem::path(path).is_relative() && !std::filesystem::exists(path, ec1) &&
          std::filesystem::exists(scp_path.parent_path() / path, ec2))
        path = (scp_path.parent_path() / path).string();
      auto fit = file_index.find(path);
      if (fit == file_index.end()) {
        File f{path, HTKHeader{}, where};
        try {
          f.header = read_htk_header(path);
        } catch (const IOError& err) {
          throw IOError(where + ": " + err.what());
        }
        if (!files_.empty()) {
          const HTKHeader& a = files_.front().header;
          if (a.dim != f.header.dim ||
              (a.parm_kind & ~(kCompressed | kHasCRC)) != (f.header.parm_kind & ~(kCompressed | kHasCRC)) ||
              a.sample_period != f.header.sample_period)
            throw IOError(where + ": HTK feature file '" + path + "' holds " + std::to_string(f.header.dim) +
                          "-dimensional " + f.header.kind_name() + " frames every " +
                          std::to_string(f.header.sample_period) + " x 100 ns, but '" + files_.front().path +
                          "' holds " + std::to_string(a.dim) + "-dimensional " + a.kind_name() + " every " +
                          std::to_string(a.sample_period) + " (all files must agree)");
        }
        fit = file_index.emplace(path, uint32_t(files_.size())).first;
        files_.push_back(std::move(f));
      }
      const HTKHeader& h = files_[fit->second].header;
      Utterance u{string_key_id(e.key), fit->second, 0, h.num_frames};
      if (e.has_range) {
        if (e.last >= h.num_frames)
          throw IOError(where + ": frames " + std::to_string(e.first) + ".." + std::to_string(e.last) + " of '" + path +
                        "' are past its end (it has " + std::to_string(h.num_frames) + " frames)");
        u.first = e.first;
        u.frames = e.last - e.first + 1;
      }
      if (u.frames == 0) {
        warnings_.push_back(where + ": utterance '" + e.key + "' has no frames; skipped");
        continue;
      }
      if (def_.broadcast && u.frames != 1)
        throw IOError(where + ": utterance '" + e.key + "' has " + std::to_string(u.frames) + " frames, but stream '" +
                      def_.name + "' is broadcast over utterances and needs one frame each");
      if (u.frames > def_.max_sequence_length) {
        warnings_.push_back(where + ": utterance '" + e.key + "' has " + std::to_string(u.frames) +
                            " frames, more than max_sequence_length " + std::to_string(def_.max_sequence_length) +
                            "; skipped");
        continue;
      }
      auto [it, fresh] = seen.emplace(u.key, std::make_pair(e.key, where));
      if (!fresh) {
        if (it->second.first != e.key)
          throw IOError(where + ": utterance names '" + e.key + "' and '" + it->second.first + "' (" +
                        it->second.second + ") map to the same sequence key; rename one");
        duplicates[u.key] += 1;
        continue;
      }
      utts.push_back(u);
    }
    if (in.bad()) throw IOError("HTK SCP file '" + scp + "': read error");
  }
  // As CNTK: a key given more than once is dropped with all its copies.
  for (const auto& [id, copies] : duplicates)
    warnings_.push_back("utterance '" + seen[id].first + "' is listed " + std::to_string(copies + 1) +
                        " times; all copies skipped");
  if (!duplicates.empty())
    utts.erase(
        std::remove_if(utts.begin(), utts.end(), [&](const Utterance& u) { return duplicates.count(u.key) > 0; }),
        utts.end());
  if (utts.empty())
    throw IOError("HTKFeatureDeserializer: the SCP file(s) of stream '" + def_.name + "' list no utterance to read");

  // Context window and stream dimension.
  file_dim_ = files_.front().header.dim;
  left_ = def_.left_context;
  right_ = def_.right_context;
  size_t out_dim = 0;
  if (left_ == 0 && right_ == 0) {
    // CNTK: without a context, the configured dimension may be an odd multiple of the files' one,
    // which asks for a symmetric window.
    if (def_.dim % file_dim_ != 0 || (def_.dim / file_dim_) % 2 == 0)
      throw ValueError("HTKFeatureDeserializer: stream '" + def_.name + "' has dimension " + std::to_string(def_.dim) +
                       " but its files hold " + std::to_string(file_dim_) +
                       " values per frame (without a context the dimension must be an odd multiple of that)");
    left_ = right_ = (def_.dim / file_dim_) / 2;
    out_dim = def_.dim;
  } else {
    if (def_.dim != file_dim_)
      throw ValueError("HTKFeatureDeserializer: stream '" + def_.name + "' has dimension " + std::to_string(def_.dim) +
                       " but its files hold " + std::to_string(file_dim_) + " values per frame");
    out_dim = file_dim_ * (1 + left_ + right_);
  }
  infos_.push_back({def_.name, NDShape{int64_t(out_dim)}, false, def_.dtype, def_.defines_mb_size, def_.broadcast});

  // Chunks: utterances in SCP order until a chunk passes frames_per_chunk (as CNTK).
  size_t chunk_frames = 0;
  for (const auto& u : utts) {
    if (chunks_.empty() || chunk_frames > def_.frames_per_chunk) {
      chunks_.push_back(ChunkInfo{chunks_.size(), 0, 0});
      chunk_utts_.emplace_back();
      chunk_frames = 0;
    }
    chunk_utts_.back().push_back(u);
    chunks_.back().num_sequences += 1;
    chunks_.back().num_samples += u.frames;
    chunk_frames += u.frames;
  }
  for (const auto& [id, v] : seen) names_.emplace_back(id, v.first);
  std::sort(names_.begin(), names_.end());
}

std::vector<uint64_t> HTKFeatureDeserializer::chunk_keys(size_t chunk_id) {
  if (chunk_id >= chunks_.size())
    throw ValueError("HTKFeatureDeserializer: chunk " + std::to_string(chunk_id) + " out of range");
  std::vector<uint64_t> keys;
  for (const auto& u : chunk_utts_[chunk_id]) keys.push_back(u.key);
  return keys;
}

std::string HTKFeatureDeserializer::key_name(uint64_t key) const {
  auto it = std::lower_bound(names_.begin(), names_.end(), std::make_pair(key, std::string()));
  if (it != names_.end() && it->first == key) return "'" + it->second + "'";
  return std::to_string(key);
}

std::vector<Sequence> HTKFeatureDeserializer::load_chunk(size_t chunk_id) {
  if (chunk_id >= chunks_.size())
    throw ValueError("HTKFeatureDeserializer: chunk " + std::to_string(chunk_id) + " out of range (stream '" +
                     def_.name + "' has " + std::to_string(chunks_.size()) + ")");
  std::vector<Sequence> out;
  out.reserve(chunk_utts_[chunk_id].size());
  FilePtr f;
  uint32_t open_file_index = ~uint32_t(0);
  std::vector<uint8_t> bytes;
  std::vector<float> frames;
  for (const auto& u : chunk_utts_[chunk_id]) {
    const File& file = files_[u.file];
    const HTKHeader& h = file.header;
    if (u.file != open_file_index) {
      f = open_file(file.path, "HTK feature file");
      open_file_index = u.file;
    }
    bytes.resize(size_t(u.frames) * h.sample_size);
    const uint64_t offset = h.data_offset + uint64_t(u.first) * h.sample_size;
    if (std::fseek(f.get(), long(offset), SEEK_SET) != 0 ||
        std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
      bad_file(file.path, "cannot read frames " + std::to_string(u.first) + ".." +
                              std::to_string(u.first + u.frames - 1) + " (the file changed since it was indexed?)");
    frames.resize(size_t(u.frames) * h.dim);
    decode_htk_frames(h, bytes.data(), u.frames, frames.data());
    Sequence s;
    s.key = u.key;
    s.streams.resize(1);
    SequenceStream& st = s.streams[0];
    st.num_samples = u.frames;
    const size_t n = size_t(u.frames) * h.dim * (1 + left_ + right_);
    if (def_.dtype == DataType::Double) {
      st.values_d.resize(n);
      splice_context(frames.data(), u.frames, h.dim, left_, right_, st.values_d.data());
    } else {
      st.values_f.resize(n);
      splice_context(frames.data(), u.frames, h.dim, left_, right_, st.values_f.data());
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace cntk::io
