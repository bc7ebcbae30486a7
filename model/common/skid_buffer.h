// A block's own skid buffer: a register stage of two slots on one of its outputs, as the RTL's
// skid_buffer.v is. An item put on cycle c leaves from cycle c+1; a slot freed on cycle c takes
// an item again from cycle c+1 (its ready is a register), exactly as a Stream of depth 2 (which
// it replaced inside the pipelined CQ writer). It has one producer and one consumer, the block
// itself: no wake-ups, no same-cycle order, no report (it is not a queue between blocks), so an
// item costs a slot write and a read. An item is built in its slot (put()), not moved in.
#pragma once
#include <array>
#include <cassert>
#include <cstdint>
#include <utility>

namespace vhca {

template <typename T>
class SkidBuffer {
 public:
  static constexpr uint32_t kDepth = 2;
  bool empty() const { return size_ == 0; }
  uint32_t size() const { return size_; }
  // Whether an item put before `cycle` leaves on it.
  bool ready(uint64_t cycle) const { return size_ != 0 && slots_[head_].cycle < cycle; }
  // Whether a slot takes an item on `cycle`: those popped on it are not free until the next.
  bool can_push(uint64_t cycle) const { return size_ + (popped_cycle_ == cycle ? popped_ : 0) < kDepth; }
  // The slot for an item put on `cycle`, to fill in place (it holds the last value it had).
  T& put(uint64_t cycle) {
    assert(can_push(cycle));
    Slot& s = slots_[(head_ + size_) & (kDepth - 1)];
    ++size_;
    s.cycle = cycle;
    return s.value;
  }
  void push(const T& value, uint64_t cycle) { put(cycle) = value; }
  void push(T&& value, uint64_t cycle) { put(cycle) = std::move(value); }
  T& front() { return slots_[head_].value; }
  T pop(uint64_t cycle) {
    T v = std::move(slots_[head_].value);
    drop_head(cycle);
    return v;
  }
  // Hands the head to `take` (to move it on without a copy), then frees its slot.
  template <typename Take>
  void pop_to(uint64_t cycle, Take&& take) {
    take(slots_[head_].value);
    drop_head(cycle);
  }
  void clear() { size_ = popped_ = 0; }

 private:
  struct Slot {
    uint64_t cycle = 0;
    T value{};
  };
  void drop_head(uint64_t cycle) {
    head_ = (head_ + 1) & (kDepth - 1);
    --size_;
    if (popped_cycle_ != cycle) popped_cycle_ = cycle, popped_ = 0;
    ++popped_;
  }
  std::array<Slot, kDepth> slots_{};
  uint32_t head_ = 0, size_ = 0, popped_ = 0;
  uint64_t popped_cycle_ = UINT64_MAX;
};

}  // namespace vhca
