#include "ops/lattice_format.h"

#include <cstring>

#include "cntk/common.h"

namespace cntk::lattice {
namespace {

constexpr uint32_t kNoSpUnit = 0x7fffffff;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& where) : p_(data), size_(size), where_(where) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw IOError(where_ + ": " + what + " (at byte " + std::to_string(pos_) + ")");
  }
  void need(size_t n, const char* what) const {
    if (size_ - pos_ < n)
      fail(std::string("the lattice ends inside ") + what + " (" + std::to_string(n) + " bytes needed, " +
           std::to_string(size_ - pos_) + " left)");
  }
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void tag(const char* expected) {
    need(4, expected);
    if (std::memcmp(p_ + pos_, expected, 4) != 0) {
      std::string got;
      for (int i = 0; i < 4; ++i) {
        char c = char(p_[pos_ + size_t(i)]);
        got += (c >= 32 && c < 127) ? std::string(1, c) : "\\x" + std::to_string(int(uint8_t(c)));
      }
      fail(std::string("expected the tag '") + expected + "', found '" + got + "'");
    }
    pos_ += 4;
  }
  // A tag followed by an element count; `expected` (when not SIZE_MAX) must match.
  size_t counted(const char* t, size_t elem_size, size_t expected) {
    tag(t);
    int32_t n = get<int32_t>(t);
    if (n < 0) fail(std::string("negative element count ") + std::to_string(n) + " for '" + t + "'");
    if (expected != SIZE_MAX && size_t(n) != expected)
      fail(std::string("'") + t + "' has " + std::to_string(n) + " elements, the header says " +
           std::to_string(expected));
    need(size_t(n) * elem_size, t);
    return size_t(n);
  }

 private:
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& where_;
};

uint64_t bits(uint64_t v, int lo, int n) { return (v >> lo) & ((uint64_t(1) << n) - 1); }

float float_of(uint32_t token) {
  float f;
  std::memcpy(&f, &token, 4);
  return f;
}
uint32_t token_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  for (uint8_t c : b) out.push_back(c);
}
void put_tag(std::vector<uint8_t>& out, const char* t) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(t[i]));
}

}  // namespace

Lattice decode_lattice(const uint8_t* data, size_t size, const std::string& where) {
  Reader r(data, size, where);
  Lattice lat;
  r.tag("LAT ");
  int32_t version = r.get<int32_t>("the version");
  if (version != 2)
    r.fail("unsupported lattice format version " + std::to_string(version) + " (only version 2 is read)");
  uint32_t numnodes = r.get<uint32_t>("the header");
  uint32_t numedges = r.get<uint32_t>("the header");
  lat.lmf = r.get<float>("the header");
  lat.wp = r.get<float>("the header");
  lat.frame_duration = r.get<double>("the header");
  uint64_t packed = r.get<uint64_t>("the header");
  lat.num_frames = uint32_t(bits(packed, 0, 32));
  lat.implied_sp_unit = uint32_t(bits(packed, 32, 31));
  lat.has_ac_scores = bits(packed, 63, 1) != 0;
  if (numnodes < 2) r.fail("a lattice needs at least 2 nodes, the header says " + std::to_string(numnodes));
  if (numedges < 1) r.fail("a lattice needs at least 1 edge, the header says 0");

  size_t n = r.counted("NODS", 2, numnodes);
  lat.node_times.resize(n);
  for (size_t i = 0; i < n; ++i) lat.node_times[i] = r.get<uint16_t>("NODS");
  if (lat.node_times.front() != 0)
    r.fail("the first node has time " + std::to_string(lat.node_times.front()) + ", not 0");
  if (lat.node_times.back() != lat.num_frames)
    r.fail("the last node has time " + std::to_string(lat.node_times.back()) + " but the header says " +
           std::to_string(lat.num_frames) + " frames");
  for (size_t i = 1; i < n; ++i)
    if (lat.node_times[i] < lat.node_times[i - 1])
      r.fail("node " + std::to_string(i) + " is earlier than node " + std::to_string(i - 1));

  size_t m = r.counted("EDGS", 8, numedges);
  std::vector<uint64_t> packed_edges(m);
  for (size_t j = 0; j < m; ++j) packed_edges[j] = r.get<uint64_t>("EDGS");
  size_t k = r.counted("ALNS", 4, SIZE_MAX);
  std::vector<uint32_t> tokens(k);
  for (size_t i = 0; i < k; ++i) tokens[i] = r.get<uint32_t>("ALNS");
  r.tag("END ");

  const size_t score_tokens = lat.has_ac_scores ? 2 : 1;
  lat.edges.resize(m);
  for (size_t j = 0; j < m; ++j) {
    uint64_t e = packed_edges[j];
    LatticeEdge& edge = lat.edges[j];
    edge.S = uint32_t(bits(e, 0, 19));
    edge.E = uint32_t(bits(e, 20, 19));
    bool implysp = bits(e, 39, 1) != 0;
    size_t first = size_t(bits(e, 40, 24));
    std::string which = "edge " + std::to_string(j);
    if (edge.S >= numnodes || edge.E >= numnodes)
      r.fail(which + " joins nodes " + std::to_string(edge.S) + " -> " + std::to_string(edge.E) + " of " +
             std::to_string(numnodes));
    if (edge.E <= edge.S)
      r.fail(which + " does not go forward (" + std::to_string(edge.S) + " -> " + std::to_string(edge.E) + ")");
    if (j > 0 && (edge.E < lat.edges[j - 1].E || (edge.E == lat.edges[j - 1].E && edge.S < lat.edges[j - 1].S)))
      r.fail(which + " is out of order: edges must be sorted by end node, then start node");
    if (first < score_tokens || first > k)
      r.fail(which + " has its alignment at token " + std::to_string(first) + " of " + std::to_string(k));
    edge.lm = float_of(tokens[first - 1]);
    edge.ac = lat.has_ac_scores ? float_of(tokens[first - 2]) : -1e30f;
    size_t duration = size_t(lat.node_times[edge.E] - lat.node_times[edge.S]);
    size_t aligned = 0;
    if (first == k) {  // no units: only the 0-frame final edge may be like that
      if (j + 1 != m || duration != 0) r.fail(which + " has no alignment; only the last, 0-frame edge may have none");
    } else {
      for (size_t t = first;; ++t) {
        if (t >= k) r.fail(which + "'s alignment runs past the end of the tokens (no 'last' flag)");
        uint32_t tok = tokens[t];
        if (bits(tok, 30, 1) != 0) r.fail(which + " has an alignment token with the unused bit set");
        AlignUnit u{uint32_t(bits(tok, 0, 19)), uint32_t(bits(tok, 19, 11))};
        aligned += u.frames;
        edge.units.push_back(u);
        if (bits(tok, 31, 1) != 0) break;
      }
    }
    if (implysp) {
      if (lat.implied_sp_unit == kNoSpUnit) r.fail(which + " implies a /sp/ unit but the header names none");
      if (aligned > duration)
        r.fail(which + " aligns " + std::to_string(aligned) + " frames but spans " + std::to_string(duration));
      edge.units.push_back({lat.implied_sp_unit, uint32_t(duration - aligned)});
      aligned = duration;
    }
    if (aligned != duration)
      r.fail(which + " aligns " + std::to_string(aligned) + " frames but spans " + std::to_string(duration) +
             " (nodes " + std::to_string(edge.S) + " -> " + std::to_string(edge.E) + ")");
  }
  return lat;
}

