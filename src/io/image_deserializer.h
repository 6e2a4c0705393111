// CNTK's ImageDeserializer: a map file of `path<TAB>label` lines, images decoded (JPEG, PNG), transformed
// (crop, scale, mean, color) and given as a dense stream of shape [channels, height, width] (CHW, channels
// B, G, R as OpenCV decodes them, values 0..255 before mean/color) and a sparse one-hot label stream.
// See src/io/README.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "deserializer.h"
#include "image_codec.h"

namespace cntk::io {

// One transform, as cntk.io.transforms builds them (CNTK's names in comments).
struct ImageTransform {
  enum class Kind { Crop, Scale, Mean, Color };
  Kind kind = Kind::Crop;

  // Crop: crop_type center | randomside | randomarea | random (= randomside) | multiview10.
  std::string crop_type = "center";
  int crop_width = 0, crop_height = 0;    // cropSize (W:H); 0: use the ratios
  double side_min = 0, side_max = 0;      // sideRatio; 0: not given
  double area_min = 0, area_max = 0;      // areaRatio; 0: not given
  double aspect_min = 1, aspect_max = 1;  // aspectRatio, in (0, 1]
  std::string jitter_type = "none";       // none | uniratio
  // hflip: whether a crop is flipped horizontally with probability 1/2; unset, CNTK's default:
  // random crops are, center crops not (multiview10 flips its last five views regardless).
  std::optional<bool> hflip;

  // Scale.
  int width = 0, height = 0, channels = 0;
  std::vector<std::string> interpolations{"linear"};  // nearest | linear | cubic | lanczos (one drawn per image)
  std::string scale_mode = "fill";                    // fill | crop | pad
  int pad_value = -1;                                 // -1: replicate the border

  // Mean: an OpenCV XML FileStorage file with Channel, Row, Col and the MeanImg matrix (HWC, B, G, R).
  std::string mean_file;

  // Color.
  double brightness_radius = 0, contrast_radius = 0, saturation_radius = 0;
};

struct ImageDeserializerConfig {
  std::string map_file;
  // false: lines `[sequence id<TAB>]path<TAB>label` (ImageDeserializer); true: lines
  // `[sequence id<TAB>]label<TAB>base64 of the image file` (Base64ImageDeserializer).
  bool base64 = false;
  std::string image_stream = "image";
  std::string label_stream = "label";
  size_t num_classes = 0;
  std::vector<ImageTransform> transforms;  // applied in this order; one Scale is required (it fixes the shape)
  uint64_t seed = 0;                       // random transforms are a function of (seed, sweep, sequence)
  size_t sequences_per_chunk = 256;
};

// Decodes standard base64 (A-Z a-z 0-9 + /, '=' padding); trailing blanks are ignored. False if malformed.
bool decode_base64(const char* begin, const char* end, std::vector<uint8_t>& out);

// A mean image read from CNTK's mean file (HWC, as stored).
struct MeanImage {
  int channels = 0, rows = 0, cols = 0;
  std::vector<float> data;
};
MeanImage read_mean_file(const std::string& path);

class ImageDeserializer : public Deserializer {
 public:
  explicit ImageDeserializer(ImageDeserializerConfig config);

  const std::vector<StreamInfo>& streams() const override { return streams_; }
  const std::vector<ChunkInfo>& chunks() override { return chunks_; }
  std::vector<Sequence> load_chunk(size_t chunk_id) override;
  // From the map file's index: joining the source's deserializers by key decodes no image.
  std::vector<uint64_t> chunk_keys(size_t chunk_id) override;

  // Random transforms draw from (seed, sweep, sequence): a new sweep number gives new crops and jitter.
  void set_sweep(uint64_t sweep) override { sweep_ = sweep; }

  // The transforms applied to one decoded image; `index` is the sequence's position in the map
  // (multiview10 uses index % 10 as its view). Exposed for tests.
  Image transform(Image img, size_t index) const;

  struct Entry {
    std::string path;     // as in the map file (empty for base64 images)
    uint64_t offset = 0;  // base64 images: where the encoded image is in the map file, and its length
    size_t length = 0;
    size_t label = 0;
    uint64_t key = 0;
    size_t line = 0;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::string resolve(const std::string& path) const;

  ImageDeserializerConfig config_;
  std::vector<Entry> entries_;  // one per sequence (multiview10: ten per map line)
  std::vector<StreamInfo> streams_;
  std::vector<ChunkInfo> chunks_;
  std::vector<std::shared_ptr<MeanImage>> means_;  // per transform (null unless Mean)
  int out_channels_ = 0, out_height_ = 0, out_width_ = 0;
  uint64_t sweep_ = 0;
};

}  // namespace cntk::io
