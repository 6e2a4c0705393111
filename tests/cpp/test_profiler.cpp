// The profiler: recording, the two files, buffer overflow, per-node and phase
// events from the executor and the Trainer, per-node timing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "cntk/learner.h"
#include "cntk/profiler.h"
#include "cntk/trainer.h"

using namespace cntk;
namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A fresh directory per test; the profiler session is stopped when the test ends.
class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    profiler::stop();
    dir_ = (fs::temp_directory_path() / ("cntk_profiler_test_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override {
    profiler::stop();
    fs::remove_all(dir_);
  }
  std::string dir_;
};

size_t count_of(const std::vector<profiler::Event>& ev, const std::string& name) {
  size_t n = 0;
  for (auto& e : ev) n += name == e.name;
  return n;
}

struct Regression {
  Variable x, y, W, b;
  FunctionPtr model, loss;
};

Regression regression() {
  Regression r;
  r.x = Variable::input({2}, DataType::Double, false, false, {Axis::default_batch_axis()}, "x");
  r.y = Variable::input({1}, DataType::Double, false, false, {Axis::default_batch_axis()}, "y");
  NDArrayView w0 = NDArrayView::full(DataType::Double, NDShape{2, 1}, 0.5);
  r.W = Variable::parameter({2, 1}, DataType::Double, w0, nullptr, "W");
  r.b = Variable::parameter({1}, DataType::Double, NDArrayView::full(DataType::Double, NDShape{1}, 0.25), nullptr, "b");
  auto times = Function::primitive("Times", {r.x, r.W}, {}, "proj");
  auto z = Function::primitive("Plus", {times->output(), r.b}, {}, "z");
  auto diff = Function::primitive("Minus", {z->output(), r.y}, {}, "diff");
  auto sq = Function::primitive("ElementTimes", {diff->output(), diff->output()}, {}, "sq");
  Dictionary red{{"reductionOpName", DictValue("Sum")},
                 {"axis", DictValue(Axis::all_static_axes())},
                 {"reductionKeepDimensions", DictValue(true)}};
  r.loss = Function::composite(Function::primitive("ReduceElements", {sq->output()}, red, "loss"));
  r.model = Function::composite(z);
  return r;
}

VariableValues batch(const Regression& r, int n) {
  NDArrayView xs = NDArrayView::full(DataType::Double, NDShape{n, 2}, 1.0);
  NDArrayView ys = NDArrayView::full(DataType::Double, NDShape{n, 1}, 0.0);
  return {{r.x, Value(xs)}, {r.y, Value(ys)}};
}

}  // namespace

TEST_F(ProfilerTest, RecordsOnlyWhileEnabled) {
  EXPECT_FALSE(profiler::enable());  // no session
  { CNTK_PROFILE_SCOPE("before start"); }
  profiler::start(dir_, true, 1 << 16);
  EXPECT_TRUE(fs::is_directory(dir_));
  { CNTK_PROFILE_SCOPE("started, not enabled"); }
  EXPECT_TRUE(profiler::enable());
  { CNTK_PROFILE_SCOPE("enabled"); }
  { CNTK_PROFILE_PHASE(Forward); }
  EXPECT_TRUE(profiler::disable());
  { CNTK_PROFILE_SCOPE("disabled again"); }
  auto ev = profiler::events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_STREQ(ev[0].name, "enabled");
  EXPECT_EQ(ev[0].kind, profiler::EventKind::Custom);
  EXPECT_STREQ(ev[1].name, "forward");
  EXPECT_EQ(ev[1].kind, profiler::EventKind::Phase);
  for (auto& e : ev) EXPECT_LE(e.begin, e.end);
}

TEST_F(ProfilerTest, StopWritesSummaryAndDetailWithCustomScopesOnlyInDetail) {
  profiler::set_rank(3);
  profiler::start(dir_);
  profiler::enable();
  for (int i = 0; i < 5; ++i) {
    CNTK_PROFILE_PHASE(Minibatch);
    CNTK_PROFILE_SCOPE("my \"custom\" scope");
  }
  auto stats = profiler::summary_stats();
  ASSERT_EQ(stats.size(), 1u);  // the custom scope is not summarized
  EXPECT_EQ(stats[0].name, "minibatch");
  EXPECT_EQ(stats[0].count, 5u);
  EXPECT_LE(stats[0].min_ms, stats[0].mean_ms);
  EXPECT_LE(stats[0].mean_ms, stats[0].max_ms);
  auto paths = profiler::stop();
  profiler::set_rank(0);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_NE(paths[0].find("_summary_3.txt"), std::string::npos);
  EXPECT_NE(paths[1].find("_detail_3.json"), std::string::npos);
  std::string summary = read_text(paths[0]), detail = read_text(paths[1]);
  EXPECT_NE(summary.find("minibatch"), std::string::npos);
  EXPECT_EQ(summary.find("my \"custom\" scope"), std::string::npos);  // custom scopes: detail only
  EXPECT_NE(detail.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(detail.find("my \\\"custom\\\" scope"), std::string::npos);  // escaped JSON string
  EXPECT_FALSE(fs::exists(paths[0] + ".tmp"));
  EXPECT_TRUE(profiler::stop().empty());  // already stopped
}

TEST_F(ProfilerTest, OverflowCountsDroppedEventsAcrossThreads) {
  profiler::start(dir_, false, 10 * sizeof(profiler::Event));
  profiler::enable();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 1000; ++i) {
        CNTK_PROFILE_SCOPE("worker");
      }
    });
  for (auto& t : threads) t.join();
  auto st = profiler::status();
  EXPECT_EQ(st.capacity, 10u);
  EXPECT_EQ(st.recorded, 10u);
  EXPECT_EQ(st.dropped, 3990u);
  EXPECT_EQ(profiler::events().size(), 10u);
  auto paths = profiler::stop();
  EXPECT_NE(read_text(paths[0]).find("dropped events: 3990"), std::string::npos);
  EXPECT_NE(read_text(paths[1]).find("\"dropped_events\":3990"), std::string::npos);
}

