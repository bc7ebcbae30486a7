// Doorbells, WQE fetch, flushes and the shared helpers of the transport engine.
#include "model/transport/transport_engine.h"

#include <algorithm>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {

bool TransportEngine::SendWqe::is_read_or_atomic() const {
  return opcode == sqwqe::kRdmaRead || opcode == sqwqe::kAtomicCs || opcode == sqwqe::kAtomicFa;
}

TransportEngine::TransportEngine(const sc_core::sc_module_name& name, const SimClock& clock,
                                 const TransportConfig& cfg, DmaEngine& dma, QpTables& tables)
    : sc_module(name),
      s_doorbell("s_doorbell", cfg.doorbell_fifo_depth),
      clock_(clock),
      cfg_(cfg),
      dma_(dma),
      tables_(tables),
      rt_(tables.qps.size()),
      doorbell_wakeup_(clock) {
  port_in.register_b_transport(this, &TransportEngine::receive);
  s_doorbell->on_data = [this](uint64_t c) { doorbell_wakeup_.wake(c); };
  m_event.hold_threads(clock);
  SC_METHOD(doorbell_step);
  sensitive << doorbell_wakeup_.event();
  dont_initialize();
  SC_THREAD(control_thread);
  SC_THREAD(tx_thread);
  SC_THREAD(rx_thread);
  for (uint32_t i = 0; i < std::max<uint32_t>(1, cfg.tx_read_tags); ++i)
    sc_core::sc_spawn([this] { gather_worker(); }, sc_core::sc_gen_unique_name("gather"));
}

uint32_t TransportEngine::path_mtu_bytes(const QpContext& q) const {
  // IB path MTU encoding 1..5 = 256..4096; UD and unset RC QPs use the largest.
  return 128u << (q.path_mtu ? q.path_mtu : 5);
}

void TransportEngine::wait_edge() {
  sc_core::wait(clock_.until(clock_.cycle_at_or_after(sc_core::sc_time_stamp())));
}

// ---------------------------------------------------------------------------------------------
// Doorbell unit: one doorbell a cycle, in FIFO order.

void TransportEngine::doorbell_step() {
  if (!doorbell_wakeup_.begin_cycle()) return;
  doorbell_wakeup_.count();
  const uint64_t now = clock_.now();
  if (now < doorbell_free_) {
    doorbell_wakeup_.wake(doorbell_free_);
    return;
  }
  if (s_doorbell->ready(now)) {
    const WqDoorbell db = s_doorbell->pop(now);
    doorbell_free_ = now + cfg_.doorbell_cycles;
    ++stats_.doorbells;
    on_doorbell(db, now);
    auto refuse = [&](uint8_t reason, const char* why) {
      ++stats_.bad_doorbells;
      log::error("{} doorbell for QP {:#x} (pi {}): {}", db.kind == WqKind::sq ? "SQ" : "RQ", db.qpn, db.pi, why);
      if (on_bad_doorbell) on_bad_doorbell(reason, db.qpn);
    };
    if (!tables_.qp_exists(db.qpn)) {
      refuse(dberr::kUnknownObject, "no such QP");
    } else {
      const QpContext& q = tables_.qps[db.qpn];
      QpRuntime& rt = rt_[db.qpn];
      const bool sq = db.kind == WqKind::sq;
      const uint32_t depth = 1u << (sq ? q.log_sq_size : q.log_rq_size);
      // The new producer counter may move forward by at most the ring depth past what the
      // device has taken from the ring.
      const uint16_t taken = sq ? rt.sq_fetched : rt.rq_fetched;
      if (uint16_t(db.pi - taken) > depth) {
        refuse(dberr::kIndexOutOfRange, "producer counter moves past the ring");
      } else if (q.state == QpState::reset) {
        refuse(dberr::kQpState, "QP in RESET");
      } else if (sq) {
        rt.sq_pi = db.pi;
        log::write(log::Cat::wq, "SQ doorbell QP {:#x} pi {}", db.qpn, db.pi);
        if (q.state == QpState::err || q.state == QpState::sqe) {
          rt.flush_pending = true;
          flush_queue_.push_back(db.qpn);
          kick_control();
        } else if (q.state == QpState::rts || q.state == QpState::sqd) {
          want_fetch(db.qpn);
        }
      } else {
        rt.rq_pi = db.pi;
        log::write(log::Cat::wq, "RQ doorbell QP {:#x} pi {}", db.qpn, db.pi);
        if (q.state == QpState::err) {
          rt.flush_pending = true;
          flush_queue_.push_back(db.qpn);
          kick_control();
        }
      }
    }
  }
  if (!s_doorbell->empty()) doorbell_wakeup_.wake(std::max({s_doorbell->head_ready_cycle(), now + 1, doorbell_free_}));
}

