#include "model/transport/transport_timers.h"

#include <algorithm>

namespace vhca {

TransportTimers::TransportTimers(const sc_core::sc_module_name& name, const SimClock& clock, size_t qps)
    : sc_module(name), clock_(clock), qps_(qps) {
  SC_METHOD(fire);
  sensitive << timer_.near_event() << timer_.far_event();
  dont_initialize();
}

void TransportTimers::set(uint32_t qpn, TimerKind kind, uint64_t at_cycle) {
  qps_[qpn].at[size_t(kind)] = at_cycle;
  deadlines_.push(Deadline{at_cycle, qpn, kind});
  timer_.arm(clock_.at(std::max(at_cycle, clock_.now())));
}

void TransportTimers::qp_live(uint32_t qpn) {
  if (qps_[qpn].live_seq == 0) qps_[qpn].live_seq = ++live_count_;
}

void TransportTimers::reset() {
  for (PerQp& q : qps_) q = PerQp{};
  deadlines_ = {};
}

void TransportTimers::fire() {
  timer_.fired();
  fire_due(clock_.now());
  while (!deadlines_.empty() && stale(deadlines_.top())) deadlines_.pop();
  if (!deadlines_.empty()) timer_.arm(clock_.at(std::max(deadlines_.top().at, clock_.now() + 1)));
}

size_t TransportTimers::fire_due(uint64_t now) {
  std::vector<Deadline> due;
  while (!deadlines_.empty() && deadlines_.top().at <= now) {
    if (!stale(deadlines_.top())) due.push_back(deadlines_.top());
    deadlines_.pop();
  }
  std::sort(due.begin(), due.end(), [this](const Deadline& a, const Deadline& b) {
    const uint64_t sa = qps_[a.qpn].live_seq, sb = qps_[b.qpn].live_seq;
    return sa != sb ? sa < sb : a.kind < b.kind;
  });
  size_t fired = 0;
  for (const Deadline& d : due) {
    if (stale(d)) continue;  // stopped by a timer handled before it
    stop(d.qpn, d.kind);
    on_expired(d.qpn, d.kind);
    ++fired;
  }
  return fired;
}

}  // namespace vhca
