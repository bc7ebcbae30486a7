// The two-HCA traffic scenario of vhca-sim: RC QPs from host 0 to host 1 carrying SENDs (into
// receives host 1 keeps posted) and RDMA WRITEs, with Poisson arrivals, on QPs that share
// moderated CQs polled through the CQ pool. It measures, per opcode, the latency from posting to
// the CQE write and to the done callback, and checks that every message arrived intact and that
// every WQE completed exactly once, in order.
#pragma once
#include <cstdint>
#include <string>

#include "firmware-shim/cq_pool.h"
#include "model/cq/cq_types.h"

namespace vhca {

struct TrafficOptions {
  int qps = 16;                 // RC connections from host 0 to host 1
  int cqs = 4;                  // per host; QP i uses CQ i % cqs for its SQ and its RQ
  int vectors = 2;              // completion vectors per host
  uint32_t msg_size = 4096;     // bytes per message
  double write_fraction = 0.5;  // share of RDMA WRITEs; the rest are SENDs
  double rate_kmsg = 1000;      // aggregate arrival rate, thousands of messages per second
  double duration_us = 5000;    // arrivals during this much simulated time
  int depth = 64;               // SQ and RQ depth per QP
  int cq_size = 1024;
  uint16_t mod_count = 32;      // mlx5 RX defaults
  uint16_t mod_period_us = 16;
  PeriodMode mode = PeriodMode::eqe;
  PollContext context = PollContext::softirq;
  uint64_t seed = 1;
  bool rtl = false;             // the Verilated RTL CQ writer in both HCAs
};

// Runs the scenario in this process (SystemC elaborates once) and prints the summary; returns
// the process exit code: 0 when every check held.
int run_traffic(const TrafficOptions& o);

}  // namespace vhca
