// The two-HCA traffic scenario of vhca-sim: RC QPs from host 0 to host 1 carrying SENDs (into
// receives host 1 keeps posted), RDMA WRITEs and RDMA READs on QPs that share moderated CQs
// polled through the CQ pool, under an arrival process (constant, Poisson, on/off bursts, or
// closed-loop ping-pong with a real pong from host 1). It measures, per opcode, the latency from
// posting to the CQE landing in host memory and to the done callback, interrupts, CPU time and CQ
// occupancy, and checks that every message arrived intact and every WQE completed exactly once,
// in order. Scenario files (tools/scenario.h) fill TrafficOptions.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "firmware-shim/cq_pool.h"
#include "firmware-shim/host_cpu.h"
#include "model/cq/cq_types.h"
#include "tlm/ib_link.h"

namespace vhca {

enum class Arrival : uint8_t { poisson, constant, onoff, pingpong };
const char* arrival_name(Arrival a);

struct TrafficOptions {
  std::string name = "default";
  int qps = 16;                 // RC connections from host 0 to host 1
  int cqs = 4;                  // per host; QP i uses CQ i % cqs for its SQ and its RQ
  int vectors = 2;              // completion vectors per host
  std::vector<uint32_t> sizes{4096};  // message sizes, drawn with `size_weights`
  std::vector<double> size_weights{1.0};
  double write_fraction = 0.5;  // share of RDMA WRITEs
  double read_fraction = 0.0;   // share of RDMA READs; the rest are SENDs
  Arrival arrival = Arrival::poisson;
  double rate_kmsg = 1000;      // aggregate arrival rate, thousands of messages per second (on-rate for onoff)
  double on_us = 100, off_us = 400;  // onoff: burst and gap lengths
  int outstanding = 1;          // pingpong: pings in flight per QP
  double duration_us = 5000;    // arrivals during this much simulated time
  double warmup_us = 0;         // measurements start after this
  int depth = 64;               // SQ and RQ depth per QP
  uint8_t path_mtu = 5;         // 1..5 = 256..4096 bytes
  int cq_size = 1024;
  uint16_t mod_count = 32;      // mlx5 RX defaults
  uint16_t mod_period_us = 16;
  PeriodMode mode = PeriodMode::eqe;
  bool adaptive = false;        // DIM chooses count and period per CQ (mode still applies)
  PollContext context = PollContext::softirq;
  HostCpuConfig cpu;
  IbLinkConfig link;
  uint64_t seed = 1;
  bool rtl = false;                 // the Verilated RTL CQ writer in both HCAs
  bool fault_flip_payload = false;  // flip a payload bit of host 0's 100th packet (proves the data check)
  std::string trace_path;           // write a Perfetto / Chrome trace-event timeline here
};

// Latency percentiles of one opcode, microseconds: from posting to the CQE landing in host
// memory, and to the done callback (ping-pong: to the pong's receive callback on host 0).
struct LatencyStats {
  uint64_t samples = 0;
  double cqe_p50 = 0, cqe_p90 = 0, cqe_p99 = 0, cqe_p999 = 0, cqe_max = 0;
  double hdl_p50 = 0, hdl_p90 = 0, hdl_p99 = 0, hdl_p999 = 0, hdl_max = 0;
};

struct HostStats {
  uint64_t cqes = 0, events = 0, interrupts = 0, overflows = 0;
  double interrupts_per_s = 0, cqes_per_interrupt = 0;
  double cpu_busy_pct = 0, hardirq_pct = 0, poll_pct = 0;  // poll: softirq + thread + workqueue
  double cq_occupancy_mean = 0;
  uint32_t cq_occupancy_max = 0;
  uint64_t dim_decisions = 0, dim_changes = 0;  // adaptive moderation, summed over the CQs
};

struct TrafficResult {
  uint64_t posted = 0, refused = 0, completed = 0, recvs = 0, errors = 0, misordered = 0, data_errors = 0;
  uint64_t packets_out = 0, packets_back = 0, packets_lost = 0, retransmits = 0;
  double link_gbps = 0, measured_s = 0;
  HostStats host[2];
  std::map<std::string, LatencyStats> latency;  // "SEND", "RDMA_WRITE", "RDMA_READ", "RECV", "PINGPONG"
  bool ok = false;
  double wall_s = 0;  // not part of the deterministic results
};

// Runs the scenario in this process (SystemC elaborates once).
TrafficResult run_traffic(const TrafficOptions& o);
void print_summary(const TrafficOptions& o, const TrafficResult& r);
// Deterministic machine-readable results (no wall time): one JSON object, or a CSV header + row.
std::string results_json(const TrafficOptions& o, const TrafficResult& r);
std::string results_csv_header();
std::string results_csv_row(const TrafficOptions& o, const TrafficResult& r);

}  // namespace vhca
