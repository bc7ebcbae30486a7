// The transmit thread (ACK / NAK, READ responses and atomic ACKs, requests) and the requester's
// handling of what comes back: ACKs, NAKs, READ responses, atomic ACKs, timeouts, RNR waits.
#include <algorithm>
#include <cstring>

#include "model/common/log.h"
#include "model/regs/tables.h"
#include "model/transport/transport_engine.h"

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

// ---------------------------------------------------------------------------------------------
// Transmit thread. Each turn, in priority order: an ACK / NAK; the oldest built packet once its
// payload has arrived; the next packet to build (a READ response or atomic ACK before requests,
// requests round robin over QPs, one packet a turn). Building a packet starts its payload read
// on one of `tx_read_tags` gather workers, so that reads for later packets overlap the wire time
// of earlier ones; packets still leave in the order they were built.

void TransportEngine::tx_thread() {
  for (;;) {
    wait_edge();
    const uint64_t now = clock_.now();
    check_timers(now);
    if (send_ack_or_nak()) continue;
    if (!tx_pending_.empty() && tx_pending_.front()->ready) {
      finish_pending();
      continue;
    }
    if (tx_pending_.size() < cfg_.tx_read_tags && (issue_response() || issue_request())) continue;
    // One timer for the earliest deadline (a `wait(timeout, event)` left a cancelled retransmit
    // timeout, tens of milliseconds out, in SystemC's timed queue at almost every wait).
    if (const uint64_t next = next_timer(now); next != UINT64_MAX) tx_timer_.arm(clock_.at(next));
    sc_core::wait(tx_work_ | tx_timer_.event());
  }
}

// A gather worker: reads the payload of one built packet at a time.
void TransportEngine::gather_worker() {
  for (;;) {
    while (gather_jobs_.empty()) sc_core::wait(gather_work_);
    PendingTx* job = gather_jobs_.front();
    gather_jobs_.pop_front();
    IbPacket& p = job->packet;
    if (job->response)
      job->ok = p.payload.empty() || dma_.read_now(job->va, p.payload.data(), uint32_t(p.payload.size()), job->fence);
    else
      job->ok = gather(job->sges, job->offset, uint32_t(p.payload.size()), p.payload.data());
    job->ready = true;
    kick_tx();
  }
}

void TransportEngine::queue_built(std::unique_ptr<PendingTx> job, bool needs_read) {
  if (needs_read) {
    gather_jobs_.push_back(job.get());
    gather_work_.notify(sc_core::SC_ZERO_TIME);
  } else {
    job->ready = true;
  }
  tx_pending_.push_back(std::move(job));
}

sc_core::sc_time TransportEngine::transmit(IbPacket& p) {
  // The packet's headers take tx_packet_cycles to build; it goes out once the wire is free.
  wait_cycles(cfg_.tx_packet_cycles);
  if (wire_free_at_ > sc_core::sc_time_stamp()) sc_core::wait(wire_free_at_ - sc_core::sc_time_stamp());
  wait_edge();
  IbPacketExt ext;
  ext.packet = p;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  carry_packet(*port_out.operator->(), ext, delay);
  ++stats_.packets_sent;
  stats_.bytes_sent += p.payload.size();
  log::write(log::Cat::wq, "tx {}{} qp {:#x} psn {:#x} len {}", ib_op_name(p.op),
             p.op != IbOp::ack ? "" : p.ack_kind == AckKind::nak ? "(NAK)" : p.ack_kind == AckKind::rnr_nak ? "(RNR NAK)" : "",
             p.dest_qpn, p.psn, p.payload.size());
  on_packet_sent(p, clock_.now());
  wire_free_at_ = sc_core::sc_time_stamp() + delay;
  return wire_free_at_;
}

