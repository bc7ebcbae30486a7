#include "model/common/sim_clock.h"

#include <cmath>

namespace vhca {

SimClock::SimClock(double mhz) : mhz_(mhz), period_(sc_core::sc_time(1e6 / mhz, sc_core::SC_PS)) {
  for (uint64_t k = 0; k < kEdgesKept; ++k) edges_ahead_[k] = sc_core::sc_time::from_value(period_.value() * k);
}

uint64_t SimClock::cycle_at_or_after(const sc_core::sc_time& t) const {
  uint64_t p = period_.value();
  return (t.value() + p - 1) / p;
}

uint64_t SimClock::cycles_from_ns(double ns) const { return uint64_t(std::llround(ns * mhz_ / 1000.0)); }

}  // namespace vhca
