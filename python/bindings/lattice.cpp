// Bindings of lattice sequence training's file formats: the lattice deserializer (src/io) and the
// serialized lattice codec (src/ops/lattice_format.h), which tests use to write small lattices.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "../../src/io/lattice_deserializer.h"
#include "../../src/ops/lattice_format.h"

namespace nb = nanobind;
using namespace cntk;

namespace {

using EdgeTuple = std::tuple<uint32_t, uint32_t, float, float, std::vector<std::tuple<uint32_t, uint32_t>>>;

nb::bytes encode(uint32_t num_frames, const std::vector<uint16_t>& node_times, const std::vector<EdgeTuple>& edges,
                 float lmf, float wp, double frame_duration, uint32_t implied_sp_unit, bool has_ac_scores) {
  lattice::Lattice lat;
  lat.num_frames = num_frames;
  lat.node_times = node_times;
  lat.lmf = lmf;
  lat.wp = wp;
  lat.frame_duration = frame_duration;
  lat.implied_sp_unit = implied_sp_unit;
  lat.has_ac_scores = has_ac_scores;
  for (const auto& [S, E, ac, lm, units] : edges) {
    lattice::LatticeEdge e;
    e.S = S;
    e.E = E;
    e.ac = ac;
    e.lm = lm;
    for (const auto& [u, f] : units) e.units.push_back({u, f});
    lat.edges.push_back(std::move(e));
  }
  std::vector<uint8_t> b = lattice::encode_lattice(lat);
  return nb::bytes(reinterpret_cast<const char*>(b.data()), b.size());
}

nb::dict decode(nb::bytes data) {
  lattice::Lattice lat =
      lattice::decode_lattice(reinterpret_cast<const uint8_t*>(data.c_str()), data.size(), "lattice bytes");
  nb::dict d;
  d["num_frames"] = lat.num_frames;
  d["lmf"] = lat.lmf;
  d["wp"] = lat.wp;
  d["frame_duration"] = lat.frame_duration;
  d["implied_sp_unit"] = lat.implied_sp_unit;
  d["has_ac_scores"] = lat.has_ac_scores;
  d["node_times"] = lat.node_times;
  nb::list edges;
  for (const auto& e : lat.edges) {
    nb::list units;
    for (const auto& u : e.units) units.append(nb::make_tuple(u.unit, u.frames));
    edges.append(nb::make_tuple(e.S, e.E, e.ac, e.lm, units));
  }
  d["edges"] = edges;
  return d;
}

}  // namespace

void bind_lattice(nb::module_& m) {
  m.def(
      "lattice_deserializer",
      [](const std::string& index_path, const std::string& stream_name, size_t chunk_size, bool numeric_keys) {
        io::LatticeDeserializerOptions o;
        o.chunk_size = chunk_size;
        o.numeric_keys = numeric_keys;
        nb::gil_scoped_release release;
        return std::shared_ptr<io::Deserializer>(std::make_shared<io::LatticeDeserializer>(index_path, stream_name, o));
      },
      nb::arg("index_path"), nb::arg("stream_name"), nb::arg("chunk_size") = size_t(64) << 20,
      nb::arg("numeric_keys") = false, "A lattice deserializer (see src/io/lattice_deserializer.h).");
  m.def("_encode_lattice", &encode, nb::arg("num_frames"), nb::arg("node_times"), nb::arg("edges"),
        nb::arg("lmf") = 1.0f, nb::arg("wp") = 0.0f, nb::arg("frame_duration") = 0.01,
        nb::arg("implied_sp_unit") = 0x7fffffffu, nb::arg("has_ac_scores") = true,
        "The bytes of a serialized lattice (format version 2; see src/ops/lattice_format.h). Edges are "
        "(S, E, ac, lm, [(unit, frames), ...]), sorted by end node then start node.");
  m.def("_decode_lattice", &decode, nb::arg("data"),
        "A serialized lattice's contents as a dict (num_frames, node_times, edges, lmf, wp, ...).");
  m.def(
      "_lattice_key", [](const std::string& name) { return io::LatticeDeserializer::name_key(name); },
      "The sequence key of an utterance name (64-bit FNV-1a).");
}
