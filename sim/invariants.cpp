#include "sim/invariants.h"

#include <fmt/format.h>

#include <algorithm>
#include <systemc>

#include "firmware-shim/qp_verbs.h"
#include "firmware-shim/verbs.h"
#include "model/common/topology.h"
#include "model/regs/tables.h"
#include "sim/system.h"

namespace vhca {

namespace {
constexpr uint32_t kIndex = 0xFFFFFF;  // CQ indices are 24-bit
}  // namespace

void InvariantChecker::violation(uint32_t node, const std::string& what) {
  violations_.push_back(fmt::format("{} host {}: {}", sc_core::sc_time_stamp().to_string(), node, what));
}

void InvariantChecker::cq_created(uint32_t node, uint32_t cqn) { cqs_[{node, cqn}] = CqTrack{}; }

void InvariantChecker::data_placed(uint32_t node, uint32_t qpn, uint8_t wqe, bool starts, uint32_t bytes) {
  const HostQp qp = hosts_.at(node).qp(qpn);
  Placed& p = placed_[{node, qpn}];
  if (p.generation != qp.generation) p = Placed{qp.generation, {}};  // a QP made anew
  if (starts && !p.messages.empty() && p.messages.back().first == wqe)
    p.messages.back().second = 0;  // the WQE's message begun again (UC: the one before was dropped)
  else if (starts || p.messages.empty())
    p.messages.emplace_back(wqe, 0);
  p.messages.back().second += bytes;
}

// A receive CQE ends its WQE's message: a successful SEND's must count every byte placed for it
// (RDMA WRITE with immediate places through the write path; an error or a flush may stop midway,
// or place nothing). The next message's first bytes may be placed before this CQE is issued.
void InvariantChecker::check_byte_count(uint32_t node, uint32_t qpn, uint64_t generation, const uint8_t* cqe) {
  Placed& p = placed_[{node, qpn}];
  if (p.generation != generation) p = Placed{generation, {}};
  const uint8_t wqe = uint8_t(get_field(cqe, cqe::wqe_counter) & 0x7F);
  uint64_t placed = 0;
  auto it = std::find_if(p.messages.begin(), p.messages.end(), [wqe](const auto& m) { return m.first == wqe; });
  if (it != p.messages.end()) {
    placed = it->second;
    p.messages.erase(p.messages.begin(), it + 1);  // and any older one that never completed
  }
  const uint8_t opcode = uint8_t(get_field(cqe, cqe::opcode));
  if (opcode != cqe::kRespSend && opcode != cqe::kRespSendImm) return;
  ++checked_;
  const uint64_t count = get_field(cqe, cqe::byte_cnt);
  if (count != placed)
    violation(node, fmt::format("QP {}: a receive CQE (WQE {}) counts {} bytes, {} were placed in its buffers", qpn,
                                get_field(cqe, cqe::wqe_counter), count, placed));
}

void InvariantChecker::cqe_issued(uint32_t node, uint32_t cqn, uint64_t addr, const uint8_t* cqe) {
  const HostCq host = hosts_.at(node).cq(cqn);
  if (!host.exists) {
    violation(node, fmt::format("a CQE for CQ {}, which the host has not created", cqn));
    return;
  }
  // Resize copies carry their own source (DmaSource::cqe_copy) and never come here.
  if (!host.in_ring(addr)) {
    violation(node, fmt::format("CQ {}: a CQE written at {:#x}, outside its ring ({:#x}, {} entries)", cqn, addr,
                                host.base, host.size));
    return;
  }
  ++checked_;
  CqTrack& t = cqs_[{node, cqn}];
  const uint32_t index = t.issued++ & kIndex;
  // The entry this CQE goes to still holds CQE index - size unless the host has consumed it.
  if (!host.overrun_ignore && ((index - host.ci) & kIndex) >= host.size)
    violation(node, fmt::format("CQ {}: CQE {} overwrites an entry the host has not consumed (consumer index {}, {} "
                                "entries)", cqn, index, host.ci, host.size));
  const uint32_t qpn = uint32_t(get_field(cqe, cqe::qpn));
  const HostQp qp = hosts_.at(node).qp(qpn);
  if (!qp.exists) return;  // an injected record, or a QP gone: no work queue to order against
  const uint8_t opcode = uint8_t(get_field(cqe, cqe::opcode));
  const bool send = opcode == cqe::kReq || opcode == cqe::kReqErr;
  if (!send) check_byte_count(node, qpn, qp.generation, cqe);
  if (!send && qp.on_srq) return;  // the SRQ's order, not the QP's
  WqTrack& w = wqs_[{node, qpn, send}];
  if (w.generation != qp.generation) w = WqTrack{qp.generation, false, 0};  // a QP made anew
  const uint16_t counter = uint16_t(get_field(cqe, cqe::wqe_counter));
  const uint16_t step = uint16_t(counter - w.last);
  if (w.any && (send ? (step == 0 || step >= 0x8000) : step != 1))
    violation(node, fmt::format("QP {} {}: CQE for WQE {} after WQE {} ({})", qpn, send ? "SQ" : "RQ", counter, w.last,
                                step == 0 ? "twice" : send ? "out of order" : "out of order or one missing"));
  w.any = true;
  w.last = counter;
}

void InvariantChecker::event_raised(uint32_t node, const DeviceEvent& ev) {
  if (ev.type != eqe::kCompletion) return;
  ++checked_;
  if (!hosts_.at(node).cq(ev.cqn).exists) return;
  CqTrack& t = cqs_[{node, ev.cqn}];
  const uint32_t pi = uint32_t(ev.data) & kIndex;
  // The event covers the CQEs up to its producer index: each must have been issued before it.
  if (((t.issued - pi) & kIndex) >= 0x800000)
    violation(node, fmt::format("CQ {}: completion event at producer index {} raised before its CQEs were written "
                                "({} issued)", ev.cqn, pi, t.issued & kIndex));
  owed_[{node, ev.eqn}].push_back({ev.cqn, pi});
}

void InvariantChecker::cqe_landed(uint32_t node, uint32_t cqn, uint64_t addr) {
  auto it = cqs_.find({node, cqn});
  if (it != cqs_.end() && hosts_.at(node).cq(cqn).in_ring(addr)) ++it->second.landed;
}

void InvariantChecker::eqe_landed(uint32_t node, uint32_t eqn) {
  auto it = owed_.find({node, eqn});
  if (it == owed_.end() || it->second.empty()) return;  // not a completion EQE (async, command)
  ++checked_;
  const auto [cqn, pi] = it->second.front();
  it->second.pop_front();
  auto cq = cqs_.find({node, cqn});
  const uint32_t landed = cq == cqs_.end() ? 0 : cq->second.landed & kIndex;
  if (((landed - pi) & kIndex) >= 0x800000)
    violation(node, fmt::format("EQ {}: the completion EQE for CQ {} landed before its CQEs (producer index {}, {} "
                                "landed)", eqn, cqn, pi, landed));
}

void InvariantChecker::queue_seen(const std::string& name, size_t depth, size_t high_water) {
  ++checked_;
  if (high_water > depth) violations_.push_back(fmt::format("queue {} held {} items, more than its bound {}", name,
                                                            high_water, depth));
}

void InvariantChecker::check_queues(System& sys) {
  for (uint32_t n = 0; n < sys.hosts(); ++n) sys.node(n).link.land_due();
  for (const QueueLink& q : queue_links()) queue_seen(q.queue, q.depth, q.high_water);
}

void InvariantChecker::attach(System& sys) {
  for (uint32_t n = 0; n < sys.hosts(); ++n) {
    Node& node = sys.node(n);
    Host host;
    host.cq = [&node](uint32_t cqn) {
      HostCq v;
      if (Cq* cq = node.driver.find_cq(cqn)) {
        v.exists = true;
        v.ci = cq->ci & kIndex;
        // The ring the device writes into: during a resize the host's view of the size changes
        // only when its command returns, the device's when it commits.
        const CqContext c = node.hca.cq.context(cqn);
        v.base = c.valid ? c.cfg.base : cq->buf;
        v.size = c.valid ? c.size() : cq->cqe;
        v.overrun_ignore = c.valid && c.cfg.overrun_ignore;
      }
      return v;
    };
    host.qp = [&node](uint32_t qpn) {
      HostQp v;
      if (Qp* qp = node.driver.find_qp(qpn)) {
        v.exists = true;
        v.generation = qp->sq_base;
        v.on_srq = qp->srq != nullptr;
      }
      return v;
    };
    add_host(std::move(host));
    node.hca.dma.s_write->on_push.add([this, n](const DmaWrite& w, uint64_t) {
      if (w.source == DmaSource::cqe) cqe_issued(n, w.id, w.addr, w.data.data());
      else if (w.source == DmaSource::recv_data)
        data_placed(n, recv_data_qpn(w.id), recv_data_wqe(w.id), recv_data_starts(w.id), w.len);
    });
    node.hca.eq.s_event->on_push.add([this, n](const DeviceEvent& ev, uint64_t) { event_raised(n, ev); });
    node.hca.cq.s_ctl->on_push.add([this, n](const CqControl& c, uint64_t) {
      if (c.op == CqControl::Op::create) cq_created(n, c.cqn);
    });
    // Told as each write lands, in order; a quiet write (tlm/pending_writes.h) lands before the
    // host reads memory, so the checker does not keep writes from landing quietly.
    node.link.on_upstream_landed_at.add([this, n](DmaSource source, uint32_t id, uint64_t addr, const sc_core::sc_time&) {
      if (source == DmaSource::cqe) cqe_landed(n, id, addr);
      else if (source == DmaSource::eqe) eqe_landed(n, id);
    });
  }
}

}  // namespace vhca
