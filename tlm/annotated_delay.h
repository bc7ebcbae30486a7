// TLM-2.0 loosely-timed targets receive an annotated delay: the initiator's local time runs that
// far ahead of SystemC's. The PCIe and IB links honour it (a transaction starts at now + delay).
// The endpoints (BAR registers, host memory, the MSI sink, the IB port) act at the time of the
// call: a register write runs its behaviour, memory changes, an interrupt is raised. Applied at
// the wrong time, such an access would be silently mistimed, so one arriving with a non-zero delay
// is refused with an error response and a message naming the target (its initiator must
// synchronise, wait(delay), first). Every initiator in vhca passes zero.
#pragma once
#include <systemc>
#include <tlm>

#include "model/common/log.h"

namespace vhca {

inline bool refuse_annotated_delay(const char* target, tlm::tlm_generic_payload& tx, const sc_core::sc_time& delay) {
  if (delay == sc_core::SC_ZERO_TIME) return false;
  log::error("{}: {} of {} bytes at {:#x} carries an annotated delay of {}; this target acts at the time of the "
             "call: synchronise (wait the delay) first. Refused",
             target, tx.is_write() ? "write" : "read", tx.get_data_length(), tx.get_address(), delay.to_string());
  tx.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
  return true;
}

}  // namespace vhca
