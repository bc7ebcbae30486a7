#include "tlm/ib_link.h"


#include "model/common/log.h"
#include "model/common/sim_now.h"

namespace vhca {

using sc_core::sc_time;

IbLink::IbLink(const sc_core::sc_module_name& name, uint32_t sides, const IbLinkConfig& cfg)
    : sc_module(name), cfg_(cfg), wire_time_(8000.0, cfg.gbit_per_s), sides_(sides) {
  for (uint32_t s = 0; s < sides; ++s) dir_.emplace_back(*this, s, cfg.latency);
  set_loss(cfg.loss_rate, cfg.seed);
  for (uint32_t s = 0; s < sides; ++s) {
    in_.push_back(std::make_unique<Target>(sc_core::sc_gen_unique_name("in")));
    out_.push_back(std::make_unique<Initiator>(sc_core::sc_gen_unique_name("out")));
    in_[s]->register_b_transport(this, &IbLink::transmit, int(s));
    credits_.push_back(std::make_unique<sc_core::sc_export<IbCreditIf>>(sc_core::sc_gen_unique_name("credits")));
    credits_[s]->bind(dir_[s].flow);
    sc_core::sc_spawn_options opts;
    opts.spawn_method();
    opts.set_sensitivity(&dir_[s].arrival_event);
    opts.dont_initialize();
    sc_core::sc_spawn([this, s] { deliver(s); }, sc_core::sc_gen_unique_name("deliver"), &opts);
    sc_core::sc_spawn_options ret;
    ret.spawn_method();
    ret.set_sensitivity(&dir_[s].flow.return_event());
    ret.dont_initialize();
    sc_core::sc_spawn([this, s] { dir_[s].flow.process_returns(); }, sc_core::sc_gen_unique_name("credit_returns"), &ret);
  }
  // The port on `side` receives what the other side sends (on a loopback, what it sends itself).
  for (uint32_t s = 0; s < sides; ++s) {
    rx_flow_.push_back(std::make_unique<sc_core::sc_export<IbRxFlowIf>>(sc_core::sc_gen_unique_name("rx_flow")));
    rx_flow_[s]->bind(dir_[sides == 1 ? 0 : 1 - s].flow);
  }
}

bool IbLink::Flow::can_send() const {
  if (limit_ == 0) return true;
  apply_due();
  if (in_use_ < limit_) return true;
  ++refusals_;
  returns_.want_wake();
  return false;
}

void IbLink::Flow::take() {
  if (limit_ == 0) return;
  apply_due();
  if (in_use_ >= limit_) ++overdrafts_;  // a sender that did not ask: its receiver may drop
  ++in_use_;
  max_in_use_ = std::max(max_in_use_, in_use_);
}

void IbLink::Flow::give_back(const sc_time& at) {
  if (limit_ != 0) returns_.give_back(at, 1);
}

void IbLink::Flow::freed(uint32_t slots) {
  if (limit_ != 0 && slots) returns_.give_back(sim_now() + latency_, slots);
}

sc_time IbLink::wire_time(uint32_t bytes) const {
  return wire_time_(bytes);
}

void IbLink::set_faults(uint64_t drop_every, std::vector<LinkFault> faults) {
  cfg_.drop_every = drop_every;
  cfg_.faults = std::move(faults);
  for (Direction& d : dir_) d.fault_base = d.stats.packets;
}

void IbLink::set_loss(double rate, uint64_t seed) {
  cfg_.loss_rate = rate;
  cfg_.seed = seed;
  // A generator per side whose state is initialised from (seed, side): runs repeat exactly, and
  // nearby seeds give unrelated loss patterns.
  for (uint32_t s = 0; s < dir_.size(); ++s) {
    std::seed_seq init{seed, uint64_t(s)};
    dir_[s].rng.seed(init);
  }
}

bool IbLink::apply_faults(uint32_t side, IbPacket& p) {
  const uint64_t index = dir_[side].stats.packets - dir_[side].fault_base;
  if (cfg_.drop_every && index % cfg_.drop_every == 0) return false;
  if (cfg_.loss_rate > 0.0 && double(dir_[side].rng() >> 11) * 0x1.0p-53 < cfg_.loss_rate) return false;
  for (const LinkFault& f : cfg_.faults) {
    if (f.side != side || f.packet != index) continue;
    switch (f.kind) {
      case LinkFault::Kind::drop: return false;
      case LinkFault::Kind::corrupt:
        p.corrupt = true;
        ++dir_[side].stats.corrupted;
        break;
      case LinkFault::Kind::rewrite_opcode:
        p.op = f.new_op;
        ++dir_[side].stats.rewritten;
        break;
      case LinkFault::Kind::flip_payload:
        if (!p.payload.empty()) p.payload[p.payload.size() / 2] ^= 0x10;
        ++dir_[side].stats.rewritten;
        break;
    }
  }
  return true;
}

void IbLink::transmit(int side, tlm::tlm_generic_payload& tx, sc_time& delay) {
  IbPacketExt* ext = nullptr;
  tx.get_extension(ext);
  Direction& d = dir_[side];
  const sc_time now = sim_now();
  if (!ext || ext->packet.payload.size() > cfg_.mtu) {
    log::error("link side {}: {} refused", side, ext ? "packet above the link MTU" : "transaction without a packet");
    tx.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    return;
  }
  const uint32_t bytes = ext->packet.wire_bytes();
  // Honours the annotated delay: the packet reaches the wire at now + delay at the earliest.
  const sc_time start = std::max(now + delay, d.free_at);
  d.free_at = start + wire_time(bytes);
  delay = d.free_at - now;
  ++d.stats.packets;
  d.stats.bytes += bytes;
  tx.set_response_status(tlm::TLM_OK_RESPONSE);
  sent_ = ext->packet;  // copied into storage kept from earlier packets
  IbPacket& p = sent_;
  d.flow.take();
  if (!up_) {
    d.flow.give_back(d.free_at + 2 * cfg_.latency);
    ++d.stats.dropped;
    ++d.stats.link_down;
    log::write(log::Cat::link, "side {}: packet {} ({} psn {:#x}) lost: the link is down", side, d.stats.packets,
               ib_op_name(p.op), p.psn);
    return;
  }
  if (!apply_faults(uint32_t(side), p)) {
    d.flow.give_back(d.free_at + 2 * cfg_.latency);  // recovered by the flow-control exchange
    ++d.stats.dropped;
    log::write(log::Cat::link, "side {}: packet {} ({} psn {:#x}) dropped", side, d.stats.packets, ib_op_name(p.op), p.psn);
    return;
  }
  const sc_time arrival = d.free_at + cfg_.latency;
  InFlight& slot = d.in_flight.append();
  slot.arrival = arrival;
  slot.packet.exchange(p);  // the slot's old storage comes back for the next packet
  if (d.port_looks) d.port_looks(arrival);
  if (!d.armed && wakes_on_arrival(d)) arm_arrival(d, now);
}

void IbLink::set_up(bool up) {
  if (up == up_) return;
  up_ = up;
  log::write(log::Cat::link, "link {}", up ? "up" : "down");
  if (!up) {
    const sc_time now = sim_now();
    for (uint32_t s = 0; s < dir_.size(); ++s) hand_on_arrived(s);  // the ports have those already
    for (Direction& d : dir_) {
      for (size_t i = 0; i < d.in_flight.size(); ++i) d.flow.give_back(now + 2 * cfg_.latency);
      d.stats.dropped += d.in_flight.size();
      d.stats.link_down += d.in_flight.size();
      d.in_flight.clear();
    }
  }
  on_state(up);
}

// Packets sent by `side` reach the other side (or the same side on a loopback): the link's
// process, woken by the first packet's arrival.
void IbLink::deliver(uint32_t side) {
  Direction& d = dir_[side];
  d.armed = false;
  hand_on_arrived(side);
  if (!d.in_flight.empty() && wakes_on_arrival(d)) arm_arrival(d, sim_now());
}

// For the first packet on the wire (one an observer added late finds arrived already: at once).
void IbLink::arm_arrival(Direction& d, const sc_time& now) {
  const sc_time& arrival = d.in_flight.front().arrival;
  d.arrival_event.notify(arrival > now ? arrival - now : sc_core::SC_ZERO_TIME);
  d.armed = true;
}

// The packets `side` sent that have arrived by now are handed on, in order.
void IbLink::hand_on_arrived(uint32_t side) {
  Direction& d = dir_[side];
  const uint32_t to = sides_ == 1 ? 0 : 1 - side;
  const sc_time now = sim_now();
  while (!d.in_flight.empty() && d.in_flight.front().arrival <= now) {
    delivered_.packet.exchange(d.in_flight.front().packet);
    d.in_flight.pop_front();
    on_arrival(side, delivered_.packet);
    sc_time zero = sc_core::SC_ZERO_TIME;
    carry_packet(*(*out_[to]).operator->(), delivered_, zero, carry_tx_);
  }
}

void IbLink::Flow::look_for_arrivals(std::function<void(const sc_time&)> sent) {
  link_.dir_[dir_].port_looks = std::move(sent);
}

bool IbLink::Flow::next_arrival(sc_time& arrival) const {
  const Direction& d = link_.dir_[dir_];
  if (d.in_flight.empty()) return false;
  arrival = d.in_flight.front().arrival;
  return true;
}

}  // namespace vhca
