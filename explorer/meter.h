// The measured window of a traffic run: each host's counters (CQEs, events, interrupts, per-CQ
// counts, CPU time per context) snapshotted when the warm-up ends and when the run stops, and the
// rates and shares between the two.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include <systemc>

#include "explorer/traffic.h"
#include "sim/system.h"

namespace vhca {

struct Snapshot {
  uint64_t cqes = 0, events = 0, interrupts = 0;
  uint64_t events_by[kEventCauses] = {};
  std::vector<uint64_t> cq_cqes, cq_events;  // per scenario CQ
  std::vector<std::array<uint64_t, kEventCauses>> cq_events_by;
  std::vector<uint64_t> vector_interrupts;   // per completion vector
  uint64_t async_interrupts = 0;
  sc_core::sc_time busy[kCpuContexts];       // CPU time per CpuContext
  std::vector<sc_core::sc_time> core_busy;   // per core (a host with cores), every context
  uint64_t preemptions = 0;
  sc_core::sc_time at;
};

Snapshot take_snapshot(Node& node, const std::vector<IbCq*>& cqs);
// CQEs, events, interrupts, their rates and the CPU shares of a host over [a, b].
void window_stats(HostStats& hs, const Snapshot& a, const Snapshot& b);

}  // namespace vhca
