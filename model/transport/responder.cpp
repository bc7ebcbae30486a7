#include "model/transport/responder.h"

#include <algorithm>

#include "model/common/log.h"
#include "model/regs/tables.h"
#include "tlm/posted_tag.h"

namespace vhca {

Responder::Responder(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
                     QpTables& tables, TransportTimers& timers, RecvQueue& rq, DmaEngine& dma,
                     sc_core::sc_port<CompletionPutIf>& completions, TransportStats& stats)
    : sc_module(name),
      s_acks("s_acks", tables.qps.size(), "the responder: QPs with an ACK or NAK due"),
      s_responses("s_responses", tables.qps.size() * 2 * kMaxRdAtomic, "the responder: READ responses and atomic ACKs owed"),
      clock_(clock),
      cfg_(cfg),
      tables_(tables),
      timers_(timers),
      rq_(rq),
      dma_(dma),
      stats_(stats),
      outbox_("outbox", clock, cfg.outbox_depth, dma, completions, stats, 1),
      qps_(tables.qps.size()) {}

void Responder::begin_packet() { awaited_ = Awaited{}; }

CompletionRecord Responder::completion(const QpContext& q, uint32_t qpn, const RecvWqe& w) const {
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

void Responder::scatter(uint32_t qpn, const RecvWqe& w, uint32_t offset, const uint8_t* data, uint32_t len) {
  for_each_piece(w.sges, offset, len, [&](uint64_t addr, uint32_t n, uint32_t at) {
    outbox_.write(addr, data + at, n, DmaSource::recv_data, recv_data_id(qpn, w.index, offset + at == 0));
  });
}

// A receive WQE's buffers belong to the PD of the queue it came from: the QP's, or its SRQ's.
uint32_t Responder::receive_pdn(const QpContext& q) const {
  return q.has_srq && tables_.srq_exists(q.srqn) ? tables_.srqs[q.srqn].pdn : q.pdn;
}

// The receive WQE a message needs: the QP's own head WQE, or one its SRQ hands it (the SRQ's cache
// is filled first if need be).
Responder::Need Responder::recv_wqe(uint32_t qpn) {
  if (rq_.has_wqe(qpn)) return Need::ready;
  const QpContext& q = tables_.qps[qpn];
  if (q.has_srq && rq_.take_from_srq(qpn, q.srqn)) return Need::ready;
  if (awaited_.recv_wqe.has_value()) return Need::none;  // fetched for this packet: nothing posted
  rq_.ensure(q.has_srq ? rq_.srq_id(q.srqn) : qpn, [this](bool found) {
    awaited_.recv_wqe = found;
    resume_();
  });
  return Need::wait;
}

// ---------------------------------------------------------------------------------------------
// Acknowledgements and responses owed.

// Responder resources: a QP answers at most max_dest_rd_atomic READ and atomic requests at a time
// (at least 1, as the requester's max_rd_atomic). A new one beyond them is an invalid request
// (IBA vol. 1: NAK code 1): the requester completes it in error and its QP enters ERR.
bool Responder::resources_exhausted(const QpContext& q, const RecvState& s) const {
  return s.fresh_owed >= std::max<uint32_t>(1, q.max_dest_rd_atomic);
}

Responder::Step Responder::refuse_for_resources(uint32_t qpn, uint32_t psn) {
  ++stats_.rd_atomic_refused;
  log::write(log::Cat::wq, "QP {:#x}: READ/atomic at PSN {:#x} beyond max_dest_rd_atomic: NAK invalid request", qpn, psn);
  queue_nak(qpn, AckKind::nak, kNakInvalidRequest, psn);
  return Step::done;
}

void Responder::owe_response(const ResponseJob& job) {
  ++qps_[job.qpn].responses_owed;
  if (job.fresh) ++qps_[job.qpn].fresh_owed;
  responses_.push_back(job);
  s_responses.pushed(responses_.size());
  on_tx_work();
}

void Responder::queue_ack(uint32_t qpn, RecvState& s) {
  if (s.ack_queued) return;
  s.ack_queued = true;
  ack_queue_.push_back(qpn);
  s_acks.pushed(ack_queue_.size());
}

void Responder::request_ack(uint32_t qpn, RecvState& s, uint32_t psn) {
  s.ack_due = true;
  s.ack_psn = psn;
  s.ack_writes = outbox_.writes_added();  // the data it acknowledges is in the outbox by now
  if (++s.ack_count >= cfg_.ack_coalesce) {
    queue_ack(qpn, s);
    on_tx_work();
  } else {
    timers_.set(qpn, TimerKind::ack, clock_.now() + cfg_.ack_delay_cycles);  // its expiry tells the arbiter
  }
}

// A fatal NAK ends the requester's WQE; an RNR or PSN-sequence NAK only makes it retry.
static bool fatal_nak(AckKind kind, uint8_t code) { return kind == AckKind::nak && code != kNakPsnSeqError; }

void Responder::queue_nak(uint32_t qpn, AckKind kind, uint8_t code, uint32_t psn, bool behind_responses) {
  RecvState& s = qps_[qpn];
  // One NAK is owed at a time: the one for the earliest PSN, which stops the requester first; at
  // one PSN a fatal NAK outranks a retry (the packets behind it only add a sequence error).
  if (s.nak_due) {
    const int32_t d = psn_diff(psn, s.nak_psn);
    if (d > 0 || (d == 0 && !(fatal_nak(kind, code) && !fatal_nak(s.nak_kind, s.nak_code)))) return;
  }
  s.nak_due = true;
  s.nak_behind = behind_responses;
  s.nak_kind = kind;
  s.nak_code = code;
  s.nak_psn = psn;
  s.ack_due = false;  // a NAK acknowledges everything before its PSN
  s.ack_writes = outbox_.writes_added();
  queue_ack(qpn, s);
  on_tx_work();
}

void Responder::timer_expired(uint32_t qpn, TimerKind kind) {
  if (kind != TimerKind::ack) return;
  RecvState& s = qps_[qpn];
  if (!s.ack_due || s.ack_queued) return;
  queue_ack(qpn, s);
  on_tx_work();
}

bool Responder::next_ack(IbPacket& p) {
  for (size_t tries = ack_queue_.size(); tries > 0; --tries) {
    const uint32_t qpn = ack_queue_.front();
    ack_queue_.pop_front();
    RecvState& s = qps_[qpn];
    s.ack_queued = false;
    if (!tables_.qp_exists(qpn) || (!s.ack_due && !s.nak_due)) continue;
    if (s.responses_owed > 0 && (!s.nak_due || s.nak_behind)) {
      // An ACK or NAK may not overtake the READ responses before it (responses go in PSN order):
      // it waits behind them (queued again, not counted again).
      s.ack_queued = true;
      ack_queue_.push_back(qpn);
      continue;
    }
    static_cast<IbHeaders&>(p) = IbHeaders{};
    p.payload.clear();  // its storage stays: the packet it is exchanged with on sending takes it
    p.op = IbOp::ack;
    p.slid = cfg_.lid;
    p.dlid = tables_.qps[qpn].dlid;
    p.dest_qpn = tables_.qps[qpn].dest_qpn;
    p.msn = s.msn;
    if (s.nak_due) {
      p.psn = s.nak_psn;
      p.ack_kind = s.nak_kind;
      p.ack_code = s.nak_code;
      s.nak_due = false;
      ++(p.ack_kind == AckKind::rnr_nak ? stats_.rnr_naks_sent : stats_.naks_sent);
    } else {
      p.psn = s.ack_psn;
      ++stats_.acks_sent;
    }
    built_ack_writes_ = s.ack_writes;
    s.ack_due = false;
    s.ack_count = 0;
    timers_.stop(qpn, TimerKind::ack);
    return true;
  }
  return false;
}

// Builds the next READ response packet or atomic ACK owed.
bool Responder::next_response(std::unique_ptr<PendingTx>& out, PendingTxPool& jobs) {
  while (!responses_.empty()) {
    ResponseJob& job = responses_.front();
    if (!tables_.qp_exists(job.qpn) || qps_[job.qpn].gen != job.gen) {
      responses_.pop_front();
      continue;
    }
    const QpContext& q = tables_.qps[job.qpn];
    out = jobs.take();
    out->qpn = job.qpn;
    out->gen = job.gen;
    out->response = true;
    out->fresh_job = job.fresh;
    IbPacket& p = out->packet;
    p.slid = cfg_.lid;
    p.dlid = q.dlid;
    p.dest_qpn = q.dest_qpn;
    p.msn = qps_[job.qpn].msn;
    if (job.atomic) {
      p.op = IbOp::atomic_ack;
      p.psn = job.first_psn;
      p.atomic_orig = job.atomic_orig;
      out->last_of_job = true;
      out->ready = true;
      responses_.pop_front();
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
    out->ready = p.payload.empty();
    if (++job.sent == job.npkts) {
      out->last_of_job = true;
      responses_.pop_front();
    }
    return true;
  }
  return false;
}

bool Responder::may_send(const PendingTx& job) {
  if (!tables_.qp_exists(job.qpn) || qps_[job.qpn].gen != job.gen) return false;
  RecvState& s = qps_[job.qpn];
  if (job.last_of_job && s.responses_owed > 0) --s.responses_owed;
  if (job.last_of_job && job.fresh_job && s.fresh_owed > 0) --s.fresh_owed;
  if (!job.ok) {
    // The responder's own memory failed: a remote operational error for the requester.
    // Its PSN lies inside the responses owed: it goes at once, not behind them.
    queue_nak(job.qpn, AckKind::nak, kNakRemoteOp, job.packet.psn, false);
    return false;
  }
  return true;
}

// The responder found an error it reports in the receive WQE's CQE: the NAK goes out, the CQE is
// written and the QP enters the error state.
void Responder::responder_error(uint32_t qpn, uint8_t syn, uint8_t nak_code, uint32_t psn) {
  const QpContext& q = tables_.qps[qpn];
  if (q.type == QpType::rc) queue_nak(qpn, AckKind::nak, nak_code, psn);  // UC: nothing goes back
  if (rq_.has_wqe(qpn)) {
    CompletionRecord r = completion(q, qpn, rq_.pop(qpn));
    r.syndrome = syn;
    outbox_.complete(r);
  }
  qps_[qpn].in_send = false;
  on_error(qpn, QpState::err);
}

// ---------------------------------------------------------------------------------------------
// RC and UC requests.

namespace {
bool begins_message(IbOp op) {
  return op == IbOp::send_first || op == IbOp::send_only || op == IbOp::write_first || op == IbOp::write_only;
}
}  // namespace

// UC has no ACK, NAK or retry: what the RC responder would refuse with a NAK, UC drops silently,
// with the rest of its message (no message is in progress until the next first or only packet).
Responder::Step Responder::drop_uc(RecvState& s, const IbPacket& p) {
  s.in_send = false;
  s.in_write = false;
  s.epsn = psn_add(p.psn, 1);
  ++stats_.uc_dropped;
  return Step::done;
}

Responder::Step Responder::receive(IbPacket& p) {
  const uint32_t qpn = p.dest_qpn;
  // A packet of the other connected transport (RC for a UC QP, or the reverse) is not for it.
  if (!tables_.qp_exists(qpn) || !is_connected(tables_.qps[qpn].type) || p.uc != (tables_.qps[qpn].type == QpType::uc)) {
    ++stats_.dropped_no_qp;
    return Step::done;
  }
  QpContext& q = tables_.qps[qpn];
  RecvState& s = qps_[qpn];
  if (q.state != QpState::rtr && q.state != QpState::rts && q.state != QpState::sqd) {
    ++stats_.dropped_no_qp;  // RESET / INIT drop silently; a QP in error answers nothing
    return Step::done;
  }
  const bool uc = p.uc;
  if (uc) {
    // A PSN other than the expected one means packets were lost: the message in progress is
    // dropped and the responder takes up the sequence at this packet. A packet that continues a
    // message not in progress (its first was lost or dropped) is dropped too.
    if (p.psn != s.epsn) {
      if (s.in_send || s.in_write) ++stats_.uc_dropped;
      s.in_send = false;
      s.in_write = false;
      s.epsn = p.psn;
    }
    if (!begins_message(p.op) && !s.in_send && !s.in_write) return drop_uc(s, p);
    if (p.op == IbOp::read_request || p.op == IbOp::cmp_swap || p.op == IbOp::fetch_add) return drop_uc(s, p);
  }
  const int32_t d = psn_diff(p.psn, s.epsn);
  if (d > 0) {
    // A gap: one PSN-sequence-error NAK until the expected packet arrives.
    if (!s.nak_seq_sent) {
      s.nak_seq_sent = true;
      queue_nak(qpn, AckKind::nak, kNakPsnSeqError, s.epsn);
    }
    return Step::done;
  }
  const uint32_t mtu = path_mtu_bytes(q);
  if (d < 0) {
    ++stats_.duplicates;
    // A duplicate READ or atomic is answered again (its new answer does not count against
    // max_dest_rd_atomic), up to 16 such answers owed; beyond them it is ignored (counted in
    // duplicates) and the requester's timer retries it.
    if (p.op == IbOp::read_request) {
      if (mr_allows(tables_, q.pdn, p.rkey, p.va, p.dma_len, kAccessRemoteRead) && !duplicates_exhausted(s)) {
        const uint32_t npkts = std::max<uint32_t>(1, (p.dma_len + mtu - 1) / mtu);
        owe_response(
            ResponseJob{qpn, s.gen, false, p.psn, npkts, 0, mr_host_address(tables_, p.rkey, p.va), p.dma_len, 0, false});
      }
    } else if (p.op == IbOp::cmp_swap || p.op == IbOp::fetch_add) {
      if (p.psn == s.last_atomic_psn && !duplicates_exhausted(s))
        owe_response(ResponseJob{qpn, s.gen, true, p.psn, 1, 0, 0, 0, s.last_atomic_orig, false});
    } else {
      // Re-acknowledge at once: the requester is retrying because it missed our ACK.
      s.ack_count = cfg_.ack_coalesce;
      request_ack(qpn, s, psn_add(s.epsn, -1));
    }
    return Step::done;
  }
  s.nak_seq_sent = false;
  switch (p.op) {
    case IbOp::send_first:
    case IbOp::send_only:
      switch (recv_wqe(qpn)) {
        case Need::wait: return Step::wait;
        case Need::none:
          if (uc) return drop_uc(s, p);  // UC: no receive WQE, the message is dropped
          queue_nak(qpn, AckKind::rnr_nak, q.min_rnr_timer, p.psn);  // S22
          return Step::done;
        case Need::ready: break;
      }
      if (rq_.front(qpn).decode_error) {
        responder_error(qpn, rq_.front(qpn).decode_error, kNakRemoteOp, p.psn);
        return Step::done;
      }
      // Checked (and its addresses translated) once, however often the message's first packet comes.
      if (RecvWqe& w = rq_.front(qpn); !w.translated) {
        if (!check_and_translate(tables_, receive_pdn(q), w.sges, kAccessLocalWrite)) {
          responder_error(qpn, syndrome::kLocalProtection, kNakRemoteOp, p.psn);
          return Step::done;
        }
        w.translated = true;
      }
      s.in_send = true;
      s.recv_offset = 0;
      [[fallthrough]];
    case IbOp::send_middle:
    case IbOp::send_last: {
      if (!s.in_send) {
        responder_error(qpn, syndrome::kLocalQpOp, kNakInvalidRequest, p.psn);
        return Step::done;
      }
      RecvWqe& w = rq_.front(qpn);
      if (s.recv_offset + p.payload.size() > w.capacity) {
        responder_error(qpn, syndrome::kLocalLength, kNakInvalidRequest, p.psn);  // S19 local length
        return Step::done;
      }
      scatter(qpn, w, s.recv_offset, p.payload.data(), uint32_t(p.payload.size()));
      s.recv_offset += uint32_t(p.payload.size());
      if (p.op == IbOp::send_last || p.op == IbOp::send_only) {
        CompletionRecord r = completion(q, qpn, w);
        r.opcode = p.has_imm ? cqe::kRespSendImm : cqe::kRespSend;
        r.byte_cnt = s.recv_offset;
        r.imm_present = p.has_imm;
        r.imm = p.imm;
        r.se = p.se;
        rq_.pop(qpn);
        s.in_send = false;
        ++s.msn;
        outbox_.complete(r);  // after the data writes: RECV completes once placed
      }
      break;
    }
    case IbOp::write_first:
    case IbOp::write_only:
      if (!(q.access & kAccessRemoteWrite) || !mr_allows(tables_, q.pdn, p.rkey, p.va, p.dma_len, kAccessRemoteWrite)) {
        if (uc) return drop_uc(s, p);  // UC: a bad R_Key drops the message, nothing tells the sender
        queue_nak(qpn, AckKind::nak, kNakRemoteAccess, p.psn);
        return Step::done;
      }
      s.write_va = mr_host_address(tables_, p.rkey, p.va);
      s.write_left = p.dma_len;
      s.write_total = p.dma_len;
      s.in_write = true;
      [[fallthrough]];
    case IbOp::write_middle:
    case IbOp::write_last: {
      if (!s.in_write || p.payload.size() > s.write_left) {
        if (uc) return drop_uc(s, p);
        queue_nak(qpn, AckKind::nak, kNakInvalidRequest, p.psn);
        return Step::done;
      }
      const bool last = p.op == IbOp::write_last || p.op == IbOp::write_only;
      if (last && p.has_imm) {
        // WRITE with immediate consumes a receive WQE (S18): without one, RNR before any data
        // of this packet is placed, so that the retry finds everything as it was.
        switch (recv_wqe(qpn)) {
          case Need::wait: return Step::wait;
          case Need::none:
            if (uc) return drop_uc(s, p);
            queue_nak(qpn, AckKind::rnr_nak, q.min_rnr_timer, p.psn);
            return Step::done;
          case Need::ready: break;
        }
      }
      outbox_.write(s.write_va, p.payload.data(), uint32_t(p.payload.size()));
      s.write_va += p.payload.size();
      s.write_left -= uint32_t(p.payload.size());
      if (last) {
        s.in_write = false;
        ++s.msn;
        if (p.has_imm) {
          CompletionRecord r = completion(q, qpn, rq_.pop(qpn));
          r.opcode = cqe::kRespWriteImm;
          r.byte_cnt = s.write_total;
          r.imm_present = true;
          r.imm = p.imm;
          r.se = p.se;
          outbox_.complete(r);
        }
      }
      break;
    }
    case IbOp::read_request: {
      if (!(q.access & kAccessRemoteRead) || !mr_allows(tables_, q.pdn, p.rkey, p.va, p.dma_len, kAccessRemoteRead)) {
        queue_nak(qpn, AckKind::nak, kNakRemoteAccess, p.psn);
        return Step::done;
      }
      if (resources_exhausted(q, s)) return refuse_for_resources(qpn, p.psn);
      const uint32_t npkts = std::max<uint32_t>(1, (p.dma_len + mtu - 1) / mtu);
      s.epsn = psn_add(s.epsn, npkts);  // a READ takes one PSN per response packet
      ++s.msn;
      owe_response(ResponseJob{qpn, s.gen, false, p.psn, npkts, 0, mr_host_address(tables_, p.rkey, p.va), p.dma_len, 0});
      return Step::done;
    }
    case IbOp::cmp_swap:
    case IbOp::fetch_add:
      return handle_atomic(qpn, q, s, p);
    default:
      return Step::done;
  }
  s.epsn = psn_add(s.epsn, 1);
  if (p.ack_req && !uc) request_ack(qpn, s, p.psn);
  return Step::done;
}

// Atomics act on 64-bit little-endian values in host memory (x86 byte order). The old value is
// read first (fenced behind earlier writes); the packet is taken on once it has arrived.
Responder::Step Responder::handle_atomic(uint32_t qpn, QpContext& q, RecvState& s, const IbPacket& p) {
  if (p.va % 8) {
    queue_nak(qpn, AckKind::nak, kNakInvalidRequest, p.psn);
    return Step::done;
  }
  if (!(q.access & kAccessRemoteAtomic) || !mr_allows(tables_, q.pdn, p.rkey, p.va, 8, kAccessRemoteAtomic)) {
    queue_nak(qpn, AckKind::nak, kNakRemoteAccess, p.psn);
    return Step::done;
  }
  const uint64_t target = mr_host_address(tables_, p.rkey, p.va);
  if (!awaited_.atomic_read.has_value() && resources_exhausted(q, s)) return refuse_for_resources(qpn, p.psn);
  if (!awaited_.atomic_read.has_value()) {
    dma_.read(target, awaited_.atomic_value, 8, true, [this](bool ok) {
      awaited_.atomic_read = ok;
      resume_();
    });
    return Step::wait;
  }
  if (!*awaited_.atomic_read) {
    queue_nak(qpn, AckKind::nak, kNakRemoteOp, p.psn);
    return Step::done;
  }
  uint8_t* buf = awaited_.atomic_value;
  uint64_t orig = 0;
  for (int b = 7; b >= 0; --b) orig = orig << 8 | buf[b];
  const uint64_t next = p.op == IbOp::fetch_add ? orig + p.compare_add : (orig == p.compare_add ? p.swap : orig);
  for (int b = 0; b < 8; ++b) buf[b] = uint8_t(next >> (8 * b));
  if (next != orig || p.op == IbOp::fetch_add) outbox_.write(target, buf, 8);
  s.last_atomic_psn = p.psn;
  s.last_atomic_orig = orig;
  s.epsn = psn_add(s.epsn, 1);
  ++s.msn;
  owe_response(ResponseJob{qpn, s.gen, true, p.psn, 1, 0, 0, 0, orig});
  return Step::done;
}

// ---------------------------------------------------------------------------------------------
// UD.

Responder::Step Responder::receive_ud(IbPacket& p) {
  const uint32_t qpn = p.dest_qpn;
  if (!tables_.qp_exists(qpn) || tables_.qps[qpn].type == QpType::rc) {
    ++stats_.dropped_no_qp;
    return Step::done;
  }
  const QpContext& q = tables_.qps[qpn];
  if (q.state != QpState::rtr && q.state != QpState::rts && q.state != QpState::sqd && q.state != QpState::sqe) {
    ++stats_.dropped_no_qp;
    return Step::done;
  }
  if (p.qkey != q.qkey) {
    ++stats_.qkey_violations;  // IB: a Q_Key mismatch is silently dropped (and counted)
    return Step::done;
  }
  switch (recv_wqe(qpn)) {
    case Need::wait: return Step::wait;
    case Need::none: ++stats_.ud_no_wqe; return Step::done;  // UD has no RNR: the datagram is dropped
    case Need::ready: break;
  }
  RecvWqe w = rq_.pop(qpn);
  CompletionRecord r = completion(q, qpn, w);
  const uint32_t grh_bytes = p.grh ? 40 : 0;
  const uint32_t total = grh_bytes + uint32_t(p.payload.size());
  if (w.decode_error || total > w.capacity || !check_and_translate(tables_, receive_pdn(q), w.sges, kAccessLocalWrite)) {
    r.syndrome = w.decode_error ? w.decode_error : total > w.capacity ? syndrome::kLocalLength : syndrome::kLocalProtection;
    outbox_.complete(r);
    return Step::done;
  }
  if (p.grh) {
    // The first 40 bytes of the buffer receive the GRH: IPv6 version, payload length, next header.
    uint8_t grh[40] = {};
    grh[0] = 0x60;
    grh[4] = uint8_t(p.payload.size() >> 8);
    grh[5] = uint8_t(p.payload.size());
    grh[6] = 0x1B;
    scatter(qpn, w, 0, grh, 40);
  }
  scatter(qpn, w, grh_bytes, p.payload.data(), uint32_t(p.payload.size()));
  r.opcode = p.has_imm ? cqe::kRespSendImm : cqe::kRespSend;
  r.byte_cnt = total;
  r.imm_present = p.has_imm;
  r.imm = p.imm;
  r.se = p.se;
  r.src_qpn = p.src_qpn;
  r.slid = p.slid;
  r.sl = p.sl;
  r.grh = p.grh;
  outbox_.complete(r);
  return Step::done;
}

// ---------------------------------------------------------------------------------------------
// QP lifecycle.

CompletionRecord Responder::flush_record(uint32_t qpn, const RecvWqe& w) const {
  CompletionRecord r = completion(tables_.qps[qpn], qpn, w);
  r.syndrome = syndrome::kWrFlush;
  return r;
}

void Responder::qp_reset(uint32_t qpn) { renew(qps_[qpn]); }

void Responder::qp_ready_to_receive(uint32_t qpn) { qps_[qpn].epsn = tables_.qps[qpn].rq_psn; }

void Responder::reset() {
  for (uint32_t q = 0; q < qps_.size(); ++q) qp_reset(q);
  ack_queue_.clear();
  responses_.clear();
}

}  // namespace vhca
