// Bindings of the data-reader layer (src/io): the Deserializer interface. Concrete deserializers
// (CTF, CBF, images) are returned from factory functions as Deserializer objects; cntk.io's
// MinibatchSource takes them. load_chunk exposes a chunk as Python data for tests and tools.
// A deserializer written in Python (cntk.io.UserDeserializer) becomes a native one through
// PyDeserializer, which calls back into Python (taking the GIL) to load a chunk.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "../../src/io/ctf_deserializer.h"
#include "../../src/io/deserializer.h"
#include "../../src/io/minibatch_source.h"
#include "convert.h"

namespace nb = nanobind;
using namespace cntk;
using namespace cntk::io;
using namespace cntk::bindings;

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

// (name, shape, is_sparse, dtype code, defines_mb_size) of a stream.
nb::tuple stream_tuple(const StreamInfo& s) {
  return nb::make_tuple(s.name, from_shape(s.sample_shape), s.sparse, int(s.dtype), s.defines_mb_size);
}

StreamInfo stream_from_tuple(nb::handle t) {
  auto tup = nb::cast<nb::tuple>(t);
  if (tup.size() != 5) throw ValueError("stream description must be (name, shape, is_sparse, dtype, defines_mb_size)");
  StreamInfo s;
  s.name = nb::cast<std::string>(tup[0]);
  s.sample_shape = to_shape(tup[1]);
  s.sparse = nb::cast<bool>(tup[2]);
  s.dtype = DataType(nb::cast<int>(tup[3]));
  s.defines_mb_size = nb::cast<bool>(tup[4]);
  if (s.dtype != DataType::Float && s.dtype != DataType::Double)
    throw TypeError("stream '" + s.name + "': only float32 and float64 data can be read");
  if (s.sample_shape.rank() == 0 || s.sample_shape.total_size() <= 0)
    throw ValueError("stream '" + s.name + "' needs a known, positive shape, got " + s.sample_shape.str());
  return s;
}

template <class T>
void copy_values(nb::handle arr, size_t expected, std::vector<T>& out, const std::string& what) {
  auto a = nb::cast<nb::ndarray<const T, nb::c_contig, nb::device::cpu>>(arr);
  if (a.size() != expected)
    throw ValueError(what + ": expected " + std::to_string(expected) + " values, got " + std::to_string(a.size()));
  out.assign(a.data(), a.data() + a.size());
}

