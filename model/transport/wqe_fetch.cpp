#include "model/transport/wqe_fetch.h"

#include <algorithm>

#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {

WqeFetch::WqeFetch(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
                   DmaEngine& dma, QpTables& tables, Requester& requester, Responder& responder, RecvQueue& rq,
                   StreamOut<DeviceEvent>& events, TransportStats& stats)
    : sc_module(name),
      s_fetches("s_fetches", tables.qps.size(), "doorbell unit, requester: QPs whose SQ wants WQEs"),
      s_flushes("s_flushes", tables.qps.size(), "QP state changes: QPs whose queues are to be flushed"),
      s_events("s_events", 2 * tables.qps.size() + tables.srqs.size() + kPortEventSlack,
               "requester, responder, RQ, port: QP, SRQ and port events (LOST_EVENTS when full)"),
      clock_(clock), cfg_(cfg), dma_(dma), tables_(tables), requester_(requester),
      responder_(responder), rq_(rq), events_out_(events), stats_(stats), wakeup_(clock), qps_(tables.qps.size()) {
  events_out_.on_space([this](uint64_t c) { wakeup_.wake(c); });
  auto drained = [this] {
    if (!parked_ || !parked_until_()) return;
    std::function<void()> then = std::move(parked_);
    parked_ = nullptr;
    then();
  };
  requester_.outbox().on_empty.add(drained);
  responder_.outbox().on_empty.add(drained);
  requester_.on_fetch_wanted.add([this](uint32_t qpn) { want_fetch(qpn); });
  requester_.on_error.add([this](uint32_t qpn, QpState s) { enter_error(qpn, s); });
  requester_.on_event.add([this](const DeviceEvent& ev) { post_event(ev); });
  responder_.on_error.add([this](uint32_t qpn, QpState s) { enter_error(qpn, s); });
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

void WqeFetch::want_fetch(uint32_t qpn) {
  SqCursor& c = qps_[qpn];
  if (c.in_fetch_queue || c.fetched == c.pi) return;
  c.in_fetch_queue = true;
  fetch_queue_.push_back(qpn);
  s_fetches.pushed(fetch_queue_.size());
  kick();
}

bool WqeFetch::take_written(uint32_t qpn, const WqDoorbell& db) {
  const QpContext& q = tables_.qps[qpn];
  SqCursor& c = qps_[qpn];
  const uint16_t index = uint16_t(db.pi - 1);
  if ((q.state != QpState::rts && q.state != QpState::sqd) || c.pi != c.fetched || index != c.fetched ||
      requester_.unstarted(qpn) >= cfg_.prefetch_depth)
    return false;
  std::vector<SendWqe> one{decode_send_wqe(db.wqe.data(), index, q.type)};
  c.pi = c.fetched = db.pi;
  requester_.deliver(qpn, one);
  log::write(log::Cat::wq, "QP {:#x}: SQ WQE {} taken from BlueFlame", qpn, index);
  return true;
}

void WqeFetch::want_flush(uint32_t qpn) {
  if (qps_[qpn].flush_pending) return;  // queued already: each QP at most once
  qps_[qpn].flush_pending = true;
  flush_queue_.push_back(qpn);
  s_flushes.pushed(flush_queue_.size());
  kick();
}

void WqeFetch::post_event(const DeviceEvent& ev) {
  if (events_.size() >= s_events.depth()) {
    ++stats_.events_lost;
    log::error("transport: event type {:#x} (object {:#x}) lost: {} events already wait for the EQ engine", ev.type,
               ev.data, events_.size());
    on_event_lost();
    return;
  }
  events_.push_back(ev);
  s_events.pushed(events_.size());
  kick();
}

void WqeFetch::enter_error(uint32_t qpn, QpState state) {
  QpContext& q = tables_.qps[qpn];
  if (q.state != QpState::err && q.state != state) {
    log::write(log::Cat::wq, "QP {:#x}: {} -> {}", qpn, qp_state_name(q.state), qp_state_name(state));
    q.state = state;
    ++stats_.qp_errors;
  }
  requester_.qp_error(qpn);
  want_flush(qpn);
}

void WqeFetch::step() {
  const uint64_t now = clock_.now();
  if (!clock_.on_edge()) {
    wakeup_.wake(now + 1);
    return;
  }
  run();
}

// One action at a time: an event, a flush, a fetch. An action that reads returns here from its
// last read's completion, on the edge the data is usable.
void WqeFetch::run() {
  in_run_ = true;
  while (!busy_) {
    const uint64_t now = clock_.now();
    if (!events_.empty()) {
      if (!events_out_.can_push(now)) break;  // on_space wakes us
      events_out_.push(events_.front(), now);
      events_.pop_front();
    } else if (!flush_queue_.empty()) {
      const uint32_t qpn = flush_queue_.front();
      flush_queue_.pop_front();
      if (!qps_[qpn].flush_pending) continue;
      busy_ = true;  // an action may finish before start returns (then busy_ is false again)
      if (!start_flush(qpn)) busy_ = false;
    } else if (!fetch_queue_.empty()) {
      const uint32_t qpn = fetch_queue_.front();
      fetch_queue_.pop_front();
      qps_[qpn].in_fetch_queue = false;
      busy_ = true;
      if (!start_fetch(qpn)) busy_ = false;
    } else {
      break;
    }
  }
  in_run_ = false;
}

void WqeFetch::finish_action() {
  busy_ = false;
  if (!in_run_) run();
}

// ---------------------------------------------------------------------------------------------
// SQ prefetch.

bool WqeFetch::start_fetch(uint32_t qpn) {
  if (!tables_.qp_exists(qpn)) return false;
  const QpContext& q = tables_.qps[qpn];
  SqCursor& c = qps_[qpn];
  if (q.state != QpState::rts && q.state != QpState::sqd) return false;
  const uint32_t ahead = requester_.unstarted(qpn);
  if (c.pi == c.fetched || ahead >= cfg_.prefetch_depth) return false;
  const uint16_t first = c.fetched;
  ++stats_.wqe_fetches;
  read_sq_burst(qpn, cfg_.prefetch_depth - ahead, [this, qpn, first](bool valid, std::vector<SendWqe>& burst) {
    if (valid) {
      const uint32_t n = uint32_t(burst.size());
      requester_.deliver(qpn, burst);
      stats_.wqes_fetched += n;
      log::write(log::Cat::wq, "QP {:#x}: fetched SQ WQEs {}..{}", qpn, first, uint16_t(first + n - 1));
      const QpState state = tables_.qps[qpn].state;
      if (state == QpState::err || state == QpState::sqe) {
        want_flush(qpn);
      } else if (qps_[qpn].fetched != qps_[qpn].pi) {
        want_fetch(qpn);  // more to fetch: back of the line
      }
    }
    finish_action();
  });
  return true;
}

void WqeFetch::read_sq_burst(uint32_t qpn, uint32_t limit, Burst done) {
  const QpContext& q = tables_.qps[qpn];
  SqCursor& c = qps_[qpn];
  const uint32_t depth = 1u << q.log_sq_size;
  const uint32_t slot = c.fetched & (depth - 1);
  const uint32_t n = std::min({uint32_t(uint16_t(c.pi - c.fetched)), cfg_.fetch_burst, limit, depth - slot});
  sq_read_ = SqRead{qpn, c.gen, n, c.fetched, q.type, std::move(done)};
  sq_buf_.resize(size_t(n) * sqwqe::kSize);
  dma_.read(q.sq_base + uint64_t(slot) * sqwqe::kSize, sq_buf_.data(), uint32_t(sq_buf_.size()), false,
            [this](bool ok) { sq_burst_read(ok); });
}

// The burst's completion. Its `done` may start the next read (which refills sq_read_ and the
// buffers): it is moved out first, and the burst is not touched after it.
void WqeFetch::sq_burst_read(bool ok) {
  const SqRead r = std::move(sq_read_);
  SqCursor& c = qps_[r.qpn];
  sq_burst_.clear();
  if (c.gen != r.gen || r.first != c.fetched) {  // reset, destroyed or flushed meanwhile
    r.done(false, sq_burst_);
    return;
  }
  // A failed read wrote nothing: its WQEs decode from zeros (the buffer holds the last read's).
  if (!ok) std::fill(sq_buf_.begin(), sq_buf_.end(), uint8_t(0));
  for (uint32_t i = 0; i < r.n; ++i) {
    sq_burst_.push_back(decode_send_wqe(sq_buf_.data() + size_t(i) * sqwqe::kSize, uint16_t(r.first + i), r.type));
    if (!ok) sq_burst_.back().decode_error = syndrome::kLocalQpOp;
  }
  c.fetched = uint16_t(r.first + r.n);
  r.done(true, sq_burst_);
}

// ---------------------------------------------------------------------------------------------
// Flush: every outstanding WQE of a QP in error completes with WR flush, in posting order per
// queue: first those the device holds, then the rest of each ring up to its producer counter. In
// the send-queue-error state (UD) only the SQ flushes; the RQ goes on receiving.

bool WqeFetch::start_flush(uint32_t qpn) {
  if (!tables_.qp_exists(qpn)) return false;
  const QpState state = tables_.qps[qpn].state;
  if (state != QpState::err && state != QpState::sqe) return false;
  qps_[qpn].flush_pending = false;
  requester_.flush_held(qpn);
  flush_sq_rest(qpn, qps_[qpn].gen, state);
  return true;
}

void WqeFetch::when(std::function<bool()> settled, std::function<void()> then) {
  if (settled()) {
    then();
    return;
  }
  parked_until_ = std::move(settled);
  parked_ = std::move(then);
}

void WqeFetch::flush_sq_rest(uint32_t qpn, uint32_t gen, QpState state) {
  SqCursor& c = qps_[qpn];
  if (c.gen != gen) return finish_action();
  if (c.fetched != c.pi) {  // the WQEs posted and never fetched flush too
    when([this] { return requester_.settled(); }, [this, qpn, gen, state] {
      read_sq_burst(qpn, UINT32_MAX, [this, qpn, gen, state](bool valid, std::vector<SendWqe>& burst) {
        if (!valid) return finish_action();
        requester_.flush_unfetched(qpn, burst);
        flush_sq_rest(qpn, gen, state);
      });
    });
    return;
  }
  if (state == QpState::sqe) return finish_action();
  responder_.abort_message(qpn);
  flush_rq(qpn);
}

void WqeFetch::flush_rq(uint32_t qpn) {
  for (const RecvWqe& w : rq_.take_all(qpn)) flush_owed_.push_back(responder_.flush_record(qpn, w));
  // A QP on an SRQ flushes only the WQE its message held: the SRQ's stay for the other QPs.
  const bool rest_in_ring = !tables_.qps[qpn].has_srq;
  const uint32_t gen = rq_.generation(qpn);
  hand_on_flushed([this, qpn, gen, rest_in_ring] {
    if (!rest_in_ring || rq_.generation(qpn) != gen) return finish_action();
    when([this] { return responder_.outbox().empty(); }, [this, qpn, gen] {
      rq_.fetch_more(qpn, [this, qpn, gen](bool more) {
        if (!more || rq_.generation(qpn) != gen) return finish_action();
        flush_rq(qpn);
      });
    });
  });
}

// An RQ flush finds its WQEs a burst or a whole cache at a time, more than the responder's outbox
// may have room for: their completions wait here, in order, and go to the outbox while it has
// room; when it is full, the flush waits for it to drain. Then `then` goes on with the flush. (The
// SQ's flush completions wait in the requester, which hands them on the same way.)
void WqeFetch::hand_on_flushed(std::function<void()> then) {
  Outbox& box = responder_.outbox();
  while (!flush_owed_.empty() && box.has_room()) {
    box.complete(flush_owed_.front());
    flush_owed_.pop_front();
  }
  if (flush_owed_.empty()) return then();
  when([&box] { return box.empty(); }, [this, then = std::move(then)]() mutable { hand_on_flushed(std::move(then)); });
}

// ---------------------------------------------------------------------------------------------

void WqeFetch::qp_reset(uint32_t qpn) { renew(qps_[qpn]); }

void WqeFetch::reset() {
  for (uint32_t q = 0; q < qps_.size(); ++q) qp_reset(q);
  fetch_queue_.clear();
  flush_queue_.clear();
  flush_owed_.clear();
  events_.clear();
}

}  // namespace vhca
