// The pipelined CQ writer, C++ model: cycle for cycle what rtl/cq_writer_pipelined.v does
// (docs/rtl.md, "The pipelined writer"; the contract is docs/cosim-guide.md). The rules of every
// action on a CQ context are CqWriterCore's; this class adds the pipeline around them:
//
//   select (stage 1) -> context read (stage 2) -> act (stage 3) -> skid buffers -> m_dma,
//                                                                  m_event, m_ci_req, the wheel
//
// - Stage 1 takes one item a cycle in the fixed priority (control, CQE-write failure,
//   consumer-index response, timer expiry, arm, completion); stage 3 acts on it two cycles later.
//   Two items for one CQ back to back are a hazard: the second waits in stage 2 one cycle (stage 3
//   gets a bubble, stage 1 takes nothing) and then reads the context the first wrote (the write
//   bypass), so acting at stage 3 sees exactly what a writer acting at once would. The stall keeps
//   stage 3's decision off the next item's context read: stage 2 can then precompute the
//   differences and comparisons stage 3 decides on (docs/rtl.md, "Logic depth").
// - Completions wait in a replay buffer of kReplayDepth records and are issued speculatively:
//   when stage 3 finds that completions must be held (a consumer-index refresh, a resize), the
//   completions behind it in stages 1 and 2 are squashed and issued again later, in order.
// - Outputs leave through skid buffers (registered ready); stage 3 holds, and the stages behind it
//   with it, when any skid buffer it may need is full.
// - Moderation periods run on a microsecond tick; a running timer is an entry in the timing wheel
//   (TimerWheel), its deadline the P-th tick after the one its period began in. An expiry whose deadline
//   has moved later (CQE mode) re-inserts the CQ instead of firing.
// - CQE timestamps are the device's cycle on which stage 3 acts (the RTL samples the device's
//   cycle count, i_timestamp). After a reset the context table and the wheel clear themselves
//   (max(num_cqs, 8,192) cycles), and no item is taken meanwhile.
//
// Event-driven: it asks to be clocked on the cycles where it takes an input, hands an output on, or
// acts on a CQ's context in a way someone else sees then (every cycle something is inside it while
// it is watched, or while the wheel or a skid buffer is busy); act(now) first runs the cycles since
// the last call, on which items only moved along the stages. Two kinds of cycle are run there too:
// - A lone input into an idle writer is taken in those cycles: it wakes first where the input
//   acts on its CQ (input_wake; a completion acting unseen, below: the cycle after), and a producer
//   that looks at the input stream meanwhile has the take done first (settle). So are completions
//   reaching a writer that wakes soon anyway (busy, or with a lone take put off) while they are
//   the only input waiting and s_cpl is not full (completion_takes_unseen): it wakes where the
//   first of them acts, not for each take.
// - A completion whose act only fills skid buffers (a CQE, an event, a timer insert: its CQ exists,
//   is not in error and does not look full, and nobody logs the CQ writer) acts in the catch-up of
//   the next cycle, where those outputs leave. Its CQE carries its own cycle as the timestamp, and
//   a query of the writer's contexts or counters runs the owed cycles first (settle_for_query: up
//   to the query's cycle, never the one it wakes for, which it runs itself).
// Same-cycle pushes into shared streams are ordered by rule (docs/architecture.md), so when it
// wakes does not change where its outputs go.
#pragma once
#include <array>
#include <cstdint>

#include "model/common/skid_buffer.h"
#include "model/common/slot_ring.h"
#include "model/cq/cq_writer_core.h"
#include "model/cq/timer_wheel.h"

namespace vhca {

class CqWriterPipeline final : public CqWriterCore {
 public:
  static constexpr size_t kReplayDepth = 4;
  CqWriterPipeline(const CqeWriterConfig& cfg, double clock_mhz);

  bool act(uint64_t now) override;
  uint64_t next_cycle(uint64_t now) override;
  uint64_t input_wake(uint64_t ready) override;
  bool finds_batches() const override { return true; }  // next_cycle looks at all of s_cpl
  void settle(uint64_t cycle) override;
  void settle_for_query(uint64_t now) override;
  bool holds_outputs() const override { return true; }  // its skid buffers hold stage 3
  void reset() override;

  // Cycles after reset until the context table and the wheel are cleared.
  uint64_t clearing_cycles() const override;
  uint64_t period_end_cycle(uint64_t start, uint32_t period_us) const override;

  // What the pipeline's own mechanisms did: the co-simulation's coverage that they were exercised.
  struct Coverage {
    uint64_t hazard_stalls = 0;   // an item waited in stage 2 behind one for the same CQ in stage 3
    uint64_t bypass_written = 0;  // stage 2 took the context written on the edge that read the RAM
    uint64_t squashed = 0;        // completions squashed and issued again
    uint64_t reinserted = 0;      // expiries whose deadline had moved later
    uint64_t stale_expiries = 0;  // expiries of a timer stopped meanwhile
    uint64_t same_tick = 0;       // expiries of one tick after the first (timers expiring together)
    uint64_t holds = 0;           // cycles stage 3 held for a full skid buffer
  };
  const Coverage& coverage() const { return coverage_; }

