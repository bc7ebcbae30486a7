// The two-HCA traffic scenario of vhca-sim: RC QPs from host 0 to host 1 carrying SENDs (into
// receives host 1 keeps posted), RDMA WRITEs and RDMA READs on QPs that share moderated CQs
// polled through the CQ pool. QPs come in groups, each with its own CQs, opcode mix, message
// sizes and arrival process (constant, Poisson, on/off bursts, closed-loop ping-pong with a real
// pong from host 1, or a recorded trace replayed); each CQ may have its own moderation. It
// measures, per opcode, per group and per CQ, the latency from posting to the CQE landing in
// host memory and to the done callback, interrupts, CPU time and CQ occupancy, and checks that
// every message arrived intact and every WQE completed exactly once, in order. Scenario files
// (explorer/scenario.h) fill TrafficOptions.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "firmware-shim/cq_pool.h"
#include "firmware-shim/host_cpu.h"
#include "model/common/topology.h"
#include "model/cq/cq_types.h"
#include "model/cq/cq_writer_engine.h"
#include "model/transport/transport_engine.h"
#include "tlm/ib_link.h"
#include "tlm/pcie_link.h"

namespace vhca {

enum class Arrival : uint8_t { poisson, constant, onoff, pingpong, trace };
const char* arrival_name(Arrival a);

// One arrival of a recorded trace: when (from the start of the workload), on which QP of its
// group, what.
struct TracedArrival {
  uint64_t at_ps = 0;
  int qp = 0;
  uint8_t opcode = 0;  // sqwqe::kSend, kRdmaWrite or kRdmaRead
  uint32_t size = 0;
};

// What a group of QPs does.
struct Workload {
  std::vector<uint32_t> sizes{4096};  // message sizes, drawn with `size_weights`
  std::vector<double> size_weights{1.0};
  double write_fraction = 0.5;  // share of RDMA WRITEs
  double read_fraction = 0.0;   // share of RDMA READs; the rest are SENDs
  Arrival arrival = Arrival::poisson;
  double rate_kmsg = 1000;      // aggregate arrival rate over the group's QPs, thousands per second
  double on_us = 100, off_us = 400;  // onoff: burst and gap lengths
  int outstanding = 1;          // pingpong: pings in flight per QP
  // What an arrival is: a work request posted on one of the group's QPs (the default), or
  // (`cqe`) a completion record of `size` bytes injected straight into the CQ that QP uses on
  // host 0, through the HCA's injection port: the CQ engine, EQs, MSI-X and the host alone.
  bool inject_cqes = false;
  std::string trace_file;       // trace: where the arrivals came from
  std::vector<TracedArrival> trace;
  uint32_t max_size() const;
};

// QPs that share a workload and a set of CQs: QP j of the group uses CQ cqs[j % cqs.size()] for
// its SQ and its RQ, on both hosts.
struct QpGroup {
  std::string name;
  int qps = 1;
  std::vector<int> cqs;  // empty: QP i (counted over all groups) uses CQ i % cqs
  Workload workload;
};

struct ModerationChoice {
  CqModeration mod{32, 16, PeriodMode::eqe};  // mlx5 RX defaults
  bool adaptive = false;                      // DIM chooses count and period (mode still applies)
};

// One CQ's own moderation and/or completion vector; host -1: that CQ on both hosts.
struct CqOverride {
  int host = -1;
  int cq = 0;
  bool has_moderation = false;
  ModerationChoice moderation;
  int vector = -1;  // -1: the default, cq mod vectors
};

struct TrafficOptions {
  std::string name = "default";
  std::string profile = "baseline";  // the hardware profile applied first (explorer/profile.h)
  int qps = 16;                 // RC connections from host 0 to host 1 (the sum over the groups)
  int cqs = 4;                  // per host
  int vectors = 2;              // completion vectors per host; CQ i uses vector i % vectors unless overridden
  Workload workload;            // every QP's, unless groups are given
  std::vector<QpGroup> groups;  // empty: one group of all QPs doing `workload`
  double duration_us = 5000;    // arrivals during this much simulated time
  double warmup_us = 0;         // measurements start after this
  int depth = 64;               // SQ and RQ depth per QP
  uint8_t path_mtu = 5;         // 1..5 = 256..4096 bytes
  int cq_size = 1024;
  ModerationChoice moderation;  // every CQ's, unless overridden
  std::vector<CqOverride> cq_overrides;
  PollContext context = PollContext::softirq;
  HostCpuConfig cpu;
  // host.memory: the most simulated host memory one host's buffers, rings and CQs may back (the
  // host model backs a page when it is first written); a run that may need more is refused
  // before it starts (explorer/resources.h). 4 GiB is an assumption: two hosts and the simulator
  // stay well inside the 24 GiB of this project's machines.
  uint64_t host_memory = 4ull << 30;
  int cores = 0;                // host.cores: 0 parallel contexts (no cores), -1 auto (vectors + 1), else N
  int host_cores() const { return cores < 0 ? vectors + 1 : cores; }  // as run (0: none)
  sc_core::sc_time command_latency{2, sc_core::SC_US};  // firmware time per command (both HCAs)
  IbLinkConfig link;
  PcieLinkConfig pcie;          // each host's link to its HCA
  double hca_clock_mhz = 500;   // both HCAs
  TransportConfig transport;    // both HCAs' doorbell unit, WQE fetch and transport timing
  bool early_injection = true;  // hca.early_injection: simulation speed only (CompletionArbiterConfig::pass_on_early)
  bool writes_ahead = true;     // hca.writes_ahead: simulation speed only (DmaEngineConfig::writes_ahead)
  bool early_completions = true;  // hca.early_completions: speed only (DmaEngineConfig::early_completions)
  bool wait_for_credits = true;   // hca.wait_for_credits: speed only (DmaEngineConfig::wait_for_credits)
  bool blueflame = false;       // the drivers write a single inline WR's WQE through UAR_SQ_BF
  uint32_t max_inline = 0;      // SENDs and WRITEs up to this many bytes are posted inline (qps.inline)
  uint64_t seed = 1;
  // The CQ writer in both HCAs: the pipelined writer's C++ model, or with rtl its Verilated RTL
  // (at the default 65,536 CQs).
  bool rtl = false;
  ArmEvent arm_event = ArmEvent::moderated;  // both HCAs' CQ writers (S26)
  bool fault_flip_payload = false;  // flip a payload bit of host 0's 100th packet (proves the data check)
  std::string trace_path;           // write a Perfetto / Chrome trace-event timeline here
  std::string record_path;          // write every arrival as a replayable trace here
  std::string vcd_path;             // write a VCD of the chosen signals here
  std::string fst_path;             // and/or the same as FST (GTKWave's compressed format)
  std::vector<std::string> vcd_signals;  // glob patterns (`*`, `?`) over signal names; empty: all
  bool queues = false;              // report every queue between blocks: depth, high-water, producers
  bool check = false;               // run the S29 invariant checker (sim/invariants.h): --check
  double wall_limit_s = 0;          // give up after this much wall-clock time (0: no limit)

