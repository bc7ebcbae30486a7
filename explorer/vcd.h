// A value-change dump of chosen signals, for GTKWave, Surfer or any VCD viewer. Signals are named
// by dotted paths ("host0.cq3.mod_pending"): the dots become VCD scopes. The model reports a
// value when it may have changed (after a block acts, when a handler or poll turn ends), so the
// dump costs nothing on idle cycles; reports may come out of time order (a handler's start is
// known at its end), so changes are kept and written sorted, unchanged values dropped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

namespace vhca {

// `*` matches any run of characters (dots too), `?` any one character.
bool glob_match(const std::string& pattern, const std::string& name);

class VcdWriter {
 public:
  // Off: nothing is declared or kept. On: `patterns` choose the signals; empty: every one.
  VcdWriter(bool on, std::vector<std::string> patterns) : on_(on), patterns_(std::move(patterns)) {}

  // Declares a signal of `width` bits (1..64) whose value before its first change is 0; returns
  // its id, or -1 if the writer is off or no pattern chooses it.
  int declare(const std::string& name, int width);
  // The value of signal `id` from `at` on; id -1 is ignored, so callers need not test.
  void set(int id, uint64_t value, const sc_core::sc_time& at);
  void set(int id, uint64_t value) { set(id, value, sc_core::sc_time_stamp()); }
  bool active(int id) const { return id >= 0; }
  size_t signals() const { return signals_.size(); }
  bool write(const std::string& path) const;

 private:
  struct Signal {
    std::string name;
    int width;
  };
  struct Change {
    uint64_t at;  // time resolution units
    uint32_t id;
    uint64_t value;
  };
  std::vector<Change> settle(std::vector<Change> c) const;
  bool on_;
  std::vector<std::string> patterns_;
  std::vector<Signal> signals_;
  std::vector<Change> changes_;
};

}  // namespace vhca
