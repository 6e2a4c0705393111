// CNTK v2 model files: Dictionary and Function serialization, CNTK's own files, bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sys/stat.h>

#include "cntk/evaluation.h"
#include "cntk/learner.h"
#include "cntk/serialize.h"
#include "cntk/trainer.h"

using namespace cntk;

namespace {

std::string data_file(const std::string& name) { return std::string(CNTK_TEST_DATA_DIR) + "/cntk-files/v2/" + name; }
bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

NDArrayView iota(DataType t, const NDShape& s, double start = 0) {
  NDArrayView v(DataType::Double, s);
  for (int64_t i = 0; i < v.numel(); ++i) v.data<double>()[i] = start + 0.5 * double(i);
  return v.cast(t);
}

std::vector<double> values_of(const NDArrayView& v) {
  NDArrayView d = v.to_dense().cast(DataType::Double).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

std::vector<double> eval(const FunctionPtr& f, const Variable& x, const NDArrayView& data) {
  std::vector<Value> out;
  forward(f, {{x, Value(data)}}, {f->output()}, out, false);
  return values_of(out[0].data());
}

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "/" + name; }

}  // namespace

TEST(Serialize, DictionaryRoundTripKeepsEveryValueType) {
  Dictionary inner;
  inner["flag"] = false;
  Dictionary d;
  d["none"] = DictValue();
  d["bool"] = true;
  d["int"] = int64_t(-7);
  d["size"] = int64_t(1) << 40;
  d["double"] = 0.125;
  d["string"] = "text";
  d["shape"] = NDShape{2, 3, 5};
  d["static_axis"] = Axis(1);
  d["negative_axis"] = Axis(-2);
  d["batch"] = Axis::default_batch_axis();
  d["seq"] = Axis::default_dynamic_axis();
  d["all_static"] = Axis::all_static_axes();
  d["all"] = Axis::all_axes();
  d["leading"] = Axis::new_leading_axis();
  d["list"] = DictValue::List{DictValue(int64_t(1)), DictValue("two"), DictValue(DictValue::List{DictValue(3.5)})};
  d["dict"] = inner;
  d["f32"] = iota(DataType::Float, {2, 3});
  d["f64"] = iota(DataType::Double, {4});
  d["f16"] = iota(DataType::Float16, {3, 1});
  d["scalar"] = iota(DataType::Float, {});
  Dictionary back = dictionary_from_bytes(dictionary_to_bytes(d));
  ASSERT_EQ(back.size(), d.size());
  EXPECT_TRUE(back["none"].empty());
  EXPECT_TRUE(back["bool"].as_bool());
  EXPECT_EQ(back["int"].as_int(), -7);
  EXPECT_EQ(back["size"].as_int(), int64_t(1) << 40);
  EXPECT_EQ(back["double"].as_double(), 0.125);
  EXPECT_EQ(back["string"].as_string(), "text");
  EXPECT_EQ(back["shape"].as_shape(), (NDShape{2, 3, 5}));
  EXPECT_EQ(back["static_axis"].as_axis(), Axis(1));
  EXPECT_EQ(back["negative_axis"].as_axis(), Axis(-2));
  EXPECT_EQ(back["batch"].as_axis(), Axis::default_batch_axis());
  EXPECT_FALSE(back["batch"].as_axis().is_ordered());
  EXPECT_EQ(back["seq"].as_axis(), Axis::default_dynamic_axis());
  EXPECT_EQ(back["all_static"].as_axis(), Axis::all_static_axes());
  EXPECT_EQ(back["all"].as_axis(), Axis::all_axes());
  EXPECT_EQ(back["leading"].as_axis(), Axis::new_leading_axis());
  ASSERT_EQ(back["list"].as_list().size(), 3u);
  EXPECT_EQ(back["list"].as_list()[1].as_string(), "two");
  EXPECT_EQ(back["list"].as_list()[2].as_list()[0].as_double(), 3.5);
  EXPECT_FALSE(back["dict"].as_dict().at("flag").as_bool());
  for (const char* k : {"f32", "f64", "f16", "scalar"}) {
    EXPECT_EQ(back[k].as_array().dtype(), d[k].as_array().dtype()) << k;
    EXPECT_EQ(back[k].as_array().shape(), d[k].as_array().shape()) << k;
    EXPECT_EQ(values_of(back[k].as_array()), values_of(d[k].as_array())) << k;
  }
}

