// Image decoding (JPEG, PNG) and the image deserializer: map files, streams, transforms, errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/image_codec.h"
#include "io/image_deserializer.h"

using cntk::IOError;
using cntk::ValueError;
using namespace cntk::io;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test for images and map files.
class ImageDir {
 public:
  explicit ImageDir(const std::string& name)
      : dir_(fs::temp_directory_path() / ("cntk_img_test_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~ImageDir() { fs::remove_all(dir_); }
  std::string path(const std::string& f) const { return (dir_ / f).string(); }
  std::string write(const std::string& f, const std::string& text) const {
    std::ofstream(path(f), std::ios::binary) << text;
    return path(f);
  }

 private:
  fs::path dir_;
};

// A deterministic test pattern, HWC bytes.
std::vector<uint8_t> pattern(int w, int h, int c, int salt = 0) {
  std::vector<uint8_t> v(size_t(w) * size_t(h) * size_t(c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        v[(size_t(y) * size_t(w) + size_t(x)) * size_t(c) + size_t(k)] =
            uint8_t((x * 7 + y * 13 + k * 50 + salt) % 256);
  return v;
}

ImageTransform scale(int w, int h, int c, std::string interp = "linear") {
  ImageTransform t;
  t.kind = ImageTransform::Kind::Scale;
  t.width = w;
  t.height = h;
  t.channels = c;
  t.interpolations = {std::move(interp)};
  return t;
}

ImageTransform crop(std::string type, double side = 0) {
  ImageTransform t;
  t.kind = ImageTransform::Kind::Crop;
  t.crop_type = std::move(type);
  t.side_min = t.side_max = side;
  return t;
}

}  // namespace

TEST(ImageCodec, PngRoundTripIsExact) {
  ImageDir d("png");
  for (int c : {1, 3}) {
    auto px = pattern(9, 5, c);
    write_png(d.path("a.png"), px.data(), 9, 5, c);
    Image img = read_image_file(d.path("a.png"), c);
    ASSERT_EQ(img.width, 9);
    ASSERT_EQ(img.height, 5);
    ASSERT_EQ(img.channels, c);
    for (size_t i = 0; i < px.size(); ++i) EXPECT_EQ(img.data[i], float(px[i])) << i;
  }
  // A grey file read as colour repeats the grey value; a colour file read as grey uses BT.601 luma.
  auto grey = pattern(4, 3, 1);
  write_png(d.path("g.png"), grey.data(), 4, 3, 1);
  Image g3 = read_image_file(d.path("g.png"), 3);
  for (size_t i = 0; i < grey.size(); ++i)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(g3.data[i * 3 + size_t(k)], float(grey[i]));
  auto bgr = pattern(4, 3, 3);
  write_png(d.path("c.png"), bgr.data(), 4, 3, 3);
  Image c1 = read_image_file(d.path("c.png"), 1);
  for (size_t i = 0; i < 12; ++i) {
    double y = 0.114 * bgr[i * 3] + 0.587 * bgr[i * 3 + 1] + 0.299 * bgr[i * 3 + 2];
    EXPECT_NEAR(c1.data[i], y, 0.51);
  }
}

TEST(ImageCodec, JpegDecodesCloseToTheSource) {
  ImageDir d("jpeg");
  // A smooth image survives JPEG at quality 100 within a few levels.
  std::vector<uint8_t> px(32 * 24 * 3);
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 32; ++x)
      for (int k = 0; k < 3; ++k)
        px[(size_t(y) * 32 + size_t(x)) * 3 + size_t(k)] = uint8_t(40 + 4 * x + 3 * y + 30 * k);
  write_jpeg(d.path("a.jpg"), px.data(), 32, 24, 3, 100);
  Image img = read_image_file(d.path("a.jpg"), 3);
  ASSERT_EQ(img.width, 32);
  ASSERT_EQ(img.height, 24);
  double err = 0;
  for (size_t i = 0; i < px.size(); ++i) err += std::abs(img.data[i] - px[i]);
  EXPECT_LT(err / double(px.size()), 4.0);  // chroma subsampling and rounding, not a channel swap (~60)
  // Channel order: a pure blue image (B first) stays blue.
  std::vector<uint8_t> blue(16 * 16 * 3, 0);
  for (size_t i = 0; i < blue.size(); i += 3) blue[i] = 255;
  write_jpeg(d.path("b.jpg"), blue.data(), 16, 16, 3, 100);
  Image b = read_image_file(d.path("b.jpg"), 3);
  EXPECT_GT(b.data[0], 240.f);
  EXPECT_LT(b.data[2], 15.f);
}

TEST(ImageCodec, BadFilesRaiseIOErrorNamingThem) {
  ImageDir d("bad");
  std::string txt = d.write("x.png", "not an image");
  try {
    read_image_file(txt, 3);
    FAIL();
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find(txt), std::string::npos);
  }
  auto px = pattern(16, 16, 3);
  write_png(d.path("t.png"), px.data(), 16, 16, 3);
  write_jpeg(d.path("t.jpg"), px.data(), 16, 16, 3);
  for (const char* f : {"t.png", "t.jpg"}) {
    std::ifstream in(d.path(f), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    for (size_t n : {size_t(3), size_t(10), bytes.size() / 3}) {
      std::string cut = d.write(std::string("cut_") + f, bytes.substr(0, n));
      EXPECT_THROW(read_image_file(cut, 3), IOError) << f << " cut to " << n;
    }
  }
  EXPECT_THROW(read_image_file(d.path("missing.png"), 3), IOError);
}

// Corrupted bytes either decode (libjpeg tolerates some damage) or raise IOError; never crash.
TEST(ImageCodec, CorruptBytesNeverCrash) {
  ImageDir d("corrupt");
  auto px = pattern(24, 16, 3);
  write_png(d.path("t.png"), px.data(), 24, 16, 3);
  write_jpeg(d.path("t.jpg"), px.data(), 24, 16, 3);
  for (const char* f : {"t.png", "t.jpg"}) {
    std::ifstream in(d.path(f), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    size_t raised = 0, tried = 0;
    for (size_t pos = 0; pos < bytes.size(); ++pos) {
      for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
        auto bad = bytes;
        bad[pos] ^= flip;
        ++tried;
        try {
          for (int c : {1, 3}) {
            Image img = decode_image(bad.data(), bad.size(), c, f);
            EXPECT_EQ(img.data.size(), size_t(img.width) * size_t(img.height) * size_t(c));
          }
        } catch (const IOError& e) {
          ++raised;
          EXPECT_NE(std::string(e.what()).find(f), std::string::npos);
        }
      }
    }
    EXPECT_GT(raised, 0u) << f;
    EXPECT_LE(raised, tried);
  }
}

// Found by fuzz-image: a 130-byte JPEG whose header claims 31744 x 10242 pixels made the decoder allocate
// 3.9 GB before its data ran out. Such sizes are refused up front.
TEST(ImageCodec, OversizedJpegHeaderIsRefused) {
  const std::vector<uint8_t> bytes = {
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x46, 0x00, 0x01, 0x01, 0x00, 0x0b, 0x0c, 0x0b, 0x0a, 0x0c,
      0x09, 0x0a, 0x0a, 0x0a, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x28, 0x02, 0x7c, 0x00, 0x01, 0x01, 0x11, 0x00, 0x00,
      0x09, 0x06, 0x04, 0x06, 0xff, 0xdb, 0x00, 0x43, 0x00, 0x02, 0x01, 0x01, 0x01, 0x01, 0x01, 0x81, 0x01, 0x01,
      0x01, 0x02, 0x03, 0xff, 0x5f, 0xb0, 0x00, 0x15, 0xb0, 0x80, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x31, 0x62, 0x72,
      0x82, 0x07, 0x0a, 0x16, 0x17, 0x18, 0x19, 0xd3, 0xc9, 0xd5, 0xd6, 0xd7, 0xca, 0xd4, 0xd6, 0xd8, 0xd9, 0xda,
      0xe1, 0x1e, 0x1c, 0x1b, 0x1f, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9,
      0xfa, 0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00, 0xf8, 0x83, 0x57, 0xff, 0xd9};
  try {
    decode_image(bytes.data(), bytes.size(), 3, "forged.jpg");
    FAIL();
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("31744x10242 is not supported"), std::string::npos) << e.what();
  }
}

TEST(ImageDeserializer, StreamsLabelsAndCHWLayout) {
  ImageDir d("streams");
  auto a = pattern(6, 4, 3, 0), b = pattern(6, 4, 3, 100);
  write_png(d.path("a.png"), a.data(), 6, 4, 3);
  write_png(d.path("b.png"), b.data(), 6, 4, 3);
  ImageDeserializerConfig c;
  c.map_file = d.write("map.txt", "a.png\t2\n\n" + d.path("b.png") + "\t0\r\n");
  c.num_classes = 3;
  c.transforms = {scale(6, 4, 3, "nearest")};  // same size: the image unchanged
  c.image_stream = "features";
  c.label_stream = "labels";
  ImageDeserializer des(c);
  ASSERT_EQ(des.streams().size(), 2u);
  EXPECT_EQ(des.streams()[0].name, "features");
  EXPECT_EQ(des.streams()[0].sample_shape.dims(), (std::vector<int64_t>{3, 4, 6}));
  EXPECT_TRUE(des.streams()[1].sparse);
  EXPECT_EQ(des.streams()[1].dim(), 3u);
  ASSERT_EQ(des.chunks().size(), 1u);
  EXPECT_EQ(des.chunks()[0].num_sequences, 2u);
  auto seqs = des.load_chunk(0);
  ASSERT_EQ(seqs.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto& px = i == 0 ? a : b;
    const auto& v = seqs[size_t(i)].streams[0].values_f;
    ASSERT_EQ(v.size(), 72u);
    for (int ch = 0; ch < 3; ++ch)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 6; ++x) EXPECT_EQ(v[size_t(ch * 24 + y * 6 + x)], float(px[size_t((y * 6 + x) * 3 + ch)]));
  }
  EXPECT_EQ(seqs[0].streams[1].indices, (std::vector<int32_t>{2}));
  EXPECT_EQ(seqs[1].streams[1].indices, (std::vector<int32_t>{0}));
  EXPECT_EQ(seqs[0].streams[1].values_f, (std::vector<float>{1.f}));
  EXPECT_EQ(seqs[0].key, 0u);
  EXPECT_EQ(seqs[1].key, 1u);
}

