// The port's transmit side. Each turn, in priority order: an ACK / NAK the responder owes; the
// oldest built packet once its payload has arrived; the next packet to build — a READ response or
// atomic ACK before requests, requests round robin over QPs, one packet a turn. Building a packet
// starts its payload read (up to tx_read_tags packets built ahead), so that reads for later
// packets overlap the wire time of earlier ones; packets leave in the order they were built.
// A packet takes tx_packet_cycles to build (headers, scheduling) and goes out on the first edge
// the wire is free and the far port has room for it: without a link credit (S27) the packet is
// held at the port until one comes back. One SC_METHOD: it wakes for work, for the edge a packet
// goes out, for a credit's return and, for a UD send, for the edge it has left the port (its
// completion). No thread.
#pragma once
#include <cstdint>
#include <memory>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "model/common/observers.h"
#include "model/common/queue_gauge.h"
#include "model/common/sim_clock.h"
#include "model/common/slot_ring.h"
#include "model/common/wakeup.h"
#include "model/dma/dma_engine.h"
#include "model/transport/edge_order.h"
#include "model/transport/receiver.h"
#include "model/transport/requester.h"
#include "model/transport/responder.h"
#include "model/transport/transport_types.h"
#include "tlm/ib_credits.h"

namespace vhca {

class TxArbiter : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<TxArbiter> port_out{"port_out"};
  GaugeExport s_built;  // packets built ahead, waiting for their payload or their turn
  // The IB link's credits for this port's packets (unbound: no limit, as on a bare port).
  sc_core::sc_port<IbCreditIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND> credits{"credits"};

  SC_HAS_PROCESS(TxArbiter);
  TxArbiter(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
            Requester& requester, Responder& responder, DmaEngine& dma, TransportStats& stats);

  Observers<const IbPacket&, uint64_t> on_packet_sent;  // (packet, cycle it left)
  // On each edge before it decides, the blocks that feed it on that edge act first (the timers
  // due, the reads usable, the receiver's packet: edge_order.h), so that what it decides does
  // not depend on which process SystemC runs first (decisions.md 48).
  void follow(const EdgeOrder* order, Receiver* rx) {
    order_ = order;
    rx_ = rx;
  }

 private:
  // New work, a payload read, a credit: look again now. While a packet waits for its edge on the
  // wire, the wake-up for that edge is pending and looks after it (a look before finds nothing to do).
  void kick() {
    if (feeders_acting_) return;  // this step goes on to decide (or to a wake-up already asked), and sees their work
    if (sending_ && !ud_job_ && clock_.now() < send_at_) return;
    wakeup_.wake(clock_.now());
  }
  void end_of_elaboration() override;
  bool credit_available();
  // An ACK (or atomic ACK) leaves only once the payload writes the responder handed on before it
  // have been issued to the link; false: held, and woken when they have.
  bool acknowledged_data_issued();
  void let_feeders_act(uint64_t now);  // on the edge of cycle now
  void step();
  void run();
  void queue_built(std::unique_ptr<PendingTx> job);
  void read_payload(PendingTx* job);
  void read_next_piece(PendingTx* job);
  void payload_read(PendingTx* job);
  void start_send(IbPacket&& p, std::unique_ptr<PendingTx> job);
  void send();

  const SimClock& clock_;
  TransportConfig cfg_;
  Requester& requester_;
  Responder& responder_;
  DmaEngine& dma_;
  TransportStats& stats_;
  const EdgeOrder* order_ = nullptr;
  Receiver* rx_ = nullptr;
  Wakeup wakeup_;
  SlotRing<std::unique_ptr<PendingTx>> pending_;  // built, in wire order
  PendingTxPool jobs_;  // those done with, for the next
  bool feeders_acting_ = false;  // the blocks before it on this edge are acting
  bool placement_wait_ = false;  // a held ACK waits for the responder's writes to be issued
  // The packet being sent: it goes out on send_at_.
  bool sending_ = false;
  uint64_t send_at_ = 0;
  IbPacketExt out_;  // the packet, in the extension that carries it
  IbPacket ack_;     // the next ACK, built in place: sending it leaves the last packet's payload storage here
  tlm::tlm_generic_payload carry_tx_;  // the transaction that carries it (reused)
  std::unique_ptr<PendingTx> job_;
  // A UD send waiting to leave the port before it completes.
  std::unique_ptr<PendingTx> ud_job_;
  uint64_t ud_done_at_ = 0;
  sc_core::sc_time wire_free_at_;
};

}  // namespace vhca
