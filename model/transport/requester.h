// The requester: per QP, the send queue's WQEs from fetch to completion — PSN assignment, the
// send cursor (with go-back on NAK, RNR NAK and timeout), the inflight window, fences and the
// READ / atomic limit — and what comes back: ACKs, NAKs, READ responses and atomic ACKs. It builds
// request packets when the transmit arbiter asks, and completes WQEs in posting order (S17)
// through its outbox, which also carries the data of READ responses and atomic results ahead of
// the CQEs that report them.
#pragma once
#include <cstdint>
#include <memory>
#include <systemc>
#include <vector>

#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/common/slot_ring.h"
#include "model/cq/cq_types.h"
#include "model/qp/qp_table.h"
#include "model/transport/outbox.h"
#include "model/transport/transport_timers.h"
#include "model/transport/transport_types.h"

namespace vhca {

class Requester : public sc_core::sc_module {
 public:
  Requester(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg, QpTables& tables,
            TransportTimers& timers, DmaEngine& dma, sc_core::sc_port<CompletionPutIf>& completions,
            TransportStats& stats);

  Outbox& outbox() { return outbox_; }
  // Nothing left to hand on: no completion waiting for room and the outbox empty.
  bool settled() const { return completing_.empty() && outbox_.empty(); }

  // From the WQE fetch: WQEs read from the ring, in order; how many are fetched and not yet
  // reached by the send cursor (the prefetch limit).
  void deliver(uint32_t qpn, std::vector<SendWqe>& burst);
  uint32_t unstarted(uint32_t qpn) const;
  // A flush: every WQE held completes (with its own error, else WR flush), and those read from
  // the ring unfetched join them and complete with WR flush; all are handed to the outbox while it
  // has room, as any send completions are (complete_ready).
  void flush_held(uint32_t qpn);
  void flush_unfetched(uint32_t qpn, std::vector<SendWqe>& wqes);

  // For the transmit arbiter: build the next request packet of the next QP in the round robin
  // that may send. Returns false if no QP had anything to do; `out` stays empty when the WQE
  // failed locally (it completes in error, nothing is sent).
  bool build_next(std::unique_ptr<PendingTx>& out, PendingTxPool& jobs);
  // A built request whose payload has been read: whether it still goes out (not rewound, the QP
  // not reset or broken, the payload read), then that it went.
  bool may_send(const PendingTx& job);
  // Sent: an RC request starts the retransmit timer; a UD send returns true, to be completed by
  // left_port() once it has left the port (S18).
  bool sent(const PendingTx& job);
  void left_port(const PendingTx& job);

  // From the receiver: an ACK, NAK, READ response or atomic ACK for one of our QPs.
  void receive(IbPacket& p);

  // QP lifecycle (from the command unit, through the transport).
  void qp_reset(uint32_t qpn);
  void qp_ready_to_send(uint32_t qpn, bool from_rtr);  // RTR -> RTS, or SQE / SQD -> RTS
  void qp_draining(uint32_t qpn);                      // -> SQD
  void qp_error(uint32_t qpn);                         // the QP entered an error state
  void reset();

  void timer_expired(uint32_t qpn, TimerKind kind);

  Observers<> on_tx_work;                          // a QP may send: the transmit arbiter looks
  Observers<uint32_t> on_fetch_wanted;             // a QP's send cursor moved: it may fetch more
  Observers<uint32_t, QpState> on_error;           // a WQE failed: the QP enters this state
  Observers<const DeviceEvent&> on_event;          // SQ drained
  Observers<uint32_t, uint32_t, uint64_t> on_ack_received;  // (QPN, PSN, cycle)

 private:
  struct SendState {
    uint32_t gen = 0;        // bumped when the QP is reset: stale work is dropped
    SlotRing<SendWqe> sq{1};  // fetched, not yet completed, in posting order (grows by doubling to the QP's most, then stays)
    size_t cursor = 0;       // the WQE being transmitted
    uint32_t cursor_pkt = 0;
    uint32_t next_psn = 0, una_psn = 0;
    uint8_t retry_left = 0, rnr_left = 0;
    bool in_tx_ring = false;
    bool halted = false;      // a WQE failed: send nothing more
    uint32_t tx_epoch = 0;    // bumped at each go-back: packets built before it are stale
    uint32_t ud_psn = 0;
    bool drain_pending = false;  // SQD: the SQ drained event is still to be sent
    bool completing = false;     // in completing_: WQEs at its head may be done
    bool flushing = false;       // the held WQEs complete with WR flush (the QP is in error)
  };

  void want_tx(uint32_t qpn);
  bool can_send(uint32_t qpn);
  void start_wqe(const QpContext& q, SendState& s, SendWqe& w);
  bool build_request(uint32_t qpn, const QpContext& q, SendState& s, const SendWqe& w, PendingTx& out);
  void arm_retransmit_timer(uint32_t qpn, const QpContext& q, bool restart);
  bool outstanding(const SendState& s) const;
  void retransmit_timeout(uint32_t qpn);
  long wqe_at(const SendState& s, uint32_t psn) const;
  void ack_through(uint32_t qpn, uint32_t psn);
  void go_back(uint32_t qpn, uint32_t psn);
  void fail_wqe_at(uint32_t qpn, uint32_t psn, uint8_t syndrome);
  // Completes the QP's done WQEs from the head, in posting order (S17), one at a time while the
  // outbox has room; a QP that must wait joins completing_ and goes on when there is room.
  void complete_ready(uint32_t qpn);
  void pump_completions();
  bool complete_head(uint32_t qpn);
  void check_drained(uint32_t qpn);
  void scatter(const SgeList& sges, uint32_t offset, const uint8_t* data, uint32_t len);
  CompletionRecord completion(const QpContext& q, uint32_t qpn, const SendWqe& w, uint8_t status) const;

  const SimClock& clock_;
  TransportConfig cfg_;
  QpTables& tables_;
  TransportTimers& timers_;
  TransportStats& stats_;
  Outbox outbox_;
  std::vector<SendState> qps_;
  SlotRing<uint32_t> tx_ring_;  // QPs with SQ work, round robin
  SlotRing<uint32_t> completing_;  // QPs with completions waiting for room in the outbox
};

}  // namespace vhca
