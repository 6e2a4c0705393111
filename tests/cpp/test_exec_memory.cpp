#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cntk/evaluation.h"
#include "cntk/function.h"

using namespace cntk;

// A repeated minibatch of the same layout reuses the plan and the allocator's
// free lists: after warm-up, forward + backward take nothing new from the system.
TEST(ExecMemory, RepeatedMinibatchAllocatesNothingNew) {
  auto x = Variable::input({8}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  NDArrayView w0(DataType::Float, {8, 4});
  w0.fill(0.1);
  auto w = Variable::parameter({8, 4}, DataType::Float, w0, nullptr, "w");
  auto h = Function::primitive("Tanh", {Function::primitive("Times", {x, w}, {})->output()}, {});
  auto loss = Function::composite(
      Function::primitive("ReduceElements", {h->output()}, {{"reductionOpName", DictValue("Sum")}}));
  NDArrayView data(DataType::Float, {16, 8});
  data.fill(0.5);
  NDArrayView ones(DataType::Float, {16, 1});
  ones.fill(1.0);
  auto step = [&] {
    std::vector<Value> outs, grads;
    auto st = forward(loss, {{x, Value(data)}}, {}, outs, true);
    backward(st, {{loss->output(), Value(ones)}}, {w}, grads);
  };
  for (int i = 0; i < 3; ++i) step();
  size_t plans = plans_compiled(), allocs = storage_system_allocations();
  for (int i = 0; i < 10; ++i) step();
  EXPECT_EQ(plans_compiled(), plans);
  EXPECT_EQ(storage_system_allocations(), allocs);
}

// Blocks of 2 MiB and more start on a 2 MiB boundary and carry the kernel's huge-page
// advice over their whole 2 MiB pages (VmFlags "hg" in /proc/self/smaps); smaller ones
// are left as they come.
TEST(ExecMemory, LargeBlocksAskForHugePages) {
#if defined(__linux__)
  if (const char* v = std::getenv("CNTK_MALLOC_TUNING"); v && std::string(v) == "0")
    GTEST_SKIP() << "CNTK_MALLOC_TUNING=0 turns the advice off";
  auto vm_flags_at = [](const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    const auto a = reinterpret_cast<uintptr_t>(p);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
      uintptr_t lo = 0, hi = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) inside = a >= lo && a < hi;  // a mapping's header line
      if (inside && line.rfind("VmFlags:", 0) == 0) return line;
    }
    return std::string();
  };
  NDArrayView big(DataType::Float, NDShape{3, 1 << 20});  // 12 MiB
  const void* p = big.raw_data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (uintptr_t(2) << 20), 0u);
  const std::string flags = vm_flags_at(p);
  ASSERT_FALSE(flags.empty()) << "no mapping found for the block in /proc/self/smaps";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
#else
  GTEST_SKIP() << "Linux only";
#endif
}
