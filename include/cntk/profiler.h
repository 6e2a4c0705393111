// The performance profiler: timed events recorded into a fixed, preallocated
// buffer while profiling is enabled, written out as a summary report and a
// chrome://tracing (Trace Event format) detail log per worker.
//
//   cntk::profiler::start("profiler");   // prepares the buffer; nothing is recorded yet
//   cntk::profiler::enable();             // the Trainer, Evaluator and executor now record
//   { CNTK_PROFILE_SCOPE("my step"); ... }  // a custom scope (detail log only)
//   cntk::profiler::stop();               // writes <timestamp>_summary_<rank>.txt and _detail_<rank>.json
//
// Three kinds of events:
//  - phases of minibatch processing (Phase below), recorded by the Trainer, the
//    Evaluator and the readers: in the summary and the detail log;
//  - per-node events, one per primitive executed by the executor, named
//    "<Op> <node name or uid>" (backward: "... (backward)"): in both;
//  - custom scopes (CNTK_PROFILE_SCOPE, cntk.debugging.profiler_scope): detail log only.
//
// Recording an event costs two clock reads (the invariant time-stamp counter where
// the CPU has one, else steady_clock) and one relaxed atomic increment; when
// profiling is off an instrumented scope reads one flag and reads no clock.
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cntk::profiler {

// CNTK's default profilerBufferSize: 32 MB.
inline constexpr size_t kDefaultBufferSize = 32u * 1024u * 1024u;

// The phases of minibatch processing. Readers record ReadMinibatch where the
// training loop waits for data and Prefetch on their background thread;
// distributed learners record GradientAggregation.
enum class Phase : uint8_t {
  Minibatch,            // a whole Trainer::train_minibatch
  Forward,              // the forward pass of training
  Backward,             // the backward pass
  GradientAggregation,  // exchanging gradients between workers (distributed)
  ParameterUpdate,      // the learners' updates
  Evaluation,           // test_minibatch (Trainer, Evaluator)
  ReadMinibatch,        // fetching the next minibatch from a source
  Prefetch,             // a reader's background read of the next minibatch
  Count
};
const char* phase_name(Phase p);

enum class EventKind : uint8_t { Phase, NodeForward, NodeBackward, Custom };

// One recorded event. In the buffer its times are raw clock ticks (detail::now());
// events() returns them converted to nanoseconds of std::chrono::steady_clock.
struct Event {
  const char* name;  // a phase name, an interned name or a string literal; never freed
  uint64_t begin;
  uint64_t end;
  uint32_t thread;  // a small per-thread number, stable for the thread's life
  EventKind kind;
};

// ---- control (the Python cntk.debugging functions call these) ----

// Prepares a profiling session writing into `dir` (created if missing; IOError if
// it cannot be) with a buffer of `buffer_bytes` (ValueError if it holds no event).
// Profiling starts disabled. `sync_gpu` is accepted and recorded; without a GPU it
// has no effect. ValueError if a session is already running.
void start(const std::string& dir = "profiler", bool sync_gpu = true, size_t buffer_bytes = kDefaultBufferSize);
// Turn recording on / off; no effect (false) when no session is running.
bool enable();
bool disable();
// Writes the files and ends the session; returns the two paths (summary, detail),
// empty when no session was running. A session still running at process exit is
// stopped then.
std::vector<std::string> stop();
// Writes the files of the running session now (it keeps running); the next write
// replaces them. The Trainer calls this when a minibatch raises.
std::vector<std::string> flush();
// flush() for error paths: does nothing without a session and never throws.
void flush_after_error() noexcept;

// The worker rank in the file names (default: OMPI_COMM_WORLD_RANK or PMI_RANK, else 0).
void set_rank(size_t rank);

struct Status {
  bool started = false, enabled = false, sync_gpu = false;
  size_t capacity = 0;  // events the buffer holds
  size_t recorded = 0;  // events in the buffer
  size_t dropped = 0;   // events lost because the buffer was full
  std::string dir;
};
Status status();
// The events recorded so far in this session (a copy).
std::vector<Event> events();

// Per-event statistics (what the summary shows), in milliseconds.
struct EventStats {
  std::string name;
  EventKind kind;
  size_t count = 0;
  double total_ms = 0, mean_ms = 0, stddev_ms = 0, min_ms = 0, max_ms = 0;
};
// Phase and node events of the buffer, phases first (in Phase order), then nodes by name.
std::vector<EventStats> summary_stats();

// ---- recording ----

namespace detail {
// Bit 0: profiling session enabled; bit 1: node timing (set_node_timing) on.
extern std::atomic<uint32_t> g_flags;
// Whether now() reads the time-stamp counter: on x86-64 CPUs whose TSC is invariant
// (constant rate, never stopped), where it costs a fraction of a steady_clock read
// in a virtual machine. Ticks are converted to steady_clock nanoseconds by a
// calibration against steady_clock (see profiler.cpp). Elsewhere now() is steady_clock.
extern bool g_use_tsc;
inline uint64_t steady_ns() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
// The profiler's clock, in ticks; never 0.
inline uint64_t now() {
#if defined(__x86_64__)
  if (g_use_tsc) return __builtin_ia32_rdtsc();
#endif
  return steady_ns();
}
// Nanoseconds per tick (1 without the TSC); calibrated on first use.
double ns_per_tick();
void record(const char* name, EventKind kind, uint64_t begin, uint64_t end);
}  // namespace detail

inline bool enabled() { return detail::g_flags.load(std::memory_order_relaxed) & 1u; }
// Whether the executor should time nodes at all (profiling or node timing on).
inline bool node_events_wanted() { return detail::g_flags.load(std::memory_order_relaxed) != 0; }

// A name that lives until process exit (for names built at run time).
const char* intern(const std::string& name);

// Records [begin, end) (detail::now() ticks) if profiling is enabled; `name` must
// outlive the session (a literal, phase_name() or intern()).
inline void record(const char* name, EventKind kind, uint64_t begin, uint64_t end) {
  if (enabled()) detail::record(name, kind, begin, end);
}

// Times the enclosing scope. With profiling off it reads no clock.
class ScopedEvent {
 public:
  ScopedEvent(const char* name, EventKind kind) : name_(name), kind_(kind), begin_(enabled() ? detail::now() : 0) {}
  explicit ScopedEvent(Phase p) : ScopedEvent(phase_name(p), EventKind::Phase) {}
  ~ScopedEvent() {
    if (begin_) detail::record(name_, kind_, begin_, detail::now());
  }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;

 private:
  const char* name_;
  EventKind kind_;
  uint64_t begin_;
};

// ---- per-node timing (cntk.debugging.set_node_timing, Function.print_node_timing) ----

void set_node_timing(bool enable);
bool node_timing();
// Adds one execution of node `uid` (forward or backward), `ticks` of detail::now() long, to its totals.
void add_node_time(const std::string& uid, bool backward, uint64_t ticks);
struct NodeTiming {
  size_t forward_calls = 0, backward_calls = 0;
  double forward_ms = 0, backward_ms = 0;
};
// The totals of node `uid` since node timing was last switched on (zeros if none).
NodeTiming node_time(const std::string& uid);

}  // namespace cntk::profiler

#define CNTK_PROFILE_CONCAT_INNER(a, b) a##b
#define CNTK_PROFILE_CONCAT(a, b) CNTK_PROFILE_CONCAT_INNER(a, b)
// A custom scope: `name` must be a string literal (or otherwise live forever).
#define CNTK_PROFILE_SCOPE(name)                                                    \
  ::cntk::profiler::ScopedEvent CNTK_PROFILE_CONCAT(cntk_profile_scope_, __LINE__)( \
      name, ::cntk::profiler::EventKind::Custom)
// A phase of minibatch processing, e.g. CNTK_PROFILE_PHASE(Prefetch) in a reader's background thread.
#define CNTK_PROFILE_PHASE(phase) \
  ::cntk::profiler::ScopedEvent CNTK_PROFILE_CONCAT(cntk_profile_phase_, __LINE__)(::cntk::profiler::Phase::phase)
