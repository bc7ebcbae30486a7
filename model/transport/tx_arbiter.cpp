#include "model/transport/tx_arbiter.h"

#include <algorithm>

#include "model/common/log.h"
#include "model/common/sim_now.h"

namespace vhca {

TxArbiter::TxArbiter(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
                     Requester& requester, Responder& responder, DmaEngine& dma, TransportStats& stats)
    : sc_module(name),
      s_built("s_built", cfg.tx_read_tags, "requester (requests), responder (READ responses, atomic ACKs)"),
      clock_(clock),
      cfg_(cfg),
      requester_(requester),
      responder_(responder),
      dma_(dma),
      stats_(stats),
      wakeup_(clock) {
  requester_.on_tx_work.add([this] { kick(); });
  responder_.on_tx_work.add([this] { kick(); });
  requester_.outbox().on_empty.add([this] { kick(); });
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

void TxArbiter::end_of_elaboration() {
  if (credits.size()) credits->on_return([this] { kick(); });
}

bool TxArbiter::credit_available() {
  if (!credits.size() || credits->can_send()) return true;
  ++stats_.tx_credit_stalls;
  return false;
}

bool TxArbiter::acknowledged_data_issued() {
  const IbOp op = out_.packet.op;
  if (op != IbOp::ack && op != IbOp::atomic_ack) return true;
  if (placement_wait_) return false;
  // An ACK waits for the data it acknowledges; an atomic ACK for every write placed so far.
  auto resume = [this] {
    placement_wait_ = false;
    kick();
  };
  Outbox& box = responder_.outbox();
  if (op == IbOp::ack ? box.writes_issued_through(responder_.built_ack_writes(), resume) : box.writes_issued(resume))
    return true;
  placement_wait_ = true;
  ++stats_.ack_placement_holds;
  return false;
}

void TxArbiter::step() {
  const uint64_t now = clock_.now();
  if (!clock_.on_edge()) {
    wakeup_.wake(now + 1);
    return;
  }
  if (order_) let_feeders_act(now);
  // A packet due on the wire without a credit stays at the port; the credit's return wakes this.
  const bool held = sending_ && now >= send_at_ && (!acknowledged_data_issued() || !credit_available());
  if (sending_ && now >= send_at_ && !held) send();
  if (ud_job_ && now >= ud_done_at_) {
    std::unique_ptr<PendingTx> job = std::move(ud_job_);
    requester_.left_port(*job);
    jobs_.give(std::move(job));
  }
  if (sending_ || ud_job_) {  // a wake-up for other work replaced ours: ask again
    if (sending_ && !held) wakeup_.wake(send_at_);
    else if (ud_job_) wakeup_.wake(ud_done_at_);
    return;
  }
  run();
}

void TxArbiter::let_feeders_act(uint64_t now) {
  feeders_acting_ = true;
  order_->timers_and_reads(now);
  stats_.packets_handed_first += rx_->hand_on_due_packet(now);
  feeders_acting_ = false;
}

// Decides, on this edge, until the arbiter is sending or has nothing to do.
void TxArbiter::run() {
  for (;;) {
    if (!requester_.settled()) return;  // held by a full DMA queue or completion input
    if (responder_.next_ack(ack_)) {
      start_send(std::move(ack_), nullptr);
      return;
    }
    if (!pending_.empty() && pending_.front()->ready) {
      std::unique_ptr<PendingTx> job = std::move(pending_.front());
      pending_.pop_front();
      if (job->response ? responder_.may_send(*job) : requester_.may_send(*job)) {
        IbPacket& p = job->packet;  // named first: the job moves into the call
        start_send(std::move(p), std::move(job));
        return;
      }
      jobs_.give(std::move(job));
      continue;
    }
    if (pending_.size() < cfg_.tx_read_tags) {
      std::unique_ptr<PendingTx> built;
      if (responder_.next_response(built, jobs_) || requester_.build_next(built, jobs_)) {
        if (built) queue_built(std::move(built));
        continue;
      }
    }
    return;  // woken by the next work
  }
}

void TxArbiter::queue_built(std::unique_ptr<PendingTx> job) {
  PendingTx* j = job.get();
  pending_.push_back(std::move(job));
  s_built.pushed(pending_.size());
  if (!j->ready) read_payload(j);
}

// The payload of a built packet, from host memory: a READ response from one address, a request
// gathered from its SGEs piece by piece. Many packets' reads are in flight at once.
void TxArbiter::read_payload(PendingTx* job) {
  if (job->response) {
    IbPacket& p = job->packet;
    dma_.read(job->va, p.payload.data(), uint32_t(p.payload.size()), job->fence, [this, job](bool ok) {
      job->ok = ok;
      payload_read(job);
    });
    return;
  }
  read_next_piece(job);
}

// One piece after the other; a failed piece does not stop the rest (the packet fails as a whole).
void TxArbiter::read_next_piece(PendingTx* job) {
  uint32_t k = 0;
  bool issued = false;
  for_each_piece(job->sges, job->offset, uint32_t(job->packet.payload.size()), [&](uint64_t addr, uint32_t n, uint32_t at) {
    if (issued || k++ != job->next_piece) return;
    issued = true;
    dma_.read(addr, job->packet.payload.data() + at, n, false, [this, job](bool ok) {
      job->ok = ok && job->ok;
      ++job->next_piece;
      read_next_piece(job);
    });
  });
  if (!issued) payload_read(job);
}

void TxArbiter::payload_read(PendingTx* job) {
  job->ready = true;
  kick();
}

// The packet's headers take tx_packet_cycles to build; it goes out on the first edge the wire is free.
// `p` may be the job's own packet: what follows the send needs the job, not its packet, which
// takes the last packet sent in exchange (its payload's storage goes back to the pool with it).
void TxArbiter::start_send(IbPacket&& p, std::unique_ptr<PendingTx> job) {
  const sc_core::sc_time built = clock_.at(clock_.now() + cfg_.tx_packet_cycles);
  send_at_ = clock_.cycle_at_or_after(std::max(built, wire_free_at_));
  sending_ = true;
  out_.packet.exchange(p);
  job_ = std::move(job);
  wakeup_.wake(send_at_);
}

void TxArbiter::send() {
  sending_ = false;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  carry_packet(*port_out.operator->(), out_, delay, carry_tx_);  // the link keeps its own copy
  const IbPacket& p = out_.packet;
  ++stats_.packets_sent;
  stats_.bytes_sent += p.payload.size();
  log::write(log::Cat::wq, "tx {}{} qp {:#x} psn {:#x} len {}", ib_op_name(p.op),
             p.op != IbOp::ack ? "" : p.ack_kind == AckKind::nak ? "(NAK)" : p.ack_kind == AckKind::rnr_nak ? "(RNR NAK)" : "",
             p.dest_qpn, p.psn, p.payload.size());
  on_packet_sent(p, clock_.now());
  wire_free_at_ = sim_now() + delay;
  std::unique_ptr<PendingTx> job = std::move(job_);
  if (job && !job->response && requester_.sent(*job)) {
    ud_done_at_ = clock_.cycle_at_or_after(wire_free_at_);
    ud_job_ = std::move(job);
  }
  jobs_.give(std::move(job));  // null when kept (or an ACK's)
}

}  // namespace vhca
