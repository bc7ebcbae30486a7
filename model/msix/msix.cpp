#include "model/msix/msix.h"

#include "model/common/bytes.h"
#include "model/common/log.h"

namespace vhca {

Msix::Msix(const sc_core::sc_module_name& name, const SimClock& clock, RegisterFile& regs, const MsixConfig& cfg)
    : sc_module(name),
      s_irq("s_irq", cfg.request_depth),
      clock_(clock),
      regs_(regs),
      ctrl_(regs.ref(reg::msix_ctrl)),
      pba_(regs.ref(reg::msix_pba)),
      addr_lo_(regs.ref(reg::msix_addr_lo)),
      addr_hi_(regs.ref(reg::msix_addr_hi)),
      data_(regs.ref(reg::msix_data)),
      wakeup_(clock),
      listed_(kNumMsixVectors) {
  s_irq->on_data = [this](uint64_t c) { wakeup_.wake(c); };
  m_dma.on_space([this](uint64_t c) { wakeup_.wake(c); });
  regs_.on_write(reg::msix_ctrl, [this](Register& r, uint64_t v) { on_ctrl_write(r, v); });
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

bool Msix::masked(uint32_t v) const {
  return ctrl_.value(v) & 1;
}

bool Msix::pending(uint32_t v) const {
  return (pba_.value(v / 32) >> (v % 32)) & 1;
}

void Msix::set_pending(uint32_t v, bool on) {
  uint64_t word = pba_.value(v / 32);
  word = on ? word | (1ull << (v % 32)) : word & ~(1ull << (v % 32));
  pba_.set(word, v / 32);
}

void Msix::on_ctrl_write(Register& r, uint64_t value) {
  r.value = value & 1;
  // Unmasked with a message pending: deliver it from the pending bit on the next cycle. A second
  // unmask before the delivery finds the vector listed already and sends nothing more.
  if (!(value & 1) && pending(r.index) && !listed_[r.index]) {
    listed_[r.index] = true;
    unmasked_pending_.push_back(r.index);
    wakeup_.wake(clock_.now() + 1);
  }
}

// One message per cycle: a request from the EQ engine first, else a pending bit just unmasked.
void Msix::step() {
  if (!wakeup_.begin_cycle()) return;
  wakeup_.count();
  const uint64_t now = clock_.now();
  if (!m_dma.can_push(now)) return;  // woken again by on_space
  if (s_irq->ready(now)) {
    const uint32_t v = s_irq->pop(now);
    if (v >= kNumMsixVectors) {
      log::error("MSI-X: vector {} does not exist", v);
    } else if (masked(v)) {
      set_pending(v, true);
      log::write(log::Cat::irq, "MSI-X vector {} masked: pending", v);
    } else {
      send(v, now);
    }
  } else if (!unmasked_pending_.empty()) {
    const uint32_t v = unmasked_pending_.front();
    unmasked_pending_.pop_front();
    listed_[v] = false;
    if (pending(v) && !masked(v)) send(v, now);  // masked again meanwhile: it stays pending
  }
  if (!s_irq->empty()) wakeup_.wake(std::max(s_irq->head_ready_cycle(), now + 1));
  if (!unmasked_pending_.empty()) wakeup_.wake(now + 1);
}

void Msix::send(uint32_t v, uint64_t now) {
  set_pending(v, false);
  DmaWrite w;
  // MSI addresses are DWORD aligned: the low two bits are ignored, as in PCI.
  w.addr = (addr_hi_.value(v) << 32 | addr_lo_.value(v)) & ~uint64_t(3);
  w.len = 4;
  put_le32(w.data.data(), uint32_t(data_.value(v)));
  w.source = DmaSource::msix;
  w.id = v;
  m_dma.push(w, now);
  ++messages_;
  log::write(log::Cat::irq, "MSI-X vector {} -> write {:#x} to {:#x}", v, data_.value(v), w.addr);
}

}  // namespace vhca
