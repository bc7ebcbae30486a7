#include "model/transport/recv_queue.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {

RecvQueue::RecvQueue(const sc_core::sc_module_name& name, const TransportConfig& cfg, DmaEngine& dma,
                     QpTables& tables, TransportStats& stats)
    : sc_module(name),
      cfg_(cfg),
      dma_(dma),
      tables_(tables),
      stats_(stats),
      num_qps_(uint32_t(tables.qps.size())),
      qps_(tables.qps.size() + tables.srqs.size()) {}

RecvQueue::Ring RecvQueue::ring_of(uint32_t id) const {
  if (id < num_qps_) {
    const QpContext& q = tables_.qps[id];
    return {q.rq_base, q.dbr, q.log_rq_size};
  }
  const SrqContext& s = tables_.srqs[id - num_qps_];
  return {s.base, s.dbr, s.log_size};
}

std::string RecvQueue::name_of(uint32_t id) const {
  return id < num_qps_ ? fmt::format("QP {:#x}", id) : fmt::format("SRQ {}", id - num_qps_);
}

bool RecvQueue::take_from_srq(uint32_t qpn, uint32_t srqn) {
  PerQp& s = qps_[srq_id(srqn)];
  if (s.wqes.empty()) return false;
  qps_[qpn].wqes.push_back(std::move(s.wqes.front()));
  s.wqes.pop_front();
  prefetch(srq_id(srqn));
  check_limit(srqn);
  return true;
}

// The WQEs an SRQ still holds: those cached and those the device knows of in the ring. Below an
// armed limit, the doorbell record is read first (the program may have posted more since), then
// the event is raised once and the SRQ disarmed.
void RecvQueue::check_limit(uint32_t srqn) {
  SrqContext& ctx = tables_.srqs[srqn];
  const uint32_t id = srq_id(srqn);
  auto held = [this, id] { return qps_[id].wqes.size() + uint16_t(qps_[id].pi - qps_[id].fetched); };
  if (!ctx.valid || ctx.limit == 0 || held() >= ctx.limit || qps_[id].in_flight) return;
  const uint32_t gen = qps_[id].gen;
  refresh_pi(id, Waiter{[this, srqn, id, gen, held](bool ok) {
    SrqContext& c = tables_.srqs[srqn];
    if (!ok || qps_[id].gen != gen || !c.valid || c.limit == 0 || held() >= c.limit) return;
    c.limit = 0;
    log::write(log::Cat::wq, "SRQ {}: below its limit: event", srqn);
    on_srq_limit(srqn);
  }});
}

RecvWqe RecvQueue::pop(uint32_t qpn) {
  RecvWqe w = std::move(qps_[qpn].wqes.front());
  qps_[qpn].wqes.pop_front();
  prefetch(qpn);
  return w;
}

// Keeps up to prefetch_depth WQEs cached while the ring holds WQEs the device knows of.
void RecvQueue::prefetch(uint32_t qpn) {
  PerQp& q = qps_[qpn];
  if (!cfg_.rq_prefetch || q.in_flight || q.fetched == q.pi || q.wqes.size() >= cfg_.prefetch_depth) return;
  const uint32_t gen = q.gen;
  fetch(qpn, Waiter{[this, qpn, gen](bool) {
    if (qps_[qpn].gen == gen) prefetch(qpn);
  }});
}

SlotRing<RecvWqe> RecvQueue::take_all(uint32_t qpn) {
  SlotRing<RecvWqe> all{1};
  std::swap(all, qps_[qpn].wqes);
  return all;
}

void RecvQueue::reset_qp(uint32_t qpn) { renew(qps_[qpn]); }

void RecvQueue::reset() {
  for (PerQp& q : qps_) renew(q);
}

void RecvQueue::ensure(uint32_t qpn, Done done) { fetch_more_for(qpn, Waiter{std::move(done), true, qps_[qpn].gen}); }

void RecvQueue::fetch_more(uint32_t qpn, Done done) { fetch_more_for(qpn, Waiter{std::move(done)}); }

void RecvQueue::fetch_more_for(uint32_t qpn, Waiter w) {
  PerQp& q = qps_[qpn];
  if (q.in_flight) {  // a read for this QP is on its way: what it brings may be enough
    q.in_flight->waiters.push_back(std::move(w));
    return;
  }
  if (q.fetched != q.pi) {
    fetch(qpn, std::move(w));
    return;
  }
  const uint32_t gen = q.gen;
  refresh_pi(qpn, Waiter{[this, qpn, gen, w = std::move(w)](bool ok) mutable {
    PerQp& q = qps_[qpn];
    if (!ok || q.gen != gen || q.fetched == q.pi) {
      answer(qpn, w, false);
      return;
    }
    fetch(qpn, std::move(w));
  }});
}

