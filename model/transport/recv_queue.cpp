#include "model/transport/recv_queue.h"

#include <algorithm>
#include <memory>

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
  refresh_pi(id, [this, srqn, id, gen, held](bool ok) {
    SrqContext& c = tables_.srqs[srqn];
    if (!ok || qps_[id].gen != gen || !c.valid || c.limit == 0 || held() >= c.limit) return;
    c.limit = 0;
    log::write(log::Cat::wq, "SRQ {}: below its limit: event", srqn);
    on_srq_limit(srqn);
  });
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
  fetch(qpn, [this, qpn, gen](bool) {
    if (qps_[qpn].gen == gen) prefetch(qpn);
  });
}

void RecvQueue::start_read(uint32_t qpn, Done done, const std::function<void(Done)>& read) {
  Waiters waiters = std::make_shared<std::vector<Done>>();
  waiters->push_back(std::move(done));
  qps_[qpn].in_flight = waiters;
  const uint32_t gen = qps_[qpn].gen;
  read([this, qpn, gen, waiters](bool ok) {
    if (qps_[qpn].gen == gen) qps_[qpn].in_flight = nullptr;
    std::vector<Done> all;
    all.swap(*waiters);
    for (Done& d : all) d(ok);
  });
}

std::deque<RecvWqe> RecvQueue::take_all(uint32_t qpn) {
  std::deque<RecvWqe> all;
  all.swap(qps_[qpn].wqes);
  return all;
}

void RecvQueue::reset_qp(uint32_t qpn) { renew(qps_[qpn]); }

void RecvQueue::reset() {
  for (PerQp& q : qps_) renew(q);
}

void RecvQueue::ensure(uint32_t qpn, Done done) {
  const uint32_t gen = qps_[qpn].gen;
  fetch_more(qpn, [this, qpn, gen, done = std::move(done)](bool ok) {
    done(ok && qps_[qpn].gen == gen && !qps_[qpn].wqes.empty());
  });
}

void RecvQueue::fetch_more(uint32_t qpn, Done done) {
  PerQp& q = qps_[qpn];
  if (q.in_flight) {  // a read for this QP is on its way: what it brings may be enough
    q.in_flight->push_back(std::move(done));
    return;
  }
  if (q.fetched != q.pi) {
    fetch(qpn, std::move(done));
    return;
  }
  const uint32_t gen = q.gen;
  refresh_pi(qpn, [this, qpn, gen, done = std::move(done)](bool ok) {
    PerQp& q = qps_[qpn];
    if (!ok || q.gen != gen || q.fetched == q.pi) {
      done(false);
      return;
    }
    fetch(qpn, std::move(done));
  });
}

// Reads the RQ producer counter from the QP's doorbell record; false if the read failed or the
// value is impossible.
void RecvQueue::refresh_pi(uint32_t qpn, Done done) {
  start_read(qpn, std::move(done), [this, qpn](Done finished) { read_pi(qpn, std::move(finished)); });
}

void RecvQueue::read_pi(uint32_t qpn, Done done) {
  const Ring ring = ring_of(qpn);
  auto buf = std::make_shared<std::array<uint8_t, qpdbr::kSize>>();
  const uint32_t gen = qps_[qpn].gen;
  ++stats_.dbr_reads;
  dma_.read(ring.dbr, buf->data(), qpdbr::kSize, false, [this, qpn, gen, buf, ring, done = std::move(done)](bool ok) {
    PerQp& q = qps_[qpn];
    if (!ok || q.gen != gen) {
      done(false);
      return;
    }
    const uint16_t pi = uint16_t(get_field(buf->data(), qpdbr::rq_pi));
    if (uint16_t(pi - q.fetched) > (1u << ring.log_size)) {
      log::error("{}: doorbell record RQ counter {} is more than the ring past {}", name_of(qpn), pi, q.fetched);
      done(false);
      return;
    }
    q.pi = pi;
    done(true);
  });
}

void RecvQueue::fetch(uint32_t qpn, Done done) {
  start_read(qpn, std::move(done), [this, qpn](Done finished) { read_burst(qpn, std::move(finished)); });
}

void RecvQueue::read_burst(uint32_t qpn, Done done) {
  const Ring ring = ring_of(qpn);
  PerQp& q = qps_[qpn];
  const uint32_t depth = 1u << ring.log_size;
  const uint32_t slot = q.fetched & (depth - 1);
  const uint32_t n = std::min({uint32_t(uint16_t(q.pi - q.fetched)), cfg_.fetch_burst, depth - slot});
  auto buf = std::make_shared<std::vector<uint8_t>>(size_t(n) * rqwqe::kSize);
  const uint32_t gen = q.gen;
  const uint16_t first = q.fetched;
  ++stats_.rq_fetches;
  dma_.read(ring.base + uint64_t(slot) * rqwqe::kSize, buf->data(), uint32_t(buf->size()), false,
            [this, qpn, gen, first, n, buf, done = std::move(done)](bool ok) {
              PerQp& q = qps_[qpn];
              if (q.gen != gen || first != q.fetched) {  // reset, or another fetch took these
                done(false);
                return;
              }
              for (uint32_t i = 0; i < n; ++i) {
                RecvWqe w = decode_recv_wqe(buf->data() + size_t(i) * rqwqe::kSize, uint16_t(first + i));
                if (!ok) w.decode_error = syndrome::kLocalQpOp;
                q.wqes.push_back(std::move(w));
              }
              q.fetched = uint16_t(first + n);
              if (log::enabled(log::Cat::wq))
                log::write(log::Cat::wq, "{}: fetched RQ WQEs {}..{}", name_of(qpn), first, uint16_t(first + n - 1));
              done(true);
            });
}

}  // namespace vhca