void TransportEngine::want_fetch(uint32_t qpn) {
  QpRuntime& rt = rt_[qpn];
  if (rt.in_fetch_queue || rt.sq_fetched == rt.sq_pi) return;
  rt.in_fetch_queue = true;
  fetch_queue_.push_back(qpn);
  kick_control();
}

void TransportEngine::want_tx(uint32_t qpn) {
  QpRuntime& rt = rt_[qpn];
  if (rt.in_tx_ring || rt.cursor >= rt.sq.size()) return;
  rt.in_tx_ring = true;
  tx_ring_.push_back(qpn);
  kick_tx();
}

// ---------------------------------------------------------------------------------------------
// Control thread: QP fatal events, flushes, then SQ WQE fetches round robin, one action at a time.

void TransportEngine::control_thread() {
  for (;;) {
    if (fatal_events_.empty() && flush_queue_.empty() && fetch_queue_.empty()) sc_core::wait(control_work_);
    wait_edge();
    if (!fatal_events_.empty()) {
      DeviceEvent ev = fatal_events_.front();
      fatal_events_.pop_front();
      m_event.push_held(ev);
    } else if (!flush_queue_.empty()) {
      const uint32_t qpn = flush_queue_.front();
      flush_queue_.pop_front();
      if (rt_[qpn].flush_pending) flush(qpn);
    } else if (!fetch_queue_.empty()) {
      const uint32_t qpn = fetch_queue_.front();
      fetch_queue_.pop_front();
      rt_[qpn].in_fetch_queue = false;
      if (fetch_sq(qpn)) want_fetch(qpn);  // more to fetch: back of the line
    }
  }
}

bool TransportEngine::fetch_sq(uint32_t qpn) {
  if (!tables_.qp_exists(qpn)) return false;
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  if (q.state != QpState::rts && q.state != QpState::sqd) return false;
  const uint32_t ahead = uint32_t(rt.sq.size() - std::min(rt.cursor, rt.sq.size()));
  if (rt.sq_pi == rt.sq_fetched || ahead >= cfg_.prefetch_depth) return false;
  const uint16_t first = rt.sq_fetched;
  ++stats_.wqe_fetches;
  std::vector<SendWqe> burst;
  if (!read_sq_burst(qpn, cfg_.prefetch_depth - ahead, burst)) return false;
  const uint32_t n = uint32_t(burst.size());
  for (SendWqe& w : burst) rt.sq.push_back(std::move(w));
  stats_.wqes_fetched += n;
  log::write(log::Cat::wq, "QP {:#x}: fetched SQ WQEs {}..{}", qpn, first, uint16_t(first + n - 1));
  if (tables_.qps[qpn].state == QpState::err || tables_.qps[qpn].state == QpState::sqe) {
    rt.flush_pending = true;
    flush_queue_.push_back(qpn);
    return false;
  }
  want_tx(qpn);
  return rt.sq_fetched != rt.sq_pi;
}

