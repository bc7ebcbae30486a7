// A non-blocking read whose initiator may learn its completion's arrival before the completion
// enters the wire (hca.early_completions, speed only). The PCIe link then places the completion at
// the read's far-side stage, entering the return wire `read_access` later (when its data is
// ready), and answers BEGIN_RESP at once with the arrival as the annotated delay, instead of
// waking again when the data is ready. A TLP that enters the return wire before the completion
// but is placed after it (a host MMIO write in the meantime) goes first, as it would have
// (decisions.md 40): the completion then arrives later, and the link tells the initiator the new
// arrival through moved(). The initiator keeps the extension on its payload and sets `allowed`
// per read (a read whose arrival it acts on at once, as the firmware's, leaves it unset).
#pragma once
#include <functional>
#include <systemc>
#include <tlm>

namespace vhca {

struct EarlyCompletion : tlm::tlm_extension<EarlyCompletion> {
  bool allowed = false;
  // The instant the completion enters the return wire as placed (its data ready): when the link
  // would otherwise have placed it and answered, which orders answers given at one instant.
  sc_core::sc_time enters;
  // The completion was passed: it now arrives `delay` from now (later than first told).
  std::function<void(const sc_core::sc_time& delay)> moved;
  tlm::tlm_extension_base* clone() const override { return new EarlyCompletion(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const EarlyCompletion&>(other);
  }
};

}  // namespace vhca
