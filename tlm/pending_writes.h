// Posted writes that have landed in time but are applied when someone looks.
//
// A device write into plain host memory has no effect anyone can see until something reads that
// memory: nothing is told when it lands (no watch, no MSI, no observer), and an error is
// impossible (the range is mapped). The PCIe link therefore does not wake at such a write's
// arrival; it keeps it in flight, in order, and applies it when the host side is about to look.
// Every reader of host memory asks first (land_due): the host CPU before each access, host
// memory before each access through its own interface, and the link itself before a read
// executes at the far side. A write is "due" when its arrival is no later than now, so a reader
// at the arrival instant sees it, as if the link had landed it first.
//
// What makes a range no longer quiet (a watch added, the range unmapped, a program's memory
// attached) is told to the link (no_longer_quiet) before it takes effect: writes still in flight
// into it land on time, by the link's own wake-up, and tell the watch or fail as they would have.
// Nothing else changes the answer, so the link remembers the pages it last found quiet whole
// until it is told.
#pragma once
#include <cstdint>
#include <systemc>
#include <vector>

#include "model/common/sim_now.h"

namespace vhca {

class PendingWritesIf : public virtual sc_core::sc_interface {
 public:
  // Applies, in order, every posted write whose arrival is no later than `by` and which nothing
  // else is waiting to land first. `by` is now, or the instant of a host step run ahead of
  // SystemC's time (firmware-shim/cpu_core.h), before which nothing else happens.
  virtual void land_due(const sc_core::sc_time& by) = 0;
  // How many quiet writes are in flight, read before every access: asking costs a load when there
  // are none (the usual case on the host's side).
  virtual const size_t& quiet_in_flight() const = 0;
  // Writes still in flight into [addr, addr + len) must land at their arrival from now on.
  virtual void no_longer_quiet(uint64_t addr, uint64_t len) = 0;
};

// The port a reader of host memory asks through, its bound interfaces resolved once (a reader asks
// before every access). Unbound: every write lands on time by itself, and asking costs nothing.
class PendingWritesPort : public sc_core::sc_port<PendingWritesIf, 0, sc_core::SC_ZERO_OR_MORE_BOUND> {
 public:
  using sc_core::sc_port<PendingWritesIf, 0, sc_core::SC_ZERO_OR_MORE_BOUND>::sc_port;
  void land_due() const {
    land_due_by([] { return sim_now(); });
  }
  // Due by the instant `by()` gives, asked only if a write is in flight to land.
  template <typename By>
  void land_due_by(By&& by) const {
    for (const Bound& b : bound_)
      if (*b.quiet) b.writes->land_due(by());
  }
  void no_longer_quiet(uint64_t addr, uint64_t len) const {
    for (const Bound& b : bound_) b.writes->no_longer_quiet(addr, len);
  }

 protected:
  void end_of_elaboration() override {
    for (int i = 0; i < size(); ++i) bound_.push_back({(*this)[i], &(*this)[i]->quiet_in_flight()});
  }

 private:
  struct Bound {
    PendingWritesIf* writes;
    const size_t* quiet;
  };
  std::vector<Bound> bound_;
};

}  // namespace vhca