TEST(ImageDeserializer, ChunksAndSequenceIds) {
  ImageDir d("chunks");
  auto px = pattern(4, 4, 3);
  write_png(d.path("a.png"), px.data(), 4, 4, 3);
  std::string map;
  for (int i = 0; i < 5; ++i) map += std::to_string(100 + i) + "\ta.png\t" + std::to_string(i % 2) + "\n";
  ImageDeserializerConfig c;
  c.map_file = d.write("map.txt", map);
  c.num_classes = 2;
  c.transforms = {scale(2, 2, 1)};
  c.sequences_per_chunk = 2;
  ImageDeserializer des(c);
  ASSERT_EQ(des.chunks().size(), 3u);
  EXPECT_EQ(des.chunks()[2].num_sequences, 1u);
  auto last = des.load_chunk(2);
  EXPECT_EQ(last[0].key, 104u);
  EXPECT_EQ(des.streams()[0].sample_shape.dims(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_THROW(des.load_chunk(3), ValueError);
}

TEST(ImageDeserializer, RandomCropIsDeterministicPerSeedAndSweep) {
  ImageDir d("random");
  auto px = pattern(40, 30, 3);
  write_png(d.path("a.png"), px.data(), 40, 30, 3);
  std::string map;
  for (int i = 0; i < 8; ++i) map += "a.png\t0\n";
  auto make = [&](uint64_t seed) {
    ImageDeserializerConfig c;
    c.map_file = d.path("map.txt");
    c.num_classes = 1;
    c.transforms = {crop("randomside", 0.5), scale(10, 10, 3, "nearest")};
    c.seed = seed;
    return std::make_unique<ImageDeserializer>(c);
  };
  d.write("map.txt", map);
  auto a = make(7), b = make(7), other = make(8);
  auto sa = a->load_chunk(0), sb = b->load_chunk(0), so = other->load_chunk(0);
  bool differs_within = false, differs_seed = false;
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].streams[0].values_f, sb[i].streams[0].values_f);
    differs_within = differs_within || sa[i].streams[0].values_f != sa[0].streams[0].values_f;
    differs_seed = differs_seed || sa[i].streams[0].values_f != so[i].streams[0].values_f;
  }
  EXPECT_TRUE(differs_within);  // eight crops of the same image are not all the same
  EXPECT_TRUE(differs_seed);
  // Loading again gives the same data; a new sweep gives new crops.
  EXPECT_EQ(a->load_chunk(0)[3].streams[0].values_f, sa[3].streams[0].values_f);
  a->set_sweep(1);
  auto s1 = a->load_chunk(0);
  bool differs_sweep = false;
  for (size_t i = 0; i < sa.size(); ++i)
    differs_sweep = differs_sweep || s1[i].streams[0].values_f != sa[i].streams[0].values_f;
  EXPECT_TRUE(differs_sweep);
}