bool TransportEngine::read_sq_burst(uint32_t qpn, uint32_t limit, std::vector<SendWqe>& out) {
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  const uint32_t depth = 1u << q.log_sq_size;
  const uint32_t slot = rt.sq_fetched & (depth - 1);
  const uint32_t n = std::min({uint32_t(uint16_t(rt.sq_pi - rt.sq_fetched)), cfg_.fetch_burst, limit, depth - slot});
  std::vector<uint8_t> buf(size_t(n) * sqwqe::kSize);
  const uint32_t gen = rt.gen;
  const uint16_t first = rt.sq_fetched;
  const bool ok = dma_.read_now(q.sq_base + uint64_t(slot) * sqwqe::kSize, buf.data(), uint32_t(buf.size()), false);
  if (rt.gen != gen || first != rt.sq_fetched) return false;  // reset, destroyed or flushed meanwhile
  out.clear();
  for (uint32_t i = 0; i < n; ++i) {
    out.push_back(decode_send(buf.data() + size_t(i) * sqwqe::kSize, uint16_t(first + i), q.type));
    if (!ok) out.back().decode_error = syndrome::kLocalQpOp;
  }
  rt.sq_fetched = uint16_t(first + n);
  return true;
}

bool TransportEngine::fetch_rq(uint32_t qpn) {
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  const uint32_t depth = 1u << q.log_rq_size;
  const uint16_t pending = uint16_t(rt.rq_pi - rt.rq_fetched);
  if (pending == 0) return false;
  const uint32_t slot = rt.rq_fetched & (depth - 1);
  const uint32_t n = std::min({uint32_t(pending), cfg_.fetch_burst, depth - slot});
  std::vector<uint8_t> buf(size_t(n) * rqwqe::kSize);
  const uint32_t gen = rt.gen;
  const uint16_t first = rt.rq_fetched;
  ++stats_.rq_fetches;
  const bool ok = dma_.read_now(q.rq_base + uint64_t(slot) * rqwqe::kSize, buf.data(), uint32_t(buf.size()), false);
  if (rt.gen != gen || first != rt.rq_fetched) return false;
  for (uint32_t i = 0; i < n; ++i) {
    RecvWqe w = decode_recv(buf.data() + size_t(i) * rqwqe::kSize, uint16_t(first + i));
    if (!ok) w.decode_error = syndrome::kLocalQpOp;
    rt.rq.push_back(std::move(w));
  }
  rt.rq_fetched = uint16_t(first + n);
  log::write(log::Cat::wq, "QP {:#x}: fetched RQ WQEs {}..{}", qpn, first, uint16_t(first + n - 1));
  return true;
}

// Reads the RQ producer counter from the QP's doorbell record; false if the read failed or the
// value is impossible.
bool TransportEngine::refresh_rq_pi(uint32_t qpn) {
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  uint8_t buf[qpdbr::kSize] = {};
  const uint32_t gen = rt.gen;
  ++stats_.dbr_reads;
  if (!dma_.read_now(q.dbr, buf, qpdbr::kSize, false) || rt.gen != gen) return false;
  const uint16_t pi = uint16_t(get_field(buf, qpdbr::rq_pi));
  if (uint16_t(pi - rt.rq_fetched) > (1u << q.log_rq_size)) {
    log::error("QP {:#x}: doorbell record RQ counter {} is more than the ring past {}", qpn, pi, rt.rq_fetched);
    return false;
  }
  rt.rq_pi = pi;
  return true;
}

// The data segment of either WQE: `n` scatter/gather entries; returns their total length.
static uint32_t read_sges(const uint8_t* at, uint32_t n, std::vector<TransportEngine::Sge>& out) {
  uint32_t total = 0;
  for (uint32_t i = 0; i < n; ++i, at += sge::kSize) {
    out.push_back({get_field(at, sge::addr), uint32_t(get_field(at, sge::length)), uint32_t(get_field(at, sge::lkey))});
    total += out.back().length;
  }
  return total;
}

