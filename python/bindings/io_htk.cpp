// Bindings of the speech deserializers (src/io/htk_features.h, src/io/mlf.h): factories returning
// _cntk.Deserializer objects (bound in io.cpp) for cntk.io.HTKFeatureDeserializer / HTKMLFDeserializer.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "../../src/io/htk_features.h"
#include "../../src/io/mlf.h"

namespace nb = nanobind;
using namespace cntk;
using namespace cntk::io;

void bind_io_htk(nb::module_& m) {
  m.def(
      "htk_feature_deserializer",
      [](const std::string& name, const std::vector<std::string>& scp_files, size_t dim, size_t left, size_t right,
         bool broadcast, bool defines_mb_size, size_t max_sequence_length, int dtype, size_t frames_per_chunk) {
        HTKFeatureStreamDef d;
        d.name = name;
        d.scp_files = scp_files;
        d.dim = dim;
        d.left_context = left;
        d.right_context = right;
        d.broadcast = broadcast;
        d.defines_mb_size = defines_mb_size;
        d.max_sequence_length = max_sequence_length;
        d.dtype = DataType(dtype);
        d.frames_per_chunk = frames_per_chunk;
        nb::gil_scoped_release release;
        return std::shared_ptr<Deserializer>(std::make_shared<HTKFeatureDeserializer>(std::move(d)));
      },
      nb::arg("name"), nb::arg("scp_files"), nb::arg("dim"), nb::arg("left_context"), nb::arg("right_context"),
      nb::arg("broadcast"), nb::arg("defines_mb_size"), nb::arg("max_sequence_length"), nb::arg("dtype"),
      nb::arg("frames_per_chunk"), "An HTK feature deserializer (see src/io/htk_features.h).");

  m.def(
      "htk_mlf_deserializer",
      [](const std::string& name, const std::string& label_mapping_file, size_t dim,
         const std::vector<std::string>& mlf_files, bool phone_boundaries, int dtype, bool defines_mb_size,
         size_t frames_per_chunk) {
        HTKMLFStreamDef d;
        d.name = name;
        d.label_mapping_file = label_mapping_file;
        d.dim = dim;
        d.mlf_files = mlf_files;
        d.phone_boundaries = phone_boundaries;
        d.dtype = DataType(dtype);
        d.defines_mb_size = defines_mb_size;
        d.frames_per_chunk = frames_per_chunk;
        nb::gil_scoped_release release;
        return std::shared_ptr<Deserializer>(std::make_shared<HTKMLFDeserializer>(std::move(d)));
      },
      nb::arg("name"), nb::arg("label_mapping_file"), nb::arg("dim"), nb::arg("mlf_files"), nb::arg("phone_boundaries"),
      nb::arg("dtype"), nb::arg("defines_mb_size"), nb::arg("frames_per_chunk"),
      "An HTK MLF label deserializer (see src/io/mlf.h).");

  m.def(
      "_htk_deserializer_warnings",
      [](std::shared_ptr<Deserializer> d) {
        if (auto* f = dynamic_cast<HTKFeatureDeserializer*>(d.get())) return f->warnings();
        if (auto* l = dynamic_cast<HTKMLFDeserializer*>(d.get())) return l->warnings();
        throw TypeError("not an HTK deserializer");
      },
      "What an HTK feature or MLF deserializer skipped while indexing (duplicates, empty or long utterances).");
}
