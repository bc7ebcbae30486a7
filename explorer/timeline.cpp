#include "explorer/timeline.h"

#include <cstdio>

namespace vhca {

void Timeline::instant(int host, const std::string& track, const char* name) {
  events_.push_back(Event{host, tid(host, track), name, sc_core::sc_time_stamp(), sc_core::SC_ZERO_TIME, false, 0});
}

void Timeline::span(int host, const std::string& track, const char* name, const sc_core::sc_time& begin, int64_t arg) {
  events_.push_back(Event{host, tid(host, track), name, begin, sc_core::sc_time_stamp() - begin, true, arg});
}

void Timeline::counter(int host, const std::string& name, double value, const sc_core::sc_time& at) {
  counters_.push_back(Counter{host, name, at, value});
}

int Timeline::tid(int host, const std::string& track) {
  auto [it, added] = tids_.emplace(std::make_pair(host, track), int(tids_.size()) + 1);
  return it->second;
}

bool Timeline::write(const std::string& path, int hosts) const {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
  bool first = true;
  auto sep = [&] {
    if (!first) std::fprintf(f, ",\n");
    first = false;
  };
  for (int h = 0; h < hosts; ++h) {
    sep();
    std::fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": \"host%d\"}}", h, h);
  }
  for (const auto& [key, id] : tids_) {
    sep();
    std::fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                 key.first, id, key.second.c_str());
  }
  for (const Event& e : events_) {
    sep();
    const double ts = e.at.to_seconds() * 1e6;
    if (e.span) {
      std::fprintf(f, "{\"ph\": \"X\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f", e.name,
                   e.host, e.tid, ts, e.dur.to_seconds() * 1e6);
      if (e.arg >= 0) std::fprintf(f, ", \"args\": {\"cqes\": %lld}", static_cast<long long>(e.arg));
      std::fprintf(f, "}");
    } else {
      std::fprintf(f, "{\"ph\": \"i\", \"s\": \"t\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f}", e.name,
                   e.host, e.tid, ts);
    }
  }
  for (const Counter& c : counters_) {
    sep();
    std::fprintf(f, "{\"ph\": \"C\", \"name\": \"%s\", \"pid\": %d, \"ts\": %.3f, \"args\": {\"value\": %.6g}}",
                 c.name.c_str(), c.host, c.at.to_seconds() * 1e6, c.value);
  }
  std::fprintf(f, "\n]}\n");
  return std::fclose(f) == 0;
}

}  // namespace vhca
