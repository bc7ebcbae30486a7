#include "model/common/sim_clock.h"

#include <cmath>

namespace vhca {

SimClock::SimClock(double mhz) : mhz_(mhz), period_(sc_core::sc_time(1e6 / mhz, sc_core::SC_PS)) {}

uint64_t SimClock::cycle_at_or_after(const sc_core::sc_time& t) const {
  uint64_t p = period_.value();
  return (t.value() + p - 1) / p;
}

sc_core::sc_time SimClock::until(uint64_t cycle) const {
  const uint64_t t = period_.value() * cycle, n = stamp();
  return t > n ? sc_core::sc_time::from_value(t - n) : sc_core::SC_ZERO_TIME;
}

uint64_t SimClock::cycles_from_ns(double ns) const { return uint64_t(std::llround(ns * mhz_ / 1000.0)); }

}  // namespace vhca
