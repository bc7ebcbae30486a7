// The core clock. Every HCA action happens on a rising edge; blocks do not tick, they compute the
// cycle of their next action and notify an event for it.
#pragma once
#include <cstdint>
#include <systemc>

namespace vhca {

class SimClock {
 public:
  explicit SimClock(double mhz = 500.0);
  double mhz() const { return mhz_; }
  sc_core::sc_time period() const { return period_; }
  // The current cycle: the number of whole periods elapsed (an edge counts as its own cycle).
  uint64_t now() const { return stamp() / period_.value(); }
  // Absolute time of a cycle's edge.
  // In whole time-resolution units (integer arithmetic: exact, and cheaper than sc_time * double).
  sc_core::sc_time at(uint64_t cycle) const { return sc_core::sc_time::from_value(period_.value() * cycle); }
  // Whether now is a clock edge (an integer test: no sc_time is built).
  bool on_edge() const { return stamp() % period_.value() == 0; }
  // The first edge at or after t.
  uint64_t cycle_at_or_after(const sc_core::sc_time& t) const;
  // Delay from now until the edge of `cycle` (zero if that edge is now or past). From an edge, the
  // next few edges' delays are kept built (sc_time::from_value is a library call; blocks wake a
  // few cycles ahead many times per item).
  sc_core::sc_time until(uint64_t cycle) const {
    const uint64_t p = period_.value(), t = p * cycle, n = stamp();
    if (t <= n) return sc_core::SC_ZERO_TIME;
    const uint64_t edges = (t - n) / p;
    if (edges < kEdgesKept && edges * p == t - n) return edges_ahead_[edges];
    return sc_core::sc_time::from_value(t - n);
  }
  uint64_t cycles_from_ns(double ns) const;

 private:
  // Simulated time in resolution units, read inline (the blocks ask for the cycle many times per
  // action; sc_time_stamp() is a call into the library), through the kernel's current-time
  // member, found once (the simulation context lives as long as the program).
  uint64_t stamp() const { return time_->value(); }

  static constexpr uint64_t kEdgesKept = 16;
  const sc_core::sc_time* time_ = &sc_core::sc_get_curr_simcontext()->time_stamp();
  double mhz_;
  sc_core::sc_time period_;
  sc_core::sc_time edges_ahead_[kEdgesKept];  // k periods, for k below kEdgesKept
};

}  // namespace vhca
