// InfiniBand link-level flow control (rule S27; IBA vol. 1, "Flow Control"): a port sends a packet
// only when the receiving port has advertised buffer room for it, and the receiver returns the
// room (a flow-control packet on the reverse wire) once it has taken the packet out of its
// buffer. A full receive buffer therefore stops the sender: nothing is dropped for want of room.
//
// IBA counts credits in 64-byte blocks per virtual lane; vhca's port buffers whole packets (a FIFO
// of rx_fifo_depth packets of up to the MTU each), so one credit is one packet slot (assumption,
// docs/decisions.md). The two views of one direction's credits:
//   IbCreditIf   the sending port's: may a packet go now, and a wake-up when credits return;
//   IbRxFlowIf   the receiving port's: its buffer at link-up, and each slot it frees; and how the
//                packets that have arrived reach it (the link wakes on each arrival, or the port
//                takes them when it next looks: docs/architecture.md, "Arrivals taken when the receiver looks").
#pragma once
#include <cstdint>
#include <functional>
#include <systemc>

namespace vhca {

class IbCreditIf : public virtual sc_core::sc_interface {
 public:
  // Is there a slot in the far port's receive buffer? A refusal arranges a wake-up (on_return)
  // for when a credit comes back.
  virtual bool can_send() const = 0;
  // Registers a wake-up told when credits come back after a refusal (for SC_METHOD senders).
  virtual void on_return(std::function<void()> wake) = 0;
};

class IbRxFlowIf : public virtual sc_core::sc_interface {
 public:
  // At link-up (start of simulation): the receive buffer, in packets.
  virtual void advertise(uint32_t slots) = 0;
  // The port took `slots` packets out of its buffer (checked, or discarded): their credits go back.
  virtual void freed(uint32_t slots) = 0;
  // Arrivals. By default the link hands each packet on as it arrives (its own process), which
  // wakes the port. A port that looks for them itself calls look_for_arrivals() once, at the start
  // of simulation: `sent` is then told each packet's arrival time as it is sent, and the link
  // leaves the arrived packets on the wire until the port calls take_arrived(), which it must do
  // before it takes a packet from its buffer; when it would not look on its own (idle, its buffer
  // empty) it wakes itself for the first arrival (next_arrival, or `sent`).
  virtual void look_for_arrivals(std::function<void(const sc_core::sc_time& arrival)> sent) = 0;
  // The packets that have arrived by now, handed on into the port at once, in order (through the
  // link's initiator socket, as the link's own process does).
  virtual void take_arrived() = 0;
  // The arrival time of the first packet on its way to the port; false if there is none.
  virtual bool next_arrival(sc_core::sc_time& arrival) const = 0;
};

}  // namespace vhca
