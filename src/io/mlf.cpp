#include "io/mlf.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "io/string_key.h"

namespace cntk::io {

namespace {

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError(what + " '" + path + "': cannot open it");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw IOError(what + " '" + path + "': read error");
  return ss.str();
}

// Splits text into lines (\n, \r\n), calling f(line, line_number).
template <class F>
void for_each_line(std::string_view text, F&& f) {
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    f(line, ++line_no);
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> tokens_of(std::string_view s) {
  std::vector<std::string_view> t;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) t.push_back(s.substr(i, j - i));
    i = j;
  }
  return t;
}

// A time: a decimal number (HTK writes integers; CNTK's parser takes any double).
bool parse_time(std::string_view s, double& v) {
  std::string tmp(s);
  if (tmp.empty() || tmp.size() > 64) return false;
  char* end = nullptr;
  v = std::strtod(tmp.c_str(), &end);
  return end == tmp.c_str() + tmp.size() && std::isfinite(v);
}

}  // namespace

std::unordered_map<std::string, uint32_t> parse_label_mapping(std::string_view text, const std::string& path) {
  std::unordered_map<std::string, uint32_t> states;
  for_each_line(text, [&](std::string_view line, size_t line_no) {
    line = trim(line);
    if (line.empty()) return;
    auto [it, fresh] = states.emplace(std::string(line), uint32_t(states.size()));
    if (!fresh)
      throw IOError("label mapping file '" + path + "':" + std::to_string(line_no) + ": state '" + std::string(line) +
                    "' is listed twice");
  });
  if (states.empty()) throw IOError("label mapping file '" + path + "' lists no state");
  return states;
}

std::unordered_map<std::string, uint32_t> read_label_mapping(const std::string& path) {
  return parse_label_mapping(read_text(path, "label mapping file"), path);
}