TEST(Serialize, SparseValuesAreWrittenDense) {
  float vals[] = {1.5f, -2.0f};
  NDArrayView s = NDArrayView::sparse(DataType::Float, {2, 4}, {0, 1, 2}, {3, 0}, vals);
  Dictionary d;
  d["s"] = s;
  Dictionary back = dictionary_from_bytes(dictionary_to_bytes(d));
  EXPECT_FALSE(back["s"].as_array().is_sparse());
  EXPECT_EQ(values_of(back["s"].as_array()), values_of(s));
}

TEST(Serialize, FunctionRoundTripThroughFileGivesTheSameValues) {
  auto x = Variable::input({3}, DataType::Double, false, false, {Axis::default_batch_axis()}, "x");
  auto w = Variable::parameter({3, 2}, DataType::Double, iota(DataType::Double, {3, 2}, -1), nullptr, "W");
  auto h = Function::primitive("Times", {x, w}, {{"outputRank", int64_t(1)}, {"inferInputRankToMap", int64_t(-1)}});
  auto y = Function::composite(Function::primitive("LeakyReLU", {h->output()}, {{"alpha", 0.25}}, "act"), "model");
  std::string path = temp_path("serialize_round_trip.model");
  save_function(y, path);
  FunctionPtr g = load_function(path);
  std::remove(path.c_str());
  EXPECT_EQ(g->name(), "model");
  EXPECT_EQ(g->root_function()->op_name(), "LeakyReLU");
  EXPECT_EQ(g->root_function()->attributes().at("alpha").as_double(), 0.25);
  ASSERT_EQ(g->arguments().size(), 1u);
  NDArrayView data = iota(DataType::Double, {2, 3}, -2);
  EXPECT_EQ(eval(y, x, data), eval(g, g->arguments()[0], data));
}

