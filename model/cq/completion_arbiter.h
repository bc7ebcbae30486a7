// The CQ writer's completion input has two producers: the transport engine and the injection
// port (tests and tools put records in at chosen cycles). The arbiter joins them in front of the
// CQ writer's s_cpl stream, one source after the other when both have a record (round robin),
// each in its own order, and passes on as many records a cycle as s_cpl has room for.
//
// It is a multiplexer, not a register stage: a record offered on cycle c enters s_cpl on c when
// there is room, and so is visible to the CQ writer on c+1, as if the producer had pushed into
// s_cpl itself. The transport's side is a finite queue (transport_depth): a transport outbox
// whose completion finds it full is held until a record leaves (backpressure from the CQ writer
// back to the transport: a writer that holds its intake for a consumer-index refresh or a resize,
// or a flush of a whole ring, stalls the transport instead of growing a queue).
//
// Under a flood of injections it does not wake for each record: when the CQ writer takes a record
// from the full s_cpl on cycle p and only injections wait, the one the arbiter's turn on p+1
// would pass on is pushed at once, stamped p+1 (see on_cpl_space). A lone transport record put on
// an edge is pushed at once too (see passes_on_at_once). A burst of injections into a stream with
// room is pushed ahead, each stamped with its own turn's cycle (see push_ahead).
#pragma once
#include <cstdint>
#include <systemc>

#include "model/common/sim_clock.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_types.h"

namespace vhca {

// What the transport sees of the arbiter: a put that may refuse, and the event that says a refused
// put may now succeed.
class CompletionPutIf : public virtual sc_core::sc_interface {
 public:
  virtual bool try_put(const CompletionRecord& r) = 0;
  virtual const sc_core::sc_event& space_event() const = 0;
};

struct CompletionArbiterConfig {
  size_t transport_depth = 16;  // completion records the transport may have waiting (assumption)
  // Simulation speed only: a flood of injections is passed on without an activation a record
  // (on_cpl_space). Results are the same either way (testbench/speed_only.sh).
  bool pass_on_early = true;
  // How far ahead (cycles) a turn pushes the injections due after it (push_ahead).
  uint64_t ahead_cycles = 32;
};

class CompletionArbiter : public sc_core::sc_module, public CompletionPutIf, public QueueInfo {
 public:
  sc_core::sc_export<CompletionPutIf> s_transport{"s_transport"};
  StreamOut<CompletionRecord> m_cpl{"m_cpl"};

  SC_HAS_PROCESS(CompletionArbiter);
  CompletionArbiter(const sc_core::sc_module_name& name, const SimClock& clock,
                    const CompletionArbiterConfig& cfg = {});

  // The transport's side (through s_transport).
  bool try_put(const CompletionRecord& r) override;
  const sc_core::sc_event& space_event() const override { return space_; }

  // The injection port: the record is offered on `cycle` (now if in the past). Records for the
  // same cycle keep their order.
  void inject(const CompletionRecord& r, uint64_t cycle);
  void reset();

  uint64_t injected() const { return injected_; }
  uint64_t injection_stalls() const { return injection_stalls_; }  // cycles an injection waited for room
  uint64_t passed_on_early() const { return passed_on_early_; }   // injections pushed ahead of their turn...
  uint64_t taken_back() const { return taken_back_; }             // ...and taken back before their turns
  uint64_t passed_at_once() const { return passed_at_once_; }      // transport records pushed without the turn,
  uint64_t injections_at_once() const { return injections_at_once_; }  // injections likewise...
  uint64_t taken_back_at_once() const { return taken_back_at_once_; }  // ...and taken back for the other source
  uint64_t transport_stalls() const { return transport_stalls_; }  // puts refused: the transport held
  size_t transport_high_water() const { return transport_high_water_; }
  uint64_t activations() const { return wakeup_.activations(); }
  size_t transport_depth() const { return cfg_.transport_depth; }
  // The transport's queue, as the topology reports it.
  size_t queue_depth() const override { return cfg_.transport_depth; }
  size_t queue_high_water() const override { return transport_high_water_; }
  uint64_t queue_pushed() const override { return transport_puts_; }

 private:
  void step();
  void on_cpl_space(uint64_t cycle);
  void take_back_early();
  // Injections pushed ahead of their turns (push_ahead): those whose turn has run are final.
  void settle_ahead(uint64_t final_before) {
    while (!ahead_.empty() && ahead_.front() < final_before) ahead_.pop_front();
  }
  void push_ahead(uint64_t now, bool told);
  void take_back_ahead(uint64_t from);
  uint64_t ahead_open_from(uint64_t turn) const;
  bool passes_on_at_once(uint64_t turn) const;
  // `open`: records pushed at once from this source still wait for `turn` (at_once_open).
  void pass_on_at_once(const CompletionRecord& r, uint64_t turn, bool transport, bool open);
  void take_back_at_once(bool wake = true);
  bool at_once_open(uint64_t turn) const;
  bool injection_due(uint64_t now) const { return !injections_.empty() && injections_.front().first <= now; }
  // The cycle of the next turn: this edge's, or between edges the next one's.
  uint64_t next_turn() const { return clock_.on_edge() ? clock_.now() : clock_.now() + 1; }

  const SimClock& clock_;
  CompletionArbiterConfig cfg_;
  Wakeup wakeup_;
  SlotRing<CompletionRecord> transport_;  // at most transport_depth
  // The injection port's schedule, by cycle, records of one cycle in the order they were given
  // (usually given in order: appended; otherwise moved back to after the last of their cycle).
  using Injection = std::pair<uint64_t, CompletionRecord>;
  SlotRing<Injection> injections_{64};  // grows to the longest schedule given
  bool transport_turn_ = true;  // round robin: whose record goes first when both have one
  sc_core::sc_event space_;
  uint64_t injected_ = 0, injection_stalls_ = 0, transport_stalls_ = 0, transport_puts_ = 0;
  uint64_t injection_held_since_ = UINT64_MAX;  // the cycle a due injection was first refused
  bool in_step_ = false;
  // The injection passed on ahead for early_cycle_ (on_cpl_space), and the held-since mark its
  // push cleared: what a transport record put before that cycle takes back (take_back_early).
  Injection early_;
  uint64_t early_cycle_ = UINT64_MAX, early_held_since_ = UINT64_MAX;
  uint64_t passed_on_early_ = 0, taken_back_ = 0;
  // The cycles of the injections pushed ahead by push_ahead, in order: the last items of s_cpl.
  SlotRing<uint64_t> ahead_{16};
  // Records pushed at once on at_once_cycle_, all from one source (try_put, or inject), which a
  // record of the other source for that cycle takes back (take_back_at_once).
  uint64_t at_once_cycle_ = UINT64_MAX, passed_at_once_ = 0, injections_at_once_ = 0, taken_back_at_once_ = 0;
  size_t at_once_ = 0;
  bool at_once_transport_ = true, at_once_between_edges_ = false;
  uint64_t at_once_delta_ = 0;  // sc_delta_count() at the push (on an edge)
  size_t transport_high_water_ = 0;
};

}  // namespace vhca