// A deserializer defined in Python. `load` returns, for a chunk, a list of (key, [stream data]) where
// dense data is a C-contiguous [num_samples, dim] array of the stream's dtype and sparse data a tuple
// (indices int32, offsets int64 with num_samples + 1 entries, values).
class PyDeserializer : public Deserializer {
 public:
  PyDeserializer(std::vector<StreamInfo> streams, std::vector<ChunkInfo> chunks, nb::object load)
      : streams_(std::move(streams)), chunks_(std::move(chunks)), load_(new nb::object(std::move(load))) {}
  ~PyDeserializer() override {
    nb::gil_scoped_acquire gil;
    delete load_;
  }
  const std::vector<StreamInfo>& streams() const override { return streams_; }
  const std::vector<ChunkInfo>& chunks() override { return chunks_; }
  std::vector<Sequence> load_chunk(size_t chunk_id) override {
    nb::gil_scoped_acquire gil;
    try {
      nb::object r = (*load_)(chunk_id);
      std::vector<Sequence> out;
      for (nb::handle item : r) {
        auto tup = nb::cast<nb::tuple>(item);
        Sequence seq;
        seq.key = nb::cast<uint64_t>(tup[0]);
        auto data = nb::cast<nb::list>(tup[1]);
        if (data.size() != streams_.size())
          throw ValueError("UserDeserializer: a sequence has " + std::to_string(data.size()) + " streams, expected " +
                           std::to_string(streams_.size()));
        for (size_t k = 0; k < streams_.size(); ++k) {
          const StreamInfo& info = streams_[k];
          SequenceStream s;
          const std::string what = "UserDeserializer stream '" + info.name + "'";
          if (!info.sparse) {
            auto n = nb::cast<size_t>(data[k].attr("shape")[0]);
            s.num_samples = n;
            if (info.dtype == DataType::Double)
              copy_values(data[k], n * info.dim(), s.values_d, what);
            else
              copy_values(data[k], n * info.dim(), s.values_f, what);
          } else {
            auto t = nb::cast<nb::tuple>(data[k]);
            auto idx = nb::cast<nb::ndarray<const int32_t, nb::c_contig, nb::device::cpu>>(t[0]);
            auto off = nb::cast<nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>>(t[1]);
            s.indices.assign(idx.data(), idx.data() + idx.size());
            s.offsets.assign(off.data(), off.data() + off.size());
            s.num_samples = s.offsets.empty() ? 0 : s.offsets.size() - 1;
            if (s.offsets.empty()) s.offsets.push_back(0);
            if (s.offsets.front() != 0 || s.offsets.back() != s.indices.size())
              throw ValueError(what + ": sparse offsets do not match the indices");
            for (size_t i = 0; i + 1 < s.offsets.size(); ++i)
              if (s.offsets[i] > s.offsets[i + 1]) throw ValueError(what + ": sparse offsets decrease");
            for (auto ix : s.indices)
              if (ix < 0 || size_t(ix) >= info.dim()) throw ValueError(what + ": sparse index out of range");
            if (info.dtype == DataType::Double)
              copy_values(t[2], s.indices.size(), s.values_d, what);
            else
              copy_values(t[2], s.indices.size(), s.values_f, what);
          }
          seq.streams.push_back(std::move(s));
        }
        out.push_back(std::move(seq));
      }
      return out;
    } catch (nb::python_error& e) {
      // Keep the Python exception's type and message for the thread that reads the minibatch.
      std::string msg = e.what();
      if (e.matches(PyExc_NotImplementedError)) throw NotImplementedError(msg);
      if (e.matches(PyExc_TypeError)) throw TypeError(msg);
      if (e.matches(PyExc_OSError)) throw IOError(msg);
      if (e.matches(PyExc_ValueError)) throw ValueError(msg);
      throw Error(msg);
    } catch (nb::cast_error& e) {
      throw TypeError("UserDeserializer: chunk data of an unexpected type (" + std::string(e.what()) + ")");
    }
  }