// Reads the RQ producer counter from the QP's doorbell record; false if the read failed or the
// value is impossible.
void RecvQueue::refresh_pi(uint32_t qpn, Waiter w) { start_read(qpn, std::move(w), Read::Kind::pi); }

void RecvQueue::fetch(uint32_t qpn, Waiter w) { start_read(qpn, std::move(w), Read::Kind::burst); }

void RecvQueue::start_read(uint32_t qpn, Waiter w, Read::Kind kind) {
  Read* r = reads_.take();
  r->kind = kind;
  r->qpn = qpn;
  r->gen = qps_[qpn].gen;
  r->waiters.push_back(std::move(w));
  qps_[qpn].in_flight = r;
  if (kind == Read::Kind::pi)
    read_pi(*r);
  else
    read_burst(*r);
}

void RecvQueue::read_pi(Read& r) {
  const Ring ring = ring_of(r.qpn);
  r.log_size = ring.log_size;
  r.buf.resize(qpdbr::kSize);
  ++stats_.dbr_reads;
  dma_.read(ring.dbr, r.buf.data(), qpdbr::kSize, false, [this, p = &r](bool ok) { read_done(p, ok); });
}

void RecvQueue::read_burst(Read& r) {
  const Ring ring = ring_of(r.qpn);
  const PerQp& q = qps_[r.qpn];
  const uint32_t depth = 1u << ring.log_size;
  const uint32_t slot = q.fetched & (depth - 1);
  r.n = std::min({uint32_t(uint16_t(q.pi - q.fetched)), cfg_.fetch_burst, depth - slot});
  r.first = q.fetched;
  r.buf.resize(size_t(r.n) * rqwqe::kSize);
  ++stats_.rq_fetches;
  dma_.read(ring.base + uint64_t(slot) * rqwqe::kSize, r.buf.data(), uint32_t(r.buf.size()), false,
            [this, p = &r](bool ok) { read_done(p, ok); });
}

// The read's data taken, its waiters get its result, in the order they came; one may start the
// queue's next read (this one is back in the pool only after them).
void RecvQueue::read_done(Read* r, bool ok) {
  const bool result = r->kind == Read::Kind::pi ? took_pi(*r, ok) : took_burst(*r, ok);
  if (qps_[r->qpn].gen == r->gen) qps_[r->qpn].in_flight = nullptr;
  for (size_t i = 0; i < r->waiters.size(); ++i) answer(r->qpn, r->waiters[i], result);
  r->waiters.clear();
  reads_.give(r);
}

bool RecvQueue::took_pi(Read& r, bool ok) {
  PerQp& q = qps_[r.qpn];
  if (!ok || q.gen != r.gen) return false;
  const uint16_t pi = uint16_t(get_field(r.buf.data(), qpdbr::rq_pi));
  if (uint16_t(pi - q.fetched) > (1u << r.log_size)) {
    log::error("{}: doorbell record RQ counter {} is more than the ring past {}", name_of(r.qpn), pi, q.fetched);
    return false;
  }
  q.pi = pi;
  return true;
}

bool RecvQueue::took_burst(Read& r, bool ok) {
  PerQp& q = qps_[r.qpn];
  if (q.gen != r.gen || r.first != q.fetched) return false;  // reset, or another fetch took these
  // A failed read wrote nothing: its WQEs decode from zeros (the buffer holds the last read's).
  if (!ok) std::fill(r.buf.begin(), r.buf.end(), uint8_t(0));
  for (uint32_t i = 0; i < r.n; ++i) {
    RecvWqe w = decode_recv_wqe(r.buf.data() + size_t(i) * rqwqe::kSize, uint16_t(r.first + i));
    if (!ok) w.decode_error = syndrome::kLocalQpOp;
    q.wqes.push_back(std::move(w));
  }
  q.fetched = uint16_t(r.first + r.n);
  if (log::enabled(log::Cat::wq))
    log::write(log::Cat::wq, "{}: fetched RQ WQEs {}..{}", name_of(r.qpn), r.first, uint16_t(r.first + r.n - 1));
  return true;
}

}  // namespace vhca