 protected:
  DmaWrite& dma_slot(uint64_t now) override { return dma_skid_.put(now); }
  void emit_dma(uint64_t) override {}  // built in its slot
  void emit_event(const DeviceEvent& e, uint64_t now) override { event_skid_.push(e, now); }
  void emit_ci_request(const CiRequest& r, uint64_t now) override { ci_skid_.push(r, now); }
  const CompletionRecord* head_completion() override { return replay_.empty() ? nullptr : &replay_.front(); }
  void retire_head(uint64_t now) override;
  uint64_t period_deadline(const CqContext& cq) const override;
  bool deadline_passed(uint64_t deadline, uint64_t now) const override;
  void start_timer(CqContext& cq, uint32_t cqn, uint64_t deadline) override;

 private:
  enum class Kind : uint8_t { none, control, access_error, ci_response, expiry, arm, completion };
  // A stage's item. It moves from stage to stage every cycle, so it is kept small (16 bytes): a
  // control op (the largest item, and rare) waits in controls_ and the stage holds its slot; an
  // arm or a consumer-index response keeps its fields here, around the CQ number.
  struct Op {
    Kind kind = Kind::none;
    uint8_t control = 0;  // control: its slot in controls_
    uint8_t sn = 0;       // arm: its sequence number
    ArmCmd cmd = ArmCmd::next;  // arm
    bool ok = true;       // consumer-index response: the doorbell record was read
    uint32_t cqn = 0;     // the CQ whose context it reads
    uint32_t value = 0;   // expiry: the wheel's tick; arm, consumer-index response: the index
  };
  static_assert(sizeof(Op) == 16, "a stage's item is copied every cycle: keep it small");
  struct Insert {
    uint32_t cqn = 0;
    uint32_t deadline = 0;  // a tick, modulo 16,384
  };

  void clock(uint64_t c);
  void run_cycles_before(uint64_t end);
  uint64_t skip_idle_wheel(uint64_t c, uint64_t limit);
  [[gnu::always_inline]] inline bool held_with_stages_empty(uint64_t c) const;  // asked every cycle caught up
  size_t inputs_waiting() const;
  bool lone_completion_enters(uint64_t c) const;
  void enter_lone_completion(uint64_t c);
  void note_bypass(bool hazard);
  // clock()'s parts, each called once a cycle: inlined into it (a call's register saves were a
  // tenth of a cycle's cost).
  [[gnu::always_inline]] inline Op select(uint64_t c, const TimerWheel::Outputs& wheel);
  void perform(const Op& op, uint64_t c);
  void expire(uint32_t cqn, uint64_t c);
  [[gnu::always_inline]] inline void drain_skids(uint64_t c);
  bool holds(uint64_t c) const;
  bool skids_empty() const;
  bool pipeline_empty() const;  // no item in a stage, the replay buffer or a skid buffer
  bool quiet() const;  // nothing in flight and the wheel idle: a cycle only counts time
  uint64_t next_wake(uint64_t now);
  uint64_t next_busy_cycle(uint64_t now);
  bool completion_acts_unseen(uint32_t cqn) const;
  bool completion_takes_unseen() const;
  uint64_t ask_wake(uint64_t wake);
  uint64_t cycles_since_reset(uint64_t c) const { return c - first_cycle_; }
  uint32_t tick_of(uint64_t c) const { return uint32_t(cycles_since_reset(c) / cycles_per_us_); }
  uint64_t tick_start(uint64_t tick) const { return first_cycle_ + tick * cycles_per_us_; }  // its first cycle

  uint32_t cycles_per_us_;
  bool started_ = false;
  uint64_t first_cycle_ = 0, last_cycle_ = 0, cycle_ = 0;  // cycle_: the one being clocked
  // The earliest wake-up asked for since it last acted: others may run the cycles before it on its
  // behalf (settle, settle_for_query), never that one.
  uint64_t wake_asked_ = UINT64_MAX;
  bool catching_up_ = false;  // in run_cycles_before
  Op s2_, s3_;
  // Controls in the stages: at most stages 2 and 3 hold one while stage 1 takes the next, and they
  // leave in order, so three slots used in turn never overwrite one in flight.
  std::array<CqControl, 3> controls_{};
  uint8_t next_control_ = 0;
  SlotRing<CompletionRecord> replay_{kReplayDepth};
  size_t issued_ = 0;  // replay entries in stages 2 and 3 (the oldest ones)
  SkidBuffer<DmaWrite> dma_skid_;
  SkidBuffer<DeviceEvent> event_skid_;
  SkidBuffer<CiRequest> ci_skid_;
  SkidBuffer<Insert> ins_skid_;
  TimerWheel wheel_;
  uint64_t listed_ = 0;  // CQs in the wheel's lists
  uint32_t last_expiry_tick_ = UINT32_MAX;
  uint32_t written_cqn_ = UINT32_MAX;  // the CQ stage 3 wrote on the last advancing edge
  Coverage coverage_;
};

}  // namespace vhca
