// MSI-X: the vector table (address, data, mask) and the pending-bit array live in BAR0; an
// interrupt is a posted memory write of the vector's data to its address, issued on the same
// ordered write channel as the EQE it covers, so it can never overtake it. A masked vector sets
// its pending bit; unmasking delivers the pending message.
#pragma once
#include <cstdint>
#include <systemc>
#include <vector>

#include "model/common/sim_clock.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_types.h"
#include "model/regs/register_file.h"

namespace vhca {

class Msix : public sc_core::sc_module {
 public:
  static constexpr uint32_t kRedelivery = 1u << 31;  // s_irq flag: a pending message on unmask
  Stream<uint32_t> s_irq;
  Stream<DmaWrite>* m_dma = nullptr;

  SC_HAS_PROCESS(Msix);
  Msix(const sc_core::sc_module_name& name, const SimClock& clock, RegisterFile& regs);
  void bind_output(Stream<DmaWrite>& dma);
  bool pending(uint32_t vector) const;
  uint64_t messages() const { return messages_; }

 private:
  void step();
  bool masked(uint32_t vector) const;
  void set_pending(uint32_t vector, bool on);
  void on_ctrl_write(Register& r, uint64_t value);

  const SimClock& clock_;
  RegisterFile& regs_;
  Wakeup wakeup_;
  uint64_t messages_ = 0;
};

}  // namespace vhca
