// CNTK's serialized lattice (the bytes a lattice archive holds per utterance, which
// LatticeDeserializer streams and LatticeSequenceWithSoftmax decodes): format version 2 of
// msra::lattices::lattice, little-endian.
//
//   "LAT " int32 version (= 2)
//   header, 32 bytes: uint32 numnodes, uint32 numedges, float32 lmf, float32 wp,
//                     float64 frameduration, uint64 {numframes: bits 0-31,
//                     impliedspunitid: bits 32-62, hasacscores: bit 63}
//   "NODS" int32 n, n x uint16 node time (frame index)
//   "EDGS" int32 n, n x uint64 {S: bits 0-18, unused: bit 19, E: bits 20-38,
//                               implysp: bit 39, firstalign: bits 40-63}
//   "ALNS" int32 n, n x uint32 tokens: alignment units {unit: bits 0-18, frames: bits 19-29,
//                               unused: bit 30, last: bit 31}, and per-edge scores
//   "END "
//
// Edge j's units start at token firstalign and run to the one flagged `last`; the token
// before firstalign holds its LM score (float32 bits) and, when hasacscores, the one before
// that its acoustic score. Edges with equal alignments share tokens. An edge with implysp set
// ends with an implied unit `impliedspunitid` (/sp/) taking the edge's remaining frames. Only
// the final edge may have no units (firstalign == number of tokens): the 0-frame !NULL edge.
// Unit ids index the archive's symbol list (.symlist), not the model's HMMs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cntk::lattice {

struct AlignUnit {
  uint32_t unit = 0;    // symbol-list index
  uint32_t frames = 0;  // duration in frames (0 allowed: a tee unit)
};

struct LatticeEdge {
  uint32_t S = 0, E = 0;         // start and end node
  float ac = 0.0f, lm = 0.0f;    // stored acoustic and LM scores (ac is -1e30 when the file has none)
  std::vector<AlignUnit> units;  // the alignment, implied /sp/ expanded
};

struct Lattice {
  uint32_t num_frames = 0;
  float lmf = 1.0f, wp = 0.0f;
  double frame_duration = 0.01;
  uint32_t implied_sp_unit = 0x7fffffff;  // 31 bits; 0x7fffffff: none
  bool has_ac_scores = true;
  std::vector<uint16_t> node_times;
  std::vector<LatticeEdge> edges;  // sorted by end node, then start node
};

// Decodes one serialized lattice from `size` bytes (trailing bytes after "END " are ignored: the
// reader pads lattices to whole float32 samples). Every count, offset and bit field is checked
// against the buffer and the structure (edges in order, node times non-decreasing, alignments
// exactly covering their edges); a violation raises cntk::IOError "<where>: <what is wrong>".
Lattice decode_lattice(const uint8_t* data, size_t size, const std::string& where);

// The bytes of `lat` in the format above: what CNTK's lattice::fwrite writes for version 2, except
// that alignments are not shared between edges. An edge whose last unit is `implied_sp_unit`
// (with at least one unit before it) is stored with the implysp flag, as CNTK does.
// Raises cntk::ValueError for values the bit fields cannot hold.
std::vector<uint8_t> encode_lattice(const Lattice& lat);

// The bytes of a lattice stream sample sequence: a lattice's bytes are carried as float32 samples
// of shape (1,), zero-padded to a multiple of 4 bytes.
inline size_t lattice_samples_for_bytes(size_t n) { return (n + 3) / 4; }

}  // namespace cntk::lattice
