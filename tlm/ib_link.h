// The InfiniBand link between HCA ports: per direction a serializer with the link's bandwidth,
// then the propagation latency; packets of one direction arrive in order. Two sides join two
// HCAs; one side is a loopback (the port's packets come back to it). A deterministic fault
// pattern (drop every Nth packet, or drop / corrupt / rewrite chosen packets) drives the
// transport's retry paths; a corrupted packet fails its ICRC check and the receiver drops it.
//
// Each side has a target socket (the HCA transmits into it) and an initiator socket (the link
// delivers to the HCA). A transmit returns at once with `delay` set to the time until the
// serializer is free again, which is how the sender is paced by the wire.
//
// Link-level flow control (S27, tlm/ib_credits.h): each side's receiving port advertises its
// buffer through rx_flow(side); the sending port asks credits(side) before each packet. A packet
// takes a credit when sent; the credit comes back one link latency after the receiving port frees
// the slot (a flow-control packet on the reverse wire), or, for a packet lost on the wire, two
// latencies after it was sent (the sender's next flow-control packet tells the receiver how many
// were sent, and the receiver's answer returns the credit: IBA's FCTBS / FCCL exchange). A port
// that advertises nothing is not limited.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <vector>

#include "model/common/observers.h"
#include "model/common/slot_ring.h"
#include "model/transport/ib_packet.h"
#include "tlm/credit_returns.h"
#include "tlm/ib_credits.h"
#include "tlm/wire_time.h"

namespace vhca {

struct LinkFault {
  // drop: lost; corrupt: fails the receiver's ICRC check (dropped there); rewrite_opcode: arrives
  // as another opcode; flip_payload: one payload bit flipped that no check catches (silent data
  // corruption, for proving end-to-end data checks).
  enum class Kind : uint8_t { drop, corrupt, rewrite_opcode, flip_payload };
  Kind kind = Kind::drop;
  uint32_t side = 0;    // the side that sends the packet
  uint64_t packet = 1;  // 1-based index among the packets that side sends
  IbOp new_op = IbOp::ack;  // rewrite_opcode: the opcode the receiver sees
};

struct IbLinkConfig {
  double gbit_per_s = 100.0;  // 4x EDR data rate (after 64b/66b encoding)
  // Cable plus one switch hop: ~5 ns/m over 20 m and ~300 ns cut-through switching.
  sc_core::sc_time latency{400, sc_core::SC_NS};
  uint32_t mtu = 4096;
  uint64_t drop_every = 0;  // drop every Nth packet of each direction (0: none)
  // Drop each packet with this probability, drawn from a generator seeded with `seed` (per
  // side), so that a run repeats exactly. Unlike drop_every it cannot fall into step with a
  // go-back-N retransmission train and lose the same packet every time.
  double loss_rate = 0.0;
  uint64_t seed = 1;
  std::vector<LinkFault> faults;
};

class IbLink : public sc_core::sc_module {
 public:
  using Target = tlm_utils::simple_target_socket_tagged<IbLink>;
  using Initiator = tlm_utils::simple_initiator_socket<IbLink>;

  SC_HAS_PROCESS(IbLink);
  // sides: 1 for a loopback, 2 to join two ports.
  IbLink(const sc_core::sc_module_name& name, uint32_t sides, const IbLinkConfig& cfg = {});

  Target& in(uint32_t side) { return *in_[side]; }
  Initiator& out(uint32_t side) { return *out_[side]; }
  // Flow control: the credits the port on `side` sends with, and the buffer it receives into.
  sc_core::sc_export<IbCreditIf>& credits(uint32_t side) { return *credits_[side]; }
  sc_core::sc_export<IbRxFlowIf>& rx_flow(uint32_t side) { return *rx_flow_[side]; }
  const IbLinkConfig& config() const { return cfg_; }
  uint32_t sides() const { return sides_; }
  // Replace the fault pattern from now on; packet indices count again from 1 on each side.
  void set_faults(uint64_t drop_every, std::vector<LinkFault> faults);
  void set_loss(double rate, uint64_t seed);
  sc_core::sc_time wire_time(uint32_t bytes) const;

  struct Stats {
    uint64_t packets = 0, bytes = 0, dropped = 0, corrupted = 0, rewritten = 0;
    uint64_t link_down = 0;  // of `dropped`: sent while the link was down, or on the wire when it went
  };
  const Stats& stats(uint32_t side) const { return dir_[side].stats; }
  // Flow control of the packets `side` sends: refusals (a packet held for want of a credit), sends
  // without a credit (a port that did not ask: its receiver may have to drop), the most in use.
  struct CreditStats {
    uint32_t advertised = 0, max_in_use = 0;
    uint64_t refusals = 0, overdrafts = 0;
  };
  CreditStats credit_stats(uint32_t side) const { return dir_[side].flow.stats(); }
  // A packet `side` sent has arrived whole at the far port, now (timelines, tests).
  Observers<uint32_t, const IbPacket&> on_arrival;
  // The link goes down (a cable pulled, a port disabled) or comes back up. While it is down every
  // packet sent is lost, and so is every packet on the wire when it went down; their credits come
  // back as for any lost packet. The ports at both ends are told (on_state), now.
  void set_up(bool up);
  bool up() const { return up_; }
  Observers<bool> on_state;

