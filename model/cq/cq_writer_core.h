// The CQ writer, C++ reference model: CQ context table, CQE formatting, producer index,
// consumer-index refresh, arm state with sequence numbers, event moderation (count and period,
// two period modes) and overflow detection. Plain C++ stepped one cycle at a time, so the same
// object runs inside the HCA (through CqeWriter) and alone in the lockstep co-simulation.
#pragma once
#include <cmath>
#include <cstdint>
#include <queue>
#include <vector>

#include "model/common/bytes.h"
#include "model/common/paged_table.h"
#include "model/cq/cq_writer_engine.h"

namespace vhca {

class CqWriterCore : public CqWriterEngine {
 public:
  CqWriterCore(const CqeWriterConfig& cfg, double clock_mhz);

  bool act(uint64_t now) override;
  uint64_t next_cycle(uint64_t now) override;
  CqContext context(uint32_t cqn) const override { return table_.at(cqn); }
  // Final: asked on every record, called straight from this class's own rules.
  bool cq_exists(uint32_t cqn) const final { return cqn < table_.size() && table_[cqn].valid; }
  void reset() override;

 protected:
  // Hooks the pipelined writer (CqWriterPipeline) overrides: where outputs go, which completion
  // is the head one and the moderation timer. Everything else - the rules of every action on a
  // CQ context - is this class's and serves both.
  // A CQE's DMA write is built where it goes (the pipelined writer's skid buffer; here a scratch
  // write, pushed when built): one copy of it fewer on the hottest path.
  virtual DmaWrite& dma_slot(uint64_t) { return scratch_dma_; }
  virtual void emit_dma(uint64_t now) { m_dma->push(std::move(scratch_dma_), now, 0, m_dma_producer); }
  virtual void emit_event(const DeviceEvent& e, uint64_t now) { m_event->push(e, now, 0, m_event_producer); }
  virtual void emit_ci_request(const CiRequest& r, uint64_t now) { m_ci_req->push(r, now); }
  virtual const CompletionRecord* head_completion() { return s_cpl.empty() ? nullptr : &s_cpl.front(); }
  virtual void retire_head(uint64_t now) { s_cpl.pop(now); }
  // A CQE's timestamp: the cycle its writer acts on (the pipelined writer's stage 3, as the RTL's).
  static uint64_t timestamp(uint64_t now) { return now; }
  // The deadline of the period that began at cq.timer_start (non-zero), and whether it has passed.
  virtual uint64_t period_deadline(const CqContext& cq) const { return cq.timer_start + period_cycles(cq); }
  // Exactly the period's length after its start.
  uint64_t period_end_cycle(uint64_t start, uint32_t period_us) const override { return start + cycles_of_us(period_us); }
  virtual bool deadline_passed(uint64_t deadline, uint64_t now) const { return deadline <= now; }
  virtual void start_timer(CqContext& cq, uint32_t cqn, uint64_t deadline);

  struct Timer {
    uint64_t deadline;
    uint32_t cqn;
    uint32_t gen;
    bool operator>(const Timer& o) const { return deadline != o.deadline ? deadline > o.deadline : cqn > o.cqn; }
  };

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
  void fire(CqContext& cq, uint32_t cqn, uint64_t now, EventCause cause);
  void enter_error(CqContext& cq, uint32_t cqn, uint8_t syndrome, uint64_t now);
  void stop_timer(CqContext& cq);
  // A running timer's deadline has come: the period event, if one is owed.
  void timer_due(CqContext& cq, uint32_t cqn, uint64_t now);
  bool armed(const CqContext& cq) const;
  // The cached consumer index says every entry is unconsumed (an overrun-ignore CQ never is full).
  static bool looks_full(const CqContext& cq) {
    return !cq.cfg.overrun_ignore && index_distance(cq.ci, cq.pi) >= cq.size();
  }
  bool qualifies(const CqContext& cq, const CompletionRecord& r) const;
  uint64_t period_cycles(const CqContext& cq) const { return cycles_of_us(cq.cfg.mod_period); }
  uint64_t cycles_of_us(uint32_t us) const { return uint64_t(std::llround(double(us) * clock_mhz_)); }

  double clock_mhz_;
  PagedTable<CqContext> table_;  // grows with the CQs used
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  bool waiting_ci_ = false;   // the head completion waits for a consumer-index refresh
  bool refreshed_ = false;    // the consumer index was just refreshed for the head completion
  uint32_t resizing_ = 0;     // CQs in resize: completion intake is held meanwhile
  DmaWrite scratch_dma_;      // a CQE's write being built (dma_slot)
};

}  // namespace vhca
