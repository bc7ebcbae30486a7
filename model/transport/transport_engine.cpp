#include "model/transport/transport_engine.h"

#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {

TransportEngine::TransportEngine(const sc_core::sc_module_name& name, const SimClock& clock,
                                 const TransportConfig& cfg, DmaEngine& dma, QpTables& tables)
    : sc_module(name),
      cfg_(cfg),
      tables_(tables),
      timers("timers", clock, tables.qps.size()),
      rq("rq", cfg, dma, tables, stats_),
      requester("requester", clock, cfg, tables, timers, dma, m_cpl, stats_),
      responder("responder", clock, cfg, tables, timers, rq, dma, m_cpl, stats_),
      fetch("fetch", clock, cfg, dma, tables, requester, responder, rq, m_event, stats_),
      doorbells("doorbells", clock, cfg, tables, fetch, rq, stats_),
      tx("tx", clock, cfg, requester, responder, dma, stats_),
      rx("rx", clock, cfg, requester, responder, stats_),
      edge_order_{timers, dma, stats_} {
  // One order for the blocks acting on an edge, whichever process SystemC runs first (edge_order.h).
  rx.follow(&edge_order_);
  tx.follow(&edge_order_, &rx);
  tx.port_out.bind(port_out);
  port_in.bind(rx.port_in);
  rq.on_srq_limit.add([this](uint32_t srqn) { fetch.post_event(DeviceEvent{eqe::kSrqLimit, 0, 0, 0, srqn}); });
  timers.on_expired.add([this](uint32_t qpn, TimerKind kind) {
    if (kind == TimerKind::ack)
      responder.timer_expired(qpn, kind);
    else
      requester.timer_expired(qpn, kind);
  });
}

void TransportEngine::qp_state_changed(uint32_t qpn, QpState from, QpState to) {
  const QpContext& q = tables_.qps[qpn];
  if (to == QpState::reset || !q.valid) {
    // Every block forgets the QP; reads in flight for it find a new generation and are dropped.
    timers.reset_qp(qpn);
    rq.reset_qp(qpn);
    requester.qp_reset(qpn);
    responder.qp_reset(qpn);
    fetch.qp_reset(qpn);
    return;
  }
  if (to == QpState::rtr && from == QpState::init) {
    responder.qp_ready_to_receive(qpn);
    timers.qp_live(qpn);
  }
  if (to == QpState::rts) {
    fetch.want_fetch(qpn);
    requester.qp_ready_to_send(qpn, from == QpState::rtr);
  }
  if (to == QpState::sqd) requester.qp_draining(qpn);
  if (to == QpState::err) fetch.enter_error(qpn);
}

void TransportEngine::cq_overflowed(uint32_t cqn) {
  for (uint32_t qpn = 0; qpn < tables_.qps.size(); ++qpn) {
    const QpContext& q = tables_.qps[qpn];
    if (!q.valid || (q.send_cqn != cqn && q.recv_cqn != cqn)) continue;
    if (q.state == QpState::reset || q.state == QpState::err) continue;
    log::error("QP {:#x}: its CQ {} overflowed: QP enters the error state", qpn, cqn);
    fetch.post_event(DeviceEvent{eqe::kQpFatal, 0, cqn, eqe::kQpCqOverrun, qpn});
    fetch.enter_error(qpn);
  }
}

void TransportEngine::reset() {
  timers.reset();
  rq.reset();
  requester.reset();
  responder.reset();
  fetch.reset();
  doorbells.reset();
  rx.reset();
}

}  // namespace vhca