bool TransportEngine::send_ack_or_nak() {
  for (size_t tries = ack_queue_.size(); tries > 0; --tries) {
    const uint32_t qpn = ack_queue_.front();
    ack_queue_.pop_front();
    QpRuntime& rt = rt_[qpn];
    rt.ack_queued = false;
    if (!tables_.qp_exists(qpn) || (!rt.ack_due && !rt.nak_due)) continue;
    if (!rt.nak_due && rt.responses_owed > 0) {
      // An ACK may not overtake the READ responses before it: it waits behind them.
      rt.ack_queued = true;
      ack_queue_.push_back(qpn);
      continue;
    }
    IbPacket p;
    p.op = IbOp::ack;
    p.slid = cfg_.lid;
    p.dest_qpn = tables_.qps[qpn].dest_qpn;
    p.msn = rt.msn;
    if (rt.nak_due) {
      p.psn = rt.nak_psn;
      p.ack_kind = rt.nak_kind;
      p.ack_code = rt.nak_code;
      rt.nak_due = false;
      ++(p.ack_kind == AckKind::rnr_nak ? stats_.rnr_naks_sent : stats_.naks_sent);
    } else {
      p.psn = rt.ack_psn;
      ++stats_.acks_sent;
    }
    rt.ack_due = false;
    rt.ack_count = 0;
    rt.ack_deadline = 0;
    transmit(p);
    return true;
  }
  return false;
}

// Builds the next READ response packet or atomic ACK the responder owes.
bool TransportEngine::issue_response() {
  while (!responses_.empty()) {
    ResponseJob& job = responses_.front();
    if (!tables_.qp_exists(job.qpn) || rt_[job.qpn].gen != job.gen) {
      responses_.pop_front();
      continue;
    }
    const QpContext& q = tables_.qps[job.qpn];
    auto out = std::make_unique<PendingTx>();
    out->qpn = job.qpn;
    out->gen = job.gen;
    out->response = true;
    IbPacket& p = out->packet;
    p.slid = cfg_.lid;
    p.dest_qpn = q.dest_qpn;
    p.msn = rt_[job.qpn].msn;
    if (job.atomic) {
      p.op = IbOp::atomic_ack;
      p.psn = job.first_psn;
      p.atomic_orig = job.atomic_orig;
      out->last_of_job = true;
      responses_.pop_front();
      queue_built(std::move(out), false);
      return true;
    }
    const uint32_t mtu = path_mtu_bytes(q);
    const uint32_t k = job.sent;
    const uint32_t offset = k * mtu;
    p.psn = psn_add(job.first_psn, k);
    p.op = job.npkts == 1         ? IbOp::read_resp_only
           : k == 0               ? IbOp::read_resp_first
           : k + 1 == job.npkts   ? IbOp::read_resp_last
                                  : IbOp::read_resp_middle;
    p.payload.resize(std::min(mtu, job.length - std::min(job.length, offset)));
    out->va = job.va + offset;
    out->fence = k == 0;  // the first read waits for earlier writes to this memory (READ after WRITE)
    if (++job.sent == job.npkts) {
      out->last_of_job = true;
      responses_.pop_front();
    }
    queue_built(std::move(out), true);
    return true;
  }
  return false;
}

bool TransportEngine::can_send(uint32_t qpn) {
  if (!tables_.qp_exists(qpn)) return false;
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  if (rt.halted || rt.cursor >= rt.sq.size()) return false;
  const SendWqe& w = rt.sq[rt.cursor];
  if (q.state != QpState::rts && !(q.state == QpState::sqd && w.started)) return false;
  if (rt.rnr_until && clock_.now() < rt.rnr_until) return false;
  if (q.type != QpType::rc) return true;
  if (!w.started) {
    uint32_t reads = 0;
    bool earlier_read = false;
    for (size_t i = 0; i < rt.cursor; ++i)
      if (rt.sq[i].is_read_or_atomic() && !rt.sq[i].done) ++reads, earlier_read = true;
    if (w.fence && earlier_read) return false;
    if (w.is_read_or_atomic() && reads >= std::max<uint32_t>(1, q.max_rd_atomic)) return false;
    if (psn_diff(rt.next_psn, rt.una_psn) >= int32_t(cfg_.max_inflight_psns)) return false;
  }
  return true;
}