  // The groups as run: `groups`, or one group "all" of `qps` QPs doing `workload`.
  std::vector<QpGroup> effective_groups() const;
  // The moderation CQ `cq` of host `host` starts with.
  ModerationChoice moderation_of(int host, int cq) const;
  // The completion vector CQ `cq` of host `host` is created on.
  int vector_of(int host, int cq) const;
  uint32_t max_size() const;  // the largest message of any group
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
  uint64_t events_by[kEventCauses] = {};        // completion events by cause (EventCause)
  std::vector<uint64_t> vector_interrupts;      // interrupts per completion vector
  uint64_t async_interrupts = 0;                // on the async EQ's vector (port, command, QP events)
  // A host with cores (host.cores): each core's utilisation (<= 100 %), their mean, and how often
  // a hard IRQ or softirq preempted lower work.
  std::vector<double> core_util_pct;
  double cpu_util_pct = 0;
  uint64_t preemptions = 0;
};

// One CQ over the measured window: its moderation (at the end, for DIM), what it wrote and
// raised, and the latency of the completions it carried.
struct CqStats {
  int host = 0, cq = 0, vector = 0;
  uint16_t mod_count = 0, mod_period_us = 0;
  bool adaptive = false;
  uint64_t cqes = 0, events = 0;
  LatencyStats latency;  // every completion on this CQ, whatever its opcode
  uint64_t events_by[kEventCauses] = {};  // its events by cause (EventCause)
};

// How a run changed over time: each host's interrupt rate per interval of the workload, and
// every profile change DIM made (also drawn as counter tracks on the --trace timeline).
struct TimeSeries {
  double interval_us = 0;
  std::vector<double> interrupts_per_s[2];  // interval i covers [i, i+1) x interval_us from the workload's start
  struct DimChange {
    double time_us;  // from the workload's start
    int host, cq;
    size_t profile;  // index in the kernel's RDMA DIM table (firmware-shim/dim.h)
  };
  std::vector<DimChange> dim;
};

struct TrafficResult {
  uint64_t posted = 0, refused = 0, completed = 0, recvs = 0, errors = 0, misordered = 0, data_errors = 0;
  uint64_t packets_out = 0, packets_back = 0, packets_lost = 0, retransmits = 0;
  double link_gbps = 0, measured_s = 0;
  HostStats host[2];
  // "SEND", "RDMA_WRITE", "RDMA_READ" (host 0), "RECV" (host 1), "PONG" (host 1's pong SENDs),
  // "PINGPONG" (round trips); with groups also "<group>/<op>".
  std::map<std::string, LatencyStats> latency;
  std::vector<CqStats> cqs;  // host 0's CQs, then host 1's
  bool ok = false;
  // With --check: observations the invariant checker checked, and every breach it found.
  uint64_t invariants_checked = 0;
  std::vector<std::string> invariant_violations;
  // Empty when every message completed; else what was still outstanding when the drain gave up.
  std::string outstanding;
  TimeSeries series;
  double wall_s = 0;  // not part of the deterministic results
  std::vector<QueueLink> queues;  // with TrafficOptions::queues: both HCAs' queues after the run
  // With it too: host 0's completion arbiter, injections passed on ahead of their turn and taken
  // back for a transport record, and transport records and injections passed on at once and taken
  // back for a record of the other source (hca.early_injection).
  uint64_t injections_early = 0, injections_taken_back = 0, records_at_once = 0, injections_at_once = 0,
           records_taken_back = 0;
  // host0's DMA writes issued ahead, the EQEs and MSI-X messages among them, those a rank guard
  // held for their turn, and pushes that broke a rank guard's promise (always 0); TLPs placed
  // before others.
  uint64_t writes_issued_ahead = 0, events_issued_ahead = 0, events_held = 0, ahead_order_breaks = 0, link_passes = 0;
  uint64_t payloads_issued_ahead = 0;
  // host0's PCIe link: read completions told early, and those of them passed (told again).
  uint64_t completions_early = 0, completions_moved = 0;
  uint64_t turns_slept_for_credits = 0, credit_stalls = 0;  // host0's DMA write channel
  // host0's transport: work done on an edge ahead of its block's own process for a later block of
  // that edge's order (timers fired, reads answered, packets handed on; decisions.md 48).
  uint64_t timers_fired_first = 0, reads_answered_first = 0, packets_handed_first = 0;
  // host0's receiver: packets taken from the link as it looked, those sent while it was busy, and
  // wake-ups asked for an arrival.
  uint64_t arrivals_taken = 0, arrivals_sent_busy = 0, arrival_wakes = 0;
  CpuCore::Counters host_cores;  // host0's cores: activations and what they ran ahead (run_ahead)
};

// The signals a VCD can show, in declaration order (docs/scenarios.md lists them).
void for_each_vcd_signal(const TrafficOptions& o, const std::function<void(const std::string& name, int width)>& fn);
// "" if every pattern of o.vcd_signals chooses at least one signal; else an error naming the first that does not.
std::string check_vcd_signals(const TrafficOptions& o);

// Runs the scenario in this process (SystemC elaborates once).
TrafficResult run_traffic(const TrafficOptions& o);
void print_summary(const TrafficOptions& o, const TrafficResult& r);
// With TrafficOptions::queues: every queue between blocks, its depth and high-water mark.
void print_queues(const TrafficResult& r);
// Deterministic machine-readable results (no wall time): one JSON object, or a CSV header + row.
std::string results_json(const TrafficOptions& o, const TrafficResult& r);
std::string results_csv(const TrafficOptions& o, const TrafficResult& r);
// The names of the result fields a run of `o` writes (JSON keys, CSV columns), known before it runs.
std::vector<std::string> result_columns(const TrafficOptions& o);

}  // namespace vhca
