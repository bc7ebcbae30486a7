// PCIe flow-control credits as a transmitter sees them (PCIe base spec, "Flow Control"): the
// receiver at the far end advertises posted header (PH), posted data (PD, 16-byte units) and
// non-posted header (NPH) credits; a TLP is sent only when its credits are available and they
// come back (UpdateFC) once the receiver has taken the TLP. Completion credits are infinite, as
// endpoints and root ports advertise them.
//
// A posted writer that cannot wait in place (the DMA engine's SC_METHOD, the CPU's thread) asks
// can_post() before its b_transport and, refused, is woken by on_return or returned_event().
// Non-posted reads wait for their credit inside the link.
#pragma once
#include <cstdint>
#include <functional>
#include <systemc>

namespace vhca {

class PcieCreditIf : public virtual sc_core::sc_interface {
 public:
  // Are there credits for a posted write of `bytes` (split into TLPs of the link's payload size)?
  virtual bool can_post(uint64_t bytes) const = 0;
  // Will there be credits for it at `at`, a later instant (the returns due by then counted), for
  // the link's only posted sender in this direction, which takes none meanwhile? If not, that
  // sender is treated as refused at `at`: on_return tells it of the first return after `at`, or
  // sooner of a return given back meanwhile.
  virtual bool can_post_by(uint64_t bytes, const sc_core::sc_time& at) const = 0;
  // Are there credits for it now, asking nothing more: a refusal arranges no wake-up (a host core
  // that would issue a write ahead of its instant, and otherwise issues it then).
  virtual bool has_room(uint64_t bytes) const = 0;
  // What a posted write entering the link at t schedules comes no sooner than t plus this: its
  // arrival at the far side (the link's one-way latency), and what follows from it, later. A host
  // core that issued a write ahead of its instant takes it as known instead of asking SystemC
  // (firmware-shim/cpu_core.cpp, which still checks it when it next asks).
  virtual sc_core::sc_time posted_effects_after() const = 0;
  // Notified whenever credits come back.
  virtual const sc_core::sc_event& returned_event() const = 0;
  // Registers a wake-up told of every credit return (for SC_METHOD writers).
  virtual void on_return(std::function<void()> wake) = 0;
};

}  // namespace vhca
