// The pipelined CQ writer's moderation timer wheel, cycle for cycle as rtl/cq_timer_wheel.v
// (docs/rtl.md, "The pipelined writer"): the reference the RTL block is checked against in
// lockstep (testbench/test_cq_timer_wheel.cpp), and the timing the C++ CQ writer will take on
// when it adopts the wheel (issue 13, item 2). Same registers, same RAM behaviour (registered
// reads, read-before-write), same rules; see the RTL's header for them.
//
// Use: outputs() is what the pins show this cycle (they depend on registers only); edge(inputs)
// is the clock edge at its end with those inputs. reset() is an edge with rst high; the wheel
// must be reset before use.
#pragma once
#include <cstdint>
#include <vector>

namespace vhca {

class TimerWheel {
 public:
  static constexpr uint32_t kSlots = 8192;      // slot lists (13 bits of the deadline tick)
  static constexpr uint32_t kTickMask = 0x3FFF; // ticks are counted modulo 16,384

  struct Inputs {
    bool ins_valid = false;
    uint32_t ins_cqn = 0;
    uint32_t ins_deadline = 0;  // a tick, modulo 16,384
    bool exp_ready = false;
  };
  struct Outputs {
    bool ready = false;  // the head RAM's clearing sweep is done
    uint32_t now = 0;    // the current tick
    bool late = false;   // the insert taken on the last edge was due or unplaceable
    bool idle = false;   // nothing to do until the next tick (idle())
    bool ins_ready = false;
    bool exp_valid = false;
    uint32_t exp_cqn = 0, exp_tick = 0;
  };

  TimerWheel(uint32_t num_cqs, uint32_t cycles_per_us);
  void reset();
  // Inline: the pipelined writer asks every cycle it clocks, and most of those find the wheel idle.
  Outputs outputs() const {
    Outputs o;
    o.ready = heads_ready();
    o.now = now_;
    o.late = late_;
    o.idle = idle();
    o.ins_ready = idle_ || ins_ready();  // idle: the sweep is done and no walk is due
    o.exp_valid = exp_valid_;
    o.exp_cqn = exp_cqn_;
    o.exp_tick = exp_tick_;
    return o;
  }
  void edge(const Inputs& in) {
    if (idle() && !in.ins_valid) idle_edge();
    else busy_edge(in);
  }
  // Nothing to do until the next tick begins: the sweep is done, no insert is in flight, every
  // begun tick's slot has been walked. Edges meanwhile only count time (a writer may skip waking).
  // Kept as a flag, refreshed by every change of the registers it reads (the writer asks it
  // several times a cycle).
  bool idle() const { return idle_; }
  // Edges left in the current tick before the one that begins the next (an idle wheel's edges
  // until then only count time).
  uint32_t edges_before_tick() const { return cycles_per_us_ - 1 - presc_; }
  // `edges` edges of an idle wheel with no input, none of them the one that begins a tick: the
  // state those edges would leave, at once.
  void skip_idle(uint32_t edges);
  // `edges` edges of an idle wheel whose lists are all empty, with no input: each tick begun
  // meanwhile has its slot detached and walked, found empty (two edges into the tick). The state
  // those edges would leave, at once (a tick of at least 3 cycles).
  void skip_empty(uint64_t edges);
  // Clearing its head RAM and nothing else (no insert can be taken, nothing is walked meanwhile).
  bool sweeping_only() const { return !sweep_done_ && !walk_busy() && !ins0_valid_ && !ins1_valid_; }
  uint32_t sweep_edges_left() const { return kSlots - sweep_addr_; }
  // `edges` edges of a wheel that is only sweeping, with no input, none of them the one that begins
  // a tick and at most sweep_edges_left(): the state those edges would leave, at once.
  void skip_sweep(uint32_t edges);

 private:
  struct Entry {
    bool valid = false;
    uint32_t cqn = 0;
  };
  bool compute_idle() const { return heads_ready() && !walk_busy() && !ins0_valid_ && !ins1_valid_ && !tick_due(); }
  void refresh_idle() { idle_ = compute_idle(); }
  bool walk_busy() const { return exp_valid_ || detaching_ || following_; }
  bool tick_due() const { return detach_tick_ != ((now_ + 1) & kTickMask); }
  bool heads_ready() const { return sweep_done_; }
  bool detach_go() const { return heads_ready() && !walk_busy() && tick_due() && !ins0_valid_ && !ins1_valid_; }
  bool ins_ready() const { return heads_ready() && !(!walk_busy() && tick_due()); }
  void busy_edge(const Inputs& in);
  void count_edge() {  // the prescaler, and the tick it begins
    if (presc_ == cycles_per_us_ - 1) {
      presc_ = 0;
      now_ = (now_ + 1) & kTickMask;
      refresh_idle();  // a tick begins: its slot is due
    } else {
      ++presc_;
    }
  }
  // edge() of an idle wheel offered no insert: no RAM is read or written, nothing is walked (the
  // walk's registers are already clear), the insert pipeline shifts its (invalid) registers and
  // time is counted. The same registers as the full edge leaves, for a fraction of its work (the
  // pipelined writer clocks it every busy cycle).
  void idle_edge() {
    late_ = false;
    wrote_valid_ = false;  // ins1_valid_ is false when idle
    wrote_slot_ = ins1_slot_;
    wrote_cqn_ = ins1_cqn_;
    ins1_cqn_ = ins0_cqn_;
    ins1_slot_ = ins0_slot_;
    count_edge();
  }
  bool placeable(uint32_t deadline) const;
  uint32_t ins_slot(uint32_t deadline) const;

  uint32_t cycles_per_us_;
  // Time.
  uint32_t presc_ = 0, now_ = 0;
  // The head RAM and its sweep (rtl/cq_context_table.v), the next RAM (rtl/ram_1w1r.v).
  std::vector<Entry> heads_, nexts_;
  Entry head_rdata_, next_rdata_;
  bool sweep_done_ = false;
  uint32_t sweep_addr_ = 0;
  // Walk.
  uint32_t detach_tick_ = 1;
  bool detaching_ = false, following_ = false;
  bool exp_valid_ = false;
  uint32_t exp_cqn_ = 0, exp_tick_ = 0;
  // Insert pipeline and the bypass.
  bool ins0_valid_ = false, ins1_valid_ = false;
  uint32_t ins0_cqn_ = 0, ins0_slot_ = 0, ins1_cqn_ = 0, ins1_slot_ = 0;
  bool wrote_valid_ = false;
  uint32_t wrote_slot_ = 0, wrote_cqn_ = 0;
  bool late_ = false;
  bool idle_ = false;  // compute_idle(), refreshed by every change
};

}  // namespace vhca