TransportEngine::SendWqe TransportEngine::decode_send(const uint8_t* b, uint16_t index, QpType type) const {
  SendWqe w;
  w.index = index;
  w.wr_id = get_field(b, sqwqe::wr_id);
  w.opcode = uint8_t(get_field(b, sqwqe::opcode));
  w.signaled = get_field(b, sqwqe::signaled);
  w.solicited = get_field(b, sqwqe::solicited);
  w.fence = get_field(b, sqwqe::fence);
  w.is_inline = get_field(b, sqwqe::inline_data);
  w.imm = uint32_t(get_field(b, sqwqe::imm));
  w.remote_addr = get_field(b, sqwqe::remote_addr);
  w.rkey = uint32_t(get_field(b, sqwqe::rkey));
  w.compare_add = get_field(b, sqwqe::compare_add);
  w.swap = get_field(b, sqwqe::swap);
  w.ud_dest_qpn = uint32_t(get_field(b, sqwqe::ud_dest_qpn));
  w.ud_qkey = uint32_t(get_field(b, sqwqe::ud_qkey));
  w.ud_dlid = uint16_t(get_field(b, sqwqe::ud_dlid));
  w.ud_sl = uint8_t(get_field(b, sqwqe::ud_sl));
  w.ud_grh = get_field(b, sqwqe::ud_grh);
  const uint32_t num_sge = uint32_t(get_field(b, sqwqe::num_sge));
  const uint32_t inline_len = uint32_t(get_field(b, sqwqe::inline_len));
  const bool rc = type == QpType::rc;
  const bool known = w.opcode == sqwqe::kSend || w.opcode == sqwqe::kSendImm ||
                     (rc && (w.opcode == sqwqe::kRdmaWrite || w.opcode == sqwqe::kRdmaWriteImm ||
                             w.opcode == sqwqe::kRdmaRead || w.opcode == sqwqe::kAtomicCs ||
                             w.opcode == sqwqe::kAtomicFa));
  if (!known || uint16_t(get_field(b, sqwqe::wqe_index)) != index ||
      (w.is_inline ? inline_len > sqwqe::kMaxInline : num_sge > sqwqe::kMaxSge) ||
      (w.is_inline && w.is_read_or_atomic())) {
    w.decode_error = syndrome::kLocalQpOp;
    return w;
  }
  if (w.is_inline) {
    w.inline_data.assign(b + sqwqe::kDataOffset, b + sqwqe::kDataOffset + inline_len);
    w.length = inline_len;
  } else {
    w.length = read_sges(b + sqwqe::kDataOffset, num_sge, w.sges);
  }
  if ((w.opcode == sqwqe::kAtomicCs || w.opcode == sqwqe::kAtomicFa) && w.length != 8)
    w.decode_error = syndrome::kLocalLength;
  return w;
}

TransportEngine::RecvWqe TransportEngine::decode_recv(const uint8_t* b, uint16_t index) const {
  RecvWqe w;
  w.index = index;
  w.wr_id = get_field(b, rqwqe::wr_id);
  const uint32_t num_sge = uint32_t(get_field(b, rqwqe::num_sge));
  if (num_sge > rqwqe::kMaxSge || uint16_t(get_field(b, rqwqe::wqe_index)) != index) {
    w.decode_error = syndrome::kLocalQpOp;
    return w;
  }
  w.capacity = read_sges(b + rqwqe::kDataOffset, num_sge, w.sges);
  return w;
}

bool TransportEngine::mr_allows(uint32_t pdn, uint32_t key, uint64_t addr, uint64_t len, uint32_t access) const {
  if (len == 0) return true;  // a zero-length access touches no memory (IB: no key check)
  const uint32_t index = key >> 8;
  if (index >= tables_.mrs.size()) return false;
  const MrContext& m = tables_.mrs[index];
  if (!m.valid || m.key != key || m.pdn != pdn) return false;
  if (addr < m.start || addr + len < addr || addr + len > m.start + m.length) return false;
  return (m.access & access) == access;
}

bool TransportEngine::sges_allowed(uint32_t pdn, const std::vector<Sge>& sges, uint32_t access) const {
  for (const Sge& s : sges)
    if (!mr_allows(pdn, s.lkey, s.addr, s.length, access)) return false;
  return true;
}

// Calls visit(address, bytes, position in the data) for each piece of [offset, offset+len) of
// the buffer an SGE list describes.
template <typename Visit>
static void for_each_piece(const std::vector<TransportEngine::Sge>& sges, uint32_t offset, uint32_t len, Visit visit) {
  uint32_t done = 0;
  for (const auto& s : sges) {
    if (done == len) break;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const uint32_t n = std::min(len - done, s.length - offset);
    visit(s.addr + offset, n, done);
    done += n;
    offset = 0;
  }
}

