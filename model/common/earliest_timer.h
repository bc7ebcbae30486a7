// One SystemC event notified for the earliest of a stream of deadlines, at most one notification
// pending at a time. A deadline later than the pending one is not notified (so nothing is
// cancelled, and no cancelled notification is left in SystemC's timed queue to slow every later
// notify): its waiter wakes at the earlier one, finds nothing due, and arms again. A deadline
// earlier than the pending one replaces it.
#pragma once
#include <systemc>

namespace vhca {

class EarliestTimer {
 public:
  void arm(const sc_core::sc_time& at) {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (pending_at_ <= now) pending_at_ = sc_core::sc_max_time();  // fired
    if (at >= pending_at_) return;
    pending_at_ = at;
    event_.notify(at > now ? at - now : sc_core::SC_ZERO_TIME);
  }
  const sc_core::sc_event& event() const { return event_; }

 private:
  sc_core::sc_event event_;
  sc_core::sc_time pending_at_ = sc_core::sc_max_time();
};

}  // namespace vhca