// Assigns the WQE its PSNs and checks its local buffers against their MRs.
void TransportEngine::start_wqe(const QpContext& q, QpRuntime& rt, SendWqe& w) {
  w.started = true;
  const uint32_t mtu = path_mtu_bytes(q);
  w.npkts = w.opcode == sqwqe::kAtomicCs || w.opcode == sqwqe::kAtomicFa ? 1
                                                                         : std::max<uint32_t>(1, (w.length + mtu - 1) / mtu);
  if (q.type != QpType::rc) w.npkts = 1;
  w.first_psn = rt.next_psn;
  rt.next_psn = psn_add(rt.next_psn, w.npkts);
  if (w.decode_error) {
    w.status = w.decode_error;
  } else if (q.type != QpType::rc && w.length > mtu) {
    w.status = syndrome::kLocalLength;  // a UD message is one packet
  } else if (!w.is_inline) {
    const uint32_t access = w.is_read_or_atomic() ? kAccessLocalWrite : 0;
    if (!sges_allowed(q.pdn, w.sges, access)) w.status = syndrome::kLocalProtection;
  }
}

// Builds the next request packet of the next QP in the round robin that can send.
bool TransportEngine::issue_request() {
  for (size_t tries = tx_ring_.size(); tries > 0 && !tx_ring_.empty(); --tries) {
    const uint32_t qpn = tx_ring_.front();
    tx_ring_.pop_front();
    rt_[qpn].in_tx_ring = false;
    if (!can_send(qpn)) continue;  // re-entered by whatever unblocks it (ACK, fetch, timer)
    const QpContext& q = tables_.qps[qpn];
    QpRuntime& rt = rt_[qpn];
    SendWqe& w = rt.sq[rt.cursor];
    if (!w.started) start_wqe(q, rt, w);
    if (w.status) {
      // A local error: nothing is sent; the WQE completes in error in its turn and the QP stops.
      w.done = true;
      rt.halted = true;
      ++rt.cursor;
      complete_ready(qpn);
      return true;
    }
    auto out = std::make_unique<PendingTx>();
    out->qpn = qpn;
    out->gen = rt.gen;
    out->epoch = rt.tx_epoch;
    out->wqe_index = w.index;
    out->ud = q.type != QpType::rc;
    const bool needs_read = build_request(qpn, q, rt, w, *out);
    if (w.is_read_or_atomic() || out->ud || ++rt.cursor_pkt == w.npkts) {
      ++rt.cursor;
      rt.cursor_pkt = 0;
    }
    queue_built(std::move(out), needs_read);
    want_tx(qpn);
    want_fetch(qpn);
    return true;
  }
  return false;
}

// Sends the oldest built packet, unless what it belonged to has moved on since it was built.
void TransportEngine::finish_pending() {
  std::unique_ptr<PendingTx> job = std::move(tx_pending_.front());
  tx_pending_.pop_front();
  if (!tables_.qp_exists(job->qpn) || rt_[job->qpn].gen != job->gen) return;
  QpRuntime& rt = rt_[job->qpn];
  const QpContext& q = tables_.qps[job->qpn];
  if (job->response && job->last_of_job && rt.responses_owed > 0) --rt.responses_owed;
  if (job->response) {
    if (!job->ok) {
      // The responder's own memory failed: a remote operational error for the requester.
      queue_nak(job->qpn, AckKind::nak, kNakRemoteOp, job->packet.psn);
      return;
    }
    transmit(job->packet);
    return;
  }
  if (job->epoch != rt.tx_epoch || (q.state != QpState::rts && q.state != QpState::sqd)) return;  // rewound or broken
  if (!job->ok) {
    for (SendWqe& w : rt.sq)
      if (w.index == job->wqe_index && !w.done) {
        w.status = syndrome::kLocalAccess;  // host memory failed under the gather
        w.done = true;
      }
    rt.halted = true;
    complete_ready(job->qpn);
    return;
  }
  const uint32_t gen = rt.gen;
  const sc_core::sc_time wire_done = transmit(job->packet);
  if (rt.gen != gen) return;
  if (job->ud) {
    // S18: a UD SEND completes once it has left the port.
    if (wire_done > sc_core::sc_time_stamp()) sc_core::wait(wire_done - sc_core::sc_time_stamp());
    wait_edge();
    if (rt.gen != gen) return;
    for (SendWqe& w : rt.sq)
      if (w.index == job->wqe_index) w.done = true;
    complete_ready(job->qpn);
  } else {
    arm_retransmit_timer(job->qpn, rt, q, false);
  }
}

