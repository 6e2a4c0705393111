// crop_automatic's offsets found in C++ (cntk/crop.h): through crops, elementwise ops and
// blocks, with ancestors, and the errors for paths that cannot be modelled.
#include <gtest/gtest.h>

#include "cntk/crop.h"
#include "cntk/ops.h"

using namespace cntk;

namespace {

Variable image(const std::string& name, int64_t h, int64_t w) {
  return Variable::input({1, h, w}, DataType::Float, false, false, {Axis::default_batch_axis()}, name);
}

FunctionPtr crop(const Variable& x, const Variable& like, int64_t ox, int64_t oy) {
  return ops::apply("Crop", {x, like}, {{"offset", DictValue::List{ox, oy}}});
}

TEST(CropOffsets, ComposeAlongThePathToTheCommonAncestor) {
  Variable x = image("x", 12, 12), small = image("s", 8, 8), smaller = image("t", 5, 5);
  FunctionPtr a = crop(ops::relu(x)->output(), small, 3, 1);  // a[p] = x[p + (3, 1)]
  FunctionPtr b = crop(a->output(), smaller, 1, 2);           // b[p] = x[p + (4, 3)]
  CropOffsets o = automatic_crop_offsets(x, ops::tanh(b)->output());
  EXPECT_EQ(o.x, 4);
  EXPECT_EQ(o.y, 3);
  o = automatic_crop_offsets(a->output(), b->output());
  EXPECT_EQ(o.x, 1);
  EXPECT_EQ(o.y, 2);
  FunctionPtr c = ops::crop_automatic(x, b->output());
  EXPECT_EQ(c->output().shape(), (NDShape{1, 5, 5}));
  EXPECT_EQ(c->root_function()->attributes().at("offset").as_int_list(), (std::vector<int64_t>{4, 3}));
}

TEST(CropOffsets, AncestorsStandForOneAnother) {
  Variable image_in = image("image", 12, 12), labels = image("labels", 12, 12), small = image("s", 7, 7);
  FunctionPtr features = crop(image_in, small, 2, 5);
  EXPECT_THROW(automatic_crop_offsets(labels, features->output()), ValueError);  // no common ancestor
  FunctionPtr c = ops::crop_automatic_with_ancestors(labels, features->output(), labels, image_in);
  EXPECT_EQ(c->root_function()->attributes().at("offset").as_int_list(), (std::vector<int64_t>{2, 5}));
  EXPECT_THROW(automatic_crop_offsets(labels, features->output(), std::make_pair(small, image_in)), ValueError);
}

TEST(CropOffsets, UnmodelledOpsAndNegativeOffsetsAreErrors) {
  Variable x = image("x", 6, 6), big = image("b", 6, 6);
  FunctionPtr summed = ops::reduce_sum(x);  // no spatial transform
  try {
    automatic_crop_offsets(summed->output(), x);
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("ReduceElements does not support an affine spatial transform"),
              std::string::npos)
        << e.what();
  }
  FunctionPtr a = crop(x, image("s", 4, 4), 1, 1);
  EXPECT_THROW(automatic_crop_offsets(a->output(), x), ValueError);  // the referent is larger
}

}  // namespace
