// The port's receive side: packets from the IB link enter a FIFO (rx_fifo_depth, the link's credit
// limit) and are taken one at a time: rx_packet_cycles to check one (headers, ICRC, PSN, QP
// lookup), then the requester (ACKs, NAKs, responses) or the responder (requests, datagrams)
// handles it. A packet that waits for host memory holds the pipeline until its read completes,
// and the next packet is taken only once the requester's and the responder's outboxes have
// handed on everything (a full DMA queue or completion input holds the receive side). One
// SC_METHOD; no thread.
#pragma once
#include <cstdint>
#include <deque>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "model/common/queue_gauge.h"
#include "model/common/sim_clock.h"
#include "model/common/wakeup.h"
#include "model/transport/requester.h"
#include "model/transport/responder.h"
#include "model/transport/transport_types.h"

namespace vhca {

class Receiver : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Receiver> port_in{"port_in"};
  GaugeExport s_fifo;  // the rx FIFO, as the hierarchy reports it

  SC_HAS_PROCESS(Receiver);
  Receiver(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
           Requester& requester, Responder& responder, TransportStats& stats);
  void reset();

 private:
  enum class State { idle, checking, waiting };
  void arrive(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  void step();
  void handle();

  const SimClock& clock_;
  TransportConfig cfg_;
  Requester& requester_;
  Responder& responder_;
  TransportStats& stats_;
  Wakeup wakeup_;
  std::deque<IbPacket> fifo_;
  IbPacket current_;
  State state_ = State::idle;
  uint64_t checked_at_ = 0;  // the cycle the current packet's check ends
};

}  // namespace vhca
