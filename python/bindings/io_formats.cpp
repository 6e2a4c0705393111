// Bindings of the file-format deserializers (src/io): the CNTK Binary Format reader and the CTF -> CBF
// converter, and the image deserializer with its transforms. Factories return _cntk.Deserializer objects
// (bound in io.cpp); cntk.io's CBFDeserializer / ImageDeserializer classes call them.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "../../src/io/cbf_deserializer.h"
#include "../../src/io/image_deserializer.h"

namespace nb = nanobind;
using namespace cntk;
using namespace cntk::io;

namespace {

DataType precision_of(const std::string& p) {
  if (p == "float" || p == "float32") return DataType::Float;
  if (p == "double" || p == "float64") return DataType::Double;
  throw ValueError("precision must be 'float' or 'double', not '" + p + "'");
}

template <class T>
T get(const nb::dict& d, const char* key, T fallback) {
  if (!d.contains(key) || d[key].is_none()) return fallback;
  try {
    return nb::cast<T>(d[key]);
  } catch (const nb::cast_error&) {
    throw TypeError(std::string("image transform: '") + key + "' has the wrong type (" +
                    nb::cast<std::string>(nb::repr(d[key])) + ")");
  }
}

// A transform as a dict with CNTK's keys (what cntk.io.transforms returns, ratios already split into
// (min, max) pairs by the Python layer).
ImageTransform to_transform(const nb::dict& d) {
  ImageTransform t;
  std::string type = get<std::string>(d, "type", "");
  using Pair = std::tuple<double, double>;
  if (type == "Crop") {
    t.kind = ImageTransform::Kind::Crop;
    t.crop_type = get<std::string>(d, "cropType", "center");
    std::tie(t.crop_width, t.crop_height) = get<std::tuple<int, int>>(d, "cropSize", {0, 0});
    std::tie(t.side_min, t.side_max) = get<Pair>(d, "sideRatio", {0.0, 0.0});
    std::tie(t.area_min, t.area_max) = get<Pair>(d, "areaRatio", {0.0, 0.0});
    std::tie(t.aspect_min, t.aspect_max) = get<Pair>(d, "aspectRatio", {1.0, 1.0});
    t.jitter_type = get<std::string>(d, "jitterType", "none");
  } else if (type == "Scale") {
    t.kind = ImageTransform::Kind::Scale;
    t.width = get<int>(d, "width", 0);
    t.height = get<int>(d, "height", 0);
    t.channels = get<int>(d, "channels", 0);
    t.interpolations = get<std::vector<std::string>>(d, "interpolations", {"linear"});
    t.scale_mode = get<std::string>(d, "scaleMode", "fill");
    t.pad_value = get<int>(d, "padValue", -1);
  } else if (type == "Mean") {
    t.kind = ImageTransform::Kind::Mean;
    t.mean_file = get<std::string>(d, "meanFile", "");
  } else if (type == "Color") {
    t.kind = ImageTransform::Kind::Color;
    t.brightness_radius = get<double>(d, "brightnessRadius", 0.0);
    t.contrast_radius = get<double>(d, "contrastRadius", 0.0);
    t.saturation_radius = get<double>(d, "saturationRadius", 0.0);
  } else {
    throw ValueError("image transform type '" + type + "' is not one of Crop, Scale, Mean, Color");
  }
  return t;
}

}  // namespace