std::vector<MLFUtterance> parse_mlf(std::string_view text, const std::string& path,
                                    const std::unordered_map<std::string, uint32_t>& states, size_t dim,
                                    std::vector<std::string>* warnings) {
  std::vector<MLFUtterance> out;
  bool in_entry = false;
  bool cur_in_time = false;  // the unit of the entry's last label line
  MLFUtterance cur;
  auto where = [&](size_t line_no) { return "MLF file '" + path + "':" + std::to_string(line_no); };
  for_each_line(text, [&](std::string_view raw, size_t line_no) {
    std::string_view line = trim(raw);
    if (line.empty()) return;
    if (line_no == 1 && line == "#!MLF!#") return;
    if (!in_entry) {
      if (line.size() < 3 || line.front() != '"' || line.back() != '"')
        throw IOError(where(line_no) + ": expected a quoted utterance name (\"*/name.lab\"), got '" +
                      std::string(line) + "'");
      std::string_view name = line.substr(1, line.size() - 2);
      if (name.size() > 2 && name[0] == '*' && name[1] == '/') name.remove_prefix(2);
      cur = MLFUtterance{};
      cur.key = std::string(name.substr(0, name.find_last_of('.')));  // as CNTK: the extension goes
      if (cur.key.empty()) cur.key = std::string(name);
      cur.where = where(line_no);
      cur_in_time = false;
      in_entry = true;
      return;
    }
    if (line == ".") {
      if (cur.num_frames == 0) {
        if (warnings) warnings->push_back(cur.where + ": utterance '" + cur.key + "' has no labels; skipped");
      } else {
        out.push_back(std::move(cur));
      }
      in_entry = false;
      return;
    }
    if (line.front() == '"')
      throw IOError(where(line_no) + ": utterance '" + cur.key + "' (" + cur.where + ") is not closed by a '.' line");
    auto tok = tokens_of(line);
    if (tok.size() < 3) throw IOError(where(line_no) + ": expected 'start end label', got '" + std::string(line) + "'");
    double ts = 0, te = 0;
    if (!parse_time(tok[0], ts) || !parse_time(tok[1], te) || ts < 0 || te < 0)
      throw IOError(where(line_no) + ": cannot read the start and end times of '" + std::string(line) + "'");
    // CNTK's rule: ranges of at least 99999 units are times in 100 ns, converted to 10 ms frames with rounding;
    // shorter ones are frame numbers already.
    // A zero-length label (an HTK "sp") says nothing about its unit: it takes the previous line's (CNTK reads
    // it as frame numbers, which breaks the entry when the times are in 100 ns).
    const bool in_time = te - ts >= 100000.0 - 1 || (te == ts && cur_in_time);
    cur_in_time = in_time;
    double fs = ts, fe = te;
    if (in_time) {
      fs = std::floor(ts / 100000.0 + 0.5);
      fe = std::floor(te / 100000.0 + 0.5);
    } else {
      fs = std::floor(ts);
      fe = std::floor(te);
    }
    if (fe < fs) throw IOError(where(line_no) + ": the end of '" + std::string(line) + "' is before its start");
    // 10^8 frames are 11 days of 10 ms frames: larger numbers are corrupt, and would make a chunk allocate gigabytes.
    if (fe > 1.0e8) throw IOError(where(line_no) + ": frame numbers of '" + std::string(line) + "' are too large");
    uint32_t label = 0;
    if (!states.empty()) {
      auto it = states.find(std::string(tok[2]));
      if (it == states.end())
        throw IOError(where(line_no) + ": label '" + std::string(tok[2]) + "' is not in the label mapping file");
      label = it->second;
    } else {
      if (tok.size() != 4)
        throw IOError(where(line_no) +
                      ": without a label mapping file each line must be 'start end name class', got '" +
                      std::string(line) + "'");
      const std::string c(tok[3]);
      char* end = nullptr;
      long v = std::strtol(c.c_str(), &end, 10);
      if (end != c.c_str() + c.size() || v < 0 || v > 0x7fffffffL)
        throw IOError(where(line_no) + ": class '" + c + "' is not a non-negative integer");
      label = uint32_t(v);
    }
    if (label >= dim)
      throw IOError(where(line_no) + ": class " + std::to_string(label) + " ('" + std::string(tok[2]) +
                    "') is not below the stream's dimension " + std::to_string(dim));
    MLFRange r{uint32_t(fs), uint32_t(fe - fs), label};
    const uint32_t expected = cur.ranges.empty() ? 0 : cur.ranges.back().first + cur.ranges.back().frames;
    if (r.first != expected)
      throw IOError(where(line_no) + ": utterance '" + cur.key + "': label starts at frame " + std::to_string(r.first) +
                    ", expected " + std::to_string(expected) +
                    (cur.ranges.empty() ? " (the first label starts at 0)" : " (labels must follow each other)"));
    cur.ranges.push_back(r);
    cur.num_frames = r.first + r.frames;
  });
  if (in_entry)
    throw IOError(cur.where + ": utterance '" + cur.key + "' is not closed by a '.' line before the end of the file");
  return out;
}

