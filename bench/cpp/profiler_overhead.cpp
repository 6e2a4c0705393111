// Cost of the profiler's instrumentation, per scope: with profiling off (the branch
// every instrumented place pays), on and recording, and on with the buffer full
// (events counted as dropped). Prints one JSON object; bench/profiler.py runs it.
//
//   build/dev/bench_profiler_overhead [events_per_thread] [threads]
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

using Clock = std::chrono::steady_clock;

// A scope around a trivial body the compiler cannot remove.
__attribute__((noinline)) void scoped(volatile uint64_t* sink) {
  CNTK_PROFILE_SCOPE("bench scope");
  *sink = *sink + 1;
}
__attribute__((noinline)) void bare(volatile uint64_t* sink) { *sink = *sink + 1; }

// Nanoseconds per call of f over n calls on each of `threads` threads (wall time / calls per thread).
template <class F>
double per_call_ns(F f, size_t n, int threads) {
  std::vector<std::thread> pool;
  auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      volatile uint64_t sink = 0;
      for (size_t i = 0; i < n; ++i) f(&sink);
    });
  for (auto& th : pool) th.join();
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / double(n);
}

double best_of(int reps, const std::function<double()>& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) best = std::min(best, f());
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  std::string dir = (std::filesystem::temp_directory_path() / "cntk_bench_profiler").string();
  const int reps = 7;
  namespace prof = cntk::profiler;

  double bare_ns = best_of(reps, [&] { return per_call_ns(bare, n, threads); });
  double off_ns = best_of(reps, [&] { return per_call_ns(scoped, n, threads); });

  // Recording: a buffer large enough for every event of one repetition.
  double on_ns = best_of(reps, [&] {
    prof::start(dir, false, (n * size_t(threads) + 16) * sizeof(prof::Event));
    prof::enable();
    double t = per_call_ns(scoped, n, threads);
    prof::Status st = prof::status();
    prof::disable();
    prof::stop();
    if (st.dropped) std::fprintf(stderr, "unexpected: %zu events dropped\n", st.dropped);
    return t;
  });
  // Buffer full: every event is counted as dropped.
  double full_ns = best_of(reps, [&] {
    prof::start(dir, false, 16 * sizeof(prof::Event));
    prof::enable();
    double t = per_call_ns(scoped, n, threads);
    prof::stop();
    return t;
  });
  // Two clock reads alone, the floor of any timed event.
  double clock_ns = best_of(reps, [&] {
    return per_call_ns(
        [](volatile uint64_t* s) {
          uint64_t a = prof::detail::now_ns();
          *s = *s + (prof::detail::now_ns() - a);
        },
        n, threads);
  });
  std::filesystem::remove_all(dir);
  std::printf(
      "{\"events_per_thread\": %zu, \"threads\": %d, \"repetitions\": %d, \"event_bytes\": %zu, "
      "\"bare_call_ns\": %.2f, \"scope_off_ns\": %.2f, \"scope_recording_ns\": %.2f, \"scope_buffer_full_ns\": %.2f, "
      "\"two_clock_reads_ns\": %.2f, \"overhead_off_ns\": %.2f, \"overhead_per_event_ns\": %.2f}\n",
      n, threads, reps, sizeof(prof::Event), bare_ns, off_ns, on_ns, full_ns, clock_ns, off_ns - bare_ns,
      on_ns - bare_ns);
  return 0;
}
