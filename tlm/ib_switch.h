// An InfiniBand switch for fabrics of more than two HCAs: N ports, each joined to one HCA port by
// its own cable (a two-sided IbLink), forwarding every packet by its destination LID through a
// linear forwarding table (as a subnet manager programs one; System fills it: LID i + 1 is
// port i).
//
// Cut-through: a packet starts out of its output port `latency` after its header came in (never
// before it has arrived whole, a TLM simplification that adds wire time - latency for packets
// longer than the latency on the wire: 30 ns for a 4 KiB packet at 100 Gb/s). Packets for one
// output take turns on its cable in the order they came in.
//
// Lossless (S27): each input port buffers `buffer_packets` packets and advertises them to its
// cable as credits; a packet keeps its input slot until it leaves through its output, which needs
// a credit of the HCA behind that output. A full HCA therefore holds the switch's output, which
// holds the inputs feeding it, which hold their senders: nothing is dropped for want of room. A
// packet whose LID is in no table entry is dropped and counted (`unroutable`), as a switch
// discards a packet it cannot route.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <unordered_map>
#include <vector>

#include "model/common/observers.h"
#include "model/transport/ib_packet.h"
#include "tlm/ib_credits.h"
#include "tlm/wire_time.h"

namespace vhca {

struct IbSwitchConfig {
  // Port-to-port latency. Assumption, the one behind the point-to-point link's 400 ns (IbLinkConfig):
  // ~300 ns of cut-through switching, with the cables making up the rest. (NVIDIA's SB7800 EDR
  // datasheet states 90 ns port to port; 300 ns keeps a switched pair's latency equal to the
  // two-host figures every shipped result was made with.)
  sc_core::sc_time latency{300, sc_core::SC_NS};
  uint32_t buffer_packets = 16;  // per input port (assumption: a few MTU-sized packets per VL)
  double gbit_per_s = 100.0;     // the cables' data rate (the cut-through timing above)
};

class IbSwitch : public sc_core::sc_module {
 public:
  using Target = tlm_utils::simple_target_socket_tagged<IbSwitch>;
  using Initiator = tlm_utils::simple_initiator_socket<IbSwitch>;
  using CreditPort = sc_core::sc_port<IbCreditIf, 1, sc_core::SC_ONE_OR_MORE_BOUND>;
  using FlowPort = sc_core::sc_port<IbRxFlowIf, 1, sc_core::SC_ONE_OR_MORE_BOUND>;

  SC_HAS_PROCESS(IbSwitch);
  IbSwitch(const sc_core::sc_module_name& name, uint32_t ports, const IbSwitchConfig& cfg = {});

  // Port p faces one cable: packets come in on in(p) and leave on out(p); credits(p) are the
  // cable's credits towards the HCA behind port p; flow(p) advertises port p's input buffer.
  Target& in(uint32_t p) { return *ports_[p].in; }
  Initiator& out(uint32_t p) { return *ports_[p].out; }
  CreditPort& credits(uint32_t p) { return *ports_[p].credits; }
  FlowPort& flow(uint32_t p) { return *ports_[p].flow; }
  uint32_t ports() const { return uint32_t(ports_.size()); }
  // The forwarding table: packets for `lid` leave through `port`.
  void route(uint16_t lid, uint32_t port) { table_[lid] = port; }

  struct Stats {
    uint64_t forwarded = 0, unroutable = 0;
    uint64_t credit_stalls = 0;  // an output's head packet held for want of the HCA's credit
    uint32_t max_queued = 0;     // the most packets waiting for one output
  };
  const Stats& stats(uint32_t p) const { return ports_[p].stats; }
  // A packet starts out of output port `out` now (timelines, tests).
  Observers<uint32_t, const IbPacket&> on_forward;

 private:
  struct Queued {
    sc_core::sc_time ready;  // when its header has been switched through
    uint32_t from;           // the input port whose buffer slot it holds
    IbPacket packet;
  };
  struct Port {
    std::unique_ptr<Target> in;
    std::unique_ptr<Initiator> out;
    std::unique_ptr<CreditPort> credits;
    std::unique_ptr<FlowPort> flow;
    std::deque<Queued> waiting;  // packets for this output, in the order they came in
    sc_core::sc_event ready_event;
    Stats stats;
  };
  tlm::tlm_generic_payload carry_tx_;  // carries each forwarded packet (reused: a payload allocates when built)
  void start_of_simulation() override;
  void end_of_elaboration() override;
  void receive(int port, tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  void forward(uint32_t out);
  sc_core::sc_time wire_time(uint32_t bytes) const;

  IbSwitchConfig cfg_;
  WireTime wire_time_;
  std::deque<Port> ports_;  // a deque: ports hold events and sockets, so never move
  std::unordered_map<uint16_t, uint32_t> table_;
};

}  // namespace vhca
