#include "model/hca.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/common/sim_now.h"

namespace vhca {

namespace {

// The DMA error EQE's syndrome for a failed write from `source` (codes.h: DMA error syndromes).
uint8_t dma_error_syndrome(DmaSource source) {
  switch (source) {
    case DmaSource::eqe: return eqe::kDmaEqe;
    case DmaSource::command: return eqe::kDmaCommandReply;
    default: return eqe::kDmaTransportData;  // the transport's payload and received data
  }
}

const HcaConfig& checked(const HcaConfig& cfg) {
  if (std::string error = hca_config_error(cfg); !error.empty()) throw std::invalid_argument("HcaConfig: " + error);
  return cfg;
}

// The most one transport action adds to an outbox: a packet's data in up to four SGE pieces and
// a GRH, and its CQE (docs/timing.md, outbox_depth).
constexpr size_t kOutboxMinimum = 6;

}  // namespace

std::string hca_config_error(const HcaConfig& cfg) {
  if (!(cfg.clock_mhz > 0)) return fmt::format("clock_mhz must be above 0 (is {})", cfg.clock_mhz);
  const std::pair<const char*, uint64_t> at_least_one[] = {
      {"num_qps", cfg.num_qps},
      {"num_mrs", cfg.num_mrs},
      {"cq.num_cqs", cfg.cq.num_cqs},
      {"cq.input_depth", cfg.cq.input_depth},
      {"cq.control_depth", cfg.cq.control_depth},
      {"cq.ci_response_depth", cfg.cq.ci_response_depth},
      {"cq.access_error_depth", cfg.cq.access_error_depth},
      {"eq.num_eqs", cfg.eq.num_eqs},
      {"eq.event_depth", cfg.eq.event_depth},
      {"eq.doorbell_depth", cfg.eq.doorbell_depth},
      {"eq.report_depth", cfg.eq.report_depth},
      {"dma.write_queue_depth", cfg.dma.write_queue_depth},
      {"dma.ci_request_depth", cfg.dma.ci_request_depth},
      {"arbiter.transport_depth", cfg.arbiter.transport_depth},
      {"msix.request_depth", cfg.msix.request_depth},
      {"transport.doorbell_fifo_depth", cfg.transport.doorbell_fifo_depth},
      {"transport.prefetch_depth", cfg.transport.prefetch_depth},
      {"transport.fetch_burst", cfg.transport.fetch_burst},
      {"transport.rx_fifo_depth", cfg.transport.rx_fifo_depth},
      {"transport.tx_read_tags", cfg.transport.tx_read_tags},
      {"transport.max_inflight_psns", cfg.transport.max_inflight_psns},
  };
  for (const auto& [field, value] : at_least_one)
    if (value == 0) return fmt::format("{} must be at least 1", field);
  if (cfg.transport.outbox_depth < kOutboxMinimum)
    return fmt::format("transport.outbox_depth must be at least {} (one packet's data pieces and its CQE; is {})",
                       kOutboxMinimum, cfg.transport.outbox_depth);
  return "";
}

Hca::Hca(const sc_core::sc_module_name& name, const HcaConfig& cfg)
    : sc_module(name),
      clock(checked(cfg).clock_mhz),
      bar0("bar0"),
      dma("dma", clock, cfg.dma),
      arbiter("arbiter", clock, cfg.arbiter),
      cq("cq", clock, cfg.cq, cfg.cq_engine ? cfg.cq_engine(cfg.cq) : nullptr),
      eq("eq", clock, cfg.eq),
      msix("msix", clock, bar0.regs, cfg.msix),
      qp_tables(cfg.num_qps, cfg.num_mrs),
      transport("transport", clock, cfg.transport, dma, qp_tables),
      cmd("cmd", clock, cfg.cmd, cq, eq, dma, bar0.regs, qp_tables),
      cfg_(cfg) {
  s_mmio_ready.bind(*this);
  s_dma_errors.bind(*this);
  bind_streams();
  cq.on_bad_doorbell.add([this](uint8_t r, uint32_t n) { bad_doorbell(r, n); });
  eq.on_bad_doorbell.add([this](uint8_t r, uint32_t n) { bad_doorbell(r, n); });
  eq.on_report_lost.add([this] { count_lost_event(); });
  bind_registers();
  bind_transport();
  SC_METHOD(reset_done);
  sensitive << reset_done_event_;
  dont_initialize();
}

// Every stream between the blocks, producer port to consumer input (docs/architecture.md).
void Hca::bind_streams() {
  transport.m_cpl(arbiter.s_transport);
  arbiter.m_cpl(cq.s_cpl);
  cq.m_dma(dma.s_write);
  cq.m_event(eq.s_event);
  cq.m_ci_req(dma.s_ci_req);
  dma.m_ci_rsp(cq.s_ci);
  eq.m_dma(dma.s_write);
  eq.m_irq(msix.s_irq);
  msix.m_dma(dma.s_write);
  // One block pushes each of the DMA write queue's first two ranks: while neither can still push on
  // a cycle, an EQE or an MSI-X message pushed alone goes on the link at once (decisions.md 43).
  dma.set_rank_guard(DmaSource::cqe, [this] { return !cq.may_act_now(); });
  dma.set_rank_guard(DmaSource::eqe, [this] { return !eq.may_act_now(); });
  // The later ranks' guards, so that payload writes (ranks `other` and `recv_data`) go ahead the
  // same way (decisions.md 47, 48): the MSI-X block as the EQ engine; the firmware, which pushes
  // only while it serves a command; the transport's outboxes (rank `other`), which push only for
  // the packet the receiver hands on, one a cycle, and for what they still hold.
  dma.set_rank_guard(DmaSource::msix, [this] { return !msix.may_act_now(); });
  dma.set_rank_guard(DmaSource::command, [this] { return !cmd.busy(); });
  dma.set_rank_guard(DmaSource::cqe_copy, [this] { return !cmd.busy(); });
  dma.set_rank_guard(DmaSource::other, [this] {
    return transport.rx.handled_all_on(clock.now()) &&
           !transport.requester.outbox().holds_writes_before(DmaSource::cqe_copy) &&
           !transport.responder.outbox().holds_writes_before(DmaSource::cqe_copy);
  });
  transport.m_event(eq.s_event);
  transport.requester.outbox().m_dma(dma.s_write);
  transport.responder.outbox().m_dma(dma.s_write);
  cmd.m_ctl(cq.s_ctl);
  cmd.m_event(eq.s_event);
  cmd.m_dma(dma.s_write);
  // Doorbells the link holds while their FIFO is full are let go when it has room.
  auto mmio_space = [this](uint64_t c) { m_mmio_resume->resume_down(clock.until(c)); };
  transport.s_doorbell->on_space.add(mmio_space);
  cq.s_arm->on_space.add(mmio_space);
  eq.s_db->on_space.add(mmio_space);
  // Inputs no port feeds, named for the queue report.
  transport.s_doorbell->set_fed_by("bar0: UAR_SQ_DB, UAR_RQ_DB, UAR_SQ_BF writes (held by PCIe credits)");
  cq.s_arm->set_fed_by("bar0: UAR_CQ_ARM writes (held by PCIe credits)");
  eq.s_db->set_fed_by("bar0: UAR_EQ_ARM, UAR_EQ_UPDATE writes (held by PCIe credits)");
  cq.s_access_error->set_fed_by("PCIe: CQE write failures (LOST_EVENTS when full)");
}

void Hca::bind_registers() {
  RegisterFile& r = bar0.regs;
  auto in_page = [&r](const char* name) { return (r.at(name).offset - kUarBase) % kUarStride; };
  uar_ = {in_page(reg::sq_db), in_page(reg::rq_db), in_page(reg::sq_bf), in_page(reg::cq_arm_db),
          in_page(reg::eq_db_arm), in_page(reg::eq_db_noarm)};
  r.set(reg::core_clock_khz, uint64_t(cfg_.clock_mhz * 1000.0));
  r.set(reg::port_lid, cfg_.transport.lid);
  r.on_write(reg::cq_arm_db, [this](Register&, uint64_t v) {
    ArmRequest a{uint32_t(bits_of(v, armdb::cqn)), uint8_t(bits_of(v, armdb::arm_sn)),
                 bits_of(v, armdb::arm_cmd) ? ArmCmd::solicited : ArmCmd::next, uint32_t(bits_of(v, armdb::arm_ci))};
    if (bits_of(v, armdb::arm_cmd) > 1) {
      log::error("arm doorbell for CQ {}: command {} is neither NEXT (0) nor SOLICITED (1): ignored", a.cqn,
                 bits_of(v, armdb::arm_cmd));
      bad_doorbell(dberr::kIndexOutOfRange, a.cqn);
      return;
    }
    // mmio_ready() held the write until the FIFO had room.
    cq.s_arm->push(a, clock.now());
  });
  auto eq_doorbell = [this](bool arm) {
    return [this, arm](Register&, uint64_t v) {
      // mmio_ready() held the write until the FIFO had room.
      eq.s_db->push(EqDoorbell{uint32_t(bits_of(v, eqdb::eqn)), uint32_t(bits_of(v, eqdb::consumer_index)), arm},
                    clock.now());
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
  transport.on_bad_doorbell.add([this](uint8_t r, uint32_t n) { bad_doorbell(r, n); });
  transport.fetch.on_event_lost.add([this] { count_lost_event(); });
  cmd.on_srq.add([this](uint32_t srqn, bool reset) {
    if (reset)
      transport.rq.reset_srq(srqn);
    else
      transport.rq.srq_armed(srqn);
  });
  cmd.on_qp_state.add([this](uint32_t qpn, QpState from, QpState to) {
    if (qpn == UINT32_MAX)
      transport.reset();
    else
      transport.qp_state_changed(qpn, from, to);
  });
  // S14: a CQ-overflow event on its way to the EQ engine also moves the CQ's QPs to error. The
  // tap sits on the stream so that it works whichever CQ writer (model or RTL) raised it.
  eq.s_event->on_push.add([this](const DeviceEvent& ev, uint64_t) {
    if (ev.type == eqe::kCqError && ev.syndrome == eqe::kCqOverrun) transport.cq_overflowed(ev.cqn);
  });
  auto wq_doorbell = [this](WqKind kind) {
    return [this, kind](Register&, uint64_t v) {
      // mmio_ready() held the write until the FIFO had room.
      transport.s_doorbell->push(WqDoorbell{kind, uint32_t(bits_of(v, wqdb::qpn)), uint16_t(bits_of(v, wqdb::pi))},
                                clock.now());
    };
  };
  bar0.regs.on_write(reg::sq_db, wq_doorbell(WqKind::sq));
  bar0.regs.on_write(reg::rq_db, wq_doorbell(WqKind::rq));
  // BlueFlame: the WQE names its QP and its index; it is the doorbell for itself.
  bar0.regs.on_block_write(reg::sq_bf, [this](Register&, const uint8_t* data, unsigned len) {
    WqDoorbell db;
    db.qpn = uint32_t(get_field(data, sqwqe::qpn));
    db.pi = uint16_t(get_field(data, sqwqe::wqe_index) + 1);
    db.has_wqe = true;
    std::copy(data, data + len, db.wqe.begin());
    // mmio_ready() held the write until the FIFO had room.
    transport.s_doorbell->push(db, clock.now());
  });
}

bool Hca::mmio_ready(uint64_t offset) const {
  if (offset < kUarBase || offset >= kUarBase + kNumUars * kUarStride) return true;
  const uint32_t in_page = uint32_t((offset - kUarBase) % kUarStride);
  const uint64_t now = clock.now();
  if (in_page == uar_.sq || in_page == uar_.rq || in_page == uar_.sq_bf) return transport.s_doorbell->can_push(now);
  if (in_page == uar_.cq_arm) return cq.s_arm->can_push(now);
  if (in_page == uar_.eq_arm || in_page == uar_.eq_update) return eq.s_db->can_push(now);
  return true;
}

void Hca::count_lost_event() { bar0.regs.set(reg::lost_events, bar0.regs.value(reg::lost_events) + 1); }

void Hca::bad_doorbell(uint8_t reason, uint32_t object) {
  RegisterFile& r = bar0.regs;
  r.set(reg::bad_doorbells, r.value(reg::bad_doorbells) + 1);
  r.set(reg::last_bad_doorbell, uint64_t(reason) << 24 | (object & 0xFFFFFF));
}

void Hca::device_reset() {
  log::write(log::Cat::mmio, "device reset");
  arbiter.reset();  // first: it takes back from the CQ writer's input what it pushed ahead of its turn
  cq.reset();
  eq.reset();
  cmd.reset();
  transport.reset();
  bar0.regs.reset();
  bar0.regs.set(reg::core_clock_khz, uint64_t(cfg_.clock_mhz * 1000.0));
  bar0.regs.set(reg::port_lid, cfg_.transport.lid);
  bar0.regs.set(reg::port_state, port_up_ ? eqe::kPortActive : eqe::kPortDown);
  bar0.regs.set(reg::health, 0);
  // Ready once the reset time has passed and the CQ writer has cleared its tables (it starts on
  // this cycle: CqeWriter::reset), whichever is later.
  const uint64_t writer_ready = clock.now() + cq.engine().clearing_cycles() + 1;
  reset_done_event_.notify(std::max(cfg_.reset_time, clock.at(writer_ready) - sim_now()));
}

void Hca::link_state_changed(bool up) {
  if (up == port_up_) return;
  port_up_ = up;
  const uint8_t state = up ? eqe::kPortActive : eqe::kPortDown;
  bar0.regs.set(reg::port_state, state);
  log::write(log::Cat::link, "port 1 {}", up ? "active" : "down");
  transport.fetch.post_event(DeviceEvent{eqe::kPortChange, 0, 0, state, 1});
}

void Hca::upstream_write_failed(DmaSource source, uint32_t id, uint64_t addr) {
  const uint64_t now = clock.now();
  switch (source) {
    case DmaSource::cqe:
    case DmaSource::cqe_copy:
      if (cq.s_access_error->can_push(now)) {
        cq.s_access_error->push(id, now);
      } else {
        log::error("CQ {}: CQE write failure not reported (error input full): counted in LOST_EVENTS", id);
        count_lost_event();
      }
      break;
    default:
      log::error("posted write (source {}, id {}) to {:#x} failed at the host", int(source), id, addr);
      // An MSI-X write that fails has no event to raise (it would be another interrupt).
      if (source != DmaSource::msix) eq.report(DeviceEvent{eqe::kDmaError, 0, 0, dma_error_syndrome(source), addr});
      break;
  }
}

}  // namespace vhca
