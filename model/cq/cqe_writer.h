// The CQ writer: CQ context table, CQE formatting, producer index, consumer-index refresh, arm
// state with sequence numbers, event moderation (count and period, two period modes) and
// overflow detection. Its cycle timing is specified in docs/timing.md and is the contract the
// RTL twin (rtl/cq_writer.v) must meet cycle for cycle.
#pragma once
#include <cstdint>
#include <functional>
#include <queue>
#include <systemc>
#include <vector>

#include "model/common/sim_clock.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_types.h"

namespace vhca {

struct CqeWriterConfig {
  uint32_t num_cqs = 65536;        // CQC table capacity
  uint8_t log_max_cq_size = 22;    // largest CQ: 4 M entries
  size_t input_depth = 16;         // s_cpl and s_arm depth
};

struct CqContext {
  bool valid = false;
  CqConfig cfg;
  CqState state = CqState::disarmed;
  uint32_t pi = 0;              // producer index (24 bits)
  uint32_t ci = 0;              // cached consumer index
  uint32_t last_notified = 0;   // pi at the last event
  uint32_t last_solicited = 0;  // pi just after the last solicited or error CQE
  bool any_solicited = false;
  uint8_t arm_sn = 0;
  uint16_t mod_pending = 0;     // qualifying CQEs since the last event
  uint64_t timer_start = 0;     // EQE mode: cycle of the last event (or of create/modify)
  uint64_t timer_deadline = 0;  // 0: no timer running
  uint32_t timer_gen = 0;
  uint64_t cqes = 0, events = 0, dropped = 0;
  uint32_t size() const { return 1u << cfg.log_size; }
};

// Coverage and statistics counters (also the functional coverage points of the co-simulation).
struct CqeWriterStats {
  uint64_t cqes = 0, events = 0, events_by_count = 0, events_by_period = 0, events_immediate = 0,
           events_at_arm = 0, arms = 0, arms_upgraded = 0, arms_ignored_pending = 0, arms_stale = 0,
           ci_refreshes = 0, overflows = 0, owner_wraps = 0, dropped = 0, bad_records = 0,
           output_stalls = 0, timer_expiries = 0;
};

class CqeWriter : public sc_core::sc_module {
 public:
  // Inputs.
  Stream<CompletionRecord> s_cpl;
  Stream<ArmRequest> s_arm;
  Stream<CqControl> s_ctl;
  Stream<CiResponse> s_ci;
  Stream<uint32_t> s_access_error;  // CQN whose CQE write failed at the host
  // Outputs (bound by the HCA to the DMA engine and the EQ engine).
  Stream<DmaWrite>* m_dma = nullptr;
  Stream<DeviceEvent>* m_event = nullptr;
  Stream<CiRequest>* m_ci_req = nullptr;

  // Told about each ignored doorbell: reason (1 unknown CQ, 2 CQ in error, 3 index out of
  // range, 4 stale sequence number) and CQN.
  std::function<void(uint8_t reason, uint32_t cqn)> on_bad_doorbell;
  // Told when a control op has been applied (the command unit waits for it).
  std::function<void(const CqControl&, uint64_t cycle)> on_control_done;

  SC_HAS_PROCESS(CqeWriter);
  CqeWriter(const sc_core::sc_module_name& name, const SimClock& clock, const CqeWriterConfig& cfg = {});
  void bind_outputs(Stream<DmaWrite>& dma, Stream<DeviceEvent>& events, Stream<CiRequest>& ci_req);

  const CqContext& context(uint32_t cqn) const { return table_.at(cqn); }
  bool cq_exists(uint32_t cqn) const { return cqn < table_.size() && table_[cqn].valid; }
  const CqeWriterConfig& config() const { return cfg_; }
  const CqeWriterStats& stats() const { return stats_; }
  uint64_t activations() const { return wakeup_.activations(); }
  void reset();

 private:
  struct Timer {
    uint64_t deadline;
    uint32_t cqn;
    uint32_t gen;
    bool operator>(const Timer& o) const { return deadline != o.deadline ? deadline > o.deadline : cqn > o.cqn; }
  };

  void step();
  void schedule_next(uint64_t now);
  bool outputs_ready() const;
  bool act(uint64_t now);
  void apply_control(const CqControl& c, uint64_t now);
  void apply_access_error(uint32_t cqn, uint64_t now);
  bool apply_ci_response(const CiResponse& r, uint64_t now);
  bool expire_timer(uint64_t now);
  void apply_arm(const ArmRequest& a, uint64_t now);
  // Returns false if the record must wait (consumer-index refresh issued).
  bool apply_completion(const CompletionRecord& r, uint64_t now);
  void write_cqe(CqContext& cq, uint32_t cqn, const CompletionRecord& r, uint64_t now);
  void moderate(CqContext& cq, uint32_t cqn, const CompletionRecord& r, uint64_t now);
  void reevaluate(CqContext& cq, uint32_t cqn, uint64_t now);
  void fire(CqContext& cq, uint32_t cqn, uint64_t now);
  void enter_error(CqContext& cq, uint32_t cqn, uint8_t syndrome, uint64_t now);
  void start_timer(CqContext& cq, uint32_t cqn, uint64_t deadline);
  void stop_timer(CqContext& cq);
  bool armed(const CqContext& cq) const;
  bool qualifies(const CqContext& cq, const CompletionRecord& r) const;
  uint64_t period_cycles(const CqContext& cq) const;

  const SimClock& clock_;
  CqeWriterConfig cfg_;
  Wakeup wakeup_;
  std::vector<CqContext> table_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  bool waiting_ci_ = false;   // the head completion waits for a consumer-index refresh
  bool refreshed_ = false;    // the consumer index was just refreshed for the head completion
  uint32_t resizing_ = 0;     // CQs in resize: completion intake is held meanwhile
  CqeWriterStats stats_;
};

}  // namespace vhca