void bind_io_formats(nb::module_& m) {
  m.def(
      "cbf_deserializer",
      [](const std::string& filename, const std::vector<std::tuple<std::string, std::string>>& streams) {
        std::vector<CBFStreamSelection> sel;
        for (const auto& [name, field] : streams) sel.push_back({name, field});
        return std::shared_ptr<Deserializer>(std::make_shared<CBFDeserializer>(filename, std::move(sel)));
      },
      nb::arg("filename"), nb::arg("streams"),
      "A CNTK Binary Format deserializer; streams: (name, name in the file) pairs, or [] for all of them.");

  m.def(
      "_deserializer_streams",
      [](std::shared_ptr<Deserializer> d) {
        std::vector<std::tuple<std::string, std::vector<int64_t>, bool, std::string>> out;
        for (const auto& s : d->streams())
          out.emplace_back(s.name, s.sample_shape.dims(), s.sparse,
                           s.dtype == DataType::Double ? "float64" : "float32");
        return out;
      },
      "The streams of a deserializer: (name, sample shape, is_sparse, dtype name) tuples.");

  m.def(
      "convert_ctf_to_cbf",
      [](const std::string& input, const std::string& output,
         const std::vector<std::tuple<std::string, std::string, bool, size_t>>& streams, size_t chunk_size,
         const std::string& precision) {
        std::vector<CBFConvertStream> s;
        for (const auto& [name, alias, sparse, dim] : streams) s.push_back({name, alias, sparse, dim});
        nb::gil_scoped_release release;
        return convert_ctf_to_cbf(input, output, s, chunk_size, precision_of(precision));
      },
      nb::arg("input"), nb::arg("output"), nb::arg("streams"), nb::arg("chunk_size"), nb::arg("precision"),
      "Converts a CTF file to CBF; streams: (name, alias, is_sparse, dim). Returns the number of chunks.");

  m.def(
      "image_deserializer",
      [](const std::string& map_file, const std::string& image_stream, const std::string& label_stream,
         size_t num_classes, const std::vector<nb::dict>& transforms, uint64_t seed, size_t sequences_per_chunk,
         bool base64) {
        ImageDeserializerConfig c;
        c.map_file = map_file;
        c.base64 = base64;
        c.image_stream = image_stream;
        c.label_stream = label_stream;
        c.num_classes = num_classes;
        for (const auto& t : transforms) c.transforms.push_back(to_transform(t));
        c.seed = seed;
        c.sequences_per_chunk = sequences_per_chunk;
        return std::shared_ptr<Deserializer>(std::make_shared<ImageDeserializer>(std::move(c)));
      },
      nb::arg("map_file"), nb::arg("image_stream"), nb::arg("label_stream"), nb::arg("num_classes"),
      nb::arg("transforms"), nb::arg("seed") = 0, nb::arg("sequences_per_chunk") = 256, nb::arg("base64") = false,
      "An image deserializer over a map file (base64: images inline in it); transforms are dicts with CNTK's keys.");

  m.def(
      "_image_deserializer_set_sweep",
      [](std::shared_ptr<Deserializer> d, uint64_t sweep) {
        auto* img = dynamic_cast<ImageDeserializer*>(d.get());
        if (!img) throw TypeError("not an image deserializer");
        img->set_sweep(sweep);
      },
      "Random image transforms draw from (seed, sweep, sequence); a new sweep gives new draws.");

  m.def(
      "_write_image",
      [](const std::string& path, nb::ndarray<uint8_t, nb::c_contig, nb::device::cpu> a, const std::string& format,
         int quality) {
        if (a.ndim() != 2 && a.ndim() != 3)
          throw ValueError("_write_image: expected an [H, W] or [H, W, C] uint8 array");
        int h = int(a.shape(0)), w = int(a.shape(1)), c = a.ndim() == 3 ? int(a.shape(2)) : 1;
        if (format == "png")
          write_png(path, a.data(), w, h, c);
        else if (format == "jpeg" || format == "jpg")
          write_jpeg(path, a.data(), w, h, c, quality);
        else
          throw ValueError("_write_image: format must be 'png' or 'jpeg'");
      },
      nb::arg("path"), nb::arg("array"), nb::arg("format"), nb::arg("quality") = 95,
      "Writes an [H, W] grey or [H, W, 3] B, G, R uint8 image as PNG or JPEG (for tests).");

  m.def(
      "_read_image",
      [](const std::string& path, int channels) {
        Image img = read_image_file(path, channels);
        auto* data = new float[img.data.size() ? img.data.size() : 1];
        std::copy(img.data.begin(), img.data.end(), data);
        nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
        size_t shape[3] = {size_t(img.height), size_t(img.width), size_t(img.channels)};
        return nb::ndarray<nb::numpy, float>(data, 3, shape, owner);
      },
      nb::arg("path"), nb::arg("channels") = 3, "Decodes a JPEG or PNG into an [H, W, C] float32 array (B, G, R).");
}
