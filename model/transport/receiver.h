// The port's receive side: packets from the IB link enter a FIFO of rx_fifo_depth packets, which
// the port advertises to the link as its credits (S27: the far sender stops when it is full; each
// packet taken out returns its credit), and are taken one at a time: rx_packet_cycles to check one (headers, ICRC, PSN, QP
// lookup), then the requester (ACKs, NAKs, responses) or the responder (requests, datagrams)
// handles it. A packet that waits for host memory holds the pipeline until its read completes,
// and the next packet is taken only once the requester's and the responder's outboxes have
// handed on everything (a full DMA queue or completion input holds the receive side). One
// SC_METHOD; no thread.
#pragma once
#include <cstdint>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "model/common/queue_gauge.h"
#include "model/common/sim_clock.h"
#include "model/common/slot_ring.h"
#include "model/common/wakeup.h"
#include "model/transport/edge_order.h"
#include "model/transport/requester.h"
#include "model/transport/responder.h"
#include "model/transport/transport_types.h"
#include "tlm/ib_credits.h"

namespace vhca {

class Receiver : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Receiver> port_in{"port_in"};
  GaugeExport s_fifo;  // the rx FIFO, as the hierarchy reports it
  // The link's flow control for this port's buffer (unbound: no credits, a full FIFO drops).
  sc_core::sc_port<IbRxFlowIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND> flow{"flow"};

  SC_HAS_PROCESS(Receiver);
  Receiver(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
           Requester& requester, Responder& responder, TransportStats& stats);
  void reset();
  // Whether it has handed a packet to the requester or responder on `cycle` and will hand none
  // other on it: packets are handled one at a time, the next checked rx_packet_cycles after it
  // is taken (a packet waiting for a read resumes on a later cycle). Set as the packet's handling
  // begins, once the timers and reads of the edge have acted (a write they push is held): the outboxes' rank guard relies on one packet's writes being of one rank (a SEND's or
  // UD's payload `recv_data`, a WRITE's or atomic's `other`, the requester's READ data `other`).
  bool handled_all_on(uint64_t cycle) const { return handled_cycle_ == cycle && cfg_.rx_packet_cycles >= 1; }
  // Hands on now the packet whose check ends on this edge, if it has not been yet: for the
  // transmit arbiter, which decides on an edge after the receiver has (decisions.md 48). Only the
  // hand-on: the next packet is taken by the receiver's own activation on this edge, which comes.
  bool hand_on_due_packet(uint64_t now) {  // now: the cycle on whose edge it is asked
    if (state_ != State::checking || checked_at_ != now) return false;
    handle();
    return true;
  }
  // Before a packet is handed on, the blocks before the receiver in the edge's order act
  // (the timers due, the reads usable: edge_order.h).
  void follow(const EdgeOrder* order) { order_ = order; }

 private:
  enum class State { idle, checking, waiting };
  void start_of_simulation() override;
  void arrive(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  void free_slots(uint32_t n) {
    if (flow.size()) flow->freed(n);
  }
  void step();
  void handle();
  void take_arrived();
  void wake_for_next_arrival();
  void wake_for(const sc_core::sc_time& arrival);

  const SimClock& clock_;
  TransportConfig cfg_;
  Requester& requester_;
  Responder& responder_;
  TransportStats& stats_;
  const EdgeOrder* order_ = nullptr;
  Wakeup wakeup_;
  SlotRing<IbPacket> fifo_;  // rx_fifo_depth slots; a packet's payload storage is reused
  IbPacket current_;
  State state_ = State::idle;
  uint64_t checked_at_ = 0;  // the cycle the current packet's check ends
  uint64_t handled_cycle_ = UINT64_MAX;  // the last cycle a packet was handled on
  bool looks_ = false;  // it looks for its packets on the link (rx_takes_arrivals): take_arrived
  bool taking_arrived_ = false;
};

}  // namespace vhca
