#include "model/transport/requester.h"

#include <algorithm>
#include <cstring>

#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {
namespace {

// IB local ACK timeout: 4.096 us * 2^timeout; 0 means infinite.
double ack_timeout_ns(uint8_t timeout) { return timeout ? 4096.0 * double(uint64_t(1) << timeout) : 0.0; }

// IB minimum RNR NAK timer field (table 45), in microseconds.
double rnr_timer_us(uint8_t field) {
  static const double us[32] = {655360, 10,    20,    30,    40,    60,    80,    120,    160,    240,   320,
                                480,    640,   960,   1280,  1920,  2560,  3840,  5120,   7680,   10240, 15360,
                                20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return us[field & 31];
}

uint8_t nak_syndrome(uint8_t code) {
  switch (code) {
    case kNakInvalidRequest: return syndrome::kRemoteInvalidRequest;
    case kNakRemoteAccess: return syndrome::kRemoteAccess;
    default: return syndrome::kRemoteOp;
  }
}

}  // namespace

Requester::Requester(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
                     QpTables& tables, TransportTimers& timers, DmaEngine& dma,
                     sc_core::sc_port<CompletionPutIf>& completions, TransportStats& stats)
    : sc_module(name),
      clock_(clock),
      cfg_(cfg),
      tables_(tables),
      timers_(timers),
      stats_(stats),
      outbox_("outbox", clock, cfg.outbox_depth, dma, completions, stats, 0),
      qps_(tables.qps.size()) {
  outbox_.on_empty.add([this] { pump_completions(); });
}

// ---------------------------------------------------------------------------------------------
// The send queue: WQEs arrive from the fetch, leave in posting order.

void Requester::deliver(uint32_t qpn, std::vector<SendWqe>& burst) {
  for (SendWqe& w : burst) qps_[qpn].sq.push_back(std::move(w));
  const QpState state = tables_.qps[qpn].state;
  if (state != QpState::err && state != QpState::sqe) want_tx(qpn);  // else the flush takes them
}

uint32_t Requester::unstarted(uint32_t qpn) const {
  const SendState& s = qps_[qpn];
  return uint32_t(s.sq.size() - std::min(s.cursor, s.sq.size()));
}

void Requester::want_tx(uint32_t qpn) {
  SendState& s = qps_[qpn];
  if (s.in_tx_ring || s.cursor >= s.sq.size()) return;
  s.in_tx_ring = true;
  tx_ring_.push_back(qpn);
  on_tx_work();
}

CompletionRecord Requester::completion(const QpContext& q, uint32_t qpn, const SendWqe& w, uint8_t status) const {
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

void Requester::flush_held(uint32_t qpn) {
  SendState& s = qps_[qpn];
  for (SendWqe& w : s.sq) {
    if (!w.status) w.status = syndrome::kWrFlush;
    w.done = true;
  }
  s.flushing = true;
  s.cursor = s.cursor_pkt = 0;
  complete_ready(qpn);
}

void Requester::flush_unfetched(uint32_t qpn, std::vector<SendWqe>& wqes) {
  SendState& s = qps_[qpn];
  for (SendWqe& w : wqes) {
    w.status = syndrome::kWrFlush;
    w.done = true;
    s.sq.push_back(std::move(w));
  }
  s.flushing = true;
  complete_ready(qpn);
}

// ---------------------------------------------------------------------------------------------
// Building requests.

bool Requester::can_send(uint32_t qpn) {
  if (!tables_.qp_exists(qpn)) return false;
  const QpContext& q = tables_.qps[qpn];
  SendState& s = qps_[qpn];
  if (s.halted || s.cursor >= s.sq.size()) return false;
  const SendWqe& w = s.sq[s.cursor];
  if (q.state != QpState::rts && !(q.state == QpState::sqd && w.started)) return false;
  const uint64_t rnr_until = timers_.deadline(qpn, TimerKind::rnr);
  if (rnr_until && clock_.now() < rnr_until) return false;
  if (q.type != QpType::rc) return true;
  if (!w.started) {
    // Reads and atomics outstanding ahead of it: only a fenced WQE or a read / atomic asks (the
    // walk is as long as the WQEs not yet acknowledged).
    if (w.fence || w.is_read_or_atomic()) {
      uint32_t reads = 0;
      for (size_t i = 0; i < s.cursor; ++i)
        if (s.sq[i].is_read_or_atomic() && !s.sq[i].done) ++reads;
      if (w.fence && reads > 0) return false;
      if (w.is_read_or_atomic() && reads >= std::max<uint32_t>(1, q.max_rd_atomic)) return false;
    }
    if (psn_diff(s.next_psn, s.una_psn) >= int32_t(cfg_.max_inflight_psns)) return false;
  }
  return true;
}

// Assigns the WQE its PSNs and checks its local buffers against their MRs.
void Requester::start_wqe(const QpContext& q, SendState& s, SendWqe& w) {
  w.started = true;
  const uint32_t mtu = path_mtu_bytes(q);
  w.npkts = w.opcode == sqwqe::kAtomicCs || w.opcode == sqwqe::kAtomicFa ? 1
                                                                         : std::max<uint32_t>(1, (w.length + mtu - 1) / mtu);
  if (!is_connected(q.type)) w.npkts = 1;
  w.first_psn = s.next_psn;
  s.next_psn = psn_add(s.next_psn, w.npkts);
  if (w.decode_error) {
    w.status = w.decode_error;
  } else if (!is_connected(q.type) && w.length > mtu) {
    w.status = syndrome::kLocalLength;  // a UD message is one packet
  } else if (!w.is_inline) {
    const uint32_t access = w.is_read_or_atomic() ? kAccessLocalWrite : 0;
    if (!check_and_translate(tables_, q.pdn, w.sges, access)) w.status = syndrome::kLocalProtection;
  }
}

bool Requester::build_next(std::unique_ptr<PendingTx>& out, PendingTxPool& jobs) {
  for (size_t tries = tx_ring_.size(); tries > 0 && !tx_ring_.empty(); --tries) {
    const uint32_t qpn = tx_ring_.front();
    tx_ring_.pop_front();
    qps_[qpn].in_tx_ring = false;
    if (!can_send(qpn)) continue;  // re-entered by whatever unblocks it (ACK, fetch, timer)
    const QpContext& q = tables_.qps[qpn];
    SendState& s = qps_[qpn];
    SendWqe& w = s.sq[s.cursor];
    if (!w.started) start_wqe(q, s, w);
    if (w.status) {
      // A local error: nothing is sent; the WQE completes in error in its turn and the QP stops.
      w.done = true;
      s.halted = true;
      ++s.cursor;
      complete_ready(qpn);
      return true;
    }
    out = jobs.take();
    out->qpn = qpn;
    out->gen = s.gen;
    out->epoch = s.tx_epoch;
    out->wqe_index = w.index;
    const bool datagram = !is_connected(q.type);
    const bool last_pkt = w.is_read_or_atomic() || datagram || s.cursor_pkt + 1 == w.npkts;
    out->completes_when_sent = q.type != QpType::rc && last_pkt;
    out->ready = !build_request(qpn, q, s, w, *out);
    if (w.is_read_or_atomic() || datagram || ++s.cursor_pkt == w.npkts) {
      ++s.cursor;
      s.cursor_pkt = 0;
    }
    want_tx(qpn);
    on_fetch_wanted(qpn);
    return true;
  }
  return false;
}

// Fills in the packet's headers; inline data is copied at once. Returns whether its payload must
// still be read from host memory (the gather spec is left in `out`).
bool Requester::build_request(uint32_t qpn, const QpContext& q, SendState& s, const SendWqe& w, PendingTx& out) {
  IbPacket& p = out.packet;
  const bool connected = is_connected(q.type);
  const uint32_t mtu = path_mtu_bytes(q);
  p.slid = cfg_.lid;
  p.dlid = q.dlid;
  p.dest_qpn = connected ? q.dest_qpn : w.ud_dest_qpn;
  p.uc = q.type == QpType::uc;
  p.psn = psn_add(w.first_psn, s.cursor_pkt);
  if (w.is_read_or_atomic()) {
    p.op = w.opcode == sqwqe::kRdmaRead ? IbOp::read_request
           : w.opcode == sqwqe::kAtomicCs ? IbOp::cmp_swap
                                          : IbOp::fetch_add;
    p.psn = w.first_psn;
    p.va = w.remote_addr;
    p.rkey = w.rkey;
    p.dma_len = w.length;
    p.compare_add = w.compare_add;
    p.swap = w.swap;
    p.ack_req = true;
    return false;
  }
  const uint32_t k = connected ? s.cursor_pkt : 0;
  const uint32_t offset = k * mtu;
  const uint32_t n = std::min(mtu, w.length - std::min(w.length, offset));
  const bool first = k == 0, last = k + 1 >= w.npkts;
  p.payload.resize(n);
  bool needs_read = false;
  if (w.is_inline) {
    if (n > 0) std::memcpy(p.payload.data(), w.inline_data.data() + offset, n);  // none: both may be null
  } else if (n > 0) {
    out.sges = w.sges;
    out.offset = offset;
    needs_read = true;
  }
  const bool with_imm = w.opcode == sqwqe::kSendImm || w.opcode == sqwqe::kRdmaWriteImm;
  if (last) {
    p.has_imm = with_imm;
    p.imm = w.imm;
    p.se = w.solicited && w.opcode != sqwqe::kRdmaWrite;
    p.ack_req = q.type == QpType::rc;  // UD's is ignored; UC has no ACKs
  }
  if (!connected) {
    p.op = IbOp::ud_send;
    p.psn = s.ud_psn;
    s.ud_psn = psn_add(s.ud_psn, 1);
    p.qkey = (w.ud_qkey & 0x80000000u) ? q.qkey : w.ud_qkey;
    p.src_qpn = qpn;
    p.dlid = w.ud_dlid;
    p.sl = w.ud_sl;
    p.grh = w.ud_grh;
    return needs_read;
  }
  const bool write = w.opcode == sqwqe::kRdmaWrite || w.opcode == sqwqe::kRdmaWriteImm;
  if (write) {
    p.op = first && last ? IbOp::write_only : first ? IbOp::write_first : last ? IbOp::write_last : IbOp::write_middle;
    if (first) {
      p.va = w.remote_addr;
      p.rkey = w.rkey;
      p.dma_len = w.length;
    }
  } else {
    p.op = first && last ? IbOp::send_only : first ? IbOp::send_first : last ? IbOp::send_last : IbOp::send_middle;
  }
  return needs_read;
}

bool Requester::may_send(const PendingTx& job) {
  if (!tables_.qp_exists(job.qpn) || qps_[job.qpn].gen != job.gen) return false;
  SendState& s = qps_[job.qpn];
  const QpContext& q = tables_.qps[job.qpn];
  if (job.epoch != s.tx_epoch || (q.state != QpState::rts && q.state != QpState::sqd)) return false;  // rewound or broken
  if (!job.ok) {
    for (SendWqe& w : s.sq)
      if (w.index == job.wqe_index && !w.done) {
        w.status = syndrome::kLocalAccess;  // host memory failed under the gather
        w.done = true;
      }
    s.halted = true;
    complete_ready(job.qpn);
    return false;
  }
  return true;
}

bool Requester::sent(const PendingTx& job) {
  if (qps_[job.qpn].gen != job.gen) return false;
  if (job.completes_when_sent) return true;
  if (tables_.qps[job.qpn].type == QpType::rc) arm_retransmit_timer(job.qpn, tables_.qps[job.qpn], false);
  return false;
}

// S18: a UD SEND completes once it has left the port; a UC message once its last packet has.
void Requester::left_port(const PendingTx& job) {
  SendState& s = qps_[job.qpn];
  if (s.gen != job.gen) return;
  for (SendWqe& w : s.sq)
    if (w.index == job.wqe_index) w.done = true;
  complete_ready(job.qpn);
}

// ---------------------------------------------------------------------------------------------
// Timers: the retransmit timer and RNR waits.

void Requester::arm_retransmit_timer(uint32_t qpn, const QpContext& q, bool restart) {
  const double ns = ack_timeout_ns(q.timeout);
  if (ns == 0.0) return;
  if (restart || timers_.deadline(qpn, TimerKind::retransmit) == 0)
    timers_.set(qpn, TimerKind::retransmit, clock_.now() + clock_.cycles_from_ns(ns));
}

bool Requester::outstanding(const SendState& s) const {
  for (const SendWqe& w : s.sq)
    if (w.started && !w.done) return true;
  return false;
}

void Requester::timer_expired(uint32_t qpn, TimerKind kind) {
  if (kind == TimerKind::rnr) want_tx(qpn);
  if (kind == TimerKind::retransmit) retransmit_timeout(qpn);
}

void Requester::retransmit_timeout(uint32_t qpn) {
  SendState& s = qps_[qpn];
  if (!outstanding(s) || !tables_.qp_exists(qpn) || tables_.qps[qpn].state == QpState::err) return;
  ++stats_.timeouts;
  uint32_t psn = s.una_psn;
  for (const SendWqe& w : s.sq)
    if (w.started && !w.done) {
      psn = w.is_read_or_atomic() || psn_diff(s.una_psn, w.first_psn) < 0 ? w.first_psn : s.una_psn;
      break;
    }
  log::write(log::Cat::wq, "QP {:#x}: retransmit timeout at psn {:#x} ({} retries left)", qpn, psn, s.retry_left);
  if (s.retry_left == 0) {
    fail_wqe_at(qpn, psn, syndrome::kRetryExceeded);
    return;
  }
  --s.retry_left;
  go_back(qpn, psn);  // the retransmission starts the timer again
}

// ---------------------------------------------------------------------------------------------
// What comes back: ACK, NAK, RNR NAK, READ responses, atomic ACKs.

// The WQE whose PSN range holds `psn`, or -1.
long Requester::wqe_at(const SendState& s, uint32_t psn) const {
  for (size_t i = 0; i < s.sq.size(); ++i) {
    const SendWqe& w = s.sq[i];
    if (!w.started) break;
    const int32_t d = psn_diff(psn, w.first_psn);
    if (d >= 0 && d < int32_t(w.npkts)) return long(i);
  }
  return -1;
}

void Requester::receive(IbPacket& p) {
  const uint32_t qpn = p.dest_qpn;
  if (!tables_.qp_exists(qpn) || tables_.qps[qpn].type != QpType::rc) {
    ++stats_.dropped_no_qp;
    return;
  }
  const QpContext& q = tables_.qps[qpn];
  SendState& s = qps_[qpn];
  if (q.state != QpState::rts && q.state != QpState::sqd) return;  // a QP in error ignores responses
  if (p.op == IbOp::ack) {
    ++stats_.acks_received;
    on_ack_received(qpn, p.psn, clock_.now());
    if (p.ack_kind == AckKind::ack) {
      ack_through(qpn, p.psn);
    } else if (p.ack_kind == AckKind::rnr_nak) {
      ack_through(qpn, psn_add(p.psn, -1));
      if (wqe_at(s, p.psn) < 0) return;
      if (s.rnr_left == 0) {
        fail_wqe_at(qpn, p.psn, syndrome::kRnrRetryExceeded);
        return;
      }
      if (q.rnr_retry != 7) --s.rnr_left;  // 7: retry for ever
      ++stats_.rnr_retries;
      timers_.set(qpn, TimerKind::rnr, clock_.now() + clock_.cycles_from_ns(rnr_timer_us(p.ack_code) * 1000.0));
      go_back(qpn, p.psn);
    } else {
      ack_through(qpn, psn_add(p.psn, -1));
      if (p.ack_code == kNakPsnSeqError) {
        if (s.retry_left == 0) {
          fail_wqe_at(qpn, p.psn, syndrome::kRetryExceeded);
          return;
        }
        --s.retry_left;
        go_back(qpn, p.psn);
      } else {
        fail_wqe_at(qpn, p.psn, nak_syndrome(p.ack_code));
      }
    }
    return;
  }
  const long i = wqe_at(s, p.psn);
  const bool is_read_resp = p.op != IbOp::atomic_ack;
  if (i < 0) {
    // A response to nothing outstanding: a late duplicate if it is behind us, else bad.
    if (psn_diff(p.psn, s.una_psn) >= 0 && psn_diff(p.psn, s.next_psn) < 0)
      fail_wqe_at(qpn, s.una_psn, syndrome::kBadResponse);
    return;
  }
  SendWqe& w = s.sq[size_t(i)];
  const bool expects_read = w.opcode == sqwqe::kRdmaRead;
  const bool expects_atomic = w.opcode == sqwqe::kAtomicCs || w.opcode == sqwqe::kAtomicFa;
  if ((is_read_resp && !expects_read) || (!is_read_resp && !expects_atomic)) {
    fail_wqe_at(qpn, p.psn, syndrome::kBadResponse);
    return;
  }
  if (w.done) return;  // duplicate
  ack_through(qpn, psn_add(w.first_psn, -1));
  if (!is_read_resp) {
    uint8_t orig[8];
    for (int b = 0; b < 8; ++b) orig[b] = uint8_t(p.atomic_orig >> (8 * b));  // little-endian host memory
    scatter(w.sges, 0, orig, 8);
    w.done = true;
  } else {
    const uint32_t k = uint32_t(psn_diff(p.psn, w.first_psn));
    if (k != w.resp_pkts) return;  // out of order after a loss: the timer retries the READ
    const uint32_t mtu = path_mtu_bytes(q);
    const uint32_t expect_len = std::min(mtu, w.length - std::min(w.length, k * mtu));
    const IbOp expect_op = w.npkts == 1 ? IbOp::read_resp_only
                           : k == 0     ? IbOp::read_resp_first
                           : k + 1 == w.npkts ? IbOp::read_resp_last
                                              : IbOp::read_resp_middle;
    if (p.op != expect_op || p.payload.size() != expect_len) {
      fail_wqe_at(qpn, p.psn, syndrome::kBadResponse);
      return;
    }
    scatter(w.sges, k * mtu, p.payload.data(), expect_len);
    if (++w.resp_pkts == w.npkts) w.done = true;
  }
  if (w.done) {
    // The whole response is in: it acknowledges the READ or atomic itself, so that a late copy of
    // it (answering a repeated request) is behind us and ignored, not a bad response.
    ack_through(qpn, psn_add(w.first_psn, w.npkts - 1));
    return;
  }
  s.retry_left = q.retry_cnt;
  arm_retransmit_timer(qpn, q, true);
  complete_ready(qpn);
  want_tx(qpn);
}

void Requester::scatter(const SgeList& sges, uint32_t offset, const uint8_t* data, uint32_t len) {
  for_each_piece(sges, offset, len, [&](uint64_t addr, uint32_t n, uint32_t at) { outbox_.write(addr, data + at, n); });
}

// An ACK (or the implicit ACK of a NAK or response) covers every PSN up to `psn`.
void Requester::ack_through(uint32_t qpn, uint32_t psn) {
  const QpContext& q = tables_.qps[qpn];
  SendState& s = qps_[qpn];
  if (psn_diff(psn, s.una_psn) < 0 || psn_diff(psn, s.next_psn) >= 0) return;  // old or beyond: ignore
  uint32_t covered = psn;
  bool response_lost = false;
  for (SendWqe& w : s.sq) {
    if (!w.started) break;
    const uint32_t last = psn_add(w.first_psn, w.npkts - 1);
    if (psn_diff(last, psn) > 0) break;
    if (w.is_read_or_atomic()) {
      if (!w.done) {
        // Later PSNs are acknowledged but this response never came: it was lost. Only what
        // precedes it is acknowledged: it goes again, and so do the WQEs behind it, which the
        // responder answers as duplicates (were they taken as acknowledged here, nothing would
        // ever complete them: found by vhca-sim soak).
        covered = psn_add(w.first_psn, -1);
        response_lost = true;
        break;
      }
      continue;
    }
    w.done = true;
  }
  s.una_psn = psn_add(covered, 1);
  if (response_lost) go_back(qpn, s.una_psn);
  s.retry_left = q.retry_cnt;
  s.rnr_left = q.rnr_retry;
  if (outstanding(s))
    arm_retransmit_timer(qpn, q, true);
  else
    timers_.stop(qpn, TimerKind::retransmit);
  complete_ready(qpn);
  want_tx(qpn);
}

void Requester::go_back(uint32_t qpn, uint32_t psn) {
  SendState& s = qps_[qpn];
  const long i = wqe_at(s, psn);
  if (i < 0) return;
  SendWqe& w = s.sq[size_t(i)];
  ++stats_.retransmits;
  ++s.tx_epoch;  // packets built before this are dropped, not sent out of order
  s.cursor = size_t(i);
  if (w.is_read_or_atomic()) {
    s.cursor_pkt = 0;
    w.resp_pkts = 0;
  } else {
    s.cursor_pkt = uint32_t(psn_diff(psn, w.first_psn));
  }
  log::write(log::Cat::wq, "QP {:#x}: go back to psn {:#x} (WQE {})", qpn, psn, w.index);
  want_tx(qpn);
}

void Requester::fail_wqe_at(uint32_t qpn, uint32_t psn, uint8_t syn) {
  SendState& s = qps_[qpn];
  long i = wqe_at(s, psn);
  if (i < 0) i = 0;
  if (s.sq.empty()) return;
  SendWqe& w = s.sq[size_t(i)];
  log::write(log::Cat::wq, "QP {:#x}: WQE {} fails with syndrome {:#x}", qpn, w.index, syn);
  w.status = syn;
  w.done = true;
  s.halted = true;
  timers_.stop(qpn, TimerKind::retransmit);
  // Earlier WQEs not yet done can no longer complete normally: they flush after this error.
  complete_ready(qpn);
  if (!s.sq.empty() && tables_.qps[qpn].state != QpState::err) {
    // The failed WQE waits behind an unfinished one: the QP is broken now, so finish in order.
    for (SendWqe& e : s.sq) {
      if (&e == &w) break;
      if (!e.done) e.status = syndrome::kWrFlush, e.done = true;
    }
    complete_ready(qpn);
  }
}

void Requester::complete_ready(uint32_t qpn) {
  SendState& s = qps_[qpn];
  if (!s.completing) {
    s.completing = true;
    completing_.push_back(qpn);
  }
  pump_completions();
}

void Requester::pump_completions() {
  while (!completing_.empty() && outbox_.has_room()) {
    const uint32_t qpn = completing_.front();
    if (complete_head(qpn)) continue;
    completing_.pop_front();
    qps_[qpn].completing = false;
  }
}

// Completes the head WQE if it is done; false when there is nothing more to do for the QP now.
bool Requester::complete_head(uint32_t qpn) {
  if (!tables_.qp_exists(qpn)) return false;
  const QpContext& q = tables_.qps[qpn];
  SendState& s = qps_[qpn];
  if (s.sq.empty() || !s.sq.front().done) {
    if (s.sq.empty()) s.flushing = false;
    check_drained(qpn);
    return false;
  }
  SendWqe w = std::move(s.sq.front());
  s.sq.pop_front();
  // A WQE completed is acknowledged whole: a READ done by its own response, ahead of the ACK of
  // what precedes it, moves the unacknowledged PSN past itself too, so that a late copy of its
  // response (answering a repeated request) is behind us, not a bad response (vhca-sim soak).
  if (w.started && w.npkts && psn_diff(psn_add(w.first_psn, w.npkts), s.una_psn) > 0)
    s.una_psn = psn_add(w.first_psn, w.npkts);
  if (s.cursor > 0) {
    --s.cursor;
  } else {
    s.cursor_pkt = 0;
  }
  if (w.status || w.signaled) outbox_.complete(completion(q, qpn, w, w.status));
  if (w.status && !s.flushing) {
    // RC breaks the whole QP; a datagram QP only its send queue (IB: the SQE state). The WQEs
    // behind it complete with WR flush when the QP flushes.
    on_error(qpn, q.type == QpType::rc ? QpState::err : QpState::sqe);
    return false;
  }
  return true;
}

// SQD: once no WQE that had started is still outstanding, the SQ drained event goes out (once).
void Requester::check_drained(uint32_t qpn) {
  SendState& s = qps_[qpn];
  if (!s.drain_pending || tables_.qps[qpn].state != QpState::sqd) return;
  for (const SendWqe& w : s.sq)
    if (w.started) return;
  s.drain_pending = false;
  on_event(DeviceEvent{eqe::kSqDrained, 0, 0, 0, qpn});
}

// ---------------------------------------------------------------------------------------------
// QP lifecycle.

void Requester::qp_reset(uint32_t qpn) { renew(qps_[qpn]); }

void Requester::qp_ready_to_send(uint32_t qpn, bool from_rtr) {
  const QpContext& q = tables_.qps[qpn];
  SendState& s = qps_[qpn];
  if (from_rtr) {
    s.next_psn = s.una_psn = q.sq_psn;
    s.retry_left = q.retry_cnt;
    s.rnr_left = q.rnr_retry;
  }
  s.halted = false;  // SQE -> RTS: the send queue runs again
  want_tx(qpn);
}

void Requester::qp_draining(uint32_t qpn) {
  qps_[qpn].drain_pending = true;
  check_drained(qpn);
}

void Requester::qp_error(uint32_t qpn) {
  timers_.stop(qpn, TimerKind::retransmit);
  timers_.stop(qpn, TimerKind::rnr);
}

void Requester::reset() {
  for (uint32_t q = 0; q < qps_.size(); ++q) qp_reset(q);
  tx_ring_.clear();
}

}  // namespace vhca