 private:
  // One direction's credits (both views of tlm/ib_credits.h), returned through the mechanism the
  // PCIe link's credits use (tlm/credit_returns.h): lazily, with a timed event only while a
  // refused sender waits.
  class Flow : public IbCreditIf, public IbRxFlowIf {
   public:
    Flow(IbLink& link, uint32_t dir, const sc_core::sc_time& latency) : link_(link), dir_(dir), latency_(latency) {}
    bool can_send() const override;
    void on_return(std::function<void()> wake) override { returns_.on_return(std::move(wake)); }
    void advertise(uint32_t slots) override { limit_ = slots; }
    void freed(uint32_t slots) override;
    void look_for_arrivals(std::function<void(const sc_core::sc_time&)> sent) override;
    void take_arrived() override { link_.hand_on_arrived(dir_); }
    bool next_arrival(sc_core::sc_time& arrival) const override;
    void take();                                 // a packet went out
    void give_back(const sc_core::sc_time& at);  // its credit is usable again at `at`
    void process_returns() {
      returns_.process([this](uint32_t n) { in_use_ -= n; });
    }
    sc_core::sc_event& return_event() { return returns_.due_event(); }
    CreditStats stats() const { return {limit_, max_in_use_, refusals_, overdrafts_}; }

   private:
    void apply_due() const {
      returns_.apply_due([this](uint32_t n) { in_use_ -= n; });
    }
    IbLink& link_;
    uint32_t dir_;  // the direction whose packets it flows (dir_[dir_] of the link)
    sc_core::sc_time latency_;
    uint32_t limit_ = 0;  // 0: nothing advertised, no limit
    mutable uint32_t in_use_ = 0;
    uint32_t max_in_use_ = 0;
    CreditReturns<uint32_t> returns_;  // packet slots on their way back
    mutable uint64_t refusals_ = 0;
    uint64_t overdrafts_ = 0;
  };

  struct InFlight {
    sc_core::sc_time arrival;
    IbPacket packet;
  };
  struct Direction {
    Direction(IbLink& link, uint32_t dir, const sc_core::sc_time& latency) : flow(link, dir, latency), in_flight(16) {}
    Flow flow;
    sc_core::sc_time free_at;
    SlotRing<InFlight> in_flight;  // bounded by the receiver's buffer (flow); slots keep their payload storage
    sc_core::sc_event arrival_event;  // notified for the first packet in flight (wakes_on_arrival)
    bool armed = false;               // arrival_event is pending
    // Set when the receiving port looks for its packets (IbRxFlowIf::look_for_arrivals): told of
    // each packet sent, as it is sent.
    std::function<void(const sc_core::sc_time&)> port_looks;
    Stats stats;
    uint64_t fault_base = 0;  // packets sent before the current fault pattern was set
    std::mt19937_64 rng;
  };
  void transmit(int side, tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  bool apply_faults(uint32_t side, IbPacket& p);
  void deliver(uint32_t side);
  void hand_on_arrived(uint32_t side);
  // Whether the link's process hands packets on as they arrive: unless the port looks for them,
  // and always while anyone observes arrivals (on_arrival is told at the arrival). An observer
  // added while packets are on the wire to a port that looks is told of them when the port takes
  // them or when the next packet is sent, whichever comes first (then the process is armed).
  bool wakes_on_arrival(const Direction& d) const { return !d.port_looks || on_arrival.registered(); }
  void arm_arrival(Direction& d, const sc_core::sc_time& now);

  IbLinkConfig cfg_;
  WireTime wire_time_;
  uint32_t sides_;
  bool up_ = true;
  std::vector<std::unique_ptr<Target>> in_;
  std::vector<std::unique_ptr<Initiator>> out_;
  std::vector<std::unique_ptr<sc_core::sc_export<IbCreditIf>>> credits_;
  std::vector<std::unique_ptr<sc_core::sc_export<IbRxFlowIf>>> rx_flow_;
  // Reused for every packet, so that its payload's storage is too: the copy taken at transmit,
  // and the packet and the transaction carrying it at delivery (deliver() is not re-entered).
  IbPacket sent_;
  IbPacketExt delivered_;
  tlm::tlm_generic_payload carry_tx_;
  std::deque<Direction> dir_;  // a deque: Directions hold events and are bound to, so never move
};

}  // namespace vhca
