// A Perfetto / Chrome trace-event timeline (JSON, opens in ui.perfetto.dev): one process per
// host and one track per name the caller gives ("CQ 0", "EQ 1", "MSI-X 2", "IRQ handler, vector
// 0"). Timestamps are simulated microseconds.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <systemc>

namespace vhca {

class Timeline {
 public:
  bool enabled() const { return enabled_; }
  void enable() { enabled_ = true; }
  // A moment, now.
  void instant(int host, const std::string& track, const char* name);
  // Something that ran from `begin` to now; `arg` >= 0 is shown as its CQE count.
  void span(int host, const std::string& track, const char* name, const sc_core::sc_time& begin, int64_t arg = -1);
  // A counter track of the host's process: its value from `at` on (Perfetto draws it as a graph).
  void counter(int host, const std::string& name, double value, const sc_core::sc_time& at = sc_core::sc_time_stamp());
  bool write(const std::string& path, int hosts) const;

 private:
  struct Event {
    int host, tid;
    const char* name;
    sc_core::sc_time at, dur;
    bool span;
    int64_t arg;
  };
  int tid(int host, const std::string& track);
  bool enabled_ = false;
  std::map<std::pair<int, std::string>, int> tids_;
  std::vector<Event> events_;
  struct Counter {
    int host;
    std::string name;
    sc_core::sc_time at;
    double value;
  };
  std::vector<Counter> counters_;
};

}  // namespace vhca
