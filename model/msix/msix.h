// MSI-X: the vector table (address, data, mask) and the pending-bit array live in BAR0; an
// interrupt is a posted memory write of the vector's data to its address, issued on the same
// ordered write channel as the EQE it covers, so it can never overtake it. A masked vector sets
// its pending bit; unmasking delivers the pending message from the pending bit itself (the bits
// are the only record, as in the PCI spec: nothing is queued that could be lost).
#pragma once
#include <cstdint>
#include <deque>
#include <systemc>
#include <vector>

#include "model/common/sim_clock.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_types.h"
#include "model/regs/register_file.h"

namespace vhca {

struct MsixConfig {
  size_t request_depth = 16;  // s_irq: vector requests from the EQ engine (assumption)
};

class Msix : public sc_core::sc_module {
 public:
  StreamIn<uint32_t> s_irq;  // vector requests from the EQ engine
  StreamOut<DmaWrite> m_dma{"m_dma"};

  SC_HAS_PROCESS(Msix);
  Msix(const sc_core::sc_module_name& name, const SimClock& clock, RegisterFile& regs, const MsixConfig& cfg = {});
  bool pending(uint32_t vector) const;
  uint64_t messages() const { return messages_; }
  uint64_t activations() const { return wakeup_.activations(); }
  // Whether it may still act (and push an MSI-X write) on this cycle: its rank guard (decisions.md 43).
  bool may_act_now() const { return wakeup_.may_act_now(); }

 private:
  void step();
  bool masked(uint32_t vector) const;
  void set_pending(uint32_t vector, bool on);
  void on_ctrl_write(Register& r, uint64_t value);
  void send(uint32_t vector, uint64_t now);

  const SimClock& clock_;
  RegisterFile& regs_;
  // The vector table and the pending-bit array, resolved once (regs_ by name is a hash lookup).
  RegisterRef ctrl_, pba_, addr_lo_, addr_hi_, data_;
  Wakeup wakeup_;
  uint64_t messages_ = 0;
  // Vectors unmasked with their pending bit set, to deliver from the bit, in unmask order. Each
  // vector is listed at most once, so the list is bounded by the vector count.
  std::deque<uint32_t> unmasked_pending_;
  std::vector<bool> listed_;
};

}  // namespace vhca
