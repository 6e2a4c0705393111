// Cost of the profiler's instrumentation, per scope: with profiling off (the branch
// every instrumented place pays), on and recording, and on with the buffer full
// (events counted as dropped). Prints one JSON object; bench/profiler.py runs it.
//
//   build/dev/bench_profiler_overhead [events_per_thread] [threads]
//
// Each figure is the best of several loops, per call, both as wall time and as the
// calling thread's CPU time: on a machine shared with other work, wall time also
// counts the time the thread waited for a CPU, CPU time does not.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cntk/profiler.h"

namespace {

namespace prof = cntk::profiler;

// A scope around a trivial body the compiler cannot remove.
__attribute__((noinline)) void scoped(volatile uint64_t* sink) {
  CNTK_PROFILE_SCOPE("bench scope");
  *sink = *sink + 1;
}
__attribute__((noinline)) void bare(volatile uint64_t* sink) { *sink = *sink + 1; }
__attribute__((noinline)) void two_clock_reads(volatile uint64_t* sink) {
  uint64_t a = prof::detail::now();
  *sink = *sink + (prof::detail::now() - a);
}
__attribute__((noinline)) void two_steady_clock_reads(volatile uint64_t* sink) {
  uint64_t a = prof::detail::steady_ns();
  *sink = *sink + (prof::detail::steady_ns() - a);
}

double thread_cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

struct PerCall {
  double wall = 1e300, cpu = 1e300;
};

// Per call of f over n calls on each of `threads` threads: wall time / n, and the
// threads' mean CPU time / n.
PerCall per_call(void (*f)(volatile uint64_t*), size_t n, int threads) {
  std::vector<std::thread> pool;
  std::vector<double> cpu(threads, 0.0);
  auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      volatile uint64_t sink = 0;
      double c0 = thread_cpu_ns();
      for (size_t i = 0; i < n; ++i) f(&sink);
      cpu[t] = thread_cpu_ns() - c0;
    });
  for (auto& th : pool) th.join();
  PerCall r;
  r.wall = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / double(n);
  double sum = 0;
  for (double c : cpu) sum += c;
  r.cpu = sum / double(threads) / double(n);
  return r;
}

PerCall best_of(int reps, const std::function<PerCall()>& f) {
  PerCall best;
  for (int r = 0; r < reps; ++r) {
    PerCall p = f();
    best.wall = std::min(best.wall, p.wall);
    best.cpu = std::min(best.cpu, p.cpu);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  std::string dir = (std::filesystem::temp_directory_path() / "cntk_bench_profiler").string();
  const int reps = 7;

  PerCall bare_c = best_of(reps, [&] { return per_call(bare, n, threads); });
  PerCall off = best_of(reps, [&] { return per_call(scoped, n, threads); });
  // Recording: a buffer large enough for every event of one loop.
  size_t dropped = 0;
  PerCall on = best_of(reps, [&] {
    prof::start(dir, false, (n * size_t(threads) + 16) * sizeof(prof::Event));
    prof::enable();
    PerCall t = per_call(scoped, n, threads);
    dropped += prof::status().dropped;
    prof::disable();
    prof::stop();
    return t;
  });
  // Buffer full: every event is counted as dropped.
  PerCall full = best_of(reps, [&] {
    prof::start(dir, false, 16 * sizeof(prof::Event));
    prof::enable();
    PerCall t = per_call(scoped, n, threads);
    prof::stop();
    return t;
  });
  PerCall clock2 = best_of(reps, [&] { return per_call(two_clock_reads, n, threads); });
  PerCall steady2 = best_of(reps, [&] { return per_call(two_steady_clock_reads, n, threads); });
  std::filesystem::remove_all(dir);
  auto pair = [](const PerCall& p) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "{\"wall\": %.2f, \"cpu\": %.2f}", p.wall, p.cpu);
    return std::string(buf);
  };
  auto minus = [](const PerCall& a, const PerCall& b) { return PerCall{a.wall - b.wall, a.cpu - b.cpu}; };
  std::printf(
      "{\"events_per_thread\": %zu, \"threads\": %d, \"repetitions\": %d, \"event_bytes\": %zu, \"clock\": \"%s\", "
      "\"unexpected_drops\": %zu, \"ns\": {\"bare_call\": %s, \"scope_off\": %s, \"scope_recording\": %s, "
      "\"scope_buffer_full\": %s, \"two_profiler_clock_reads\": %s, \"two_steady_clock_reads\": %s, "
      "\"overhead_off\": %s, \"overhead_per_event\": %s, \"overhead_buffer_full\": %s}}\n",
      n, threads, reps, sizeof(prof::Event), prof::detail::g_use_tsc ? "tsc" : "steady_clock", dropped,
      pair(bare_c).c_str(), pair(off).c_str(), pair(on).c_str(), pair(full).c_str(), pair(clock2).c_str(),
      pair(steady2).c_str(), pair(minus(off, bare_c)).c_str(), pair(minus(on, bare_c)).c_str(),
      pair(minus(full, bare_c)).c_str());
  return 0;
}
