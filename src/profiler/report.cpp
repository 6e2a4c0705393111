// Summary report and Trace Event detail log of a profiling session.
#include "profiler/report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cntk/common.h"

namespace cntk::profiler {

namespace {

// The Trace Event category of an event.
const char* category(EventKind k) {
  switch (k) {
    case EventKind::Phase: return "phase";
    case EventKind::NodeForward: return "node.forward";
    case EventKind::NodeBackward: return "node.backward";
    case EventKind::Custom: return "custom";
  }
  return "unknown";
}

void json_string(std::ostream& os, const char* s) {
  os << '"';
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      os << '\\' << char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      os << buf;
    } else {
      os << char(c);
    }
  }
  os << '"';
}

// Nanoseconds as microseconds with three decimals (exact: ns resolution).
void micros(std::ostream& os, uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
  os << buf;
}

void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw IOError("profiler: cannot write '" + tmp + "'");
    f << text;
    f.flush();
    if (!f) throw IOError("profiler: writing '" + tmp + "' failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IOError("profiler: cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}

std::string summary_text(const ReportInput& in, const std::vector<EventStats>& stats) {
  std::ostringstream os;
  char line[512];
  os << "OpenCNTK performance profile: summary of rank " << in.rank << ", session " << in.timestamp << " UTC\n";
  std::snprintf(line, sizeof line, "Time profiling was enabled: %.3f ms\n", double(in.enabled_ns) * 1e-6);
  os << line;
  os << "Buffer: " << in.capacity << " events (" << in.buffer_bytes << " bytes), " << in.events.size()
     << " recorded, dropped events: " << in.dropped << "\n";
  if (in.dropped)
    os << "The buffer was full: the statistics below cover the recorded events only (raise reserve_mem).\n";
  os << "sync_gpu: " << (in.sync_gpu ? "true" : "false") << " (no GPU device: no effect)\n";
  os << "Custom scopes are in the detail log only.\n\n";

  size_t width = 20;
  for (auto& s : stats) width = std::max(width, s.name.size() + 2);
  auto header = [&](const char* title) {
    std::snprintf(line, sizeof line, "%-*s %13s %13s %13s %13s %9s %14s\n", int(width), title, "Average(ms)",
                  "StdDev(ms)", "Min(ms)", "Max(ms)", "Count", "Total(ms)");
    os << line;
  };
  auto row = [&](const EventStats& s) {
    os << s.name << std::string(width - s.name.size(), ' ');
    std::snprintf(line, sizeof line, " %13.6f %13.6f %13.6f %13.6f %9zu %14.6f\n", s.mean_ms, s.stddev_ms, s.min_ms,
                  s.max_ms, s.count, s.total_ms);
    os << line;
  };
  header("Phase");
  for (auto& s : stats)
    if (s.kind == EventKind::Phase) row(s);
  os << "\n";
  header("Node (forward)");
  for (auto& s : stats)
    if (s.kind == EventKind::NodeForward) row(s);
  os << "\n";
  header("Node (backward)");
  for (auto& s : stats)
    if (s.kind == EventKind::NodeBackward) row(s);
  return os.str();
}

std::string detail_json(const ReportInput& in) {
  std::ostringstream os;
  const long pid = long(::getpid());
  os << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"rank\":" << in.rank << ",\"session\":";
  json_string(os, in.timestamp.c_str());
  os << ",\"dropped_events\":" << in.dropped << ",\"buffer_events\":" << in.capacity << "},\n\"traceEvents\":[\n";
  os << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":0,\"args\":{\"name\":\"rank " << in.rank
     << "\"}}";
  std::set<uint32_t> threads;
  for (auto& e : in.events) threads.insert(e.thread);
  for (uint32_t t : threads)
    os << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << t
       << ",\"args\":{\"name\":\"thread " << t << "\"}}";
  for (auto& e : in.events) {
    os << ",\n{\"name\":";
    json_string(os, e.name);
    os << ",\"cat\":\"" << category(e.kind) << "\",\"ph\":\"X\",\"ts\":";
    micros(os, e.begin >= in.origin_ns ? e.begin - in.origin_ns : 0);
    os << ",\"dur\":";
    micros(os, e.end >= e.begin ? e.end - e.begin : 0);
    os << ",\"pid\":" << pid << ",\"tid\":" << e.thread << "}";
  }
  os << "\n]}\n";
  return os.str();
}

}  // namespace

std::vector<std::string> report_paths(const std::string& dir, const std::string& timestamp, size_t rank) {
  std::filesystem::path d(dir);
  std::string r = std::to_string(rank);
  return {(d / (timestamp + "_summary_" + r + ".txt")).string(), (d / (timestamp + "_detail_" + r + ".json")).string()};
}

std::vector<EventStats> compute_stats(const std::vector<Event>& events) {
  struct Acc {
    size_t count = 0;
    double sum = 0, sumsq = 0, min = 0, max = 0;
  };
  // Phases in Phase order, nodes by name; custom scopes are not summarized.
  std::map<std::pair<EventKind, std::string>, Acc> acc;
  for (auto& e : events) {
    if (e.kind == EventKind::Custom) continue;
    double ms = double(e.end >= e.begin ? e.end - e.begin : 0) * 1e-6;
    Acc& a = acc[{e.kind, e.name}];
    a.min = a.count ? std::min(a.min, ms) : ms;
    a.max = a.count ? std::max(a.max, ms) : ms;
    ++a.count;
    a.sum += ms;
    a.sumsq += ms * ms;
  }
  std::vector<EventStats> out;
  for (auto& [key, a] : acc) {
    EventStats s;
    s.kind = key.first;
    s.name = key.second;
    s.count = a.count;
    s.total_ms = a.sum;
    s.mean_ms = a.sum / double(a.count);
    s.stddev_ms = std::sqrt(std::max(0.0, a.sumsq / double(a.count) - s.mean_ms * s.mean_ms));
    s.min_ms = a.min;
    s.max_ms = a.max;
    out.push_back(std::move(s));
  }
  auto phase_rank = [](const std::string& name) {
    for (int p = 0; p < int(Phase::Count); ++p)
      if (name == phase_name(Phase(p))) return p;
    return int(Phase::Count);
  };
  std::stable_sort(out.begin(), out.end(), [&](const EventStats& a, const EventStats& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.kind == EventKind::Phase) return phase_rank(a.name) < phase_rank(b.name);
    return a.total_ms > b.total_ms;  // the costliest nodes first
  });
  return out;
}

std::vector<std::string> write_report(const ReportInput& in) {
  auto paths = report_paths(in.dir, in.timestamp, in.rank);
  write_atomically(paths[0], summary_text(in, compute_stats(in.events)));
  write_atomically(paths[1], detail_json(in));
  return paths;
}

}  // namespace cntk::profiler
