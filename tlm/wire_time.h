// The time a number of bytes takes on a wire of a fixed rate: ceil(bytes * scale / rate)
// picoseconds (scale 1000 for a rate in GB/s, 8000 for Gbit/s), in whole picoseconds so that runs
// repeat exactly. The last sizes asked are remembered, one per slot: a link serializes the same
// TLP and packet sizes over and over, and building an sc_time from a double is a library call.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <systemc>

namespace vhca {

class WireTime {
 public:
  WireTime(double scale, double rate) : scale_(scale), rate_(rate) {}
  sc_core::sc_time operator()(uint64_t bytes) const {
    Memo& m = memo_[bytes & (memo_.size() - 1)];
    if (m.bytes != bytes) {
      m.bytes = bytes;
      m.time = sc_core::sc_time(std::ceil(double(bytes) * scale_ / rate_), sc_core::SC_PS);
    }
    return m.time;
  }

 private:
  struct Memo {
    uint64_t bytes = UINT64_MAX;
    sc_core::sc_time time;
  };
  double scale_, rate_;
  mutable std::array<Memo, 8> memo_;
};

}  // namespace vhca
