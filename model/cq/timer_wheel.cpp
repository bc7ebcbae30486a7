#include "model/cq/timer_wheel.h"

#include <algorithm>
#include <cassert>

namespace vhca {

TimerWheel::TimerWheel(uint32_t num_cqs, uint32_t cycles_per_us)
    : cycles_per_us_(cycles_per_us), heads_(kSlots), nexts_(num_cqs) {
  refresh_idle();
}

// One edge with rst high: the registers take their reset values and the head RAM's sweep starts
// over (it clears one slot per edge from the next edge on).
void TimerWheel::reset() {
  presc_ = now_ = 0;
  sweep_done_ = false;
  sweep_addr_ = 0;
  detach_tick_ = 1;
  detaching_ = following_ = exp_valid_ = false;
  ins0_valid_ = ins1_valid_ = wrote_valid_ = late_ = false;
  refresh_idle();
}

bool TimerWheel::placeable(uint32_t deadline) const {
  const uint32_t ahead = (deadline - now_) & kTickMask;
  return ahead != 0 && ahead < 0x2000;
}

uint32_t TimerWheel::ins_slot(uint32_t deadline) const {
  return placeable(deadline) ? deadline % kSlots : (now_ + 1) % kSlots;
}

void TimerWheel::busy_edge(const Inputs& in) {
  // The combinational values this edge samples, from the registers before it.
  const bool go = detach_go();
  const bool take = in.ins_valid && ins_ready();
  const bool offer_taken = exp_valid_ && in.exp_ready;
  const Entry old_head = wrote_valid_ && wrote_slot_ == ins1_slot_ ? Entry{true, wrote_cqn_} : head_rdata_;
  const uint32_t slot = ins_slot(in.ins_deadline);
  const bool late = take && !placeable(in.ins_deadline);
  const Entry head_rdata = head_rdata_, next_rdata = next_rdata_;  // this cycle's RAM outputs

  // The RAMs: reads see the contents before this edge's writes.
  if (go) head_rdata_ = heads_[detach_tick_ % kSlots];
  else if (ins0_valid_) head_rdata_ = heads_[ins0_slot_];
  if (offer_taken) next_rdata_ = nexts_[exp_cqn_];
  if (!sweep_done_) {  // the clearing sweep owns the head RAM's write port
    heads_[sweep_addr_] = Entry{};
    if (sweep_addr_ == kSlots - 1) sweep_done_ = true;
    else ++sweep_addr_;
  } else if (go) {
    heads_[detach_tick_ % kSlots] = Entry{};
  } else if (ins1_valid_) {
    heads_[ins1_slot_] = Entry{true, ins1_cqn_};
  }
  if (ins1_valid_) nexts_[ins1_cqn_] = old_head;

  count_edge();

  // The insert pipeline.
  late_ = late;
  wrote_valid_ = ins1_valid_;
  wrote_slot_ = ins1_slot_;
  wrote_cqn_ = ins1_cqn_;
  ins1_valid_ = ins0_valid_;
  ins1_cqn_ = ins0_cqn_;
  ins1_slot_ = ins0_slot_;
  ins0_valid_ = take;
  if (take) {
    ins0_cqn_ = in.ins_cqn;
    ins0_slot_ = slot;
  }

  // The walk.
  const bool was_detaching = detaching_, was_following = following_;
  detaching_ = go;
  following_ = offer_taken;
  if (was_detaching) {
    exp_valid_ = head_rdata.valid;
    exp_cqn_ = head_rdata.cqn;
    exp_tick_ = (detach_tick_ - 1) & kTickMask;
  } else if (was_following) {
    exp_valid_ = next_rdata.valid;
    exp_cqn_ = next_rdata.cqn;
  } else if (offer_taken) {
    exp_valid_ = false;
  }
  if (go) detach_tick_ = (detach_tick_ + 1) & kTickMask;
  refresh_idle();
}

void TimerWheel::skip_empty(uint64_t edges) {
  assert(idle() && idle() == compute_idle() && cycles_per_us_ >= 3);
  const uint64_t total = presc_ + edges;
  const uint64_t ticks = total / cycles_per_us_;
  presc_ = uint32_t(total % cycles_per_us_);
  late_ = wrote_valid_ = false;
  if (ticks == 0) return;
  now_ = uint32_t((now_ + ticks) & kTickMask);
  const uint32_t before = (now_ - 1) & kTickMask;
  if (ticks >= 2 || presc_ >= 2) {  // a walk ended meanwhile: of the tick before, or of this one
    head_rdata_ = Entry{};
    exp_cqn_ = 0;
    exp_tick_ = presc_ >= 2 ? now_ : before;
  }
  if (presc_ == 0) {         // this edge began the tick: its slot is detached on the next
    detach_tick_ = now_;
    detaching_ = false;
  } else if (presc_ == 1) {  // detached on this edge: its (empty) head is read
    detach_tick_ = (now_ + 1) & kTickMask;
    detaching_ = true;
    head_rdata_ = Entry{};
  } else {                   // walked: nothing offered
    detach_tick_ = (now_ + 1) & kTickMask;
    detaching_ = false;
  }
  exp_valid_ = false;
  refresh_idle();
}

void TimerWheel::skip_sweep(uint32_t edges) {
  if (edges == 0) return;
  assert(sweeping_only() && edges <= edges_before_tick() && edges <= sweep_edges_left());
  std::fill(heads_.begin() + sweep_addr_, heads_.begin() + sweep_addr_ + edges, Entry{});
  sweep_addr_ += edges;
  if (sweep_addr_ == kSlots) {  // the edge that cleared the last slot ended the sweep
    sweep_done_ = true;
    sweep_addr_ = kSlots - 1;
  }
  presc_ += edges;
  late_ = false;
  wrote_valid_ = false;
  refresh_idle();
}

void TimerWheel::skip_idle(uint32_t edges) {
  if (edges == 0) return;
  assert(idle() && idle() == compute_idle() && edges <= edges_before_tick());
  presc_ += edges;
  late_ = false;          // no insert taken
  wrote_valid_ = false;   // no insert in stage 2
}

}  // namespace vhca
