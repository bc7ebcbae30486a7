// The responder: per QP, the receive side of RC — PSN checking (one sequence-error NAK per gap),
// duplicates (re-ACK, READ and atomic replay), SEND into receive WQEs, WRITE, READ and atomics
// with their MR checks, RNR when no receive WQE is posted — and UD receives. It owes ACKs
// (coalesced: after ack_coalesce messages or ack_delay_cycles), NAKs, READ responses and atomic
// ACKs, which the transmit arbiter takes from it. The data it places and the receive CQEs go out
// through its outbox, in order.
//
// A packet that needs host memory first (a receive WQE not yet fetched, an atomic's old value)
// returns `wait`; the receiver calls it again with the same packet when the read has completed,
// and the second pass finds the WQE cached or the value read. Nothing before that point changes
// state, so the second pass is the first one, later.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <systemc>
#include <vector>

#include "model/common/observers.h"
#include "model/common/queue_gauge.h"
#include "model/common/sim_clock.h"
#include "model/common/slot_ring.h"
#include "model/cq/cq_types.h"
#include "model/qp/qp_table.h"
#include "model/transport/outbox.h"
#include "model/transport/recv_queue.h"
#include "model/transport/transport_timers.h"
#include "model/transport/transport_types.h"

namespace vhca {

class Responder : public sc_core::sc_module {
 public:
  enum class Step { done, wait };
  using Resume = std::function<void()>;

  Responder(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg, QpTables& tables,
            TransportTimers& timers, RecvQueue& rq, DmaEngine& dma, sc_core::sc_port<CompletionPutIf>& completions,
            TransportStats& stats);

  // Its own queues, as the hierarchy reports them: the QPs with an ACK or NAK due (each at most
  // once), and the READ and atomic responses owed (per QP: at most max_dest_rd_atomic, 16, for new
  // requests, and 16 more for duplicates answered again).
  GaugeExport s_acks;
  GaugeExport s_responses;

  Outbox& outbox() { return outbox_; }

  // From the receiver: how a packet that waits goes on (called when its read completes; set once,
  // at construction), a new packet (forget what the last one waited for), then an RC request or a
  // UD datagram.
  void resume_with(Resume resume) { resume_ = std::move(resume); }
  void begin_packet();
  Step receive(IbPacket& p);  // RC and UC
  Step receive_ud(IbPacket& p);

  // For the transmit arbiter: the next ACK / NAK due (false if none may go now), the next READ
  // response packet or atomic ACK owed, and whether a built response still goes out.
  bool next_ack(IbPacket& out);
  // The payload writes the last ACK or NAK next_ack() built must see issued before it leaves.
  uint64_t built_ack_writes() const { return built_ack_writes_; }
  bool next_response(std::unique_ptr<PendingTx>& out, PendingTxPool& jobs);
  bool may_send(const PendingTx& job);

  // QP lifecycle.
  void qp_reset(uint32_t qpn);
  void qp_ready_to_receive(uint32_t qpn);  // INIT -> RTR
  void abort_message(uint32_t qpn) { qps_[qpn].in_send = false; }  // the flush took its WQE
  // A flush: a receive WQE's WR-flush completion, for the WQE fetch to hand on.
  CompletionRecord flush_record(uint32_t qpn, const RecvWqe& w) const;
  void reset();

  void timer_expired(uint32_t qpn, TimerKind kind);

  Observers<> on_tx_work;                 // an ACK, NAK or response is due
  Observers<uint32_t, QpState> on_error;  // the QP enters this state

 private:
  struct RecvState {
    uint32_t gen = 0;
    uint32_t epsn = 0, msn = 0;
    uint32_t recv_offset = 0;   // bytes placed into the front RQ WQE by a multi-packet SEND
    bool in_send = false;
    uint64_t write_va = 0;      // multi-packet WRITE: next address
    uint32_t write_left = 0, write_total = 0;
    bool in_write = false;
    bool nak_seq_sent = false;
    uint32_t last_atomic_psn = UINT32_MAX;
    uint64_t last_atomic_orig = 0;
    // READ responses and atomic ACKs owed and not yet on the wire: a later ACK waits for them,
    // since responses leave in PSN order.
    uint32_t responses_owed = 0;
    uint32_t fresh_owed = 0;  // of them, for new requests (not a duplicate's second answer)
    // Acknowledgement due.
    bool ack_due = false, ack_queued = false;
    uint32_t ack_psn = 0, ack_count = 0;
    uint64_t ack_writes = 0;  // the outbox's writes_added() when the acknowledged data was placed
    bool nak_due = false;
    AckKind nak_kind = AckKind::nak;
    uint8_t nak_code = 0;
    uint32_t nak_psn = 0;
    bool nak_behind = true;  // it waits behind the responses owed
  };
  // A READ response or atomic ACK owed.
  struct ResponseJob {
    uint32_t qpn = 0, gen = 0;
    bool atomic = false;
    uint32_t first_psn = 0, npkts = 0, sent = 0;
    uint64_t va = 0;
    uint32_t length = 0;
    uint64_t atomic_orig = 0;
    bool fresh = true;  // a new request's, not a duplicate's
  };
  // What the packet being processed waited for.
  struct Awaited {
    std::optional<bool> recv_wqe;          // the receive WQE fetch: found one?
    std::optional<bool> atomic_read;       // the atomic's read: ok?
    uint8_t atomic_value[8] = {};
  };

  // A receive WQE at the head of the QP's RQ: ready, none, or wait (a fetch was started).
  enum class Need { ready, none, wait };
  Need recv_wqe(uint32_t qpn);
  Step handle_atomic(uint32_t qpn, QpContext& q, RecvState& s, const IbPacket& p);
  Step drop_uc(RecvState& s, const IbPacket& p);
  uint32_t receive_pdn(const QpContext& q) const;
  void request_ack(uint32_t qpn, RecvState& s, uint32_t psn);
  // behind_responses: the NAK's PSN follows every response owed (false: a response's own failure).
  void queue_nak(uint32_t qpn, AckKind kind, uint8_t code, uint32_t psn, bool behind_responses = true);
  void queue_ack(uint32_t qpn, RecvState& s);
  void responder_error(uint32_t qpn, uint8_t syndrome, uint8_t nak_code, uint32_t psn);
  void owe_response(const ResponseJob& job);
  bool resources_exhausted(const QpContext& q, const RecvState& s) const;
  bool duplicates_exhausted(const RecvState& s) const { return s.responses_owed - s.fresh_owed >= kMaxRdAtomic; }
  Step refuse_for_resources(uint32_t qpn, uint32_t psn);
  // Places a message's bytes in a receive WQE's buffers (tagged with the QP for the S29 checker).
  void scatter(uint32_t qpn, const RecvWqe& w, uint32_t offset, const uint8_t* data, uint32_t len);
  CompletionRecord completion(const QpContext& q, uint32_t qpn, const RecvWqe& w) const;

  const SimClock& clock_;
  TransportConfig cfg_;
  QpTables& tables_;
  TransportTimers& timers_;
  RecvQueue& rq_;
  DmaEngine& dma_;
  TransportStats& stats_;
  Outbox outbox_;
  std::vector<RecvState> qps_;
  SlotRing<uint32_t> ack_queue_;  // QPs with an ACK or NAK due
  uint64_t built_ack_writes_ = 0;
  SlotRing<ResponseJob> responses_;
  Awaited awaited_;
  Resume resume_;  // the receiver's (resume_with): what a read a packet waits for calls back
};

}  // namespace vhca
