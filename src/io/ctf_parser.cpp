#include "io/ctf_parser.h"

#include <charconv>
#include <cstring>
#include <limits>
#include <utility>

namespace cntk::io {
namespace {

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

// End of a value token: whitespace, the next '|', or the end of the line.
inline const char* token_end(const char* p, const char* end) {
  while (p < end && *p != ' ' && *p != '\t' && *p != '|') ++p;
  return p;
}

std::string quote(const char* b, const char* e) {
  constexpr size_t kMax = 40;
  size_t n = size_t(e - b);
  std::string s(b, n < kMax ? n : kMax);
  if (n > kMax) s += "...";
  return "'" + s + "'";
}

// A real number: optional sign, digits with an optional fraction, optional exponent.
template <typename T>
bool parse_number(const char* b, const char* e, T& out) {
  if (b < e && *b == '+') ++b;
  const char* b0 = b;
  if (b < e && *b == '-') ++b;
  // Digits with an optional fraction ("2", "2.5", "2.", ".5"; not "." nor "inf"), then an optional exponent.
  const char* q = b;
  while (q < e && *q >= '0' && *q <= '9') ++q;
  bool digits = q > b;
  if (q < e && *q == '.') {
    const char* f = ++q;
    while (q < e && *q >= '0' && *q <= '9') ++q;
    digits = digits || q > f;
  }
  if (!digits) return false;
  if (q < e && *q != 'e' && *q != 'E') return false;
  if (b > b0 && b[-1] == '-') --b;
  auto r = std::from_chars(b, e, out, std::chars_format::general);
  if (r.ec == std::errc::result_out_of_range && r.ptr == e && sizeof(T) < sizeof(double)) {
    // Beyond float's range: read as double and round, as a cast from double would (overflow gives inf).
    double d;
    auto rd = std::from_chars(b, e, d, std::chars_format::general);
    if (rd.ec != std::errc() || rd.ptr != e) return false;
    constexpr double kMax = double(std::numeric_limits<T>::max());
    out = d > kMax ? std::numeric_limits<T>::infinity() : d < -kMax ? -std::numeric_limits<T>::infinity() : T(d);
    return true;
  }
  return r.ec == std::errc() && r.ptr == e;
}

bool parse_index(const char* b, const char* e, uint64_t& out) {
  if (b == e || *b < '0' || *b > '9') return false;
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

struct LineError {
  std::string what;
};

}  // namespace

CTFParser::CTFParser(std::string path, std::vector<CTFStreamConfig> streams, CTFOptions options)
    : path_(std::move(path)), streams_(std::move(streams)), options_(options) {
  if (streams_.empty()) throw ValueError("CTF parser: no streams configured for " + path_);
  for (size_t i = 0; i < streams_.size(); ++i) {
    const auto& s = streams_[i];
    if (s.alias.empty()) throw ValueError("CTF parser: stream " + std::to_string(i) + " has no alias");
    if (s.dim == 0) throw ValueError("CTF parser: stream '" + s.alias + "' has dimension 0");
    if (s.dtype != DataType::Float && s.dtype != DataType::Double)
      throw ValueError("CTF parser: stream '" + s.alias + "' must be float or double");
    for (size_t j = 0; j < i; ++j)
      if (streams_[j].alias == s.alias) throw ValueError("CTF parser: stream '" + s.alias + "' configured twice");
  }
  if (options_.chunk_size < 16) options_.chunk_size = 16;
  file_ = std::fopen(path_.c_str(), "rb");
  if (!file_) throw IOError("cannot open CTF file '" + path_ + "': " + std::strerror(errno));
  if (options_.start_offset > 0) {
    if (std::fseek(file_, long(options_.start_offset), SEEK_SET) != 0) {
      std::fclose(file_);
      file_ = nullptr;
      throw IOError("cannot seek to byte " + std::to_string(options_.start_offset) + " of CTF file '" + path_ + "'");
    }
    buf_file_pos_ = options_.start_offset;
  }
  if (options_.start_offset == 0) {  // a UTF-8 byte order mark at the start of the file is skipped
    unsigned char bom[3] = {0, 0, 0};
    size_t n = std::fread(bom, 1, 3, file_);
    if (n == 3 && bom[0] == 0xEF && bom[1] == 0xBB && bom[2] == 0xBF)
      buf_file_pos_ = 3;
    else
      std::rewind(file_);
  }
  line_no_ = options_.start_line;
  if (options_.file_has_ids >= 0) {
    ids_decided_ = true;
    file_has_ids_ = options_.file_has_ids > 0;
  }
  buf_.resize(options_.chunk_size);
  seen_.resize(streams_.size());
  mark_.resize(4 * streams_.size());
  pending_.streams.resize(streams_.size());
}

CTFParser::~CTFParser() {
  if (file_) std::fclose(file_);
}

void CTFParser::fail(const std::string& what) const {
  throw IOError(path_ + ":" + std::to_string(line_no_) + ": " + what);
}

void CTFParser::record_error(const std::string& what) {
  std::string msg = path_ + ":" + std::to_string(line_no_) + ": " + what;
  if (warnings_.size() >= options_.max_errors)
    throw IOError(msg + " (" + std::to_string(warnings_.size() + 1) + " malformed lines, at most " +
                  std::to_string(options_.max_errors) + " allowed)");
  warnings_.push_back(std::move(msg));
}

int CTFParser::find_stream(const char* name, size_t len) const {
  for (size_t i = 0; i < streams_.size(); ++i)
    if (streams_[i].alias.size() == len && std::memcmp(streams_[i].alias.data(), name, len) == 0) return int(i);
  return -1;
}

bool CTFParser::read_line(const char*& begin, const char*& end) {
  for (;;) {
    const char* b = buf_.data() + buf_begin_;
    const char* e = buf_.data() + buf_end_;
    const char* nl = static_cast<const char*>(std::memchr(b, '\n', size_t(e - b)));
    if (nl || (eof_ && b < e)) {
      const char* line_end = nl ? nl : e;
      buf_begin_ = size_t((nl ? nl + 1 : e) - buf_.data());
      if (line_end > b && line_end[-1] == '\r') --line_end;
      ++line_no_;
      line_offset_ = buf_file_pos_ + uint64_t(b - buf_.data());
      begin = b;
      end = line_end;
      return true;
    }
    if (eof_) return false;
    // Keep the unfinished line, then read the next chunk after it.
    size_t tail = buf_end_ - buf_begin_;
    if (buf_begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + buf_begin_, tail);
      buf_file_pos_ += buf_begin_;
      buf_begin_ = 0;
      buf_end_ = tail;
    }
    if (buf_.size() - buf_end_ < options_.chunk_size) buf_.resize(buf_end_ + options_.chunk_size);
    size_t n = std::fread(buf_.data() + buf_end_, 1, options_.chunk_size, file_);
    if (n < options_.chunk_size) {
      if (std::ferror(file_)) throw IOError("error reading CTF file '" + path_ + "'");
      eof_ = true;
    }
    buf_end_ += n;
  }
}

bool CTFParser::parse_line(const char* p, const char* end, CTFSequence& seq) {
  std::fill(seen_.begin(), seen_.end(), uint8_t(0));
  bool any = false;
  while (p < end) {
    while (p < end && is_blank(*p)) ++p;
    if (p == end) break;
    if (*p != '|') throw LineError{"expected '|' followed by a stream name, found " + quote(p, token_end(p + 1, end))};
    ++p;
    if (p < end && *p == '#') {  // comment: up to the end of the line or the next '|' not followed by '#'
      ++p;
      for (;;) {
        const char* bar = static_cast<const char*>(std::memchr(p, '|', size_t(end - p)));
        if (!bar) {
          p = end;
          break;
        }
        if (bar + 1 < end && bar[1] == '#') {
          p = bar + 2;
          continue;
        }
        p = bar;
        break;
      }
      continue;
    }
    const char* name = p;
    while (p < end && !is_blank(*p) && *p != '|') ++p;
    if (p == name) throw LineError{"expected a stream name after '|'"};
    int si = find_stream(name, size_t(p - name));
    if (si < 0) {  // a stream that is not configured: its values are skipped
      while (p < end && *p != '|') ++p;
      continue;
    }
    const CTFStreamConfig& cfg = streams_[size_t(si)];
    if (seen_[size_t(si)]) throw LineError{"stream '" + cfg.alias + "' given twice on one line"};
    seen_[size_t(si)] = 1;
    CTFStreamData& d = seq.streams[size_t(si)];
    const bool dbl = cfg.dtype == DataType::Double;
    size_t count = 0;
    if (!cfg.sparse) {
      for (;;) {
        while (p < end && is_blank(*p)) ++p;
        if (p == end || *p == '|') break;
        const char* te = token_end(p, end);
        bool ok;
        if (dbl) {
          double v;
          ok = parse_number(p, te, v);
          if (ok) d.values_d.push_back(v);
        } else {
          float v;
          ok = parse_number(p, te, v);
          if (ok) d.values_f.push_back(v);
        }
        if (!ok) throw LineError{"expected a number in dense stream '" + cfg.alias + "', found " + quote(p, te)};
        ++count;
        p = te;
      }
      if (count == 0) continue;  // an empty sample: the stream has no sample on this line
      if (count != cfg.dim)
        throw LineError{"expected " + std::to_string(cfg.dim) + " values in dense stream '" + cfg.alias + "', found " +
                        std::to_string(count)};
    } else {
      for (;;) {
        while (p < end && is_blank(*p)) ++p;
        if (p == end || *p == '|') break;
        const char* te = token_end(p, end);
        const char* colon = static_cast<const char*>(std::memchr(p, ':', size_t(te - p)));
        const char* ie = colon ? colon : te;
        uint64_t idx;
        if (!parse_index(p, ie, idx))
          throw LineError{"expected an index (or index:value) in sparse stream '" + cfg.alias + "', found " +
                          quote(p, te)};
        if (idx >= cfg.dim)
          throw LineError{"index " + std::to_string(idx) + " out of range in sparse stream '" + cfg.alias +
                          "' of dimension " + std::to_string(cfg.dim)};
        if (!colon && options_.require_sparse_values)
          throw LineError{"expected ':' and a value after index " + std::to_string(idx) + " in sparse stream '" +
                          cfg.alias + "'"};
        bool ok = true;
        if (dbl) {
          double v = 1;
          if (colon) ok = parse_number(colon + 1, te, v);
          if (ok) d.values_d.push_back(v);
        } else {
          float v = 1;
          if (colon) ok = parse_number(colon + 1, te, v);
          if (ok) d.values_f.push_back(v);
        }
        if (!ok)
          throw LineError{"expected a number after ':' in sparse stream '" + cfg.alias + "', found " + quote(p, te)};
        d.indices.push_back(int32_t(idx));
        ++count;
        p = te;
      }
      if (count == 0) continue;
      if (d.offsets.empty()) d.offsets.push_back(0);
      d.offsets.push_back(d.indices.size());
    }
    ++d.num_samples;
    any = true;
  }
  return any;
}

bool CTFParser::next(CTFSequence& seq) {
  const char* b;
  const char* e;
  while (read_line(b, e)) {
    const char* p = b;
    while (p < e && is_blank(*p)) ++p;
    if (p == e) continue;  // blank line
    bool has_id = false;
    uint64_t id = line_no_;
    try {
      if (*p >= '0' && *p <= '9') {
        const char* q = p;
        while (q < e && *q >= '0' && *q <= '9') ++q;
        if (q < e && !is_blank(*q) && *q != '|')
          throw LineError{"expected a sequence id (digits) followed by '|', found " + quote(p, token_end(q, e))};
        auto r = std::from_chars(p, q, id);
        if (r.ec != std::errc()) throw LineError{"sequence id " + quote(p, q) + " out of range"};
        has_id = true;
        p = q;
      } else if (*p != '|') {
        throw LineError{"expected a sequence id or '|', found " + quote(p, token_end(p + 1, e))};
      }
    } catch (const LineError& err) {
      if (options_.max_errors == 0) fail(err.what);
      record_error(err.what);
      continue;
    }

    // The first line decides: a file whose first line has an id continues the current sequence on
    // lines without one; otherwise every line without an id is a sequence of its own.
    if (!ids_decided_) {
      ids_decided_ = true;
      file_has_ids_ = has_id;
    }
    bool continues = pending_valid_ && (has_id ? pending_.has_id && pending_.id == id : file_has_ids_);
    bool emit = false;
    if (pending_valid_ && !continues) {
      bool nonempty = false;
      for (auto& s : pending_.streams) nonempty |= s.num_samples > 0;
      if (nonempty) {
        std::swap(seq, pending_);
        emit = true;
      }
      pending_valid_ = false;
    }
    if (!pending_valid_) {
      pending_.streams.resize(streams_.size());
      for (auto& s : pending_.streams) s.clear();
      pending_.has_id = has_id;
      pending_.id = id;
      pending_.first_line = line_no_;
      pending_.offset = line_offset_;
      pending_valid_ = true;
    }

    // Sizes before the line, to undo a malformed line.
    size_t nstreams = streams_.size();
    size_t* m = mark_.data();
    for (size_t i = 0; i < nstreams; ++i) {
      const auto& s = pending_.streams[i];
      m[4 * i] = s.num_samples;
      m[4 * i + 1] = s.values_f.size() + s.values_d.size();
      m[4 * i + 2] = s.indices.size();
      m[4 * i + 3] = s.offsets.size();
    }
    try {
      parse_line(p, e, pending_);
    } catch (const LineError& err) {
      if (options_.max_errors == 0) fail(err.what);
      for (size_t i = 0; i < nstreams; ++i) {
        auto& s = pending_.streams[i];
        s.num_samples = m[4 * i];
        if (streams_[i].dtype == DataType::Double)
          s.values_d.resize(m[4 * i + 1]);
        else
          s.values_f.resize(m[4 * i + 1]);
        s.indices.resize(m[4 * i + 2]);
        s.offsets.resize(m[4 * i + 3]);
      }
      record_error(err.what);
    }
    if (emit) return true;
  }
  if (pending_valid_) {
    pending_valid_ = false;
    bool nonempty = false;
    for (auto& s : pending_.streams) nonempty |= s.num_samples > 0;
    if (nonempty) {
      std::swap(seq, pending_);
      return true;
    }
  }
  return false;
}

}  // namespace cntk::io