// Fills in the packet's headers; inline data is copied at once. Returns whether its payload must
// still be read from host memory (the gather spec is left in `out`).
bool TransportEngine::build_request(uint32_t qpn, const QpContext& q, QpRuntime& rt, const SendWqe& w,
                                    PendingTx& out) {
  IbPacket& p = out.packet;
  const bool rc = q.type == QpType::rc;
  const uint32_t mtu = path_mtu_bytes(q);
  p.slid = cfg_.lid;
  p.dest_qpn = rc ? q.dest_qpn : w.ud_dest_qpn;
  p.psn = psn_add(w.first_psn, rt.cursor_pkt);
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
  const uint32_t k = rc ? rt.cursor_pkt : 0;
  const uint32_t offset = k * mtu;
  const uint32_t n = std::min(mtu, w.length - std::min(w.length, offset));
  const bool first = k == 0, last = k + 1 >= w.npkts;
  p.payload.resize(n);
  bool needs_read = false;
  if (w.is_inline) {
    std::memcpy(p.payload.data(), w.inline_data.data() + offset, n);
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
    p.ack_req = true;
  }
  if (!rc) {
    p.op = IbOp::ud_send;
    p.psn = rt.ud_psn;
    rt.ud_psn = psn_add(rt.ud_psn, 1);
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

// ---------------------------------------------------------------------------------------------
// Timers: the retransmit timer, RNR waits and the responder's ACK coalescing delay.

void TransportEngine::arm_retransmit_timer(uint32_t qpn, QpRuntime& rt, const QpContext& q, bool restart) {
  const double ns = ack_timeout_ns(q.timeout);
  if (ns == 0.0) return;
  if (restart || rt.timer_deadline == 0) set_timer(qpn, TimerKind::retransmit, clock_.now() + clock_.cycles_from_ns(ns));
}

uint64_t& TransportEngine::timer_field(QpRuntime& rt, TimerKind k) {
  return k == TimerKind::ack ? rt.ack_deadline : k == TimerKind::rnr ? rt.rnr_until : rt.timer_deadline;
}

void TransportEngine::set_timer(uint32_t qpn, TimerKind k, uint64_t at) {
  timer_field(rt_[qpn], k) = at;
  deadlines_.push(Deadline{at, qpn, k});
}

bool TransportEngine::outstanding(const QpRuntime& rt) const {
  for (const SendWqe& w : rt.sq)
    if (w.started && !w.done) return true;
  return false;
}

void TransportEngine::check_timers(uint64_t now) {
  // The timers due now, in the order the QPs left INIT and, per QP, ACK, RNR, retransmit.
  std::vector<Deadline> due;
  while (!deadlines_.empty() && deadlines_.top().at <= now) {
    const Deadline d = deadlines_.top();
    deadlines_.pop();
    if (timer_field(rt_[d.qpn], d.kind) == d.at) due.push_back(d);  // else stale
  }
  std::sort(due.begin(), due.end(), [this](const Deadline& a, const Deadline& b) {
    const uint64_t sa = rt_[a.qpn].live_seq, sb = rt_[b.qpn].live_seq;
    return sa != sb ? sa < sb : a.kind < b.kind;
  });
  for (const Deadline& d : due) {
    const uint32_t qpn = d.qpn;
    QpRuntime& rt = rt_[qpn];
    if (timer_field(rt, d.kind) != d.at) continue;  // stopped by a timer handled before it
    timer_field(rt, d.kind) = 0;
    if (d.kind == TimerKind::ack) {
      if (rt.ack_due && !rt.ack_queued) {
        rt.ack_queued = true;
        ack_queue_.push_back(qpn);
      }
    } else if (d.kind == TimerKind::rnr) {
      want_tx(qpn);
    } else {
      retransmit_timeout(qpn, rt);
    }
  }
}

void TransportEngine::retransmit_timeout(uint32_t qpn, QpRuntime& rt) {
  if (!outstanding(rt) || !tables_.qp_exists(qpn) || tables_.qps[qpn].state == QpState::err) return;
  ++stats_.timeouts;
  uint32_t psn = rt.una_psn;
  for (const SendWqe& w : rt.sq)
    if (w.started && !w.done) {
      psn = w.is_read_or_atomic() || psn_diff(rt.una_psn, w.first_psn) < 0 ? w.first_psn : rt.una_psn;
      break;
    }
  log::write(log::Cat::wq, "QP {:#x}: retransmit timeout at psn {:#x} ({} retries left)", qpn, psn, rt.retry_left);
  if (rt.retry_left == 0) {
    fail_wqe_at(qpn, psn, syndrome::kRetryExceeded);
    return;
  }
  --rt.retry_left;
  go_back(qpn, psn);  // the retransmission starts the timer again
}

uint64_t TransportEngine::next_timer(uint64_t now) {
  while (!deadlines_.empty() && timer_field(rt_[deadlines_.top().qpn], deadlines_.top().kind) != deadlines_.top().at)
    deadlines_.pop();  // stale
  return deadlines_.empty() ? UINT64_MAX : std::max(deadlines_.top().at, now + 1);
}

// ---------------------------------------------------------------------------------------------
// Requester receive: ACK, NAK, RNR NAK, READ responses, atomic ACKs.

// The WQE whose PSN range holds `psn`, or -1.
long TransportEngine::wqe_at(const QpRuntime& rt, uint32_t psn) const {
  for (size_t i = 0; i < rt.sq.size(); ++i) {
    const SendWqe& w = rt.sq[i];
    if (!w.started) break;
    const int32_t d = psn_diff(psn, w.first_psn);
    if (d >= 0 && d < int32_t(w.npkts)) return long(i);
  }
  return -1;
}

void TransportEngine::requester_receive(IbPacket& p) {
  const uint32_t qpn = p.dest_qpn;
  if (!tables_.qp_exists(qpn) || tables_.qps[qpn].type != QpType::rc) {
    ++stats_.dropped_no_qp;
    return;
  }
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  if (q.state != QpState::rts && q.state != QpState::sqd) return;  // a QP in error ignores responses
  if (p.op == IbOp::ack) {
    ++stats_.acks_received;
    on_ack_received(qpn, p.psn, clock_.now());
    if (p.ack_kind == AckKind::ack) {
      ack_through(qpn, p.psn);
    } else if (p.ack_kind == AckKind::rnr_nak) {
      ack_through(qpn, psn_add(p.psn, -1));
      if (wqe_at(rt, p.psn) < 0) return;
      if (rt.rnr_left == 0) {
        fail_wqe_at(qpn, p.psn, syndrome::kRnrRetryExceeded);
        return;
      }
      if (q.rnr_retry != 7) --rt.rnr_left;  // 7: retry for ever
      ++stats_.rnr_retries;
      set_timer(qpn, TimerKind::rnr, clock_.now() + clock_.cycles_from_ns(rnr_timer_us(p.ack_code) * 1000.0));
      go_back(qpn, p.psn);
    } else {
      ack_through(qpn, psn_add(p.psn, -1));
      if (p.ack_code == kNakPsnSeqError) {
        if (rt.retry_left == 0) {
          fail_wqe_at(qpn, p.psn, syndrome::kRetryExceeded);
          return;
        }
        --rt.retry_left;
        go_back(qpn, p.psn);
      } else {
        fail_wqe_at(qpn, p.psn, nak_syndrome(p.ack_code));
      }
    }
    return;
  }
  const long i = wqe_at(rt, p.psn);
  const bool is_read_resp = p.op != IbOp::atomic_ack;
  if (i < 0) {
    // A response to nothing outstanding: a late duplicate if it is behind us, else bad.
    if (psn_diff(p.psn, rt.una_psn) >= 0 && psn_diff(p.psn, rt.next_psn) < 0)
      fail_wqe_at(qpn, rt.una_psn, syndrome::kBadResponse);
    return;
  }
  SendWqe& w = rt.sq[size_t(i)];
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
  rt.retry_left = q.retry_cnt;
  arm_retransmit_timer(qpn, rt, q, true);
  complete_ready(qpn);
  want_tx(qpn);
}

// An ACK (or the implicit ACK of a NAK or response) covers every PSN up to `psn`.
void TransportEngine::ack_through(uint32_t qpn, uint32_t psn) {
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  if (psn_diff(psn, rt.una_psn) < 0 || psn_diff(psn, rt.next_psn) >= 0) return;  // old or beyond: ignore
  for (SendWqe& w : rt.sq) {
    if (!w.started) break;
    const uint32_t last = psn_add(w.first_psn, w.npkts - 1);
    if (psn_diff(last, psn) > 0) break;
    if (w.is_read_or_atomic()) {
      if (!w.done) {
        // Later PSNs are acknowledged but this response never came: it was lost.
        go_back(qpn, w.first_psn);
        break;
      }
      continue;
    }
    w.done = true;
  }
  rt.una_psn = psn_add(psn, 1);
  rt.retry_left = q.retry_cnt;
  rt.rnr_left = q.rnr_retry;
  if (outstanding(rt))
    arm_retransmit_timer(qpn, rt, q, true);
  else
    rt.timer_deadline = 0;
  complete_ready(qpn);
  want_tx(qpn);
}

void TransportEngine::go_back(uint32_t qpn, uint32_t psn) {
  QpRuntime& rt = rt_[qpn];
  const long i = wqe_at(rt, psn);
  if (i < 0) return;
  SendWqe& w = rt.sq[size_t(i)];
  ++stats_.retransmits;
  ++rt.tx_epoch;  // packets built before this are dropped, not sent out of order
  rt.cursor = size_t(i);
  if (w.is_read_or_atomic()) {
    rt.cursor_pkt = 0;
    w.resp_pkts = 0;
  } else {
    rt.cursor_pkt = uint32_t(psn_diff(psn, w.first_psn));
  }
  log::write(log::Cat::wq, "QP {:#x}: go back to psn {:#x} (WQE {})", qpn, psn, w.index);
  want_tx(qpn);
}

void TransportEngine::fail_wqe_at(uint32_t qpn, uint32_t psn, uint8_t syndrome) {
  QpRuntime& rt = rt_[qpn];
  long i = wqe_at(rt, psn);
  if (i < 0) i = 0;
  if (rt.sq.empty()) return;
  SendWqe& w = rt.sq[size_t(i)];
  log::write(log::Cat::wq, "QP {:#x}: WQE {} fails with syndrome {:#x}", qpn, w.index, syndrome);
  w.status = syndrome;
  w.done = true;
  rt.halted = true;
  rt.timer_deadline = 0;
  // Earlier WQEs not yet done can no longer complete normally: they flush after this error.
  complete_ready(qpn);
  if (!rt.sq.empty() && tables_.qps[qpn].state != QpState::err) {
    // The failed WQE waits behind an unfinished one: the QP is broken now, so finish in order.
    for (SendWqe& s : rt.sq) {
      if (&s == &w) break;
      if (!s.done) s.status = syndrome::kWrFlush, s.done = true;
    }
    complete_ready(qpn);
  }
}

// Completes WQEs from the head of the SQ while they are done, in posting order (S17).
void TransportEngine::complete_ready(uint32_t qpn) {
  if (!tables_.qp_exists(qpn)) return;
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  while (!rt.sq.empty() && rt.sq.front().done) {
    SendWqe w = std::move(rt.sq.front());
    rt.sq.pop_front();
    if (rt.cursor > 0) {
      --rt.cursor;
    } else {
      rt.cursor_pkt = 0;
    }
    if (w.status || w.signaled) emit_completion(send_completion(q, qpn, w, w.status));
    if (w.status) {
      // RC breaks the whole QP; a datagram QP only its send queue (IB: the SQE state).
      enter_error(qpn, q.type == QpType::rc ? QpState::err : QpState::sqe);
      return;
    }
  }
  check_drained(qpn);
}

}  // namespace vhca
