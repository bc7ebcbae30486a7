#include "model/msix/msix.h"

#include "model/common/bytes.h"
#include "model/common/log.h"

namespace vhca {

Msix::Msix(const sc_core::sc_module_name& name, const SimClock& clock, RegisterFile& regs)
    : sc_module(name), s_irq("s_irq", 16), clock_(clock), regs_(regs), wakeup_(clock) {
  s_irq.on_data = [this](uint64_t c) { wakeup_.wake(c); };
  regs_.on_write(reg::msix_ctrl, [this](Register& r, uint64_t v) { on_ctrl_write(r, v); });
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

void Msix::bind_output(Stream<DmaWrite>& dma) {
  m_dma = &dma;
  dma.on_space.push_back([this](uint64_t c) { wakeup_.wake(c); });
}

bool Msix::masked(uint32_t v) const {
  return regs_.value(reg::msix_ctrl, v) & 1;
}

bool Msix::pending(uint32_t v) const {
  return (regs_.value(reg::msix_pba, v / 32) >> (v % 32)) & 1;
}

void Msix::set_pending(uint32_t v, bool on) {
  uint64_t word = regs_.value(reg::msix_pba, v / 32);
  word = on ? word | (1ull << (v % 32)) : word & ~(1ull << (v % 32));
  regs_.set(reg::msix_pba, word, v / 32);
}

void Msix::on_ctrl_write(Register& r, uint64_t value) {
  r.value = value & 1;
  // Unmasked with a message pending: deliver it (marked, so that a second unmask before the
  // delivery does not send it twice).
  if (!(value & 1) && pending(r.index) && s_irq.can_push(clock_.now())) s_irq.push(r.index | kRedelivery, clock_.now());
}

void Msix::step() {
  if (!wakeup_.begin_cycle()) return;
  wakeup_.count();
  const uint64_t now = clock_.now();
  if (!m_dma->can_push(now)) return;
  if (s_irq.ready(now)) {
    uint32_t v = s_irq.pop(now);
    const bool redelivery = v & kRedelivery;
    v &= ~kRedelivery;
    if (redelivery && !pending(v)) {
      // already delivered by an earlier unmask
    } else if (v >= kNumMsixVectors) {
      log::error("MSI-X: vector {} does not exist", v);
    } else if (masked(v)) {
      set_pending(v, true);
      log::write(log::Cat::irq, "MSI-X vector {} masked: pending", v);
    } else {
      set_pending(v, false);
      DmaWrite w;
      // MSI addresses are DWORD aligned: the low two bits are ignored, as in PCI.
      w.addr = (regs_.value(reg::msix_addr_hi, v) << 32 | regs_.value(reg::msix_addr_lo, v)) & ~uint64_t(3);
      w.len = 4;
      put_le32(w.data.data(), uint32_t(regs_.value(reg::msix_data, v)));
      w.source = DmaSource::msix;
      w.id = v;
      m_dma->push(w, now);
      ++messages_;
      log::write(log::Cat::irq, "MSI-X vector {} -> write {:#x} to {:#x}", v, regs_.value(reg::msix_data, v), w.addr);
    }
  }
  if (!s_irq.empty()) wakeup_.wake(std::max(s_irq.head_ready_cycle(), now + 1));
}

}  // namespace vhca
