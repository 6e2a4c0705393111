// Bindings of the profiler (src/profiler): cntk.debugging's start/stop/enable/disable,
// custom scopes timed from Python, and per-node timing.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "cntk/common.h"
#include "cntk/profiler.h"

namespace nb = nanobind;
using namespace cntk;

namespace {

// A scope name interned once (when a Python profiler scope is created), so that
// entering and leaving the scope passes no string.
struct ScopeName {
  explicit ScopeName(const std::string& name) : name(profiler::intern(name)) {}
  const char* name;
};

}  // namespace

void bind_profiler(nb::module_& m) {
  m.attr("default_profiler_buffer_size") = profiler::kDefaultBufferSize;
  m.def(
      "start_profiler",
      [](const std::string& dir, bool sync_gpu, size_t reserve_mem) { profiler::start(dir, sync_gpu, reserve_mem); },
      nb::arg("dir") = "profiler", nb::arg("sync_gpu") = true, nb::arg("reserve_mem") = profiler::kDefaultBufferSize);
  m.def("stop_profiler", &profiler::stop, nb::call_guard<nb::gil_scoped_release>());
  m.def("flush_profiler", &profiler::flush, nb::call_guard<nb::gil_scoped_release>());
  m.def("enable_profiler", &profiler::enable);
  m.def("disable_profiler", &profiler::disable);
  m.def("set_profiler_rank", &profiler::set_rank);
  m.def("profiler_status", [] {
    profiler::Status s = profiler::status();
    nb::dict d;
    d["started"] = s.started;
    d["enabled"] = s.enabled;
    d["sync_gpu"] = s.sync_gpu;
    d["capacity"] = s.capacity;
    d["recorded"] = s.recorded;
    d["dropped"] = s.dropped;
    d["dir"] = s.dir;
    return d;
  });
  // (name, category, begin, end, thread) of every recorded event; times in steady-clock ns.
  m.def("profiler_events", [] {
    std::vector<std::tuple<std::string, std::string, uint64_t, uint64_t, uint32_t>> out;
    for (auto& e : profiler::events()) {
      const char* cat = e.kind == profiler::EventKind::Phase          ? "phase"
                        : e.kind == profiler::EventKind::NodeForward  ? "node.forward"
                        : e.kind == profiler::EventKind::NodeBackward ? "node.backward"
                                                                      : "custom";
      out.emplace_back(e.name, cat, e.begin, e.end, e.thread);
    }
    return out;
  });

  nb::class_<ScopeName>(m, "_ProfilerScopeName").def(nb::init<const std::string&>());
  // Scope begin: the time, or 0 when profiling is off (then the end records nothing).
  m.def("_profiler_begin", [] { return profiler::enabled() ? profiler::detail::now() : uint64_t(0); });
  m.def("_profiler_end_custom", [](const ScopeName& n, uint64_t begin) {
    if (begin) profiler::detail::record(n.name, profiler::EventKind::Custom, begin, profiler::detail::now());
  });
  m.def("_profiler_end_phase", [](const std::string& phase, uint64_t begin) {
    if (!begin) return;
    for (int p = 0; p < int(profiler::Phase::Count); ++p)
      if (phase == profiler::phase_name(profiler::Phase(p))) {
        profiler::detail::record(profiler::phase_name(profiler::Phase(p)), profiler::EventKind::Phase, begin,
                                 profiler::detail::now());
        return;
      }
    throw ValueError("unknown profiler phase '" + phase + "'");
  });

  m.def("set_node_timing", &profiler::set_node_timing, nb::arg("enable"));
  m.def("node_timing", &profiler::node_timing);
  // (forward calls, forward ms, backward calls, backward ms) of node `uid`.
  m.def("node_time", [](const std::string& uid) {
    profiler::NodeTiming t = profiler::node_time(uid);
    return std::make_tuple(t.forward_calls, t.forward_ms, t.backward_calls, t.backward_ms);
  });
}
