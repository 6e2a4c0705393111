// The kernels' LRU primitive cache: bounded, least recently used evicted first, entries
// handed out by value, and safe to use from several threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/primitive_cache.h"

using cntk::kernels::PrimitiveCache;

TEST(PrimitiveCache, MakesOncePerKeyAndEvictsLeastRecentlyUsed) {
  PrimitiveCache<int, std::string> c(2);
  int made = 0;
  auto make = [&](int k) {
    return [&, k] {
      ++made;
      return "v" + std::to_string(k);
    };
  };
  EXPECT_EQ(c.get(1, make(1)), "v1");
  EXPECT_EQ(c.get(2, make(2)), "v2");
  EXPECT_EQ(c.get(1, make(1)), "v1");  // hit: 1 is now the most recent
  EXPECT_EQ(made, 2);
  EXPECT_EQ(c.get(3, make(3)), "v3");  // evicts 2, the least recently used
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(made, 3);
  c.get(1, make(1));
  EXPECT_EQ(made, 3);
  c.get(2, make(2));
  EXPECT_EQ(made, 4);
}

TEST(PrimitiveCache, FailedMakeStoresNothing) {
  PrimitiveCache<int, int> c(4);
  EXPECT_THROW(c.get(1, []() -> int { throw std::runtime_error("no primitive"); }), std::runtime_error);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.get(1, [] { return 7; }), 7);
}

TEST(PrimitiveCache, ValuesOutliveEvictionFromOtherThreads) {
  // Shared handles, as oneDNN primitives are: a value taken from the cache stays valid
  // while other threads fill the cache and evict it.
  PrimitiveCache<int, std::shared_ptr<std::vector<int>>> c(8);
  std::atomic<bool> bad{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const int k = (i * 7 + t) % 32;
        auto v = c.get(k, [k] { return std::make_shared<std::vector<int>>(64, k); });
        for (int x : *v)
          if (x != k) bad = true;
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_FALSE(bad);
  EXPECT_LE(c.size(), 8u);
}
