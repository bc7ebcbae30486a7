// The work-request path of the HCA, between the DMA engine and the port on the IB link: an
// sc_module that holds the transport's blocks, each with its own per-QP state, and joins them.
//
//   s_doorbell ─► doorbell unit ─► WQE fetch (SQ descriptor cache, flushes, QP events) ─► requester
//                        └──────► receive queue (RQ descriptor cache) ◄── responder
//   transmit arbiter: ACK / NAK > READ responses, atomic ACKs > requests ─► port_out
//   port_in ─► receiver (rx FIFO, check) ─► requester (ACKs, responses) | responder (requests)
//   timers (ACK delay, RNR, retransmit) ─► responder, requester
//   requester / responder outboxes: payload writes ─► DMA, completion records ─► m_cpl
//
// Every block is event-driven: SC_METHODs that wake for work, and DMA reads that complete by
// callback; no thread. docs/transport.md is the timing specification; docs/architecture.md
// lists the blocks and their queues.
#pragma once
#include <cstdint>
#include <systemc>
#include <tlm>

#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/common/stream.h"
#include "model/cq/completion_arbiter.h"
#include "model/cq/cq_types.h"
#include "model/dma/dma_engine.h"
#include "model/qp/qp_table.h"
#include "model/transport/doorbell_unit.h"
#include "model/transport/ib_packet.h"
#include "model/transport/receiver.h"
#include "model/transport/recv_queue.h"
#include "model/transport/requester.h"
#include "model/transport/responder.h"
#include "model/transport/transport_timers.h"
#include "model/transport/transport_types.h"
#include "model/transport/tx_arbiter.h"
#include "model/transport/wqe_fetch.h"

namespace vhca {

class TransportEngine : public sc_core::sc_module {
 public:
  // Completion records to the CQ writer (through the completion arbiter: a full input holds the
  // block that completes) and asynchronous events (QP fatal, SQ drained) to the EQ engine.
  sc_core::sc_port<CompletionPutIf> m_cpl{"m_cpl"};
  StreamOut<DeviceEvent> m_event{"m_event"};

 private:
  TransportConfig cfg_;
  QpTables& tables_;
  TransportStats stats_;

 public:
  // The blocks, in the order they are built (each knows only the ones before it).
  TransportTimers timers;
  RecvQueue rq;
  Requester requester;
  Responder responder;
  WqeFetch fetch;
  DoorbellUnit doorbells;
  TxArbiter tx;
  Receiver rx;

 private:
  EdgeOrder edge_order_;  // the order on an edge that rx and tx follow (edge_order.h)

 public:
  // The port on the IB link, and the doorbell input (the doorbell unit's).
  tlm::tlm_initiator_socket<> port_out{"port_out"};
  tlm::tlm_target_socket<> port_in{"port_in"};
  StreamIn<WqDoorbell>& s_doorbell = doorbells.s_doorbell;

  // Observers for tests and tools: a refused doorbell (reason, QPN), an ACK / NAK arrived at the
  // requester (QPN, PSN, cycle), a packet left the port, a doorbell was taken.
  Observers<uint8_t, uint32_t>& on_bad_doorbell = doorbells.on_bad_doorbell;
  Observers<uint32_t, uint32_t, uint64_t>& on_ack_received = requester.on_ack_received;
  Observers<const IbPacket&, uint64_t>& on_packet_sent = tx.on_packet_sent;
  Observers<const WqDoorbell&, uint64_t>& on_doorbell = doorbells.on_doorbell;

  TransportEngine(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
                  DmaEngine& dma, QpTables& tables);

  // Called by the command unit after a QP changed state (or was created / destroyed).
  void qp_state_changed(uint32_t qpn, QpState from, QpState to);
  // A CQ overflowed: its QPs enter the error state with a QP fatal event (S14).
  void cq_overflowed(uint32_t cqn);
  void reset();

  const TransportStats& stats() const { return stats_; }
  const TransportConfig& config() const { return cfg_; }
};

}  // namespace vhca