HTKMLFDeserializer::HTKMLFDeserializer(HTKMLFStreamDef def) : def_(std::move(def)) {
  if (def_.name.empty()) throw ValueError("HTKMLFDeserializer: the stream has no name");
  if (def_.mlf_files.empty()) throw ValueError("HTKMLFDeserializer: stream '" + def_.name + "' has no MLF file");
  if (def_.dim == 0 || def_.dim > 0x7fffffff)
    throw ValueError("HTKMLFDeserializer: stream '" + def_.name + "' needs a positive dimension below 2**31");
  if (def_.frames_per_chunk == 0) throw ValueError("HTKMLFDeserializer: frames_per_chunk must be positive");
  if (def_.dtype != DataType::Float && def_.dtype != DataType::Double)
    throw TypeError("HTKMLFDeserializer: stream '" + def_.name + "' must be float32 or float64");
  std::unordered_map<std::string, uint32_t> states;
  // As CNTK, a mapping file may list more states than the dimension; only a label beyond it is an error.
  if (!def_.label_mapping_file.empty()) states = read_label_mapping(def_.label_mapping_file);
  for (const auto& path : def_.mlf_files) {
    auto utts = parse_mlf(read_text(path, "MLF file"), path, states, def_.dim, &warnings_);
    for (auto& u : utts) utts_.push_back(std::move(u));
  }
  if (utts_.empty())
    throw IOError("HTKMLFDeserializer: the MLF file(s) of stream '" + def_.name + "' hold no labelled utterance");
  for (size_t i = 0; i < utts_.size(); ++i) by_key_.emplace_back(string_key_id(utts_[i].key), i);
  std::sort(by_key_.begin(), by_key_.end());
  for (size_t i = 1; i < by_key_.size(); ++i)
    if (by_key_[i].first == by_key_[i - 1].first) {
      const auto& a = utts_[by_key_[i - 1].second];
      const auto& b = utts_[by_key_[i].second];
      throw IOError(b.where + ": utterance '" + b.key + "' " +
                    (a.key == b.key ? "is labelled twice (also " : "has the same sequence key as '" + a.key + "' (") +
                    a.where + ")");
    }
  infos_.push_back({def_.name, NDShape{int64_t(def_.dim)}, true, def_.dtype, def_.defines_mb_size});
  size_t chunk_frames = 0;
  for (size_t i = 0; i < utts_.size(); ++i) {
    if (chunks_.empty() || chunk_frames > def_.frames_per_chunk) {
      chunks_.push_back(ChunkInfo{chunks_.size(), 0, 0});
      chunk_start_.push_back(i);
      chunk_frames = 0;
    }
    chunks_.back().num_sequences += 1;
    chunks_.back().num_samples += utts_[i].num_frames;
    chunk_frames += utts_[i].num_frames;
  }
  chunk_start_.push_back(utts_.size());
}

std::vector<uint64_t> HTKMLFDeserializer::chunk_keys(size_t chunk_id) {
  if (chunk_id >= chunks_.size())
    throw ValueError("HTKMLFDeserializer: chunk " + std::to_string(chunk_id) + " out of range");
  std::vector<uint64_t> keys;
  for (size_t i = chunk_start_[chunk_id]; i < chunk_start_[chunk_id + 1]; ++i)
    keys.push_back(string_key_id(utts_[i].key));
  return keys;
}

std::string HTKMLFDeserializer::key_name(uint64_t key) const {
  auto it = std::lower_bound(by_key_.begin(), by_key_.end(), std::make_pair(key, size_t(0)));
  if (it != by_key_.end() && it->first == key) return "'" + utts_[it->second].key + "'";
  return std::to_string(key);
}

std::vector<Sequence> HTKMLFDeserializer::load_chunk(size_t chunk_id) {
  if (chunk_id >= chunks_.size())
    throw ValueError("HTKMLFDeserializer: chunk " + std::to_string(chunk_id) + " out of range (stream '" + def_.name +
                     "' has " + std::to_string(chunks_.size()) + ")");
  std::vector<Sequence> out;
  for (size_t i = chunk_start_[chunk_id]; i < chunk_start_[chunk_id + 1]; ++i) {
    const MLFUtterance& u = utts_[i];
    Sequence s;
    s.key = string_key_id(u.key);
    s.streams.resize(1);
    SequenceStream& st = s.streams[0];
    st.num_samples = u.num_frames;
    st.indices.reserve(u.num_frames);
    for (const auto& r : u.ranges) st.indices.insert(st.indices.end(), r.frames, int32_t(r.label));
    st.offsets.resize(size_t(u.num_frames) + 1);
    for (size_t t = 0; t <= u.num_frames; ++t) st.offsets[t] = t;
    std::vector<double> values(u.num_frames, 1.0);
    if (def_.phone_boundaries)
      for (const auto& r : u.ranges)
        if (r.first < u.num_frames) values[r.first] = 2.0;  // CNTK's mark of a phone's first frame
    if (def_.dtype == DataType::Double)
      st.values_d = std::move(values);
    else
      st.values_f.assign(values.begin(), values.end());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace cntk::io
