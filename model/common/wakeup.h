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
    // sc_event keeps the earliest pending notification, which is what we want.
    if (cycle == now && clock_.on_edge())
      event_.notify(sc_core::SC_ZERO_TIME);
    else
      event_.notify(clock_.until(cycle == now ? now + 1 : cycle));
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
  uint64_t activations() const { return activations_; }
  void count() { ++activations_; }

 private:
  const SimClock& clock_;
  sc_core::sc_event event_;
  uint64_t acted_ = UINT64_MAX;
  uint64_t activations_ = 0;
};

}  // namespace vhca
