// What a run will need, worked out before anything is built (issue 14, item 3): the simulated
// host memory its buffers, work-queue rings and CQs may back on each host, and the QP, CQ and MR
// contexts it creates on each HCA, against the HCA's capabilities and the host's memory budget
// (host.memory). A run that does not fit is refused with the numbers, before it starts, instead
// of failing mid-run (NO_RESOURCES) or taking the machine's memory.
#pragma once
#include <cstdint>
#include <string>

#include "explorer/traffic.h"

namespace vhca {

struct ResourceEstimate {
  // Per host (both hosts hold the same amounts): bytes the run may back.
  uint64_t buffer_bytes = 0;  // 3 registered buffers of QPs x depth x largest message
  uint64_t ring_bytes = 0;    // SQ and RQ rings (128 B and 64 B WQEs, depths rounded to powers of 2)
  uint64_t cq_bytes = 0;      // CQ rings (64 B CQEs, sizes rounded to powers of 2)
  uint64_t total() const { return buffer_bytes + ring_bytes + cq_bytes; }
  // Per HCA: contexts the run creates, and what the HCA has.
  uint64_t qps = 0, cqs = 0, mrs = 0;
  uint64_t max_qps = 0, max_cqs = 0, max_mrs = 0;
};

ResourceEstimate estimate_resources(const TrafficOptions& o);

// Empty when the run fits; else every reason it does not, with the numbers and what to change.
std::string check_resources(const TrafficOptions& o);

// "1.5 GiB", "64.0 MiB", "512 B".
std::string format_bytes(uint64_t bytes);

}  // namespace vhca
