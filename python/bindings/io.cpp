// Bindings of the data-reader layer (src/io): the Deserializer interface. Concrete deserializers
// (CTF, CBF, images) are returned from factory functions as Deserializer objects; cntk.io's
// MinibatchSource takes them. load_chunk exposes a chunk as Python data for tests and tools.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "../../src/io/deserializer.h"

namespace nb = nanobind;
using namespace cntk;
using namespace cntk::io;

namespace {

template <class T>
nb::object to_numpy(const std::vector<T>& v, std::vector<size_t> shape) {
  T* data = new T[v.size() ? v.size() : 1];
  std::copy(v.begin(), v.end(), data);
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T>(data, shape.size(), shape.data(), owner));
}

// One stream of one sequence as Python data: a dense [num_samples, dim] array, or for sparse
// streams a tuple (indices, offsets, values) in CSR-by-sample layout.
nb::object stream_to_python(const StreamInfo& info, const SequenceStream& s) {
  auto values = [&](std::vector<size_t> shape) {
    return info.dtype == DataType::Double ? to_numpy(s.values_d, shape) : to_numpy(s.values_f, shape);
  };
  if (!info.sparse) return values({s.num_samples, info.dim()});
  std::vector<int64_t> offsets(s.offsets.begin(), s.offsets.end());
  if (offsets.empty()) offsets.push_back(0);
  return nb::make_tuple(to_numpy(s.indices, {s.indices.size()}), to_numpy(offsets, {offsets.size()}),
                        values({s.indices.size()}));
}

}  // namespace

void bind_io(nb::module_& m) {
  nb::class_<Deserializer>(m, "Deserializer")
      .def_prop_ro("stream_names",
                   [](Deserializer& d) {
                     std::vector<std::string> names;
                     for (const auto& s : d.streams()) names.push_back(s.name);
                     return names;
                   })
      .def("num_chunks", [](Deserializer& d) { return d.chunks().size(); })
      .def("chunk_info",
           [](Deserializer& d, size_t i) {
             const auto& c = d.chunks();
             if (i >= c.size()) throw nb::index_error("chunk id out of range");
             return nb::make_tuple(c[i].num_sequences, c[i].num_samples);
           })
      .def(
          "load_chunk",
          [](Deserializer& d, size_t i) {
            if (i >= d.chunks().size()) throw nb::index_error("chunk id out of range");
            std::vector<Sequence> seqs;
            {
              nb::gil_scoped_release release;
              seqs = d.load_chunk(i);
            }
            nb::list out;
            for (const auto& seq : seqs) {
              nb::dict streams;
              for (size_t k = 0; k < d.streams().size(); ++k)
                streams[d.streams()[k].name.c_str()] = stream_to_python(d.streams()[k], seq.streams[k]);
              out.append(nb::make_tuple(seq.key, streams));
            }
            return out;
          },
          "The sequences of one chunk as a list of (key, {stream name: data}); dense data is a "
          "[num_samples, dim] array, sparse data a tuple (indices, offsets, values).");
}
