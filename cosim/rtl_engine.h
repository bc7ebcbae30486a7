// What the Verilated CQ writer adds to the engine interface (waveforms, evaluations, the pin-level
// checker's findings), the faults the lockstep injects into it to prove it catches them, and the
// counting of its coverage word into the engine's statistics.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/cq/cq_writer_engine.h"

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

// What a Verilated CQ writer (cosim/rtl_pipelined_writer.h) offers besides the engine interface.
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

// o_cov, the RTL writer's coverage word (COV_* in rtl/cq_writer_pipelined.v), counted into the statistics.
constexpr int kCovFirstCause = 2;  // the event-cause bits, in EventCause order
void count_rtl_coverage(CqeWriterStats& stats, uint32_t cov);

// What the RTL writer counts per CQ from their outputs (the RTL keeps no such counters; the C++
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

}  // namespace vhca
