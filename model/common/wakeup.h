// The event-driven heartbeat of a block: wake(c) asks for one activation on the edge of cycle c.
// A block never ticks: after acting it computes the cycle of its next possible action from its
// queues and timers and wakes for that cycle only. `once_per_cycle` makes an activation that
// arrives a second time in the same cycle (another delta) defer to the next cycle, so that every
// block performs at most one action per cycle.
#pragma once
#include <cstdint>
#include <systemc>

#include "model/common/sim_clock.h"

namespace vhca {

class Wakeup {
 public:
  explicit Wakeup(const SimClock& clock) : clock_(clock) {}
  sc_core::sc_event& event() { return event_; }
  void wake(uint64_t cycle) {
    uint64_t now = clock_.now();
    if (cycle < now) cycle = now;
    // SystemC keeps the earliest pending notification and ignores a later or equal one: so does
    // this, without the library call (a wake-up is asked several times per item on hot paths).
    if (pending_covers(cycle, now)) return;
    notify_for(cycle, now);
  }

  // True if this activation may act; false if the block already acted this cycle (then it is
  // rescheduled for the next cycle).
  bool begin_cycle() {
    uint64_t now = clock_.now();
    if (!clock_.on_edge()) {  // off-edge activation: move to next edge
      wake(now + 1);
      return false;
    }
    if (acted_ == now) {
      wake(now + 1);
      return false;
    }
    acted_ = now;
    return true;
  }
  // Acts for this cycle from outside the block's own activation (another block asked for what
  // this cycle's action decides); the activation, if one comes, then defers like a second one.
  bool claim_cycle() {
    const uint64_t now = clock_.now();
    if (!clock_.on_edge() || acted_ == now) return false;
    acted_ = now;
    return true;
  }
  // Whether the block may still act on the current cycle: an activation for it is due on this
  // edge (a timed one that fired here, or a delta one, even if a wake for a later cycle has been
  // asked since) and it has not acted yet. A block acts at most once a cycle and is woken for a
  // cycle no later than that cycle's edge, except by a wake for now asked on the edge itself
  // (wake(now)): false is a promise only where nothing asks that of the block after the question
  // (the DMA engine's rank guards, decisions.md 43).
  bool may_act_now() const {
    const uint64_t now = clock_.now();
    return acted_ != now && (pending_cycle_ == now || due_ == now) && clock_.on_edge();
  }
  uint64_t activations() const { return activations_; }
  void count() { ++activations_; }

 private:
  // The notification itself, out of line: wake() is asked far more often than it notifies.
  __attribute__((noinline)) void notify_for(uint64_t cycle, uint64_t now) {
    // A notification for this cycle that has fired is an activation still to come (or come): a
    // later one asked now does not undo it, so may_act_now keeps it.
    if (pending_cycle_ == now) due_ = now;
    if (cycle == now && clock_.on_edge()) {
      event_.notify(sc_core::SC_ZERO_TIME);  // replaces a pending timed notification
      pending_cycle_ = now;
      pending_delta_ = true;
      delta_at_ = sc_core::sc_delta_count();
    } else {
      const uint64_t at = cycle == now ? now + 1 : cycle;
      event_.notify(clock_.until(at));  // earlier than any pending one (else covered above)
      pending_cycle_ = at;
      pending_delta_ = false;
    }
  }
  // Whether the notification pending (if it has not fired yet) is for `cycle` or earlier. A timed
  // one for cycle p has fired once the time reaches p's edge; a delta one at the next delta.
  bool pending_covers(uint64_t cycle, uint64_t now) const {
    if (pending_cycle_ == UINT64_MAX || cycle < pending_cycle_) return false;
    return pending_delta_ ? sc_core::sc_delta_count() == delta_at_ : pending_cycle_ > now;
  }

  const SimClock& clock_;
  sc_core::sc_event event_;
  uint64_t pending_cycle_ = UINT64_MAX;  // the cycle of the last notification made (it may have fired)
  bool pending_delta_ = false;
  sc_dt::uint64 delta_at_ = 0;  // the delta cycle a delta notification was made in
  uint64_t due_ = UINT64_MAX;  // a cycle whose notification fired before a later one replaced it
  uint64_t acted_ = UINT64_MAX;
  uint64_t activations_ = 0;
};

}  // namespace vhca
