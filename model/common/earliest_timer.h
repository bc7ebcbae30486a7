// SystemC notifications for the earliest of a stream of deadlines. A deadline later than one
// already pending is not notified (nothing is cancelled: its waiter wakes at the earlier one,
// finds nothing due, and arms again). A deadline earlier than the pending one must be notified,
// and SystemC's sc_event then cancels the later notification — but a cancelled notification stays
// in the kernel's timed queue until its time, slowing every later notify. So deadlines go on one
// of two events by distance: within `horizon` on the near event, beyond it on the far event. A
// near deadline never cancels a far notification (a retransmit timeout tens of milliseconds out
// survives thousands of ACK delays), and a cancelled near one leaves the queue within the horizon.
// A waiter is sensitive to both events and calls fired() when it wakes: only the waiter knows a
// notification at the present instant has fired (a delta notification made at this instant may
// still be pending, and a timed notify on its event would be ignored: the wake-up would be lost).
#pragma once
#include <systemc>

#include "model/common/sim_now.h"

namespace vhca {

class EarliestTimer {
 public:
  // Assumption: 10 us holds the short delays (ACK coalescing, PCIe and DMA stages, command
  // polling); retransmit and RNR timers and moderation periods of tens of microseconds and more
  // go on the far event.
  explicit EarliestTimer(const sc_core::sc_time& horizon = sc_core::sc_time(10, sc_core::SC_US))
      : horizon_(horizon), never_(sc_core::sc_max_time()) {
    near_.at = far_.at = never_;
  }

  void arm(const sc_core::sc_time& at) {
    const sc_core::sc_time now = sim_now();
    if (near_.at < now) near_.at = never_;  // fired (the waiter may not have said)
    if (far_.at < now) far_.at = never_;
    if (at >= near_.at || at >= far_.at) return;  // an earlier wake-up is pending (or one at this instant)
    Pending& p = at - now <= horizon_ ? near_ : far_;
    p.at = at;
    p.event.notify(at > now ? at - now : sc_core::SC_ZERO_TIME);
  }
  // The waiter woke: what was due by now has fired.
  void fired() {
    const sc_core::sc_time now = sim_now();
    if (near_.at <= now) near_.at = never_;
    if (far_.at <= now) far_.at = never_;
  }
  const sc_core::sc_event& near_event() const { return near_.event; }
  const sc_core::sc_event& far_event() const { return far_.event; }
  // For a thread: wait(other | timer.events()).
  sc_core::sc_event_or_list events() const { return near_.event | far_.event; }

 private:
  struct Pending {
    sc_core::sc_event event;
    sc_core::sc_time at;
  };
  sc_core::sc_time horizon_;
  sc_core::sc_time never_;  // no wake-up pending (sc_max_time() is a call into the library)
  Pending near_, far_;
};

}  // namespace vhca