TEST(Serialize, EngineOpsThatAreBlocksInCntkAreWrittenAsBlocks) {
  auto x = Variable::input({2}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  auto f = Function::composite(Function::primitive("SELU", {x}, {}));
  Dictionary d = function_to_dictionary(f);
  const auto& fns = d.at("primitive_functions").as_list();
  const Dictionary& last = fns.back().as_dict();
  EXPECT_EQ(last.at("op").as_int(), 57);  // Block
  EXPECT_EQ(last.at("block_function_op_name").as_string(), "SELU");
  EXPECT_GT(fns.size(), 3u);  // the CNTK composite inside the block comes first
  FunctionPtr g = function_from_dictionary(d);
  EXPECT_EQ(g->root_function()->op_name(), "SELU");
  EXPECT_TRUE(g->root_function()->is_primitive());
  NDArrayView data = iota(DataType::Float, {3, 2}, -1.5);
  EXPECT_EQ(eval(f, x, data), eval(g, g->arguments()[0], data));
}

TEST(Serialize, CosDistanceWithNegativeSamplesLoadsInCntksFormAndTheAttributeForm) {
  auto x = Variable::input({4}, DataType::Double, false, false, {Axis::default_batch_axis()}, "x");
  auto y = Variable::input({4}, DataType::Double, false, false, {Axis::default_batch_axis()}, "y");
  Dictionary cos_attrs{{"shiftWindow", int64_t(1)}, {"numberOfNegativeSamples", int64_t(2)}};
  auto f = Function::composite(Function::primitive("CosDistanceWithNegativeSamples", {x, y}, cos_attrs));
  NDArrayView dx = iota(DataType::Double, {4, 4}, -2), dy = iota(DataType::Double, {4, 4}, 1.5);
  auto run = [&](const FunctionPtr& g) {
    VariableValues in;
    for (auto& a : g->arguments()) in.emplace_back(a, Value(a.name() == "x" ? dx : dy));
    std::vector<Value> out;
    forward(g, in, {g->output()}, out, false);
    return values_of(out[0].data());
  };
  Dictionary d = function_to_dictionary(f);
  DictValue::List fns = d.at("primitive_functions").as_list();
  ASSERT_EQ(fns.size(), 1u);
  Dictionary fd = fns[0].as_dict();
  EXPECT_EQ(fd.at("op").as_int(), 67);
  DictValue::List ins = fd.at("inputs").as_list();
  ASSERT_EQ(ins.size(), 4u);  // as CNTK: x, y, then the shift and the count as constants
  EXPECT_EQ(fd.at("attributes").as_dict().count("shiftWindow"), 0u);
  EXPECT_EQ(run(function_from_dictionary(d)), run(f));
  // The attribute form (two inputs) loads the same.
  fd["inputs"] = DictValue::List{ins[0], ins[1]};
  Dictionary attrs;
  attrs["shiftWindow"] = int64_t(1);
  attrs["numberOfNegativeSamples"] = int64_t(2);
  fd["attributes"] = attrs;
  fns[0] = fd;
  d["primitive_functions"] = fns;
  EXPECT_EQ(run(function_from_dictionary(d)), run(f));
  // Anything but constants in their place is a bad file.
  fd["inputs"] = DictValue::List{ins[0], ins[1], ins[0], ins[1]};
  fd["attributes"] = Dictionary();
  fns[0] = fd;
  d["primitive_functions"] = fns;
  EXPECT_THROW(function_from_dictionary(d, "cos.model"), IOError);
}

TEST(Serialize, ReductionRank0ConvolutionIsCntksBlockAndTheEarlierFormLoads) {
  auto x = Variable::input({5, 6}, DataType::Double, false, false, {Axis::default_batch_axis()}, "x");
  auto w = Variable::parameter({3, 2, 3}, DataType::Double, iota(DataType::Double, {3, 2, 3}, -2), nullptr, "W");
  Dictionary attrs{{"strides", DictValue::List{DictValue(int64_t(2)), DictValue(int64_t(1))}},
                   {"autoPadding", DictValue::List{DictValue(false), DictValue(true)}},
                   {"reductionRank", int64_t(0)}};
  auto f = Function::composite(Function::primitive("Convolution", {w, x}, attrs, "conv"));
  NDArrayView data = iota(DataType::Double, {2, 5, 6}, -3);
  Dictionary d = function_to_dictionary(f);
  DictValue::List fns = d.at("primitive_functions").as_list();
  ASSERT_EQ(fns.size(), 4u);  // Reshape(W), Reshape(x), Convolution, then the block
  Dictionary block = fns.back().as_dict(), conv = fns[2].as_dict();
  EXPECT_EQ(block.at("op").as_int(), 57);
  EXPECT_EQ(block.at("block_function_op_name").as_string(), "Convolution");
  EXPECT_EQ(conv.at("op").as_int(), 33);
  EXPECT_EQ(conv.at("attributes").as_dict().count("reductionRank"), 0u);
  EXPECT_EQ(conv.at("attributes").as_dict().at("strides").as_shape(), NDShape({1, 2, 1}));
  FunctionPtr g = function_from_dictionary(d);
  EXPECT_EQ(g->root_function()->op_name(), "Convolution");
  EXPECT_EQ(attr_int(g->root_function()->attributes(), "reductionRank", 1), 0);
  EXPECT_EQ(eval(g, g->arguments()[0], data), eval(f, x, data));
  // The earlier form: one Convolution carrying reductionRank 0 (and no channel entries).
  Dictionary a = conv.at("attributes").as_dict();
  a["reductionRank"] = int64_t(0);
  a["strides"] = NDShape({2, 1});
  DictValue::List pad = a.at("autoPadding").as_list();  // CNTK's order: the channel entry last
  pad.pop_back();
  a["autoPadding"] = pad;
  conv["attributes"] = a;
  conv["uid"] = block.at("uid");
  conv["inputs"] = DictValue::List{DictValue(w.uid()), DictValue(x.uid())};
  d["primitive_functions"] = DictValue::List{DictValue(conv)};
  FunctionPtr h = function_from_dictionary(d);
  EXPECT_EQ(eval(h, h->arguments()[0], data), eval(f, x, data));
}

TEST(Serialize, SequenceSliceBlockLoadsFromItsCompositeAndABrokenOneIsABadFile) {
  auto s = Variable::input({3}, DataType::Float, false, false,
                           {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "s");
  auto f = Function::composite(
      Function::primitive("SequenceSlice", {s}, {{"beginIndex", int64_t(-3)}, {"endIndex", int64_t(2)}}));
  Dictionary d = function_to_dictionary(f);
  FunctionPtr g = function_from_dictionary(d);
  EXPECT_EQ(g->root_function()->op_name(), "SequenceSlice");
  EXPECT_EQ(attr_int(g->root_function()->attributes(), "beginIndex", 0), -3);
  EXPECT_EQ(attr_int(g->root_function()->attributes(), "endIndex", 0), 2);
  // Without its Where the block's slice cannot be read: an IOError naming the file, not a crash.
  DictValue::List fns = d.at("primitive_functions").as_list();
  for (auto& v : fns) {
    Dictionary fd = v.as_dict();
    if (fd.at("op").as_int() == 13) fd["op"] = int64_t(64);  // StopGradient
    v = fd;
  }
  d["primitive_functions"] = fns;
  try {
    function_from_dictionary(d, "slice.model");
    ADD_FAILURE() << "a broken Sequence::Slice block loaded";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("slice.model"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Sequence::Slice"), std::string::npos);
  }
}

TEST(Serialize, CntkPolicyNetworkLoads) {
  std::string path = data_file("initial_policy_network.model");
  if (!exists(path)) GTEST_SKIP() << path << " is absent";
  FunctionPtr f = load_function(path);
  EXPECT_TRUE(f->root_function()->is_block());
  EXPECT_EQ(f->root_function()->op_name(), "Dense");
  auto args = f->arguments();
  ASSERT_EQ(args.size(), 1u);
  EXPECT_EQ(args[0].shape(), (NDShape{2}));
  ASSERT_EQ(args[0].dynamic_axes().size(), 2u);
  EXPECT_TRUE(args[0].dynamic_axes()[0].is_batch());  // the engine lists the batch axis first
  EXPECT_EQ(f->output().shape(), (NDShape{3}));
}

TEST(Serialize, CntkLearnerCheckpointRestoresIntoALearner) {
  std::string path = data_file("learner.checkpoint.backcompat.bin");
  if (!exists(path)) GTEST_SKIP() << path << " is absent";
  Dictionary d = load_dictionary(path);
  std::vector<Variable> params;
  for (auto& [k, v] : d) {
    if (k.rfind("Parameter", 0) != 0) continue;
    const NDArrayView& a = v.as_array();
    auto p = Variable::parameter(a.shape(), a.dtype(), NDArrayView::zeros(a.dtype(), a.shape()), nullptr, "");
    p.impl()->uid = k;
    params.push_back(p);
  }
  ASSERT_EQ(params.size(), 21u);
  EXPECT_EQ(d.at("Parameter1").as_array().shape(), (NDShape{3, 50}));
  auto learner = momentum_sgd_learner(params, LearningRateSchedule(0.1), MomentumSchedule(0.9));
  learner->restore_from_checkpoint(d);
  Dictionary now = learner->create_checkpoint();
  EXPECT_EQ(now.at("sample_count").as_int(), 10);
  EXPECT_EQ(now.at("minibatchCount").as_int(), 10);
  const auto& smoothed = now.at("smoothed_gradients").as_list();
  ASSERT_EQ(smoothed.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(values_of(smoothed[i].as_array()), values_of(d.at(params[i].uid()).as_array())) << params[i].uid();
  // The version 1 schedule is per sample (unit 0): reference minibatch size 1.
  EXPECT_EQ(now.at("learnig_rate_schedule").as_dict().at("ref_mb_size").as_int(), 1);
  EXPECT_DOUBLE_EQ(now.at("learnig_rate_schedule").as_dict().at("schedule").as_dict().at("0").as_double(), 0.005);
}

TEST(Serialize, CntkDictionaryFilesParse) {
  for (const char* name :
       {"past.dictionary.proto.bin", "future.dictionary.proto.bin", "v2.0.beta1.0.dictionary.proto.bin"}) {
    std::string path = data_file(name);
    if (!exists(path)) GTEST_SKIP() << path << " is absent";
    Dictionary d = load_dictionary(path);
    EXPECT_FALSE(d.empty()) << name;
  }
}

TEST(Serialize, BadInputRaisesIOErrorNamingTheSource) {
  auto x = Variable::input({2}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  std::string good = save_function_to_bytes(Function::composite(Function::primitive("Exp", {x}, {})));
  for (size_t cut : {size_t(1), good.size() / 2, good.size() - 1}) {
    try {
      load_function_from_bytes(good.substr(0, cut), "cut.model");
      ADD_FAILURE() << "a model cut to " << cut << " bytes loaded";
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find("cut.model"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_function_from_bytes("", "empty"), IOError);
  EXPECT_THROW(load_function_from_bytes("not a model at all", "text"), IOError);
  EXPECT_THROW(load_function("/nonexistent/dir/model.bin"), IOError);
  EXPECT_THROW(save_function(Function::composite(Function::primitive("Exp", {x}, {})), "/nonexistent/dir/m"), IOError);
  // A well-formed dictionary that is not a model.
  Dictionary d;
  d["type"] = "Learner";
  try {
    function_from_dictionary(d, "learner.bin");
    ADD_FAILURE() << "a learner checkpoint loaded as a model";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("learner.bin"), std::string::npos);
  }
}

TEST(Serialize, UnknownOpsRaiseNotImplementedNamingTheOp) {
  auto x = Variable::input({2}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  Dictionary d = function_to_dictionary(Function::composite(Function::primitive("Exp", {x}, {})));
  auto fns = d.at("primitive_functions").as_list();
  Dictionary f = fns[0].as_dict();
  f["op"] = int64_t(32);  // TransposeTimes, which the engine does not have
  fns[0] = f;
  d["primitive_functions"] = fns;
  try {
    function_from_dictionary(d, "rnn.model");
    ADD_FAILURE() << "an unknown op loaded";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("TransposeTimes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rnn.model"), std::string::npos) << e.what();
  }
  f["op"] = int64_t(1000);
  fns[0] = f;
  d["primitive_functions"] = fns;
  EXPECT_THROW(function_from_dictionary(d, "bad.model"), IOError);
}

// A loop h = x + PastValue(h): saving writes the cycle (PastValue names Plus's output before
// Plus is written); loading closes it again, and a dangling output reference is an IOError.
TEST(Serialize, RecurrentLoopsLoadAndDanglingReferencesAreIOErrors) {
  auto x = Variable::input({2}, DataType::Float, false, false,
                           {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "x");
  auto p = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "");
  Dictionary a;
  a["offset"] = int64_t(1);
  auto init = Variable::constant(NDArrayView::scalar(DataType::Float, 0.5), "");
  auto pv = Function::primitive("PastValue", {p, init}, a);
  auto h = Function::primitive("Plus", {x, pv->output()}, {});
  auto f = Function::composite(h);
  f->replace_placeholders({{p.get(), h->output()}});
  Dictionary d = function_to_dictionary(f);
  FunctionPtr g = function_from_dictionary(d, "loop.model");
  EXPECT_TRUE(g->placeholders().empty());
  auto order = g->topological_order();
  ASSERT_EQ(order.size(), 2u);
  FunctionPtr delay = order[0]->op_name() == "PastValue" ? order[0] : order[1];
  ASSERT_EQ(delay->op_name(), "PastValue");
  // The delay reads the Plus that reads it.
  ASSERT_TRUE(delay->direct_inputs()[0].owner());
  EXPECT_EQ(delay->direct_inputs()[0].owner()->op_name(), "Plus");
  EXPECT_EQ(delay->direct_inputs()[0].owner()->direct_inputs()[1].owner().get(), delay.get());
  EXPECT_EQ(g->output().shape(), NDShape({2}));

  auto fns = d.at("primitive_functions").as_list();
  for (auto& fv : fns) {
    Dictionary fd = fv.as_dict();
    if (fd.at("op").as_int() != 37) continue;  // PastValue
    auto ins = fd.at("inputs").as_list();
    ins[0] = DictValue(std::string("Nope_Output_0"));
    fd["inputs"] = ins;
    fv = fd;
  }
  d["primitive_functions"] = fns;
  try {
    function_from_dictionary(d, "dangling.model");
    ADD_FAILURE() << "a dangling output reference loaded";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("Nope_Output_0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dangling.model"), std::string::npos) << e.what();
  }
}

namespace {
// Two dictionary values are equal (NDArrayViews by value).
bool same_value(const DictValue& a, const DictValue& b) {
  if (a.storage().index() != b.storage().index()) return false;
  if (a.is<NDArrayView>()) return values_of(a.as_array()) == values_of(b.as_array());
  if (a.is<std::shared_ptr<DictValue::List>>()) {
    if (a.as_list().size() != b.as_list().size()) return false;
    for (size_t i = 0; i < a.as_list().size(); ++i)
      if (!same_value(a.as_list()[i], b.as_list()[i])) return false;
    return true;
  }
  if (a.is<std::shared_ptr<Dictionary>>()) {
    if (a.as_dict().size() != b.as_dict().size()) return false;
    for (auto& [k, v] : a.as_dict())
      if (!b.as_dict().count(k) || !same_value(v, b.as_dict().at(k))) return false;
    return true;
  }
  if (a.is<bool>()) return a.as_bool() == b.as_bool();
  if (a.is<int64_t>()) return a.as_int() == b.as_int();
  if (a.is<double>()) return a.as_double() == b.as_double();
  if (a.is<std::string>()) return a.as_string() == b.as_string();
  if (a.is<NDShape>()) return a.as_shape() == b.as_shape();
  if (a.is<Axis>()) return a.as_axis() == b.as_axis() && a.as_axis().is_ordered() == b.as_axis().is_ordered();
  return a.empty() && b.empty();
}
}  // namespace

// Loading CNTK's file and saving it again writes what CNTK wrote: the same variables (uids,
// kinds, shapes, values, dynamic axes), the same ops in the same order with the same
// attributes, and the same operand order (Times takes the weight first, as in CNTK).
TEST(Serialize, ResavingCntkModelReproducesItsLayout) {
  std::string path = data_file("initial_policy_network.model");
  if (!exists(path)) GTEST_SKIP() << path << " is absent";
  Dictionary orig = load_dictionary(path);
  Dictionary again = function_to_dictionary(function_from_dictionary(orig, path));
  auto by_uid = [](const Dictionary& d) {
    std::map<std::string, Dictionary> m;
    for (auto& v : d.at("inputs").as_list()) m[v.as_dict().at("uid").as_string()] = v.as_dict();
    return m;
  };
  auto vo = by_uid(orig), va = by_uid(again);
  ASSERT_EQ(vo.size(), va.size());
  for (auto& [uid, v] : vo) {
    ASSERT_TRUE(va.count(uid)) << uid;
    for (const char* k :
         {"kind", "data_type", "shape", "dynamic_axis", "is_sparse", "needs_gradient", "value", "name"}) {
      EXPECT_EQ(v.count(k), va[uid].count(k)) << uid << " " << k;
      if (v.count(k) && va[uid].count(k)) EXPECT_TRUE(same_value(v.at(k), va[uid].at(k))) << uid << " " << k;
    }
  }
  const auto& fo = orig.at("primitive_functions").as_list();
  const auto& fa = again.at("primitive_functions").as_list();
  ASSERT_EQ(fo.size(), fa.size());
  // Function uids are new; map the original ones to ours by position to compare operands.
  std::map<std::string, std::string> uid_map;
  for (size_t i = 0; i < fo.size(); ++i) {
    const Dictionary &a = fo[i].as_dict(), &b = fa[i].as_dict();
    uid_map[a.at("uid").as_string()] = b.at("uid").as_string();
    EXPECT_EQ(a.at("op").as_int(), b.at("op").as_int()) << i;
    EXPECT_TRUE(same_value(a.at("attributes"), b.at("attributes"))) << i;
    std::vector<std::string> ia, ib;
    for (auto& u : a.at("inputs").as_list()) {
      std::string s = u.as_string();
      auto cut = s.rfind("_Output_");
      ia.push_back(
          cut != std::string::npos && uid_map.count(s.substr(0, cut)) ? uid_map[s.substr(0, cut)] + s.substr(cut) : s);
    }
    for (auto& u : b.at("inputs").as_list()) ib.push_back(u.as_string());
    EXPECT_EQ(ia, ib) << "function " << i;
    if (a.count("block_function_op_name"))
      EXPECT_EQ(a.at("block_function_op_name").as_string(), b.at("block_function_op_name").as_string());
  }
  EXPECT_EQ(uid_map[orig.at("root").as_string()], again.at("root").as_string());
}

namespace {
// A regression model with dropout, trained by momentum SGD: its parameters after `steps`
// minibatches, optionally checkpointed after `save_at` or restored from `restore` first.
struct DropoutRegression {
  Variable x, y, W, b;
  FunctionPtr model, loss;
  std::shared_ptr<Trainer> trainer;
  explicit DropoutRegression(uint64_t seed) {
    x = Variable::input({3}, DataType::Double, false, false, {Axis::default_batch_axis()}, "x");
    y = Variable::input({1}, DataType::Double, false, false, {Axis::default_batch_axis()}, "y");
    W = Variable::parameter({3, 1}, DataType::Double, iota(DataType::Double, {3, 1}, -0.5), nullptr, "W");
    b = Variable::parameter({1}, DataType::Double, iota(DataType::Double, {1}, 0.1), nullptr, "b");
    Dictionary drop{
        {"dropoutRate", DictValue(0.4)}, {"rngSeed", DictValue(int64_t(seed))}, {"rngOffset", DictValue(int64_t(0))}};
    auto dx = Function::primitive("Dropout", {x}, drop);
    auto z = Function::primitive("Plus", {Function::primitive("Times", {dx->output(), W}, {})->output(), b}, {});
    auto diff = Function::primitive("Minus", {z->output(), y}, {});
    auto sq = Function::primitive("ElementTimes", {diff->output(), diff->output()}, {});
    Dictionary red{{"reductionOpName", DictValue("Sum")},
                   {"axis", DictValue(Axis::all_static_axes())},
                   {"reductionKeepDimensions", DictValue(true)}};
    loss = Function::composite(Function::primitive("ReduceElements", {sq->output()}, red));
    model = Function::composite(z);
    trainer = std::make_shared<Trainer>(
        model, loss, nullptr,
        std::vector<LearnerPtr>{momentum_sgd_learner({W, b}, LearningRateSchedule(0.05), MomentumSchedule(0.9))});
  }
  void train(int from, int to) {
    for (int step = from; step < to; ++step)
      trainer->train_minibatch({{x, Value(iota(DataType::Double, {4, 3}, -1.0 + 0.1 * step))},
                                {y, Value(iota(DataType::Double, {4, 1}, 0.3 * step))}});
  }
  std::vector<double> params() const {
    auto w = values_of(W.value());
    w.push_back(values_of(b.value())[0]);
    return w;
  }
};
}  // namespace

TEST(Serialize, TrainerCheckpointResumesBitIdentically) {
  std::string path = temp_path("serialize_trainer_checkpoint");
  DropoutRegression straight(11);
  straight.train(0, 3);
  Dictionary ext;
  ext["epoch"] = int64_t(3);
  save_trainer_checkpoint(*straight.trainer, path, ext);
  straight.train(3, 8);

  // Another graph (another dropout seed): the checkpoint brings back values, momentum and the generator.
  DropoutRegression resumed(99);
  Dictionary back = restore_trainer_checkpoint(*resumed.trainer, path);
  EXPECT_EQ(back.at("epoch").as_int(), 3);
  EXPECT_EQ(resumed.trainer->total_number_of_samples_seen(), 12u);
  resumed.train(3, 8);
  EXPECT_EQ(straight.params(), resumed.params());

  Dictionary state = load_dictionary(path + ".ckp");
  EXPECT_EQ(state.at("Version").as_int(), 1);
  EXPECT_EQ(state.at("Learners").as_list().size(), 1u);
  EXPECT_EQ(state.at("RandomStates").as_list().size(), 1u);
  EXPECT_EQ(load_function(path)->parameters().size(), 2u);

  // A generator state whose key or position is not an integer is refused by name.
  for (const char* key : {"seed", "counter"}) {
    Dictionary bad = state;
    DictValue::List randoms = state.at("RandomStates").as_list();
    Dictionary r = randoms[0].as_dict();
    r[key] = DictValue("7");
    randoms[0] = DictValue(r);
    bad["RandomStates"] = DictValue(randoms);
    save_dictionary(bad, path + ".ckp");
    try {
      restore_trainer_checkpoint(*resumed.trainer, path);
      ADD_FAILURE() << "a malformed " << key << " was accepted";
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("has a malformed ") + key), std::string::npos) << e.what();
    }
  }
  std::remove(path.c_str());
  std::remove((path + ".ckp").c_str());
  EXPECT_THROW(restore_trainer_checkpoint(*resumed.trainer, path), IOError);
}
