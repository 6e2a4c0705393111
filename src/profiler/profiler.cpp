// The profiler's session state, recording path and per-node timing totals.
// The files it writes are produced in report.cpp.
#include "cntk/profiler.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "cntk/common.h"
#include "profiler/report.h"

namespace cntk::profiler {

namespace {

// The TSC is usable as a steady clock when it is invariant (CPUID 0x80000007, EDX
// bit 8): constant rate across frequency changes and sleep states. The environment
// variable CNTK_PROFILER_CLOCK=steady forces steady_clock.
bool detect_invariant_tsc() {
  const char* forced = std::getenv("CNTK_PROFILER_CLOCK");
  if (forced && std::string(forced) == "steady") return false;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u && __get_cpuid(0x80000007u, &a, &b, &c, &d))
    return (d >> 8) & 1u;
#endif
  return false;
}

}  // namespace

namespace detail {
std::atomic<uint32_t> g_flags{0};
bool g_use_tsc = detect_invariant_tsc();

double ns_per_tick() {
  // Nanoseconds per tick over a 20 ms interval of steady_clock, measured once.
  static const double ratio = [] {
    if (!g_use_tsc) return 1.0;
    uint64_t t0 = now(), n0 = steady_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    uint64_t t1 = now(), n1 = steady_ns();
    return t1 > t0 ? double(n1 - n0) / double(t1 - t0) : 1.0;
  }();
  return ratio;
}
}  // namespace detail

namespace {

constexpr uint32_t kEnabledBit = 1u, kNodeTimingBit = 2u;

static_assert(sizeof(Event) == 32, "the documented event size (reserve_mem / 32 events)");

// A buffer recorders write into. Recorders read the current one without a lock
// (one pointer, so its slots and capacity always match), so a buffer is never
// freed while the process runs: a new session of the same size reuses it, one of
// another size allocates a new one and leaves the old one in Session::owned.
struct Buffer {
  std::unique_ptr<Event[]> events;  // value-initialized: no slot has a name
  size_t capacity = 0;
};
std::atomic<Buffer*> g_buffer{nullptr};
std::atomic<size_t> g_next{0};  // slots claimed; beyond the capacity they count dropped events

struct Session {
  std::mutex mutex;                            // control calls (start/stop/enable/flush) only; recording never takes it
  std::vector<std::unique_ptr<Buffer>> owned;  // every buffer ever allocated (the last one is current)
  bool started = false, sync_gpu = false;
  std::string dir, timestamp;
  size_t rank = 0;
  bool rank_set = false;
  uint64_t origin_ns = 0;         // steady-clock time the session started
  uint64_t origin_tick = 0;       // detail::now() then
  uint64_t enabled_since_ns = 0;  // while enabled
  uint64_t enabled_total_ns = 0;  // completed enabled periods
  bool exit_hook = false;
};
Session& session() {
  static Session* s = new Session;  // never destroyed: the exit hook may run after static destructors
  return *s;
}

std::atomic<uint32_t> g_next_thread{1};
uint32_t thread_number() {
  thread_local uint32_t id = g_next_thread.fetch_add(1, std::memory_order_relaxed);
  return id;
}

size_t env_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(var)) {
      char* end = nullptr;
      unsigned long r = std::strtoul(v, &end, 10);
      if (end != v && *end == '\0') return size_t(r);
    }
  }
  return 0;
}

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d_%H-%M-%S", &tm);
  return buf;
}

