// What a traffic run observes on each host, and how: when each CQE landed in host memory (the
// PCIe link reports every device write as it lands), latency samples per opcode, per group and
// per CQ, CQ occupancy when completions are handled, and — when asked for — a Perfetto timeline
// and a VCD of the CQ, EQ, MSI-X and interrupt state. The probes only watch: they hang on the
// model's observer lists and never act on the model.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <systemc>

#include "explorer/timeline.h"
#include "explorer/traffic.h"
#include "explorer/vcd.h"
#include "sim/system.h"

namespace vhca {

class Probes {
 public:
  explicit Probes(const TrafficOptions& o);

  // Hooks on host h: device writes landing, handler runs, poll turns (and, with a VCD, the CQ
  // writer's and EQ engine's actions). `cqs` are the scenario's CQs of that host, in order.
  void attach(int h, Node& node, CqPool& pool, const std::vector<IbCq*>& cqs);

  // When the oldest CQE of `cqn` not yet claimed landed (a CQ's CQEs are polled in the order
  // they landed, so each done callback claims the oldest); now if none is recorded.
  sc_core::sc_time claim_cqe(int h, uint32_t cqn);
  // A completion is being handled: how full its CQ is at this moment.
  void sample_occupancy(int h, IbCq& cq);
  // A completion of opcode `op`, posted at `posted`, visible at `visible`, handled now: counted
  // under `op`, under "group/op" when `group` is not empty, and for CQ `cq` of host h.
  void sample_latency(int h, int cq, const std::string& group, const char* op, const sc_core::sc_time& posted,
                      const sc_core::sc_time& visible);

  std::map<std::string, LatencyStats> latency_by_op();
  LatencyStats latency_of_cq(int h, int cq);
  double occupancy_mean(int h) const;
  uint32_t occupancy_max(int h) const { return occupancy_max_[h]; }

  // Counts each host's interrupts per `interval` from `start` until `end`, and records DIM's
  // profile changes from `start` on. Passive: interrupts are binned as their handlers run (a
  // sampling process would be one more process in SystemC's same-instant order).
  void start_series(const sc_core::sc_time& start, const sc_core::sc_time& end, const sc_core::sc_time& interval);
  // The series so far (rates per interval); also draws them on the timeline, once.
  const TimeSeries& series();

  // The timeline and the VCD, if the options ask for them; false (and a message) if one cannot be written.
  bool write_outputs() const;

 private:
  struct Samples {
    std::vector<double> to_cqe_ns, to_handler_ns;
    void add(const sc_core::sc_time& posted, const sc_core::sc_time& visible);
    LatencyStats stats();
  };
  // The waveform of one host: signal ids (-1: not chosen) and the values last reported.
  struct HostWaves {
    struct Cq {
      std::vector<int> id;
      uint32_t cqn = 0, pi = 0, ci = 0;
      bool any = false;
    };
    std::vector<Cq> cqs;
    std::vector<std::pair<int, int>> eqs;  // (pi, armed) per completion vector
    std::vector<int> msix, irq;            // per MSI-X vector
    std::vector<uint64_t> messages;
  };

  void declare_waves(int h);
  void sample_cqs(int h);
  void sample_eqs(int h);
  std::string cq_track(int h, uint32_t cqn);

  const TrafficOptions& o_;
  Node* node_[2] = {};
  std::vector<IbCq*> cqs_[2];
  std::map<uint32_t, int> cq_index_[2];  // cqn -> the scenario's CQ index
  std::map<uint32_t, std::deque<sc_core::sc_time>> landed_[2];
  Timeline timeline_;
  TimeSeries series_;
  sc_core::sc_time series_start_, series_end_, series_interval_;
  bool series_on_ = false, series_drawn_ = false;
  std::vector<uint64_t> interrupt_bins_[2];
  VcdWriter vcd_;
  HostWaves waves_[2];
  std::map<std::string, Samples> samples_;
  std::map<int, Samples> cq_samples_[2];
  uint64_t occupancy_sum_[2] = {}, occupancy_samples_[2] = {};
  uint32_t occupancy_max_[2] = {};
};

}  // namespace vhca
