// The profiler's two files: the summary report (statistics per event) and the
// detail log in the Trace Event format that chrome://tracing and Perfetto load.
#pragma once
#include <string>
#include <vector>

#include "cntk/profiler.h"

namespace cntk::profiler {

struct ReportInput {
  std::vector<Event> events;
  std::string dir, timestamp;
  size_t rank = 0;
  uint64_t origin_ns = 0;  // trace times are relative to it
  size_t capacity = 0, buffer_bytes = 0, dropped = 0;
  bool sync_gpu = false;
  uint64_t enabled_ns = 0;  // how long profiling was enabled
};

// {summary, detail} paths: <dir>/<timestamp>_summary_<rank>.txt, <dir>/<timestamp>_detail_<rank>.json.
std::vector<std::string> report_paths(const std::string& dir, const std::string& timestamp, size_t rank);

// Statistics of the phase and node events (custom scopes are left out).
std::vector<EventStats> compute_stats(const std::vector<Event>& events);

// Writes both files (each to a temporary name, then renamed); IOError on failure.
std::vector<std::string> write_report(const ReportInput& in);

}  // namespace cntk::profiler
