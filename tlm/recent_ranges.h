// A few address ranges kept for a fast answer (the PCIe link's DMI pages and the pages it found
// quiet): device writes come in runs into a few rings (CQs, EQs), so the range found last is
// asked first, then the others; a new one takes the place of the oldest; forget() drops those a
// change touches.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace vhca {

template <typename Value, size_t N = 4>
class RecentRanges {
 public:
  struct Range {
    uint64_t first = 1, last = 0;  // [first, last]; empty
    Value value{};
    bool holds(uint64_t f, uint64_t l) const { return f >= first && l <= last; }
  };
  // The range holding [first, last], or null.
  const Range* find(uint64_t first, uint64_t last) {
    if (ranges_[recent_].holds(first, last)) return &ranges_[recent_];
    for (size_t i = 0; i < N; ++i)
      if (ranges_[i].holds(first, last)) return &ranges_[recent_ = i];
    return nullptr;
  }
  const Range& keep(uint64_t first, uint64_t last, Value value) {
    recent_ = next_++ % N;
    return ranges_[recent_] = Range{first, last, value};
  }
  // Drops every range sharing a byte with [first, last].
  void forget(uint64_t first, uint64_t last) {
    for (Range& r : ranges_)
      if (r.first <= last && first <= r.last) r = Range{};
  }

 private:
  std::array<Range, N> ranges_{};
  size_t recent_ = 0, next_ = 0;
};

}  // namespace vhca