bool TransportEngine::gather(const std::vector<Sge>& sges, uint32_t offset, uint32_t len, uint8_t* out) {
  bool ok = true;
  for_each_piece(sges, offset, len, [&](uint64_t addr, uint32_t n, uint32_t at) {
    ok = dma_.read_now(addr, out + at, n, false) && ok;
  });
  return ok;
}

void TransportEngine::scatter(const std::vector<Sge>& sges, uint32_t offset, const uint8_t* data, uint32_t len) {
  for_each_piece(sges, offset, len, [&](uint64_t addr, uint32_t n, uint32_t at) { dma_write(addr, data + at, n); });
}

// Payload writes join the ordered DMA write queue, so a CQE queued later can never pass them.
void TransportEngine::dma_write(uint64_t addr, const uint8_t* data, uint32_t len) {
  constexpr uint32_t kChunk = 4096;
  while (len > 0) {
    const uint32_t n = std::min(len, kChunk);
    DmaWrite w;
    w.addr = addr;
    w.len = n;
    w.bulk.assign(data, data + n);
    w.source = DmaSource::other;
    dma_.write_blocking(std::move(w));
    addr += n;
    data += n;
    len -= n;
  }
}

void TransportEngine::emit_completion(const CompletionRecord& r) {
  ++stats_.completions;
  if (r.syndrome == syndrome::kWrFlush) ++stats_.flushed;
  log::write(log::Cat::wq, "QP {:#x} {} completion wr_id {:#x} status {:#x} -> CQ {}", r.qpn,
             r.is_send ? "send" : "recv", r.wr_id, r.syndrome, r.cqn);
  // Held while the CQ writer's input is full: the completing thread (receive, transmit or
  // control) stalls, and with it what it serves.
  while (!m_cpl->try_put(r)) sc_core::wait(m_cpl->space_event());
}

CompletionRecord TransportEngine::send_completion(const QpContext& q, uint32_t qpn, const SendWqe& w,
                                                  uint8_t status) const {
  CompletionRecord r;
  r.cqn = q.send_cqn;
  r.is_send = true;
  r.opcode = cqe::kReq;
  r.send_opcode = w.opcode;
  r.syndrome = status;
  r.wr_id = w.wr_id;
  r.byte_cnt = w.length;
  r.qpn = qpn;
  r.wqe_counter = w.index;
  return r;
}