TEST(ImageDeserializer, MultiView10GivesTenViews) {
  ImageDir d("multiview");
  auto px = pattern(8, 6, 1);
  write_png(d.path("a.png"), px.data(), 8, 6, 1);
  ImageDeserializerConfig c;
  c.map_file = d.write("map.txt", "a.png\t0\n");
  c.num_classes = 1;
  c.transforms = {crop("multiview10", 0.5), scale(3, 3, 1, "nearest")};
  ImageDeserializer des(c);
  ASSERT_EQ(des.chunks()[0].num_sequences, 10u);
  auto s = des.load_chunk(0);
  // View 0: the top-left 3x3 window; view 5: the same window flipped horizontally.
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 3; ++x) {
      EXPECT_EQ(s[0].streams[0].values_f[size_t(y * 3 + x)], float(px[size_t(y * 8 + x)]));
      EXPECT_EQ(s[5].streams[0].values_f[size_t(y * 3 + x)], float(px[size_t(y * 8 + 2 - x)]));
      // View 3: bottom right.
      EXPECT_EQ(s[3].streams[0].values_f[size_t(y * 3 + x)], float(px[size_t((y + 3) * 8 + x + 5)]));
    }
}

TEST(ImageDeserializer, MeanFileIsSubtracted) {
  ImageDir d("mean");
  auto px = pattern(3, 2, 3);
  write_png(d.path("a.png"), px.data(), 3, 2, 3);
  std::string data;
  for (int i = 0; i < 18; ++i) data += std::to_string(i * 0.5) + " ";
  d.write("mean.xml",
          "<?xml version=\"1.0\"?>\n<opencv_storage>\n<Channel>3</Channel>\n<Row>2</Row>\n<Col>3</Col>\n"
          "<MeanImg type_id=\"opencv-matrix\">\n  <rows>1</rows>\n  <cols>18</cols>\n  <dt>f</dt>\n  <data>\n    " +
              data + "</data></MeanImg>\n</opencv_storage>\n");
  MeanImage m = read_mean_file(d.path("mean.xml"));
  EXPECT_EQ(m.channels, 3);
  EXPECT_EQ(m.rows, 2);
  EXPECT_EQ(m.cols, 3);
  ImageTransform mean;
  mean.kind = ImageTransform::Kind::Mean;
  mean.mean_file = d.path("mean.xml");
  ImageDeserializerConfig c;
  c.map_file = d.write("map.txt", "a.png\t0\n");
  c.num_classes = 1;
  c.transforms = {scale(3, 2, 3), mean};
  ImageDeserializer des(c);
  auto v = des.load_chunk(0)[0].streams[0].values_f;
  for (int ch = 0; ch < 3; ++ch)
    for (int p = 0; p < 6; ++p)
      EXPECT_FLOAT_EQ(v[size_t(ch * 6 + p)], float(px[size_t(p * 3 + ch)]) - float(p * 3 + ch) * 0.5f);
  // A mean image of another size is an error naming the image and the mean file.
  c.transforms = {scale(4, 2, 3), mean};
  ImageDeserializer wrong(c);
  try {
    wrong.load_chunk(0);
    FAIL();
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("mean.xml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a.png"), std::string::npos) << e.what();
  }
  d.write("bad.xml", "<opencv_storage><Channel>3</Channel><Row>2</Row><Col>3</Col></opencv_storage>");
  EXPECT_THROW(read_mean_file(d.path("bad.xml")), IOError);
}

