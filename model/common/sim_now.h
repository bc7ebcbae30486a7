// The simulated time now, read inline. sc_core::sc_time_stamp() is a call into the SystemC
// library, and the hot paths (the PCIe link, the action queues, the host) ask for it several times
// per action; the kernel's current time is a member its header reads inline.
#pragma once
#include <systemc>

namespace vhca {

inline const sc_core::sc_time& sim_now() { return sc_core::sc_get_curr_simcontext()->time_stamp(); }

// The instant of SystemC's first pending activity: now when anything is pending at this instant
// (delta notifications, runnable processes, updates), else its first timed event's, or `none`
// when nothing is pending. What sc_core::sc_time_to_pending_activity() gives as a distance, asked
// of the kernel's two public queries directly: the library's wrapper reads the time twice and
// builds its maximum through a call, half again what the queries cost (the host's cores ask
// several times an interrupt: firmware-shim/cpu_core.cpp).
inline sc_core::sc_time next_activity_at(const sc_core::sc_time& none) {
  const sc_core::sc_simcontext* kernel = sc_core::sc_get_curr_simcontext();
  if (kernel->pending_activity_at_current_time()) return kernel->time_stamp();
  sc_core::sc_time at = none;
  kernel->next_time(at);
  return at;
}

// How far the code running now is ahead of SystemC's time: a host core doing, before its instant,
// what nothing else in the simulation can see until then (firmware-shim/cpu_core.h, "run ahead").
// Zero elsewhere. What that code logs is stamped with its own instant.
inline sc_core::sc_time running_ahead;

}  // namespace vhca
