#include "tlm/ib_switch.h"

#include <algorithm>

#include "model/common/log.h"
#include "model/common/sim_now.h"
#include "tlm/annotated_delay.h"

namespace vhca {

using sc_core::sc_time;

IbSwitch::IbSwitch(const sc_core::sc_module_name& name, uint32_t ports, const IbSwitchConfig& cfg)
    : sc_module(name), cfg_(cfg), wire_time_(8000.0, cfg.gbit_per_s) {
  for (uint32_t p = 0; p < ports; ++p) {
    Port& port = ports_.emplace_back();
    const std::string n = "port" + std::to_string(p);
    port.in = std::make_unique<Target>((n + "_in").c_str());
    port.out = std::make_unique<Initiator>((n + "_out").c_str());
    port.credits = std::make_unique<CreditPort>((n + "_credits").c_str());
    port.flow = std::make_unique<FlowPort>((n + "_flow").c_str());
    port.in->register_b_transport(this, &IbSwitch::receive, int(p));
    sc_core::sc_spawn_options opts;
    opts.spawn_method();
    opts.set_sensitivity(&port.ready_event);
    opts.dont_initialize();
    sc_core::sc_spawn([this, p] { forward(p); }, (n + "_forward").c_str(), &opts);
  }
}

// Link-up: each input buffer is offered to its cable.
void IbSwitch::start_of_simulation() {
  for (Port& p : ports_) (*p.flow)->advertise(cfg_.buffer_packets);
}

// An output held for a credit goes on when the HCA behind it frees a slot.
void IbSwitch::end_of_elaboration() {
  for (uint32_t p = 0; p < ports_.size(); ++p)
    (*ports_[p].credits)->on_return([this, p] { ports_[p].ready_event.notify(sc_core::SC_ZERO_TIME); });
}

sc_time IbSwitch::wire_time(uint32_t bytes) const {
  return wire_time_(bytes);
}

// A cable delivered a packet whole on input `in_port`.
void IbSwitch::receive(int in_port, tlm::tlm_generic_payload& tx, sc_time& delay) {
  Port& from = ports_[uint32_t(in_port)];
  if (refuse_annotated_delay(from.in->name(), tx, delay)) return;
  tx.set_response_status(tlm::TLM_OK_RESPONSE);
  IbPacketExt* ext = nullptr;
  tx.get_extension(ext);
  if (!ext) return;
  const auto route = table_.find(ext->packet.dlid);
  if (route == table_.end()) {
    ++from.stats.unroutable;
    log::write(log::Cat::link, "switch port {}: {} psn {:#x} for LID {} dropped: no route", in_port,
               ib_op_name(ext->packet.op), ext->packet.psn, ext->packet.dlid);
    (*from.flow)->freed(1);
    return;
  }
  Port& to = ports_[route->second];
  const sc_time now = sim_now();
  // Cut-through: the header came in one wire time ago; it is switched `latency` after that.
  const sc_time header_in = now - std::min(now, wire_time(ext->packet.wire_bytes()));
  const sc_time ready = std::max(now, header_in + cfg_.latency);
  to.waiting.push_back({ready, uint32_t(in_port), ext->packet});  // a copy: the sender's packet stays its own
  to.stats.max_queued = std::max(to.stats.max_queued, uint32_t(to.waiting.size()));
  if (to.waiting.size() == 1) to.ready_event.notify(ready - now);
}

// Sends what output `out` holds, in order, while the HCA behind it has room.
void IbSwitch::forward(uint32_t out) {
  Port& port = ports_[out];
  const sc_time now = sim_now();
  while (!port.waiting.empty() && port.waiting.front().ready <= now) {
    if (!(*port.credits)->can_send()) {  // woken by the credit's return (end_of_elaboration)
      ++port.stats.credit_stalls;
      return;
    }
    Queued q = std::move(port.waiting.front());
    port.waiting.pop_front();
    IbPacketExt ext;
    ext.packet = std::move(q.packet);
    on_forward(out, ext.packet);
    sc_time zero = sc_core::SC_ZERO_TIME;
    carry_packet(*(*port.out).operator->(), ext, zero, carry_tx_);
    ++port.stats.forwarded;
    (*ports_[q.from].flow)->freed(1);  // its input slot is free: the credit goes back up its cable
  }
  if (!port.waiting.empty() && port.waiting.front().ready > now) port.ready_event.notify(port.waiting.front().ready - now);
}

}  // namespace vhca