// The events of the current buffer (claimed slots whose writer has finished).
std::vector<Event> snapshot_locked() {
  std::vector<Event> out;
  Buffer* buf = g_buffer.load(std::memory_order_acquire);
  if (!buf) return out;
  Event* ev = buf->events.get();
  size_t n = std::min(g_next.load(std::memory_order_acquire), buf->capacity);
  out.reserve(n);
  // Ticks to steady-clock ns: over a session of a second or more its own span
  // calibrates the TSC best; shorter ones use the 20 ms calibration.
  Session& s = session();
  double ratio = detail::ns_per_tick();
  if (detail::g_use_tsc) {
    uint64_t tick = detail::now(), ns = detail::steady_ns();
    if (ns - s.origin_ns >= 1000000000ull && tick > s.origin_tick)
      ratio = double(ns - s.origin_ns) / double(tick - s.origin_tick);
  }
  auto to_ns = [&](uint64_t tick) {
    double delta = (double(int64_t(tick - s.origin_tick))) * ratio;
    return uint64_t(int64_t(s.origin_ns) + std::llround(delta));
  };
  for (size_t i = 0; i < n; ++i) {
    const char* name = std::atomic_ref<const char*>(ev[i].name).load(std::memory_order_acquire);
    if (!name) continue;  // claimed, not yet written
    Event e = ev[i];
    e.name = name;
    e.begin = to_ns(e.begin);
    e.end = std::max(e.begin, to_ns(e.end));
    out.push_back(e);
  }
  return out;
}

ReportInput report_input_locked() {
  Session& s = session();
  ReportInput in;
  in.events = snapshot_locked();
  in.dir = s.dir;
  in.timestamp = s.timestamp;
  in.rank = s.rank;
  in.origin_ns = s.origin_ns;
  Buffer* buf = g_buffer.load();
  in.capacity = buf ? buf->capacity : 0;
  in.buffer_bytes = in.capacity * sizeof(Event);
  size_t next = g_next.load();
  in.dropped = next > in.capacity ? next - in.capacity : 0;
  in.sync_gpu = s.sync_gpu;
  in.enabled_ns = s.enabled_total_ns + (s.enabled_since_ns ? detail::steady_ns() - s.enabled_since_ns : 0);
  return in;
}

void disable_locked() {
  Session& s = session();
  detail::g_flags.fetch_and(~kEnabledBit);
  if (s.enabled_since_ns) {
    s.enabled_total_ns += detail::steady_ns() - s.enabled_since_ns;
    s.enabled_since_ns = 0;
  }
}

void stop_at_exit() {
  try {
    stop();
  } catch (...) {
    // Nothing can be reported at exit; the files stay as the last flush left them.
  }
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Minibatch: return "minibatch";
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::GradientAggregation: return "gradient aggregation";
    case Phase::ParameterUpdate: return "parameter update";
    case Phase::Evaluation: return "evaluation";
    case Phase::ReadMinibatch: return "read minibatch";
    case Phase::Prefetch: return "prefetch";
    case Phase::Count: break;
  }
  return "unknown";
}

void detail::record(const char* name, EventKind kind, uint64_t begin, uint64_t end) {
  Buffer* buf = g_buffer.load(std::memory_order_acquire);
  if (!buf) return;
  size_t i = g_next.fetch_add(1, std::memory_order_relaxed);
  if (i >= buf->capacity) return;  // counted as dropped
  Event& e = buf->events[i];
  e.begin = begin;
  e.end = end;
  e.thread = thread_number();
  e.kind = kind;
  // The name goes last: a slot with a name is complete.
  std::atomic_ref<const char*>(e.name).store(name, std::memory_order_release);
}

const char* intern(const std::string& name) {
  static std::mutex m;
  static auto* names = new std::unordered_set<std::string>;  // never freed: recorded events point into it
  std::lock_guard<std::mutex> lock(m);
  return names->insert(name).first->c_str();
}

