// The CQ writer's ports and the interface its two implementations share: the C++ model
// (CqWriterPipeline) and the Verilated RTL (cosim/rtl_pipelined_writer.h). The SystemC block CqeWriter
// drives whichever one the configuration selects, one cycle at a time, only on cycles where it
// can act. The cycle timing both must follow is docs/timing.md.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "model/common/observers.h"
#include "model/common/stream.h"
#include "model/cq/cq_types.h"

namespace vhca {

// What an arm does when CQEs newer than its consumer index are already in the CQ (rule S26,
// docs/decisions.md): hand them to moderation, so that the event waits for the count or the
// period like any other (the default), or raise the event at once, ungated (vhca before S26,
// kept for comparison: under load the event rate then follows the host's re-arm loop).
enum class ArmEvent : uint8_t { moderated, at_once };

// Why a completion event fired (reported per CQ and per host, docs/timing.md "Moderation").
enum class EventCause : uint8_t { count, period, immediate, at_arm };
constexpr int kEventCauses = 4;
const char* event_cause_name(EventCause c);  // "count", "period", "immediate", "at_arm"

struct CqeWriterConfig {
  uint32_t num_cqs = 65536;        // CQC table capacity
  uint8_t log_max_cq_size = 22;    // largest CQ: 4 M entries
  size_t input_depth = 16;         // s_cpl and s_arm depth
  size_t control_depth = 2;        // s_ctl: create / modify / resize / destroy (assumption)
  size_t ci_response_depth = 2;    // s_ci: consumer-index refresh results (assumption)
  size_t access_error_depth = 64;  // s_access_error: CQNs whose CQE write failed (assumption)
  ArmEvent arm_event = ArmEvent::moderated;
};

const char* arm_event_name(ArmEvent a);
// "moderated" or "at-arm"; false for anything else.
bool parse_arm_event(const std::string& text, ArmEvent& out);

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
  // Where the moderation period starts (create and modify also start it): EQE mode, the cycle of
  // the last event; CQE mode, the cycle of the last CQE.
  uint64_t timer_start = 0;
  uint64_t timer_deadline = 0;  // 0: no timer running
  uint32_t timer_gen = 0;
  bool timer_listed = false;    // CqWriterPipeline: the CQ is in a timer wheel's slot list
  uint64_t cqes = 0, events = 0, dropped = 0;
  uint64_t events_by[kEventCauses] = {};  // events by EventCause
  uint32_t size() const { return 1u << cfg.log_size; }
};

// Coverage and statistics counters (also the functional coverage points of the co-simulation).
struct CqeWriterStats {
  uint64_t cqes = 0, events = 0, events_by_count = 0, events_by_period = 0, events_immediate = 0,
           events_at_arm = 0, arms = 0, arms_owed = 0, arms_upgraded = 0, arms_ignored_pending = 0, arms_stale = 0,
           ci_refreshes = 0, overflows = 0, owner_wraps = 0, dropped = 0, bad_records = 0,
           output_stalls = 0, timer_expiries = 0;
  // The counter of events of one cause.
  uint64_t& events_of(EventCause c) {
    uint64_t* const by_cause[kEventCauses] = {&events_by_count, &events_by_period, &events_immediate, &events_at_arm};
    return *by_cause[int(c)];
  }
  uint64_t events_of(EventCause c) const { return const_cast<CqeWriterStats*>(this)->events_of(c); }
};

class CqWriterEngine {
 public:
  explicit CqWriterEngine(const CqeWriterConfig& cfg)
      : s_cpl("s_cpl", cfg.input_depth),
        s_arm("s_arm", cfg.input_depth),
        s_ctl("s_ctl", cfg.control_depth),
        s_ci("s_ci", cfg.ci_response_depth),
        s_access_error("s_access_error", cfg.access_error_depth),
        cfg_(cfg) {}
  virtual ~CqWriterEngine() = default;

  // Inputs.
  Stream<CompletionRecord> s_cpl;
  Stream<ArmRequest> s_arm;
  Stream<CqControl> s_ctl;
  Stream<CiResponse> s_ci;
  Stream<uint32_t> s_access_error;  // CQN whose CQE write failed at the host
  // Outputs.
  Stream<DmaWrite>* m_dma = nullptr;
  Stream<DeviceEvent>* m_event = nullptr;
  Stream<CiRequest>* m_ci_req = nullptr;
  // Its index among the producers of m_dma and m_event, which other blocks feed too (the ports'
  // StreamOut::producer(); 0 outside an HCA).
  uint32_t m_dma_producer = 0, m_event_producer = 0;

