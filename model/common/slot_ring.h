// A FIFO whose storage is a ring of slots allocated once (a power of two at least the expected
// depth), so that a push or a pop moves one slot and never allocates in the steady state: the
// storage of every stream, and of the queues inside blocks that a std::deque served before (a
// deque allocates a block every few pushes as it walks through memory). A popped slot keeps its
// last value until it is filled again, so an item's own buffers (a payload vector) are reused.
// It grows, doubling, when pushed past its size: a stream asserts before that happens (a
// producer that did not ask for room), except one several producers feed, whose bound is its
// depth a producer (it grows to that, once); a queue bounded by credits rather than by its own
// depth (writes in flight on a link) grows to its high-water mark once.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace vhca {

template <typename Slot>
class SlotRing {
 public:
  explicit SlotRing(size_t depth = 16) {
    size_t cap = 1;
    while (cap < depth) cap *= 2;
    slots_.resize(cap);
    cache_storage();
  }
  SlotRing(const SlotRing& other) : slots_(other.slots_), head_(other.head_), count_(other.count_) { cache_storage(); }
  SlotRing(SlotRing&& other) noexcept
      : slots_(std::move(other.slots_)), head_(other.head_), count_(other.count_) {
    cache_storage();
    other.cache_storage();
  }
  SlotRing& operator=(SlotRing other) noexcept {
    std::swap(slots_, other.slots_);
    std::swap(head_, other.head_);
    std::swap(count_, other.count_);
    cache_storage();
    return *this;
  }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  Slot& front() { return data_[head_]; }
  const Slot& front() const { return data_[head_]; }
  Slot& at(size_t i) { return data_[(head_ + i) & mask_]; }  // i from the head
  const Slot& at(size_t i) const { return data_[(head_ + i) & mask_]; }
  Slot& back() { return at(count_ - 1); }
  const Slot& back() const { return at(count_ - 1); }
  // A new slot at the back, for the caller to fill in place (it holds the last value it had).
  Slot& append() {
    if (count_ > mask_) grow();
    return data_[(head_ + count_++) & mask_];
  }
  // One copy or move into the slot, no temporary. A value that is one of this ring's own slots is
  // taken out before the ring grows under it, and one that is the very slot it goes into (the
  // slot just popped, the ring one short of full) stays as it is.
  void push_back(const Slot& value) {
    if (count_ > mask_) return push_back(Slot(value));
    Slot& slot = data_[(head_ + count_++) & mask_];
    if (&slot != &value) slot = value;
  }
  void push_back(Slot&& value) {
    if (count_ > mask_) {
      Slot taken = std::move(value);
      append() = std::move(taken);
      return;
    }
    Slot& slot = data_[(head_ + count_++) & mask_];
    if (&slot != &value) slot = std::move(value);
  }
  // An ordered queue whose items nearly always come in order: the item just appended moves back
  // past those that go after it (goes_after(earlier, appended)). Returns its place from the head.
  template <typename GoesAfter>
  size_t sink_back(GoesAfter goes_after) {
    size_t i = count_ - 1;
    for (; i > 0 && goes_after(at(i - 1), at(i)); --i) std::swap(at(i - 1), at(i));
    return i;
  }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --count_;
  }
  // Undoing a pop or a push (a producer that took an item back).
  void push_front(Slot value) {
    if (count_ > mask_) grow();
    head_ = (head_ - 1) & mask_;
    data_[head_] = std::move(value);
    ++count_;
  }
  void pop_back() { --count_; }
  Slot& operator[](size_t i) { return at(i); }
  const Slot& operator[](size_t i) const { return at(i); }
  // Walked from the head (a queue searched or updated in order, as a QP's fetched WQEs).
  template <typename Ring, typename Ref>
  class Walk {
   public:
    Walk(Ring* ring, size_t i) : ring_(ring), i_(i) {}
    Ref operator*() const { return ring_->at(i_); }
    Walk& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Walk& other) const { return i_ != other.i_; }

   private:
    Ring* ring_;
    size_t i_;
  };
  Walk<SlotRing, Slot&> begin() { return {this, 0}; }
  Walk<SlotRing, Slot&> end() { return {this, count_}; }
  Walk<const SlotRing, const Slot&> begin() const { return {this, 0}; }
  Walk<const SlotRing, const Slot&> end() const { return {this, count_}; }
  void clear() {
    for (; count_; pop_front()) front() = Slot{};
    head_ = 0;
  }

 private:
  void grow() {
    std::vector<Slot> bigger(slots_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(at(i));
    slots_ = std::move(bigger);
    head_ = 0;
    cache_storage();
  }
  // The storage's address and size as an index mask, read on every access (a vector's size is a
  // division by the slot's size, and its data a second load).
  void cache_storage() {
    if (slots_.empty()) slots_.resize(1), head_ = count_ = 0;  // a ring moved from: empty, usable
    data_ = slots_.data();
    mask_ = slots_.size() - 1;
  }
  std::vector<Slot> slots_;
  Slot* data_ = nullptr;
  size_t mask_ = 0;
  size_t head_ = 0, count_ = 0;
};

}  // namespace vhca