 private:
  std::vector<StreamInfo> streams_;
  std::vector<ChunkInfo> chunks_;
  nb::object* load_;  // released with the GIL held
};

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

  m.def(
      "ctf_deserializer",
      [](const std::string& path, nb::list streams, size_t chunk_size, size_t max_errors, bool require_sparse_values) {
        std::vector<CTFStreamDef> defs;
        for (nb::handle h : streams) {
          auto t = nb::cast<nb::tuple>(h);
          if (t.size() != 6)
            throw ValueError(
                "ctf_deserializer: each stream is (name, alias, shape, is_sparse, dtype, defines_mb_size)");
          CTFStreamDef d;
          d.name = nb::cast<std::string>(t[0]);
          d.alias = nb::cast<std::string>(t[1]);
          d.shape = to_shape(t[2]);
          d.sparse = nb::cast<bool>(t[3]);
          d.dtype = DataType(nb::cast<int>(t[4]));
          d.defines_mb_size = nb::cast<bool>(t[5]);
          if (d.dtype != DataType::Float && d.dtype != DataType::Double)
            throw TypeError("CTFDeserializer: stream '" + d.name + "' must be float32 or float64");
          defs.push_back(std::move(d));
        }
        CTFDeserializerOptions o;
        o.chunk_size = chunk_size;
        o.max_errors = max_errors;
        o.require_sparse_values = require_sparse_values;
        nb::gil_scoped_release release;
        return std::shared_ptr<Deserializer>(std::make_shared<CTFDeserializer>(path, std::move(defs), o));
      },
      nb::arg("path"), nb::arg("streams"), nb::arg("chunk_size") = size_t(32) << 20, nb::arg("max_errors") = 0,
      nb::arg("require_sparse_values") = false, "A CTF deserializer (see src/io/ctf_deserializer.h).");

  m.def(
      "py_deserializer",
      [](nb::list streams, nb::list chunks, nb::object load) {
        std::vector<StreamInfo> infos;
        for (nb::handle h : streams) infos.push_back(stream_from_tuple(h));
        if (infos.empty()) throw ValueError("UserDeserializer: stream_infos() gave no stream");
        std::vector<ChunkInfo> cs;
        for (nb::handle h : chunks) {
          auto t = nb::cast<nb::tuple>(h);
          cs.push_back(ChunkInfo{cs.size(), nb::cast<size_t>(t[0]), nb::cast<size_t>(t[1])});
        }
        if (cs.empty()) throw ValueError("UserDeserializer: num_chunks() must be positive");
        return std::shared_ptr<Deserializer>(std::make_shared<PyDeserializer>(std::move(infos), std::move(cs), load));
      },
      "A native Deserializer over Python callbacks: streams [(name, shape, sparse, dtype, defines_mb_size)], "
      "chunks [(num_sequences, num_samples)], load(chunk_id) -> [(key, [stream data])].");

  m.def("drop_sequence_axis", &drop_sequence_axis, "[B, 1, *shape] minibatch data as a batch [B, *shape].");

  nb::class_<MinibatchSource>(m, "MinibatchSource")
      .def(
          "__init__",
          [](MinibatchSource* self, std::vector<std::shared_ptr<Deserializer>> ds, uint64_t max_samples,
             uint64_t max_sweeps, bool randomize, size_t window_chunks, size_t window_samples, uint64_t seed,
             bool frame_mode, size_t truncation_length, bool prefetch) {
            MinibatchSourceConfig c;
            c.deserializers = std::move(ds);
            c.max_samples = max_samples;
            c.max_sweeps = max_sweeps;
            c.randomize = randomize;
            c.randomization_window_in_chunks = window_chunks;
            c.randomization_window_in_samples = window_samples;
            c.randomization_seed = seed;
            c.frame_mode = frame_mode;
            c.truncation_length = truncation_length;
            c.prefetch = prefetch;
            nb::gil_scoped_release release;
            new (self) MinibatchSource(std::move(c));
          },
          nb::arg("deserializers"), nb::arg("max_samples"), nb::arg("max_sweeps"), nb::arg("randomize"),
          nb::arg("randomization_window_in_chunks"), nb::arg("randomization_window_in_samples"),
          nb::arg("randomization_seed"), nb::arg("frame_mode"), nb::arg("truncation_length"), nb::arg("prefetch"))
      .def_prop_ro("streams",
                   [](const MinibatchSource& s) {
                     nb::list out;
                     for (const auto& i : s.streams()) out.append(stream_tuple(i));
                     return out;
                   })
      .def(
          "next_minibatch",
          [](MinibatchSource& s, size_t size, size_t partitions, size_t index) -> nb::object {
            Minibatch mb;
            {
              nb::gil_scoped_release release;
              mb = s.next_minibatch(size, partitions, index);
            }
            if (mb.empty()) return nb::none();
            nb::list out;
            for (auto& st : mb.streams)
              out.append(nb::make_tuple(st.data.is_valid() ? nb::cast(st.data) : nb::none(), st.num_sequences,
                                        st.num_samples, st.sweep_end));
            return out;
          },
          nb::arg("size"), nb::arg("num_partitions") = 1, nb::arg("partition_index") = 0,
          "None at the end of the data, else per stream (Value or None, num_sequences, num_samples, sweep_end).")
      .def("checkpoint_state", [](const MinibatchSource& s) { return from_dictionary(s.checkpoint_state()); })
      .def("restore_from_checkpoint",
           [](MinibatchSource& s, nb::handle state) {
             Dictionary d = to_dictionary(state);
             nb::gil_scoped_release release;
             s.restore_from_checkpoint(d);
           })
      .def("close", &MinibatchSource::close, nb::call_guard<nb::gil_scoped_release>())
      .def("sweep_order", [](const MinibatchSource& s, uint64_t sweep) {
        std::vector<std::pair<uint32_t, uint32_t>> out;
        for (const auto& u : s.sweep_order(sweep)) out.emplace_back(u.chunk, u.index);
        return out;
      });
}