TEST(ImageDeserializer, ConfigurationAndMapErrors) {
  ImageDir d("errors");
  auto px = pattern(4, 4, 3);
  write_png(d.path("a.png"), px.data(), 4, 4, 3);
  ImageDeserializerConfig c;
  c.num_classes = 2;
  c.transforms = {scale(4, 4, 3)};
  auto expect_io = [&](const std::string& map, const std::string& needle) {
    c.map_file = d.write("map.txt", map);
    try {
      ImageDeserializer des(c);
      des.load_chunk(0);
      FAIL() << "no error for " << map;
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_io("a.png\t0\na.png\t2\n", "map.txt:2");  // label out of range
  expect_io("a.png\t0\na.png\tx\n", "map.txt:2");  // not a number
  expect_io("a.png 0\n", "map.txt:1");             // no tab
  expect_io("missing.png\t1\n", "missing.png");    // absent image
  c.map_file = d.path("nope.txt");
  EXPECT_THROW(ImageDeserializer{c}, IOError);
  c.map_file = d.write("map.txt", "a.png\t0\n");
  c.transforms = {};
  EXPECT_THROW(ImageDeserializer{c}, ValueError);  // no scale
  c.transforms = {scale(4, 4, 2)};
  EXPECT_THROW(ImageDeserializer{c}, ValueError);
  c.transforms = {crop("sideways"), scale(4, 4, 3)};
  EXPECT_THROW(ImageDeserializer{c}, ValueError);
  c.transforms = {crop("center", 1.5), scale(4, 4, 3)};
  EXPECT_THROW(ImageDeserializer{c}, ValueError);
  c.transforms = {scale(4, 4, 3, "bicubic")};
  EXPECT_THROW(ImageDeserializer{c}, ValueError);
  c.transforms = {scale(4, 4, 3)};
  c.num_classes = 0;
  EXPECT_THROW(ImageDeserializer{c}, ValueError);
}

TEST(ImageDeserializer, Base64DecodingRules) {
  std::vector<uint8_t> out;
  auto dec = [&](const std::string& s) { return decode_base64(s.data(), s.data() + s.size(), out); };
  ASSERT_TRUE(dec("TWFu"));
  EXPECT_EQ(std::string(out.begin(), out.end()), "Man");
  ASSERT_TRUE(dec("TWE="));
  EXPECT_EQ(std::string(out.begin(), out.end()), "Ma");
  ASSERT_TRUE(dec("TQ==  \t"));
  EXPECT_EQ(std::string(out.begin(), out.end()), "M");
  ASSERT_TRUE(dec("TQ"));  // padding may be left out
  EXPECT_EQ(std::string(out.begin(), out.end()), "M");
  EXPECT_FALSE(dec("T"));
  EXPECT_FALSE(dec("TWFuT"));
  EXPECT_FALSE(dec("TW=u"));
  EXPECT_FALSE(dec("TW*u"));
  EXPECT_FALSE(dec("TQ==="));
}

// Base64ImageDeserializer's layout: [sequence id<TAB>]label<TAB>base64 of the image file.
TEST(ImageDeserializer, Base64ImagesEqualTheFiles) {
  ImageDir d("base64");
  auto a = pattern(5, 4, 3, 0), b = pattern(5, 4, 3, 60);
  write_png(d.path("a.png"), a.data(), 5, 4, 3);
  write_jpeg(d.path("b.jpg"), b.data(), 5, 4, 3);
  auto b64 = [&](const std::string& f) {
    static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::ifstream in(d.path(f), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {}), out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
      uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
      if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
      if (i + 2 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 2]));
      out += abc[(v >> 18) & 63];
      out += abc[(v >> 12) & 63];
      out += i + 1 < bytes.size() ? abc[(v >> 6) & 63] : '=';
      out += i + 2 < bytes.size() ? abc[v & 63] : '=';
    }
    return out;
  };
  ImageDeserializerConfig files;
  files.map_file = d.write("map.txt", "a.png\t1\nb.jpg\t0\n");
  files.num_classes = 2;
  files.transforms = {scale(5, 4, 3, "nearest")};
  ImageDeserializerConfig inline_images = files;
  inline_images.base64 = true;
  inline_images.map_file = d.write("b64.txt", "7\t1\t" + b64("a.png") + "\r\n\n8\t0\t" + b64("b.jpg") + "\n");
  auto x = ImageDeserializer(files).load_chunk(0), y = ImageDeserializer(inline_images).load_chunk(0);
  ASSERT_EQ(y.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(x[i].streams[0].values_f, y[i].streams[0].values_f);
    EXPECT_EQ(x[i].streams[1].indices, y[i].streams[1].indices);
  }
  EXPECT_EQ(y[0].key, 7u);
  EXPECT_EQ(y[1].key, 8u);
  inline_images.map_file = d.write("bad.txt", "1\t" + b64("a.png") + "\n0\tnot*base64\n");
  ImageDeserializer bad(inline_images);
  try {
    bad.load_chunk(0);
    FAIL();
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt:2"), std::string::npos) << e.what();
  }
}