CompletionRecord TransportEngine::recv_completion(const QpContext& q, uint32_t qpn, const RecvWqe& w) const {
  CompletionRecord r;
  r.cqn = q.recv_cqn;
  r.is_send = false;
  r.opcode = cqe::kRespSend;
  r.wr_id = w.wr_id;
  r.qpn = qpn;
  r.wqe_counter = w.index;
  if (q.type == QpType::gsi) r.pkey_index = q.pkey_index;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Errors and flushes.

void TransportEngine::enter_error(uint32_t qpn, QpState state) {
  QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  if (q.state != QpState::err && q.state != state) {
    log::write(log::Cat::wq, "QP {:#x}: {} -> {}", qpn, qp_state_name(q.state), qp_state_name(state));
    q.state = state;
    ++stats_.qp_errors;
  }
  rt.timer_deadline = 0;
  rt.rnr_until = 0;
  rt.flush_pending = true;
  flush_queue_.push_back(qpn);
  kick_control();
}

// Every outstanding WQE of a QP in error completes with WR flush, in posting order per queue:
// first those the device holds, then the rest of each ring up to its producer counter. In the
// send-queue-error state (UD) only the SQ flushes; the RQ goes on receiving.
void TransportEngine::flush(uint32_t qpn) {
  if (!tables_.qp_exists(qpn)) return;
  const QpState state = tables_.qps[qpn].state;
  if (state != QpState::err && state != QpState::sqe) return;
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  const uint32_t gen = rt.gen;
  rt.flush_pending = false;
  while (!rt.sq.empty()) {
    SendWqe w = std::move(rt.sq.front());
    rt.sq.pop_front();
    emit_completion(send_completion(q, qpn, w, w.status ? w.status : syndrome::kWrFlush));
  }
  rt.cursor = rt.cursor_pkt = 0;
  std::vector<SendWqe> burst;
  while (rt.sq_fetched != rt.sq_pi) {  // the WQEs posted and never fetched flush too
    if (rt.gen != gen || !read_sq_burst(qpn, UINT32_MAX, burst)) return;
    for (const SendWqe& w : burst) emit_completion(send_completion(q, qpn, w, syndrome::kWrFlush));
  }
  if (state == QpState::sqe) return;
  rt.in_send = false;
  for (;;) {
    while (!rt.rq.empty()) {
      RecvWqe w = std::move(rt.rq.front());
      rt.rq.pop_front();
      CompletionRecord r = recv_completion(q, qpn, w);
      r.syndrome = syndrome::kWrFlush;
      emit_completion(r);
    }
    if (rt.rq_fetched == rt.rq_pi && !(refresh_rq_pi(qpn) && rt.rq_fetched != rt.rq_pi)) break;
    if (rt.gen != gen || !fetch_rq(qpn)) return;
  }
}

void TransportEngine::qp_state_changed(uint32_t qpn, QpState from, QpState to) {
  QpRuntime& rt = rt_[qpn];
  const QpContext& q = tables_.qps[qpn];
  if (to == QpState::reset || !q.valid) {
    const uint32_t gen = rt.gen + 1;
    rt = QpRuntime{};
    rt.gen = gen;
    return;  // its timers' deadlines went stale with the fields
  }
  if (to == QpState::rtr && from == QpState::init) {
    rt.epsn = q.rq_psn;
    if (rt.live_seq == 0) rt.live_seq = ++live_count_;
  }
  if (to == QpState::rts && from == QpState::rtr) {
    rt.next_psn = rt.una_psn = q.sq_psn;
    rt.retry_left = q.retry_cnt;
    rt.rnr_left = q.rnr_retry;
  }
  if (to == QpState::rts) {
    rt.halted = false;  // SQE -> RTS: the send queue runs again
    want_fetch(qpn);
    want_tx(qpn);
  }
  if (to == QpState::sqd) {
    rt.drain_pending = true;
    check_drained(qpn);
  }
  if (to == QpState::err) enter_error(qpn);
}

// SQD: once no WQE that had started is still outstanding, the SQ drained event goes out (once).
void TransportEngine::check_drained(uint32_t qpn) {
  QpRuntime& rt = rt_[qpn];
  if (!rt.drain_pending || tables_.qps[qpn].state != QpState::sqd) return;
  for (const SendWqe& w : rt.sq)
    if (w.started) return;
  rt.drain_pending = false;
  fatal_events_.push_back(DeviceEvent{eqe::kSqDrained, 0, 0, 0, qpn});
  kick_control();
}

void TransportEngine::cq_overflowed(uint32_t cqn) {
  for (uint32_t qpn = 0; qpn < tables_.qps.size(); ++qpn) {
    const QpContext& q = tables_.qps[qpn];
    if (!q.valid || (q.send_cqn != cqn && q.recv_cqn != cqn)) continue;
    if (q.state == QpState::reset || q.state == QpState::err) continue;
    log::error("QP {:#x}: its CQ {} overflowed: QP enters the error state", qpn, cqn);
    fatal_events_.push_back(DeviceEvent{eqe::kQpFatal, 0, cqn, eqe::kQpCqOverrun, qpn});
    enter_error(qpn);
  }
}

void TransportEngine::reset() {
  for (auto& rt : rt_) {
    const uint32_t gen = rt.gen + 1;
    rt = QpRuntime{};
    rt.gen = gen;
  }
  tx_ring_.clear();
  ack_queue_.clear();
  responses_.clear();
  // Built packets whose reads are in flight stay until their workers finish; their QPs' new
  // generation makes them stale.
  fetch_queue_.clear();
  flush_queue_.clear();
  fatal_events_.clear();
  rx_fifo_.clear();
  deadlines_ = {};
  s_doorbell->clear();
  doorbell_free_ = 0;
}

}  // namespace vhca