std::vector<uint8_t> encode_lattice(const Lattice& lat) {
  auto check = [](uint64_t v, int nbits, const std::string& what) {
    if (v >= (uint64_t(1) << nbits))
      throw ValueError("encode_lattice: " + what + " = " + std::to_string(v) + " does not fit in " +
                       std::to_string(nbits) + " bits");
  };
  if (lat.node_times.size() < 2) throw ValueError("encode_lattice: a lattice needs at least 2 nodes");
  if (lat.edges.empty()) throw ValueError("encode_lattice: a lattice needs at least 1 edge");
  check(lat.implied_sp_unit, 31, "implied_sp_unit");
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> packed_edges;
  for (size_t j = 0; j < lat.edges.size(); ++j) {
    const LatticeEdge& e = lat.edges[j];
    std::string which = "edge " + std::to_string(j);
    check(e.S, 19, which + " S");
    check(e.E, 19, which + " E");
    if (lat.has_ac_scores) tokens.push_back(token_of(e.ac));
    tokens.push_back(token_of(e.lm));
    size_t first = tokens.size();
    check(first, 24, which + " firstalign");
    size_t nunits = e.units.size();
    bool implysp = nunits > 1 && e.units.back().unit == lat.implied_sp_unit;
    if (implysp) --nunits;
    for (size_t u = 0; u < nunits; ++u) {
      check(e.units[u].unit, 19, which + " unit");
      check(e.units[u].frames, 11, which + " frames");
      uint32_t tok = e.units[u].unit | (e.units[u].frames << 19) | (u + 1 == nunits ? 0x80000000u : 0u);
      tokens.push_back(tok);
    }
    if (nunits == 0) {
      if (j + 1 != lat.edges.size())
        throw ValueError("encode_lattice: " + which + " has no units; only the last edge may");
      first = tokens.size();  // the last edge: firstalign == number of tokens
    }
    packed_edges.push_back(uint64_t(e.S) | (uint64_t(e.E) << 20) | (uint64_t(implysp ? 1 : 0) << 39) |
                           (uint64_t(first) << 40));
  }
  std::vector<uint8_t> out;
  put_tag(out, "LAT ");
  put<int32_t>(out, 2);
  put<uint32_t>(out, uint32_t(lat.node_times.size()));
  put<uint32_t>(out, uint32_t(lat.edges.size()));
  put<float>(out, lat.lmf);
  put<float>(out, lat.wp);
  put<double>(out, lat.frame_duration);
  put<uint64_t>(out, uint64_t(lat.num_frames) | (uint64_t(lat.implied_sp_unit) << 32) |
                         (uint64_t(lat.has_ac_scores ? 1 : 0) << 63));
  put_tag(out, "NODS");
  put<int32_t>(out, int32_t(lat.node_times.size()));
  for (uint16_t t : lat.node_times) put<uint16_t>(out, t);
  put_tag(out, "EDGS");
  put<int32_t>(out, int32_t(packed_edges.size()));
  for (uint64_t e : packed_edges) put<uint64_t>(out, e);
  put_tag(out, "ALNS");
  put<int32_t>(out, int32_t(tokens.size()));
  for (uint32_t t : tokens) put<uint32_t>(out, t);
  put_tag(out, "END ");
  return out;
}

}  // namespace cntk::lattice