void start(const std::string& dir, bool sync_gpu, size_t buffer_bytes) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.started) throw ValueError("start_profiler: the profiler is already started; call stop_profiler first");
  size_t capacity = buffer_bytes / sizeof(Event);
  if (capacity == 0)
    throw ValueError("start_profiler: reserve_mem=" + std::to_string(buffer_bytes) +
                     " bytes holds no event (one takes " + std::to_string(sizeof(Event)) + " bytes)");
  if (dir.empty()) throw ValueError("start_profiler: dir is empty");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw IOError("start_profiler: cannot create the directory '" + dir + "'" + (ec ? ": " + ec.message() : ""));

  Buffer* current = g_buffer.load();
  if (current && current->capacity == capacity) {
    size_t used = std::min(g_next.load(), capacity);
    std::memset(static_cast<void*>(current->events.get()), 0, used * sizeof(Event));
  } else {
    // Value-initialized: every slot starts without a name. Allocating (and
    // touching) the memory here keeps page faults out of the timed code.
    auto buf = std::make_unique<Buffer>();
    buf->events = std::make_unique<Event[]>(capacity);
    buf->capacity = capacity;
    s.owned.push_back(std::move(buf));
    g_buffer.store(s.owned.back().get(), std::memory_order_release);
  }
  g_next.store(0);
  s.started = true;
  s.sync_gpu = sync_gpu;
  s.dir = dir;
  if (!s.rank_set) s.rank = env_rank();
  s.timestamp = utc_timestamp();
  // Two sessions started in the same second must not share files.
  for (int k = 1; std::filesystem::exists(report_paths(s.dir, s.timestamp, s.rank)[0]); ++k)
    s.timestamp = utc_timestamp() + "." + std::to_string(k);
  detail::ns_per_tick();  // calibrated now, not while events are written
  s.origin_tick = detail::now();
  s.origin_ns = detail::steady_ns();
  s.enabled_since_ns = 0;
  s.enabled_total_ns = 0;
  if (!s.exit_hook) {
    std::atexit(stop_at_exit);
    s.exit_hook = true;
  }
}

bool enable() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.started) return false;
  if (!s.enabled_since_ns) s.enabled_since_ns = detail::steady_ns();
  detail::g_flags.fetch_or(kEnabledBit);
  return true;
}

bool disable() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.started) return false;
  disable_locked();
  return true;
}

std::vector<std::string> flush() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.started) return {};
  return write_report(report_input_locked());
}

void flush_after_error() noexcept {
  try {
    flush();
  } catch (...) {
    // The error being raised matters more than a profile that could not be written.
  }
}

std::vector<std::string> stop() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.started) return {};
  disable_locked();
  s.started = false;
  return write_report(report_input_locked());
}

void set_rank(size_t rank) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.rank = rank;
  s.rank_set = true;
}

Status status() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  Status st;
  st.started = s.started;
  st.enabled = enabled();
  st.sync_gpu = s.sync_gpu;
  Buffer* buf = g_buffer.load();
  st.capacity = buf ? buf->capacity : 0;
  size_t next = g_next.load();
  st.recorded = std::min(next, st.capacity);
  st.dropped = next > st.capacity ? next - st.capacity : 0;
  st.dir = s.dir;
  return st;
}

std::vector<Event> events() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  return snapshot_locked();
}

std::vector<EventStats> summary_stats() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  return compute_stats(snapshot_locked());
}

// ------------------------------------------------------------------ node timing

namespace {
struct NodeTimes {
  std::mutex mutex;
  std::unordered_map<std::string, NodeTiming> by_uid;
};
NodeTimes& node_times() {
  static NodeTimes* t = new NodeTimes;
  return *t;
}
}  // namespace

void set_node_timing(bool on) {
  detail::ns_per_tick();  // calibrated before the executor times anything
  NodeTimes& t = node_times();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (on && !(detail::g_flags.load() & kNodeTimingBit)) t.by_uid.clear();  // totals restart when switched on
  if (on)
    detail::g_flags.fetch_or(kNodeTimingBit);
  else
    detail::g_flags.fetch_and(~kNodeTimingBit);
}

bool node_timing() { return detail::g_flags.load(std::memory_order_relaxed) & kNodeTimingBit; }

void add_node_time(const std::string& uid, bool backward, uint64_t ticks) {
  const double ns = double(ticks) * detail::ns_per_tick();
  NodeTimes& t = node_times();
  std::lock_guard<std::mutex> lock(t.mutex);
  NodeTiming& n = t.by_uid[uid];
  if (backward) {
    ++n.backward_calls;
    n.backward_ms += ns * 1e-6;
  } else {
    ++n.forward_calls;
    n.forward_ms += ns * 1e-6;
  }
}

NodeTiming node_time(const std::string& uid) {
  NodeTimes& t = node_times();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.by_uid.find(uid);
  return it == t.by_uid.end() ? NodeTiming{} : it->second;
}

}  // namespace cntk::profiler
