#include "model/cq/completion_arbiter.h"

#include <algorithm>

namespace vhca {

CompletionArbiter::CompletionArbiter(const sc_core::sc_module_name& name, const SimClock& clock,
                                     const CompletionArbiterConfig& cfg)
    : sc_module(name), clock_(clock), cfg_(cfg), wakeup_(clock), transport_(cfg.transport_depth) {
  s_transport.bind(*this);
  m_cpl.on_space([this](uint64_t c) { wakeup_.wake(c); });
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

bool CompletionArbiter::try_put(const CompletionRecord& r) {
  if (transport_.size() >= cfg_.transport_depth) {
    ++transport_stalls_;
    return false;
  }
  transport_.push_back(r);
  ++transport_puts_;
  transport_high_water_ = std::max(transport_high_water_, transport_.size());
  wakeup_.wake(clock_.now());
  return true;
}

void CompletionArbiter::inject(const CompletionRecord& r, uint64_t cycle) {
  const uint64_t at = std::max(cycle, clock_.now());
  Injection& slot = injections_.append();
  slot.first = at;
  slot.second = r;
  injections_.sink_back([](const Injection& a, const Injection& b) { return a.first > b.first; });
  wakeup_.wake(injections_.front().first);
}

void CompletionArbiter::reset() {
  transport_.clear();
  injections_.clear();
  injection_held_since_ = UINT64_MAX;
}

void CompletionArbiter::step() {
  const uint64_t now = clock_.now();
  if (!clock_.on_edge()) {  // off the edge: act on the next one
    wakeup_.wake(now + 1);
    return;
  }
  wakeup_.count();
  const bool transport_was_full = transport_.size() >= cfg_.transport_depth;
  bool held = false;
  for (;;) {
    const bool from_transport = !transport_.empty(), from_injection = injection_due(now);
    if (!from_transport && !from_injection) break;
    if (!m_cpl.can_push(now)) {
      if (from_injection && injection_held_since_ == UINT64_MAX) injection_held_since_ = now;
      held = true;
      break;  // m_cpl's on_space wakes this again
    }
    const bool take_transport = from_transport && (transport_turn_ || !from_injection);
    if (take_transport) {
      m_cpl->push(transport_.front(), now);
      transport_.pop_front();
    } else {
      m_cpl->push(injections_.front().second, now);
      injections_.pop_front();
      ++injected_;
      if (injection_held_since_ != UINT64_MAX) injection_stalls_ += now - injection_held_since_;
      injection_held_since_ = UINT64_MAX;
    }
    if (from_transport && from_injection) transport_turn_ = !take_transport;
  }
  // A slot freed on this cycle is the transport's from the next.
  if (transport_was_full && transport_.size() < cfg_.transport_depth) space_.notify(clock_.until(now + 1));
  // Held by a full s_cpl, it sleeps until its on_space (no activation per cycle of the stall).
  if (!held && !injections_.empty() && transport_.empty()) wakeup_.wake(std::max(injections_.front().first, now + 1));
}

}  // namespace vhca
