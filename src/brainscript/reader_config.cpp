// Reader blocks over the engine's deserializers (see reader_config.h).
#include "brainscript/reader_config.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <tuple>

#include "io/cbf_deserializer.h"
#include "io/ctf_deserializer.h"
#include "io/htk_features.h"
#include "io/image_deserializer.h"
#include "io/mlf.h"

namespace cntk::brainscript {

namespace {

bool equal_ci(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

// The network input named `name`, if any.
const Variable* input_named(const std::vector<Variable>& inputs, const std::string& name) {
  for (const auto& in : inputs)
    if (in.name() == name) return &in;
  return nullptr;
}

// CNTKTextFormatReader / CNTKTextFormatDeserializer: `file`, `input = [ name = [ dim, format,
// alias, definesMBSize ] ]`, `chunkSizeInBytes`, `maxErrors`.
io::DeserializerPtr text_format(const ConfigRecord& r, const std::vector<Variable>& inputs) {
  auto input = r.block("input");
  std::vector<io::CTFStreamDef> defs;
  for (const auto& name : input->keys()) {
    auto s = input->block(name);
    io::CTFStreamDef d;
    d.name = name;
    d.alias = s->get("alias", name);
    const std::string format = s->get("format", "dense");
    if (format != "dense" && format != "sparse")
      throw ValueError("input '" + name + "' in " + r.name() + ": format must be dense or sparse, not '" + format +
                       "'");
    d.sparse = format == "sparse";
    d.defines_mb_size = s->get_bool("definesMBSize", false);
    d.shape = NDShape{s->get_int("dim", 0)};
    if (const Variable* in = input_named(inputs, name)) {
      d.dtype = in->dtype();
      if (in->shape().total_size() == d.shape.total_size()) d.shape = in->shape();
    }
    defs.push_back(d);
  }
  io::CTFDeserializerOptions options;
  options.chunk_size = size_t(r.get_int("chunkSizeInBytes", int64_t(options.chunk_size)));
  options.max_errors = size_t(r.get_int("maxErrors", 0));
  return std::make_shared<io::CTFDeserializer>(r.get("file"), defs, options);
}

// CNTKBinaryReader / CNTKBinaryFormatDeserializer: `file`, and optionally `input = [ name = [
// alias ] ]` to select streams of the file and rename them (alias: the file's name).
io::DeserializerPtr binary_format(const ConfigRecord& r) {
  std::vector<io::CBFStreamSelection> selection;
  if (r.exists_here("input")) {
    auto input = r.block("input");
    for (const auto& name : input->keys()) {
      const std::string raw = input->raw(name);
      const bool has_block = raw.find('[') != std::string::npos;
      selection.push_back({name, has_block ? input->block(name)->get("alias", name) : name});
    }
  }
  return std::make_shared<io::CBFDeserializer>(r.get("file"), selection);
}

// A `lo:hi` ratio (one value: both).
std::pair<double, double> ratio(const ConfigRecord& r, const std::string& key, double fallback) {
  const auto items = r.get_array(key, {std::to_string(fallback)});
  if (items.empty() || items.size() > 2) throw ValueError(r.name() + ": " + key + " takes one or two values");
  const double lo = config_to_double(items.front(), key), hi = config_to_double(items.back(), key);
  return {lo, hi};
}

// One transform of CNTK's image readers (Crop, Scale, Mean, Color); Transpose and Cast change
// nothing here (images already come as channels x height x width in the input's type).
std::optional<io::ImageTransform> image_transform(const std::string& type, const ConfigRecord& r) {
  io::ImageTransform t;
  if (equal_ci(type, "Crop")) {
    t.kind = io::ImageTransform::Kind::Crop;
    t.crop_type = r.get("cropType", "center");
    const auto size = r.get_array("cropSize", {"0"});
    t.crop_width = int(config_to_double(size.front(), "cropSize"));
    t.crop_height = int(config_to_double(size.back(), "cropSize"));
    std::tie(t.side_min, t.side_max) = ratio(r, r.exists("sideRatio") ? "sideRatio" : "cropRatio", 0);
    std::tie(t.area_min, t.area_max) = ratio(r, "areaRatio", 0);
    std::tie(t.aspect_min, t.aspect_max) = ratio(r, "aspectRatio", 1);
    t.jitter_type = r.get("jitterType", "none");
    if (t.jitter_type.empty()) t.jitter_type = "none";
    if (r.exists_here("hflip")) t.hflip = r.get_bool("hflip", false);
  } else if (equal_ci(type, "Scale")) {
    t.kind = io::ImageTransform::Kind::Scale;
    t.width = int(r.get_int("width", 0)), t.height = int(r.get_int("height", 0));
    t.channels = int(r.get_int("channels", 0));
    t.interpolations = split_config_array(r.get("interpolations", "linear"));
    t.scale_mode = r.get("scaleMode", "fill");
    t.pad_value = int(r.get_int("padValue", -1));
  } else if (equal_ci(type, "Mean")) {
    t.kind = io::ImageTransform::Kind::Mean;
    t.mean_file = r.get("meanFile");
  } else if (equal_ci(type, "Color")) {
    t.kind = io::ImageTransform::Kind::Color;
    t.brightness_radius = r.get_double("brightnessRadius", 0);
    t.contrast_radius = r.get_double("contrastRadius", 0);
    t.saturation_radius = r.get_double("saturationRadius", 0);
  } else if (equal_ci(type, "Transpose") || equal_ci(type, "Cast")) {
    return std::nullopt;
  } else {
    throw NotImplementedError("image transform '" + type + "' (in " + r.name() +
                              ") is not implemented yet; Crop, Scale, Mean, Color, Transpose and Cast are");
  }
  return t;
}

// The records of an array value `( [...] : [...] )` under `key`, or of a single `[...]`.
std::vector<std::shared_ptr<const ConfigRecord>> records(const std::shared_ptr<const ConfigRecord>& r,
                                                         const std::string& key) {
  std::vector<std::shared_ptr<const ConfigRecord>> out;
  const std::string value = r->get(key);  // (ValueError naming the key where it is `default`, not given)
  const size_t first = value.find_first_not_of(" \t\r\n");
  std::vector<std::string> items;
  if (first != std::string::npos && value[first] == '[')
    items.push_back(value);
  else
    items = split_config_array(value);
  for (size_t i = 0; i < items.size(); ++i)
    out.push_back(ConfigRecord::parse(items[i], r->name() + ":" + key + "[" + std::to_string(i) + "]", r));
  if (out.empty()) throw ValueError(r->name() + ": " + key + " is empty");
  return out;
}

// ImageDeserializer (`input = [ image = [ transforms = (...) ] ; label = [ labelDim ] ]`) and
// the older ImageReader (the image and label sections directly in the reader, the image's
// transforms given by its own keys: cropType, cropRatio, width, height, channels, meanFile, ...).
io::DeserializerPtr image(const std::shared_ptr<const ConfigRecord>& r, bool deserializer_form) {
  io::ImageDeserializerConfig cfg;
  cfg.map_file = r->get("file");
  auto sections = deserializer_form ? r->block("input") : r;
  bool have_image = false, have_label = false;
  for (const auto& name : sections->keys()) {
    if (sections->raw(name).find('[') == std::string::npos) continue;
    auto s = sections->block(name);
    if (s->exists_here("labelDim")) {
      cfg.label_stream = name, have_label = true;
      cfg.num_classes = size_t(s->get_int("labelDim", 0));
    } else if (deserializer_form ? s->exists_here("transforms") : s->exists_here("width")) {
      cfg.image_stream = name, have_image = true;
      if (deserializer_form) {
        for (const auto& t : records(s, "transforms"))
          if (auto transform = image_transform(t->get("type"), *t)) cfg.transforms.push_back(*transform);
      } else {
        if (s->exists_here("cropType") || s->exists_here("cropRatio"))
          cfg.transforms.push_back(*image_transform("Crop", *s));
        cfg.transforms.push_back(*image_transform("Scale", *s));
        if (s->exists_here("meanFile")) cfg.transforms.push_back(*image_transform("Mean", *s));
      }
    }
  }
  if (!have_image || !have_label)
    throw ValueError(r->name() + ": an image reader needs an image input (with " +
                     (deserializer_form ? "transforms" : "width, height, channels") + ") and a label input (labelDim)");
  if (!deserializer_form && !std::any_of(cfg.transforms.begin(), cfg.transforms.end(),
                                         [](const auto& t) { return t.kind == io::ImageTransform::Kind::Scale; }))
    throw ValueError(r->name() + ": the image input needs width, height and channels");
  cfg.seed = uint64_t(r->get_int("randomizationSeed", 0));
  return std::make_shared<io::ImageDeserializer>(cfg);
}

// HTKFeatureDeserializer: `input = [ name = [ scpFile, dim, contextWindow ] ]`, one stream.
io::DeserializerPtr htk_features(const std::string& name, const ConfigRecord& s, const std::vector<Variable>& inputs) {
  io::HTKFeatureStreamDef d;
  d.name = name;
  d.scp_files = {s.get("scpFile")};
  d.dim = size_t(s.get_int("dim", 0));
  const auto window = s.get_array("contextWindow", {"1"});
  if (window.size() == 2) {  // CNTK's [left, right]
    d.left_context = size_t(config_to_double(window[0], "contextWindow"));
    d.right_context = size_t(config_to_double(window[1], "contextWindow"));
  } else if (window.size() > 2) {
    throw ValueError(s.name() + ": contextWindow takes one or two values");
  } else if (config_to_double(window[0], "contextWindow") != 1) {
    const size_t w = size_t(config_to_double(window[0], "contextWindow"));  // a centred window of w frames
    if (w % 2 == 0) throw ValueError(s.name() + ": contextWindow " + std::to_string(w) + " is not symmetrical");
    d.left_context = d.right_context = w / 2;
  }
  d.defines_mb_size = s.get_bool("definesMBSize", false);
  if (const Variable* in = input_named(inputs, name)) d.dtype = in->dtype();
  return std::make_shared<io::HTKFeatureDeserializer>(d);
}

// HTKMLFDeserializer: `input = [ name = [ mlfFile or mlfFileList, labelMappingFile, labelDim ] ]`.
io::DeserializerPtr htk_labels(const std::string& name, const ConfigRecord& s, const std::vector<Variable>& inputs) {
  io::HTKMLFStreamDef d;
  d.name = name;
  if (s.exists_here("mlfFile")) {
    d.mlf_files = {s.get("mlfFile")};
  } else {
    std::ifstream list(s.get("mlfFileList"));
    if (!list) throw IOError("cannot read mlfFileList '" + s.get("mlfFileList") + "'");
    for (std::string line; std::getline(list, line);)
      if (!line.empty() && line.find_first_not_of(" \t\r") != std::string::npos) d.mlf_files.push_back(line);
  }
  d.label_mapping_file = s.get("labelMappingFile", "");
  d.dim = size_t(s.get_int("labelDim", s.get_int("dim", 0)));
  d.phone_boundaries = s.get_bool("phoneBoundaries", false);
  d.defines_mb_size = s.get_bool("definesMBSize", false);
  if (const Variable* in = input_named(inputs, name)) d.dtype = in->dtype();
  return std::make_shared<io::HTKMLFDeserializer>(d);
}

// The HTK deserializers of one record: each input section with scpFile is a feature stream,
// each with mlfFile/mlfFileList a label stream (HTKMLFReader puts the sections in the reader).
std::vector<io::DeserializerPtr> htk(const std::shared_ptr<const ConfigRecord>& r, bool deserializer_form,
                                     const std::vector<Variable>& inputs) {
  std::vector<io::DeserializerPtr> features, labels;
  auto sections = deserializer_form ? r->block("input") : r;
  for (const auto& name : sections->keys()) {
    if (sections->raw(name).find('[') == std::string::npos) continue;
    auto s = sections->block(name);
    if (s->exists_here("scpFile"))
      features.push_back(htk_features(name, *s, inputs));
    else if (s->exists_here("mlfFile") || s->exists_here("mlfFileList"))
      labels.push_back(htk_labels(name, *s, inputs));
  }
  if (features.empty() && labels.empty())
    throw ValueError(r->name() + ": no input with scpFile (features) or mlfFile (labels)");
  features.insert(features.end(), labels.begin(), labels.end());  // features drive the order
  return features;
}

// The deserializers of a reader (readerType) or of one record of `deserializers` (type).
std::vector<io::DeserializerPtr> deserializers(const std::string& type, const std::shared_ptr<const ConfigRecord>& r,
                                               const std::vector<Variable>& inputs) {
  if (equal_ci(type, "CNTKTextFormatReader") || equal_ci(type, "CNTKTextFormatDeserializer"))
    return {text_format(*r, inputs)};
  if (equal_ci(type, "CNTKBinaryReader") || equal_ci(type, "CNTKBinaryFormatDeserializer")) return {binary_format(*r)};
  if (equal_ci(type, "ImageReader") || equal_ci(type, "ImageDeserializer"))
    return {image(r, equal_ci(type, "ImageDeserializer"))};
  if (equal_ci(type, "HTKMLFReader")) return htk(r, false, inputs);
  if (equal_ci(type, "HTKFeatureDeserializer") || equal_ci(type, "HTKMLFDeserializer")) return htk(r, true, inputs);
  throw NotImplementedError("reader type '" + type + "' (in " + r->name() +
                            ") is not implemented yet; CNTKTextFormatReader, CNTKBinaryReader, ImageReader, "
                            "HTKMLFReader and the deserializers CNTKTextFormatDeserializer, "
                            "CNTKBinaryFormatDeserializer, ImageDeserializer, HTKFeatureDeserializer and "
                            "HTKMLFDeserializer are");
}

}  // namespace

Reader make_reader(const ConfigRecord& command, const std::vector<Variable>& inputs, bool randomize_default,
                   uint64_t max_sweeps) {
  auto reader = command.block("reader");
  io::MinibatchSourceConfig cfg;
  // CNTK's HTK deserializers read frames unless frameMode is false; the others sequences.
  bool htk_data = false;
  const auto is_htk = [](const std::string& type) { return equal_ci(type.substr(0, 3), "HTK"); };
  if (reader->exists_here("deserializers")) {
    for (const auto& d : records(reader, "deserializers")) {
      htk_data |= is_htk(d->get("type"));
      for (auto& each : deserializers(d->get("type"), d, inputs)) cfg.deserializers.push_back(each);
    }
  } else {
    htk_data = is_htk(reader->get("readerType", ""));
    cfg.deserializers = deserializers(reader->get("readerType", ""), reader, inputs);
  }
  Reader out;
  for (const auto& chunk : cfg.deserializers[0]->chunks()) out.sweep_samples += chunk.num_samples;

  // CNTK's `randomize`: a boolean, "auto" or "none" (what CNTK's write action inserted); a
  // randomizationWindow counts chunks unless sampleBasedRandomizationWindow says samples.
  const std::string randomize = reader->get("randomize", "");
  if (randomize.empty())
    cfg.randomize = randomize_default;
  else
    cfg.randomize =
        equal_ci(randomize, "auto") || (!equal_ci(randomize, "none") && config_to_bool(randomize, "randomize"));
  if (reader->exists("randomizationWindow")) {
    const auto window = size_t(reader->get_int("randomizationWindow", 0));
    if (reader->get_bool("sampleBasedRandomizationWindow", false))
      cfg.randomization_window_in_samples = window;
    else
      cfg.randomization_window_in_chunks = window;
  }
  cfg.randomization_seed = uint64_t(reader->get_int("randomizationSeed", 0));
  cfg.frame_mode = reader->get_bool("frameMode", htk_data);
  if (reader->get_bool("truncated", false)) cfg.truncation_length = size_t(reader->get_int("truncationLength", 0));
  cfg.max_sweeps = max_sweeps;
  out.source = std::make_unique<io::MinibatchSource>(cfg);
  return out;
}

io::Minibatch decimate(const io::Minibatch& mb, size_t parts, size_t index) {
  io::Minibatch out;
  for (const auto& s : mb.streams) {
    io::StreamMinibatch part;
    part.sweep_end = s.sweep_end;
    const int64_t sequences = int64_t(s.num_sequences);
    if (s.num_sequences == 0 || int64_t(index) >= sequences) {  // no sequence for this worker
      out.streams.push_back(part);
      continue;
    }
    const NDArrayView& data = s.data.data();
    if (data.is_sparse())
      throw NotImplementedError("distributedMBReading = false with sparse input is not implemented yet");
    NDArrayView mine = data.slice(0, int64_t(index), sequences, int64_t(parts)).contiguous();
    std::shared_ptr<NDMask> mask;
    part.num_sequences = size_t(mine.shape()[0]);
    part.num_samples = part.num_sequences * size_t(data.shape().rank() > 1 ? data.shape()[1] : 1);
    if (const auto& full = s.data.mask()) {
      mask = std::make_shared<NDMask>(int64_t(part.num_sequences), full->max_len());
      for (int64_t b = 0; b < int64_t(part.num_sequences); ++b)
        for (int64_t t = 0; t < full->max_len(); ++t) mask->set(b, t, full->at(int64_t(index) + b * int64_t(parts), t));
      part.num_samples = 0;
      for (int64_t length : mask->lengths()) part.num_samples += size_t(length);
    }
    part.data = Value(mine, mask);
    out.streams.push_back(part);
  }
  return out;
}

VariableValues arguments_for(const io::MinibatchSource& source, const io::Minibatch& mb,
                             const std::vector<Variable>& inputs) {
  VariableValues args;
  if (mb.empty()) return args;
  for (const auto& s : mb.streams)
    if (s.num_sequences == 0) return args;  // this worker's partition got no data
  for (size_t i = 0; i < source.streams().size(); ++i)
    if (const Variable* in = input_named(inputs, source.streams()[i].name))
      args.emplace_back(*in, in->dynamic_axes().size() == 1 ? io::frames_of(mb.streams[i].data) : mb.streams[i].data);
  return args;
}

}  // namespace cntk::brainscript
