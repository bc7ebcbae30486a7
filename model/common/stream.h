// A finite-depth, cycle-stamped queue between two blocks (the model's valid/ready channel).
// An item pushed on cycle c is visible to the consumer from cycle c+1, and a slot freed on cycle
// c is visible to the producer from cycle c+1, both as through a register stage: whether a block
// stalls never depends on the order in which SystemC runs two blocks in one cycle. A producer
// that finds the stream full holds its item; it is woken (on_space) when the stream stops being
// full. The consumer is woken for the cycle an item becomes visible.
#pragma once
#include <cassert>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace vhca {

template <typename T>
class Stream {
 public:
  Stream(std::string name, size_t depth) : name_(std::move(name)), depth_(depth) {}

  bool can_push(uint64_t cycle) const {
    return items_.size() + (popped_cycle_ == cycle ? popped_ : 0) < depth_;
  }
  void push(T value, uint64_t cycle) {
    assert(can_push(cycle));
    items_.push_back({cycle, std::move(value)});
    ++pushed_;
    if (items_.size() > high_water_) high_water_ = items_.size();
    if (on_data) on_data(cycle + 1);
  }
  // Cycle from which the head is visible, or UINT64_MAX when empty.
  uint64_t head_ready_cycle() const { return items_.empty() ? UINT64_MAX : items_.front().cycle + 1; }
  bool ready(uint64_t cycle) const { return !items_.empty() && items_.front().cycle < cycle; }
  T& front() { return items_.front().value; }
  const T& back() const { return items_.back().value; }
  uint64_t pushed() const { return pushed_; }  // items ever pushed
  T pop(uint64_t cycle) {
    const bool was_full = items_.size() + (popped_cycle_ == cycle ? popped_ : 0) >= depth_;
    T v = std::move(items_.front().value);
    items_.pop_front();
    if (popped_cycle_ != cycle) popped_cycle_ = cycle, popped_ = 0;
    ++popped_;
    if (was_full)
      for (auto& wake : on_space) wake(cycle + 1);
    return v;
  }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  size_t depth() const { return depth_; }
  size_t high_water() const { return high_water_; }
  const std::string& name() const { return name_; }
  void clear() {
    items_.clear();
    popped_ = 0;
  }

  std::function<void(uint64_t cycle)> on_data;                 // wake the consumer
  std::vector<std::function<void(uint64_t cycle)>> on_space;   // wake producers held by a full stream

 private:
  struct Slot {
    uint64_t cycle;
    T value;
  };
  std::string name_;
  size_t depth_;
  size_t high_water_ = 0;
  uint64_t pushed_ = 0;
  uint64_t popped_cycle_ = UINT64_MAX;  // slots freed on this cycle are not reusable until the next
  size_t popped_ = 0;
  std::deque<Slot> items_;
};

}  // namespace vhca
