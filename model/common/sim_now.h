// The simulated time now, read inline. sc_core::sc_time_stamp() is a call into the SystemC
// library, and the hot paths (the PCIe link, the action queues, the host) ask for it several times
// per action; the kernel's current time is a member its header reads inline.
#pragma once
#include <systemc>

namespace vhca {

inline const sc_core::sc_time& sim_now() { return sc_core::sc_get_curr_simcontext()->time_stamp(); }

// How far the code running now is ahead of SystemC's time: a host core doing, before its instant,
// what nothing else in the simulation can see until then (firmware-shim/cpu_core.h, "run ahead").
// Zero elsewhere. What that code logs is stamped with its own instant.
inline sc_core::sc_time running_ahead;

}  // namespace vhca
