// The Verilated RTL CQ writer (rtl/cq_writer.v, C++ mode) behind the CqWriterEngine interface:
// the same streams as the C++ model, stepped one cycle per act(). The RTL takes the cycle number
// as its time base (i_cycle), so idle cycles are skipped without clocking them. Used by the
// lockstep co-simulation and, by configuration, inside the full HCA (RTL in the loop).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/cq/cq_writer_engine.h"

class Vcq_writer;
class VerilatedContext;
class VerilatedVcdC;

namespace vhca {

// Deliberate faults, for proving that the lockstep checker catches them.
struct RtlFaults {
  uint64_t flip_owner_at_cqe = 0;    // flip the owner bit of the Nth CQE (1-based; 0 = never)
  uint64_t delay_event_at = 0;       // deliver the Nth event one cycle late (1-based; 0 = never)
  // From this cycle on (0 = never), the query port's moderation counter reads one high wherever
  // it is not 0: a hidden-state divergence that reaches no output, for the context check.
  uint64_t misread_pending_from = 0;
  // The pipelined writer's stream checker sees m_dma's data change on the Nth cycle a CQE waits
  // for ready (1-based; 0 = never): proof that the pin-level checker is wired and fires.
  uint64_t unstable_cqe_at = 0;
};

// What both Verilated CQ writers (this one, and the pipelined one: cosim/rtl_pipelined_writer.h)
// offer besides the engine interface.
class RtlEngine : public CqWriterEngine {
 public:
  using CqWriterEngine::CqWriterEngine;
  // Waveform: dump every evaluation between cycles [from, to] to a VCD file.
  virtual void trace(const std::string& vcd_path, uint64_t from, uint64_t to) = 0;
  virtual uint64_t evaluations() const = 0;
  // What the pin-level stream checker (cosim/stream_checker.h) found, if the engine has one.
  virtual const std::vector<std::string>& protocol_violations() const {
    static const std::vector<std::string> kNone;
    return kNone;
  }
};

// o_cov, the RTL writers' coverage word (COV_* in rtl/cq_writer.v), counted into the statistics.
constexpr int kCovFirstCause = 2;  // the event-cause bits, in EventCause order
void count_rtl_coverage(CqeWriterStats& stats, uint32_t cov);

// What the RTL writers count per CQ from their outputs (the RTL keeps no such counters; the C++
// model's CqContext does): CQEs, completion events, and the events by cause (o_cov's cause bits).
class PerCqCounts {
 public:
  void reset(uint32_t cqs);
  void restart(uint32_t cqn);  // a CQ made anew counts from zero
  void cqe(uint32_t cqn);
  void event(uint32_t cqn, uint32_t cov);
  void fill(uint32_t cqn, CqContext& c) const;

 private:
  std::vector<uint64_t> cqes_, events_;
  std::vector<std::array<uint64_t, kEventCauses>> causes_;
};

class RtlCqWriter : public RtlEngine {
 public:
  // The Verilated build has NUM_CQS = kRtlNumCqs and CYCLES_PER_US = 500.
  static constexpr uint32_t kRtlNumCqs = 64;
  explicit RtlCqWriter(const CqeWriterConfig& cfg, const RtlFaults& faults = {});
  ~RtlCqWriter() override;

  bool act(uint64_t now) override;
  uint64_t next_cycle(uint64_t now) override;
  uint64_t period_end_cycle(uint64_t start, uint32_t period_us) const override { return start + uint64_t(period_us) * 500; }
  CqContext context(uint32_t cqn) const override;
  bool cq_exists(uint32_t cqn) const override;
  void reset() override;

  void trace(const std::string& vcd_path, uint64_t from, uint64_t to) override;
  uint64_t evaluations() const override { return evals_; }

 private:
  void drive_inputs(uint64_t now);
  void collect_outputs(uint64_t now);
  void eval(uint64_t now, int phase);

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vcq_writer> top_;
  std::unique_ptr<VerilatedVcdC> vcd_;
  uint64_t trace_from_ = 0, trace_to_ = 0;
  RtlFaults faults_;
  uint64_t cqes_seen_ = 0, events_seen_ = 0;
  // CQEs written and completion events raised per CQ, counted at the RTL's outputs (the RTL
  // keeps no such counters; the C++ model's CqContext does).
  PerCqCounts counts_;
  bool delayed_event_pending_ = false;
  DeviceEvent delayed_event_;
  uint64_t evals_ = 0;
  uint64_t last_cycle_ = 0;
};

}  // namespace vhca
