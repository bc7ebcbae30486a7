// What the PCIe link and the device at its far end tell each other besides transactions, as
// SystemC interfaces bound at elaboration (a port left unbound stops elaboration, naming it):
// - downstream flow control: the link asks the device whether a posted write can be taken now
//   (a full doorbell FIFO says no: the write, and everything behind it, waits in the link), and
//   the device tells the link when to try again;
// - upstream write errors: a posted write that fails where it lands (unmapped host memory) is
//   reported to the device, as a PCIe error message would report it.
#pragma once
#include <cstdint>
#include <systemc>

#include "tlm/posted_tag.h"

namespace vhca {

// The device side of downstream flow control (the HCA's doorbell FIFOs).
class PostedReadyIf : public virtual sc_core::sc_interface {
 public:
  // Can a posted write to BAR offset `offset` be delivered now?
  virtual bool mmio_ready(uint64_t offset) const = 0;
};

// The link side: held posted writes are tried again `delay` from now.
class PostedResumeIf : public virtual sc_core::sc_interface {
 public:
  virtual void resume_down(const sc_core::sc_time& delay) = 0;
};

// The device side of upstream write errors.
class WriteErrorIf : public virtual sc_core::sc_interface {
 public:
  virtual void upstream_write_failed(DmaSource source, uint32_t id, uint64_t addr) = 0;
};

}  // namespace vhca
