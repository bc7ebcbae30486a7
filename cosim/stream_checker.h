// A pin-level protocol checker for valid/ready streams (AXI-Stream's handshake rules), sampled
// once per clock cycle before the edge:
//   - once valid is high, it stays high until a cycle with ready (the item is taken on that edge);
//   - while valid is high and ready low, the data stays the same.
// Each violation is recorded with the stream's name, the cycle and what happened; a co-simulation
// or a block test fails when any is recorded. (Unknown values after reset, the third rule a
// four-state simulator would check, cannot arise in Verilator's two-state model; the RTL's
// clearing sweeps are checked by their own tests instead.)
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace vhca {

template <typename Data>
class StreamChecker {
 public:
  explicit StreamChecker(std::string name) : name_(std::move(name)) {}

  // The stream's pins in cycle `cycle`, as the edge at its end will see them.
  void sample(uint64_t cycle, bool valid, bool ready, const Data& data) {
    if (pending_) {
      if (!valid) report(cycle, "valid dropped before ready (the item offered on cycle " + std::to_string(offered_) + " was withdrawn)");
      else if (!(data == held_)) report(cycle, "data changed while valid waited for ready");
    }
    if (valid && ready) ++transfers_;
    pending_ = valid && !ready;
    if (pending_ && !was_pending_) offered_ = cycle;
    was_pending_ = pending_;
    if (pending_) held_ = data;
  }

  const std::vector<std::string>& violations() const { return violations_; }
  uint64_t transfers() const { return transfers_; }

 private:
  void report(uint64_t cycle, const std::string& what) {
    std::ostringstream s;
    s << name_ << ": cycle " << cycle << ": " << what;
    violations_.push_back(s.str());
  }

  std::string name_;
  bool pending_ = false, was_pending_ = false;
  uint64_t offered_ = 0, transfers_ = 0;
  Data held_{};
  std::vector<std::string> violations_;
};

}  // namespace vhca