TEST_F(ProfilerTest, BadArgumentsRaise) {
  EXPECT_THROW(profiler::start(dir_, true, 1), ValueError);  // holds no event
  EXPECT_THROW(profiler::start("", true, 1024), ValueError);
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/file") << "x";
  EXPECT_THROW(profiler::start(dir_ + "/file/sub", true, 1024), IOError);
  profiler::start(dir_);
  EXPECT_THROW(profiler::start(dir_), ValueError);  // already running
}

TEST_F(ProfilerTest, TrainerRecordsPhasesAndEveryPrimitive) {
  Regression r = regression();
  Trainer t(r.model, r.loss, r.loss, {sgd_learner({r.W, r.b}, LearningRateSchedule(0.01, 1))});
  profiler::start(dir_);
  profiler::enable();
  for (int i = 0; i < 3; ++i) t.train_minibatch(batch(r, 4));
  t.test_minibatch(batch(r, 4));
  auto ev = profiler::events();
  for (const char* phase : {"minibatch", "forward", "backward", "parameter update"})
    EXPECT_EQ(count_of(ev, phase), 3u) << phase;
  EXPECT_EQ(count_of(ev, "evaluation"), 1u);
  for (const char* node : {"Times proj", "Plus z", "Minus diff", "ElementTimes sq", "ReduceElements loss"}) {
    EXPECT_EQ(count_of(ev, node), 4u) << node;  // 3 training forwards + 1 test
    EXPECT_EQ(count_of(ev, std::string(node) + " (backward)"), 3u) << node;
  }
  // Node events nest inside their pass.
  uint64_t fb = 0, fe = 0;
  for (auto& e : ev)
    if (std::string(e.name) == "forward") {
      fb = e.begin;
      fe = e.end;
      break;
    }
  for (auto& e : ev)
    if (std::string(e.name) == "Times proj") {
      EXPECT_GE(e.begin, fb);
      EXPECT_LE(e.end, fe);
      break;
    }
}

TEST_F(ProfilerTest, TrainerWritesFilesWhenAMinibatchRaises) {
  Regression r = regression();
  Trainer t(r.model, r.loss, r.loss, {sgd_learner({r.W, r.b}, LearningRateSchedule(0.01, 1))});
  profiler::start(dir_);
  profiler::enable();
  t.train_minibatch(batch(r, 2));
  NDArrayView bad = NDArrayView::full(DataType::Double, NDShape{2, 5}, 1.0);
  EXPECT_THROW(t.train_minibatch({{r.x, Value(bad)}, {r.y, batch(r, 2)[1].second}}), ValueError);
  std::vector<fs::path> files;
  for (auto& f : fs::directory_iterator(dir_)) files.push_back(f.path());
  ASSERT_EQ(files.size(), 2u);  // written by the failing minibatch, before stop
  bool found = false;
  for (auto& f : files)
    if (f.string().find("_summary_0.txt") != std::string::npos)
      found = read_text(f.string()).find("parameter update") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST_F(ProfilerTest, NodeTimingAddsUpPerNode) {
  Regression r = regression();
  profiler::start(dir_);  // started, not enabled: no profiler events
  profiler::set_node_timing(true);
  std::vector<Value> out;
  for (int i = 0; i < 2; ++i) forward(r.loss, batch(r, 3), {}, out, false);
  profiler::set_node_timing(false);
  forward(r.loss, batch(r, 3), {}, out, false);  // not counted
  auto root = r.loss->root_function();
  auto t = profiler::node_time(root->uid());
  EXPECT_EQ(t.forward_calls, 2u);
  EXPECT_EQ(t.backward_calls, 0u);
  EXPECT_GE(t.forward_ms, 0.0);
  EXPECT_EQ(profiler::node_time("no such uid").forward_calls, 0u);
  EXPECT_TRUE(profiler::events().empty());  // node timing alone records no profiler events
}
