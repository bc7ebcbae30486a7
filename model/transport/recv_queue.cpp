#include "model/transport/recv_queue.h"

#include <algorithm>
#include <memory>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {

RecvQueue::RecvQueue(const sc_core::sc_module_name& name, const TransportConfig& cfg, DmaEngine& dma,
                     QpTables& tables, TransportStats& stats)
    : sc_module(name), cfg_(cfg), dma_(dma), tables_(tables), stats_(stats), qps_(tables.qps.size()) {}

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
  for (uint32_t q = 0; q < qps_.size(); ++q) reset_qp(q);
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
  const QpContext& ctx = tables_.qps[qpn];
  auto buf = std::make_shared<std::array<uint8_t, qpdbr::kSize>>();
  const uint32_t gen = qps_[qpn].gen;
  ++stats_.dbr_reads;
  dma_.read(ctx.dbr, buf->data(), qpdbr::kSize, false, [this, qpn, gen, buf, done = std::move(done)](bool ok) {
    PerQp& q = qps_[qpn];
    if (!ok || q.gen != gen) {
      done(false);
      return;
    }
    const uint16_t pi = uint16_t(get_field(buf->data(), qpdbr::rq_pi));
    if (uint16_t(pi - q.fetched) > (1u << tables_.qps[qpn].log_rq_size)) {
      log::error("QP {:#x}: doorbell record RQ counter {} is more than the ring past {}", qpn, pi, q.fetched);
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
  const QpContext& ctx = tables_.qps[qpn];
  PerQp& q = qps_[qpn];
  const uint32_t depth = 1u << ctx.log_rq_size;
  const uint32_t slot = q.fetched & (depth - 1);
  const uint32_t n = std::min({uint32_t(uint16_t(q.pi - q.fetched)), cfg_.fetch_burst, depth - slot});
  auto buf = std::make_shared<std::vector<uint8_t>>(size_t(n) * rqwqe::kSize);
  const uint32_t gen = q.gen;
  const uint16_t first = q.fetched;
  ++stats_.rq_fetches;
  dma_.read(ctx.rq_base + uint64_t(slot) * rqwqe::kSize, buf->data(), uint32_t(buf->size()), false,
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
              log::write(log::Cat::wq, "QP {:#x}: fetched RQ WQEs {}..{}", qpn, first, uint16_t(first + n - 1));
              done(true);
            });
}

}  // namespace vhca