  // Told about each ignored doorbell: reason (1 unknown CQ, 2 CQ in error, 3 index out of
  // range, 4 stale sequence number) and CQN.
  Observers<uint8_t, uint32_t> on_bad_doorbell;
  // Told when a control op has been applied (the command unit waits for it).
  Observers<const CqControl&, uint64_t> on_control_done;

  // A writer acting at once may act only with room in every output (outputs_ready); a pipelined
  // one holds its own outputs (skid buffers) and must be clocked whatever they say.
  virtual bool holds_outputs() const { return false; }
  bool outputs_ready(uint64_t now) const {
    return m_dma->can_push(now, m_dma_producer) && m_event->can_push(now, m_event_producer) &&
           m_ci_req->can_push(now);
  }
  // Perform this cycle's action, if any (outputs must be ready). Returns true if it acted.
  virtual bool act(uint64_t now) = 0;
  // The earliest cycle after `now` on which it may act (UINT64_MAX: only new input wakes it).
  virtual uint64_t next_cycle(uint64_t now) = 0;
  // The cycle to wake for an input that became ready on `ready`: that cycle, unless the engine
  // can take it later, in act(), with the same result (a lone input into an idle pipelined writer);
  // UINT64_MAX where a wake-up already asked, still to act, will see it.
  virtual uint64_t input_wake(uint64_t ready) { return ready; }
  // Whether, told of the first of several completions pushed at once (Stream::push_untold), it
  // finds the rest when it acts for that one: its next cycle is computed from all it has queued.
  virtual bool finds_batches() const { return false; }
  // Called before a producer looks at an input's fill (`cycle`: the producer's): an engine that
  // owes pops of cycles before it does them first, so a producer never sees an item the engine
  // had taken.
  virtual void settle(uint64_t cycle) { (void)cycle; }
  const bool* settle_owed() const { return &settle_owed_; }  // set while settle() has work
  // Called before anyone reads its contexts or counters on cycle `now`: an engine that owes the
  // acts of cycles up to `now` runs them first, so a query sees what it would had they run on time.
  virtual void settle_for_query(uint64_t now) { (void)now; }
  // Set while someone watches each cycle it acts on (waveforms): a pipelined engine is then
  // clocked on every cycle something is inside it, instead of only those where it meets the world.
  bool wake_every_busy_cycle = false;
  // By value: an engine may build it on demand (the RTL reads it through its query port).
  virtual CqContext context(uint32_t cqn) const = 0;
  virtual bool cq_exists(uint32_t cqn) const = 0;
  virtual void reset() = 0;
  // The cycle on which a moderation period of `period_us` begun on cycle `start` ends (the
  // pipelined writer: the P-th microsecond tick after the one it began in).
  virtual uint64_t period_end_cycle(uint64_t start, uint32_t period_us) const = 0;
  // Cycles after a reset before the engine takes its first item (a pipelined writer clears its
  // context table and timer wheel first).
  virtual uint64_t clearing_cycles() const { return 0; }
  const CqeWriterStats& stats() const { return stats_; }
  void note_output_stall() { ++stats_.output_stalls; }
  const CqeWriterConfig& config() const { return cfg_; }

 protected:
  // The earliest cycle after `now` on which an input, or a timer at `deadline` (UINT64_MAX:
  // none), lets the writer act; completions count only when not held.
  uint64_t next_input_cycle(uint64_t now, bool completions_held, uint64_t deadline) const {
    uint64_t next = UINT64_MAX;
    for (uint64_t c : {s_ctl.head_ready_cycle(), s_access_error.head_ready_cycle(), s_ci.head_ready_cycle(),
                       s_arm.head_ready_cycle(), completions_held ? UINT64_MAX : s_cpl.head_ready_cycle(), deadline})
      if (c != UINT64_MAX) next = std::min(next, std::max(c, now + 1));
    return next;
  }
  void clear_inputs() {
    s_cpl.clear();
    s_arm.clear();
    s_ci.clear();
    s_access_error.clear();
  }
  CqeWriterConfig cfg_;
  CqeWriterStats stats_;
  bool settle_owed_ = false;
};

}  // namespace vhca
