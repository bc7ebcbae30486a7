// The receive thread and the responder: RC requests (SEND, WRITE, READ, atomics) with PSN
// checking, duplicate handling, RNR, MR checks and ACK coalescing; UD receives.
#include <algorithm>

#include "model/common/log.h"
#include "model/regs/tables.h"
#include "model/transport/transport_engine.h"
#include "tlm/annotated_delay.h"

namespace vhca {

void TransportEngine::receive(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay) {
  if (refuse_annotated_delay(port_in.name(), tx, delay)) return;
  IbPacketExt* ext = nullptr;
  tx.get_extension(ext);
  tx.set_response_status(tlm::TLM_OK_RESPONSE);
  if (!ext) return;
  if (rx_fifo_.size() >= cfg_.rx_fifo_depth) {
    log::error("port rx FIFO full: {} psn {:#x} dropped", ib_op_name(ext->packet.op), ext->packet.psn);
    return;
  }
  rx_fifo_.push_back(std::move(ext->packet));
  rx_work_.notify(sc_core::SC_ZERO_TIME);
}

void TransportEngine::rx_thread() {
  for (;;) {
    if (rx_fifo_.empty()) sc_core::wait(rx_work_);
    wait_edge();
    IbPacket p = std::move(rx_fifo_.front());
    rx_fifo_.pop_front();
    wait_cycles(cfg_.rx_packet_cycles);
    ++stats_.packets_received;
    if (p.corrupt) {
      ++stats_.corrupt_dropped;  // ICRC mismatch: silently dropped, as IB requires
      log::write(log::Cat::wq, "rx {} psn {:#x}: ICRC error, dropped", ib_op_name(p.op), p.psn);
      continue;
    }
    log::write(log::Cat::wq, "rx {} qp {:#x} psn {:#x} len {}", ib_op_name(p.op), p.dest_qpn, p.psn, p.payload.size());
    if (is_response(p.op))
      requester_receive(p);
    else if (p.op == IbOp::ud_send)
      ud_receive(p);
    else
      responder_receive(p);
  }
}

// A receive WQE is at the head of the QP's RQ cache, fetched now if need be (reading the
// doorbell record first when the device has taken every WQE it knew of).
bool TransportEngine::ensure_recv_wqe(uint32_t qpn) {
  QpRuntime& rt = rt_[qpn];
  if (!rt.rq.empty()) return true;
  const uint32_t gen = rt.gen;
  if (rt.rq_fetched == rt.rq_pi && !refresh_rq_pi(qpn)) return false;
  if (rt.gen != gen || rt.rq_fetched == rt.rq_pi) return false;
  return fetch_rq(qpn) && rt.gen == gen && !rt.rq.empty();
}

void TransportEngine::owe_response(const ResponseJob& job) {
  ++rt_[job.qpn].responses_owed;
  responses_.push_back(job);
}

void TransportEngine::request_ack(uint32_t qpn, QpRuntime& rt, uint32_t psn) {
  rt.ack_due = true;
  rt.ack_psn = psn;
  if (++rt.ack_count >= cfg_.ack_coalesce) {
    if (!rt.ack_queued) {
      rt.ack_queued = true;
      ack_queue_.push_back(qpn);
    }
  } else {
    set_timer(qpn, TimerKind::ack, clock_.now() + cfg_.ack_delay_cycles);
  }
  kick_tx();
}

void TransportEngine::queue_nak(uint32_t qpn, AckKind kind, uint8_t code, uint32_t psn) {
  QpRuntime& rt = rt_[qpn];
  rt.nak_due = true;
  rt.nak_kind = kind;
  rt.nak_code = code;
  rt.nak_psn = psn;
  rt.ack_due = false;  // a NAK acknowledges everything before its PSN
  if (!rt.ack_queued) {
    rt.ack_queued = true;
    ack_queue_.push_back(qpn);
  }
  kick_tx();
}

// The responder found an error it reports in the receive WQE's CQE: the NAK goes out, the
// CQE is written and the QP enters the error state.
void TransportEngine::responder_error(uint32_t qpn, uint8_t syn, uint8_t nak_code, uint32_t psn) {
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  queue_nak(qpn, AckKind::nak, nak_code, psn);
  if (!rt.rq.empty()) {
    CompletionRecord r = recv_completion(q, qpn, rt.rq.front());
    r.syndrome = syn;
    rt.rq.pop_front();
    emit_completion(r);
  }
  rt.in_send = false;
  enter_error(qpn);
}

void TransportEngine::responder_receive(IbPacket& p) {
  const uint32_t qpn = p.dest_qpn;
  if (!tables_.qp_exists(qpn) || tables_.qps[qpn].type != QpType::rc) {
    ++stats_.dropped_no_qp;
    return;
  }
  QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  if (q.state != QpState::rtr && q.state != QpState::rts && q.state != QpState::sqd) {
    ++stats_.dropped_no_qp;  // RESET / INIT drop silently; a QP in error answers nothing
    return;
  }
  const int32_t d = psn_diff(p.psn, rt.epsn);
  if (d > 0) {
    // A gap: one PSN-sequence-error NAK until the expected packet arrives.
    if (!rt.nak_seq_sent) {
      rt.nak_seq_sent = true;
      queue_nak(qpn, AckKind::nak, kNakPsnSeqError, rt.epsn);
    }
    return;
  }
  const uint32_t mtu = path_mtu_bytes(q);
  if (d < 0) {
    ++stats_.duplicates;
    if (p.op == IbOp::read_request) {
      if (mr_allows(q.pdn, p.rkey, p.va, p.dma_len, kAccessRemoteRead)) {
        const uint32_t npkts = std::max<uint32_t>(1, (p.dma_len + mtu - 1) / mtu);
        owe_response(ResponseJob{qpn, rt.gen, false, p.psn, npkts, 0, p.va, p.dma_len, 0});
        kick_tx();
      }
    } else if (p.op == IbOp::cmp_swap || p.op == IbOp::fetch_add) {
      if (p.psn == rt.last_atomic_psn) {
        owe_response(ResponseJob{qpn, rt.gen, true, p.psn, 1, 0, 0, 0, rt.last_atomic_orig});
        kick_tx();
      }
    } else {
      // Re-acknowledge at once: the requester is retrying because it missed our ACK.
      rt.ack_count = cfg_.ack_coalesce;
      request_ack(qpn, rt, psn_add(rt.epsn, -1));
    }
    return;
  }
  rt.nak_seq_sent = false;
  const uint32_t gen = rt.gen;
  switch (p.op) {
    case IbOp::send_first:
    case IbOp::send_only:
      if (!ensure_recv_wqe(qpn)) {
        if (rt.gen == gen) queue_nak(qpn, AckKind::rnr_nak, q.min_rnr_timer, p.psn);  // S22
        return;
      }
      if (rt.gen != gen) return;
      if (rt.rq.front().decode_error) return responder_error(qpn, rt.rq.front().decode_error, kNakRemoteOp, p.psn);
      if (!sges_allowed(q.pdn, rt.rq.front().sges, kAccessLocalWrite))
        return responder_error(qpn, syndrome::kLocalProtection, kNakRemoteOp, p.psn);
      rt.in_send = true;
      rt.recv_offset = 0;
      [[fallthrough]];
    case IbOp::send_middle:
    case IbOp::send_last: {
      if (!rt.in_send) return responder_error(qpn, syndrome::kLocalQpOp, kNakInvalidRequest, p.psn);
      RecvWqe& w = rt.rq.front();
      if (rt.recv_offset + p.payload.size() > w.capacity)
        return responder_error(qpn, syndrome::kLocalLength, kNakInvalidRequest, p.psn);  // S19 local length
      scatter(w.sges, rt.recv_offset, p.payload.data(), uint32_t(p.payload.size()));
      rt.recv_offset += uint32_t(p.payload.size());
      if (p.op == IbOp::send_last || p.op == IbOp::send_only) {
        CompletionRecord r = recv_completion(q, qpn, w);
        r.opcode = p.has_imm ? cqe::kRespSendImm : cqe::kRespSend;
        r.byte_cnt = rt.recv_offset;
        r.imm_present = p.has_imm;
        r.imm = p.imm;
        r.se = p.se;
        rt.rq.pop_front();
        rt.in_send = false;
        ++rt.msn;
        emit_completion(r);  // after the data writes in the DMA queue: RECV completes once placed
      }
      break;
    }
    case IbOp::write_first:
    case IbOp::write_only:
      if (!(q.access & kAccessRemoteWrite) || !mr_allows(q.pdn, p.rkey, p.va, p.dma_len, kAccessRemoteWrite)) {
        queue_nak(qpn, AckKind::nak, kNakRemoteAccess, p.psn);
        return;
      }
      rt.write_va = p.va;
      rt.write_left = p.dma_len;
      rt.write_total = p.dma_len;
      rt.in_write = true;
      [[fallthrough]];
    case IbOp::write_middle:
    case IbOp::write_last: {
      if (!rt.in_write || p.payload.size() > rt.write_left) {
        queue_nak(qpn, AckKind::nak, kNakInvalidRequest, p.psn);
        return;
      }
      const bool last = p.op == IbOp::write_last || p.op == IbOp::write_only;
      if (last && p.has_imm) {
        // WRITE with immediate consumes a receive WQE (S18): without one, RNR before any data
        // of this packet is placed, so that the retry finds everything as it was.
        if (!ensure_recv_wqe(qpn)) {
          if (rt.gen == gen) queue_nak(qpn, AckKind::rnr_nak, q.min_rnr_timer, p.psn);
          return;
        }
        if (rt.gen != gen) return;
      }
      dma_write(rt.write_va, p.payload.data(), uint32_t(p.payload.size()));
      rt.write_va += p.payload.size();
      rt.write_left -= uint32_t(p.payload.size());
      if (last) {
        rt.in_write = false;
        ++rt.msn;
        if (p.has_imm) {
          CompletionRecord r = recv_completion(q, qpn, rt.rq.front());
          r.opcode = cqe::kRespWriteImm;
          r.byte_cnt = rt.write_total;
          r.imm_present = true;
          r.imm = p.imm;
          r.se = p.se;
          rt.rq.pop_front();
          emit_completion(r);
        }
      }
      break;
    }
    case IbOp::read_request: {
      if (!(q.access & kAccessRemoteRead) || !mr_allows(q.pdn, p.rkey, p.va, p.dma_len, kAccessRemoteRead)) {
        queue_nak(qpn, AckKind::nak, kNakRemoteAccess, p.psn);
        return;
      }
      const uint32_t npkts = std::max<uint32_t>(1, (p.dma_len + mtu - 1) / mtu);
      owe_response(ResponseJob{qpn, rt.gen, false, p.psn, npkts, 0, p.va, p.dma_len, 0});
      rt.epsn = psn_add(rt.epsn, npkts);  // a READ takes one PSN per response packet
      ++rt.msn;
      kick_tx();
      return;
    }
    case IbOp::cmp_swap:
    case IbOp::fetch_add:
      handle_atomic(qpn, q, rt, p);
      return;
    default:
      return;
  }
  rt.epsn = psn_add(rt.epsn, 1);
  if (p.ack_req) request_ack(qpn, rt, p.psn);
}

// Atomics act on 64-bit little-endian values in host memory (x86 byte order).
void TransportEngine::handle_atomic(uint32_t qpn, QpContext& q, QpRuntime& rt, const IbPacket& p) {
  if (p.va % 8) {
    queue_nak(qpn, AckKind::nak, kNakInvalidRequest, p.psn);
    return;
  }
  if (!(q.access & kAccessRemoteAtomic) || !mr_allows(q.pdn, p.rkey, p.va, 8, kAccessRemoteAtomic)) {
    queue_nak(qpn, AckKind::nak, kNakRemoteAccess, p.psn);
    return;
  }
  const uint32_t gen = rt.gen;
  uint8_t buf[8] = {};
  if (!dma_.read_now(p.va, buf, 8, true)) {
    if (rt.gen == gen) queue_nak(qpn, AckKind::nak, kNakRemoteOp, p.psn);
    return;
  }
  if (rt.gen != gen) return;
  uint64_t orig = 0;
  for (int b = 7; b >= 0; --b) orig = orig << 8 | buf[b];
  const uint64_t next = p.op == IbOp::fetch_add ? orig + p.compare_add : (orig == p.compare_add ? p.swap : orig);
  for (int b = 0; b < 8; ++b) buf[b] = uint8_t(next >> (8 * b));
  if (next != orig || p.op == IbOp::fetch_add) dma_write(p.va, buf, 8);
  rt.last_atomic_psn = p.psn;
  rt.last_atomic_orig = orig;
  rt.epsn = psn_add(rt.epsn, 1);
  ++rt.msn;
  owe_response(ResponseJob{qpn, rt.gen, true, p.psn, 1, 0, 0, 0, orig});
  kick_tx();
}

void TransportEngine::ud_receive(IbPacket& p) {
  const uint32_t qpn = p.dest_qpn;
  if (!tables_.qp_exists(qpn) || tables_.qps[qpn].type == QpType::rc) {
    ++stats_.dropped_no_qp;
    return;
  }
  const QpContext& q = tables_.qps[qpn];
  QpRuntime& rt = rt_[qpn];
  if (q.state != QpState::rtr && q.state != QpState::rts && q.state != QpState::sqd && q.state != QpState::sqe) {
    ++stats_.dropped_no_qp;
    return;
  }
  if (p.qkey != q.qkey) {
    ++stats_.qkey_violations;  // IB: a Q_Key mismatch is silently dropped (and counted)
    return;
  }
  const uint32_t gen = rt.gen;
  if (!ensure_recv_wqe(qpn) || rt.gen != gen) {
    ++stats_.ud_no_wqe;  // UD has no RNR: the datagram is dropped
    return;
  }
  RecvWqe w = std::move(rt.rq.front());
  rt.rq.pop_front();
  CompletionRecord r = recv_completion(q, qpn, w);
  const uint32_t grh_bytes = p.grh ? 40 : 0;
  const uint32_t total = grh_bytes + uint32_t(p.payload.size());
  if (w.decode_error || total > w.capacity || !sges_allowed(q.pdn, w.sges, kAccessLocalWrite)) {
    r.syndrome = w.decode_error ? w.decode_error : total > w.capacity ? syndrome::kLocalLength : syndrome::kLocalProtection;
    emit_completion(r);
    return;
  }
  if (p.grh) {
    // The first 40 bytes of the buffer receive the GRH: IPv6 version, payload length, next header.
    uint8_t grh[40] = {};
    grh[0] = 0x60;
    grh[4] = uint8_t(p.payload.size() >> 8);
    grh[5] = uint8_t(p.payload.size());
    grh[6] = 0x1B;
    scatter(w.sges, 0, grh, 40);
  }
  scatter(w.sges, grh_bytes, p.payload.data(), uint32_t(p.payload.size()));
  r.opcode = p.has_imm ? cqe::kRespSendImm : cqe::kRespSend;
  r.byte_cnt = total;
  r.imm_present = p.has_imm;
  r.imm = p.imm;
  r.se = p.se;
  r.src_qpn = p.src_qpn;
  r.slid = p.slid;
  r.sl = p.sl;
  r.grh = p.grh;
  emit_completion(r);
}

}  // namespace vhca
