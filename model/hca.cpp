#include "model/hca.h"

#include "model/common/bytes.h"
#include "model/common/log.h"

namespace vhca {

Hca::Hca(const sc_core::sc_module_name& name, const HcaConfig& cfg)
    : sc_module(name),
      clock(cfg.clock_mhz),
      bar0("bar0"),
      dma("dma", clock, cfg.dma),
      cq("cq", clock, cfg.cq, cfg.cq_engine ? cfg.cq_engine(cfg.cq) : nullptr),
      eq("eq", clock, cfg.eq),
      msix("msix", clock, bar0.regs),
      qp_tables(cfg.num_qps, cfg.num_mrs),
      transport("transport", clock, cfg.transport, dma, qp_tables),
      cmd("cmd", clock, cfg.cmd, cq, eq, dma, bar0.regs, qp_tables),
      cfg_(cfg),
      irq_requests_("irq_requests", 16),
      injection_wakeup_(clock) {
  cq.bind_outputs(dma.s_write, eq.s_event, dma.s_ci_req);
  dma.m_ci_rsp = &cq.s_ci;
  eq.bind_outputs(dma.s_write, msix.s_irq);
  msix.bind_output(dma.s_write);
  cq.on_bad_doorbell = [this](uint8_t r, uint32_t n) { bad_doorbell(r, n); };
  eq.on_bad_doorbell = [this](uint8_t r, uint32_t n) { bad_doorbell(r, n); };
  cq.s_cpl.on_space.push_back([this](uint64_t c) { injection_wakeup_.wake(c); });
  bind_registers();
  bind_transport();
  SC_METHOD(injection_step);
  sensitive << injection_wakeup_.event();
  dont_initialize();
  SC_METHOD(reset_done);
  sensitive << reset_done_event_;
  dont_initialize();
}

void Hca::bind_registers() {
  RegisterFile& r = bar0.regs;
  r.set(reg::core_clock_khz, uint64_t(cfg_.clock_mhz * 1000.0));
  r.set(reg::port_lid, cfg_.transport.lid);
  r.on_write(reg::cq_arm_db, [this](Register&, uint64_t v) {
    ArmRequest a{uint32_t(bits_of(v, armdb::cqn)), uint8_t(bits_of(v, armdb::arm_sn)),
                 bits_of(v, armdb::arm_cmd) ? ArmCmd::solicited : ArmCmd::next, uint32_t(bits_of(v, armdb::arm_ci))};
    if (bits_of(v, armdb::arm_cmd) > 1) {
      log::error("arm doorbell for CQ {}: command {} is neither NEXT (0) nor SOLICITED (1): ignored", a.cqn,
                 bits_of(v, armdb::arm_cmd));
      bad_doorbell(3, a.cqn);
      return;
    }
    if (!cq.s_arm.can_push(clock.now())) {
      log::error("arm doorbell for CQ {}: doorbell FIFO full, doorbell dropped", a.cqn);
      bad_doorbell(5, a.cqn);
      return;
    }
    cq.s_arm.push(a, clock.now());
  });
  auto eq_doorbell = [this](bool arm) {
    return [this, arm](Register&, uint64_t v) {
      EqDoorbell d{uint32_t(bits_of(v, eqdb::eqn)), uint32_t(bits_of(v, eqdb::consumer_index)), arm};
      if (!eq.s_db.can_push(clock.now())) {
        log::error("EQ doorbell for EQ {}: doorbell FIFO full, doorbell dropped", d.eqn);
        bad_doorbell(5, d.eqn);
        return;
      }
      eq.s_db.push(d, clock.now());
    };
  };
  r.on_write(reg::eq_db_arm, eq_doorbell(true));
  r.on_write(reg::eq_db_noarm, eq_doorbell(false));
  r.on_write(reg::cmd_doorbell, [this](Register&, uint64_t) { cmd.ring(); });
  r.on_write(reg::reset, [this](Register&, uint64_t v) {
    if (v & 1) device_reset();
  });
}

void Hca::bind_transport() {
  transport.complete = [this](const CompletionRecord& r) { inject_now(r); };
  transport.async_event = [this](const DeviceEvent& ev) { push_async_event(ev); };
  transport.on_bad_doorbell = [this](uint8_t r, uint32_t n) { bad_doorbell(r, n); };
  cmd.on_qp_state = [this](uint32_t qpn, QpState from, QpState to) {
    if (qpn == UINT32_MAX)
      transport.reset();
    else
      transport.qp_state_changed(qpn, from, to);
  };
  // S14: a CQ-overflow event on its way to the EQ engine also moves the CQ's QPs to error. The
  // hook sits on the stream so that it works whichever CQ writer (model or RTL) raised it.
  auto wake_eq = eq.s_event.on_data;
  eq.s_event.on_data = [this, wake_eq](uint64_t c) {
    const DeviceEvent& ev = eq.s_event.back();
    if (ev.type == eqe::kCqError && ev.syndrome == eqe::kCqOverrun) transport.cq_overflowed(ev.cqn);
    wake_eq(c);
  };
  transport.s_doorbell.on_space.push_back([this](uint64_t c) {
    if (on_mmio_space) on_mmio_space(clock.until(c));
  });
  auto wq_doorbell = [this](WqKind kind) {
    return [this, kind](Register&, uint64_t v) {
      // mmio_ready() held the write until the FIFO had room.
      transport.s_doorbell.push(WqDoorbell{kind, uint32_t(bits_of(v, wqdb::qpn)), uint16_t(bits_of(v, wqdb::pi))},
                                clock.now());
    };
  };
  bar0.regs.on_write(reg::sq_db, wq_doorbell(WqKind::sq));
  bar0.regs.on_write(reg::rq_db, wq_doorbell(WqKind::rq));
}

bool Hca::mmio_ready(uint64_t offset) const {
  if (offset < kUarBase || offset >= kUarBase + kNumUars * kUarStride) return true;
  const uint64_t in_page = (offset - kUarBase) % kUarStride;
  if (in_page != 0x00 && in_page != 0x08) return true;  // UAR_SQ_DB, UAR_RQ_DB
  return transport.s_doorbell.can_push(clock.now());
}

// Asynchronous events from the transport (QP fatal) join the EQ engine's input; called from the
// transport's control thread, which waits while that input is full.
void Hca::push_async_event(const DeviceEvent& ev) {
  while (!eq.s_event.can_push(clock.now())) sc_core::wait(clock.until(clock.now() + 1));
  eq.s_event.push(ev, clock.now());
}

void Hca::bad_doorbell(uint8_t reason, uint32_t object) {
  RegisterFile& r = bar0.regs;
  r.set(reg::bad_doorbells, r.value(reg::bad_doorbells) + 1);
  r.set(reg::last_bad_doorbell, uint64_t(reason) << 24 | (object & 0xFFFFFF));
}

void Hca::device_reset() {
  log::write(log::Cat::mmio, "device reset");
  cq.reset();
  eq.reset();
  cmd.reset();
  transport.reset();
  injections_.clear();
  bar0.regs.reset();
  bar0.regs.set(reg::core_clock_khz, uint64_t(cfg_.clock_mhz * 1000.0));
  bar0.regs.set(reg::port_lid, cfg_.transport.lid);
  bar0.regs.set(reg::health, 0);
  reset_done_event_.notify(cfg_.reset_time);
}

void Hca::inject(const CompletionRecord& r, uint64_t cycle) {
  injections_.emplace(std::max(cycle, clock.now()), r);
  injection_wakeup_.wake(injections_.begin()->first);
}

void Hca::injection_step() {
  const uint64_t now = clock.now();
  if (clock.at(now) != sc_core::sc_time_stamp()) {
    injection_wakeup_.wake(now + 1);
    return;
  }
  while (!injections_.empty() && injections_.begin()->first <= now) {
    if (!cq.s_cpl.can_push(now)) {
      ++injection_stalls_;  // backpressure: retried when the writer frees a slot
      return;
    }
    cq.s_cpl.push(injections_.begin()->second, now);
    injections_.erase(injections_.begin());
    ++injected_;
  }
  if (!injections_.empty()) injection_wakeup_.wake(injections_.begin()->first);
}

void Hca::upstream_write_failed(DmaSource source, uint32_t id, uint64_t addr) {
  const uint64_t now = clock.now();
  switch (source) {
    case DmaSource::cqe:
      if (cq.s_access_error.can_push(now))
        cq.s_access_error.push(id, now);
      else
        log::error("CQ {}: CQE write failure not reported (error FIFO full)", id);
      break;
    default:
      log::error("posted write (source {}, id {}) to {:#x} failed at the host", int(source), id, addr);
      if (source != DmaSource::msix && eq.s_event.can_push(now))
        eq.s_event.push(DeviceEvent{eqe::kDmaError, 0, 0, uint8_t(source), addr}, now);
      break;
  }
}

}  // namespace vhca
