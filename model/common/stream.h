// A finite-depth, cycle-stamped queue between two blocks (the model's valid/ready channel).
// An item pushed on cycle c is visible to the consumer from cycle c+1, and a slot freed on cycle
// c is visible to the producer from cycle c+1, both as through a register stage: whether a block
// stalls never depends on the order in which SystemC runs two blocks in one cycle. A producer
// that finds the stream full holds its item; it is woken (on_space) when the stream stops being
// full. The consumer is woken for the cycle an item becomes visible.
//
// A stream that several producers' ports feed (the DMA engine's write queue, the EQ engine's
// event input) gives each producer `depth` slots of its own: a producer's push is admitted
// against its own items (queued, popped on this cycle, taken ahead), never against another's,
// so that which of two producers gets the last slot on a cycle cannot depend on which SystemC
// ran first (a shared count would give it to the first). It then holds at most `depth` items a
// producer; the consumer still takes them in one order (push cycle, same_cycle_rank, tiebreak).
//
// Inside a SystemC model a stream is a channel: the consumer owns it and shows it as a named
// export (StreamIn), each producer reaches it through a named port (StreamOut) bound at
// elaboration, so an unbound output fails at elaboration naming the port, and the object
// hierarchy shows every connection (describe_streams() in model/common/topology.h lists them).
// The same class also runs outside SystemC, in the lockstep co-simulation harness.
#pragma once
#include <array>
#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <systemc>
#include <utility>
#include <vector>

#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/common/slot_ring.h"

namespace vhca {

// What every finite queue between blocks reports (a stream, or a block's own input queue): its
// bound, its high-water mark and its traffic. describe_queues() (model/common/topology.h) lists
// every one reachable from the object hierarchy.
class QueueInfo {
 public:
  virtual ~QueueInfo() = default;
  virtual size_t queue_depth() const = 0;
  virtual size_t queue_high_water() const = 0;
  virtual uint64_t queue_pushed() const = 0;
  // Who feeds it when no port does (a register write, a link's report).
  const std::string& fed_by() const { return fed_by_; }
  void set_fed_by(std::string who) { fed_by_ = std::move(who); }

 private:
  std::string fed_by_;
};

// What every stream reports, whatever it carries.
class StreamBase : public virtual sc_core::sc_interface, public QueueInfo {
 public:
  StreamBase(std::string name, size_t depth) : name_(std::move(name)), depth_(depth) {}
  const std::string& name() const { return name_; }
  // The hierarchical name of the export that shows it (set when a module exports it).
  void set_name(std::string name) { name_ = std::move(name); }
  size_t depth() const { return depth_; }
  size_t high_water() const { return high_water_; }
  uint64_t pushed() const { return pushed_; }  // items ever pushed
  virtual size_t size() const = 0;
  // Its bound: `depth`, or `depth` a producer where several ports feed it (Stream::add_producer).
  size_t queue_depth() const override { return depth_ * (ports_ >= 2 ? ports_ : 1); }
  size_t queue_high_water() const override { return high_water_; }
  uint64_t queue_pushed() const override { return pushed_; }

 protected:
  std::string name_;
  size_t depth_;
  size_t high_water_ = 0;
  uint64_t pushed_ = 0;
  uint32_t ports_ = 0;  // the producers' ports that feed it
};

template <typename T>
class Stream : public StreamBase {
 public:
  Stream(std::string name, size_t depth) : StreamBase(std::move(name), depth), items_(depth) {}

  // A refused producer is always woken (on_space) for the cycle a slot is usable again: by the
  // next pop when the stream holds `depth` items, or for the next cycle when it was refused only
  // because a slot freed on this cycle is not reusable until then.
  // `producer`: the pushing port's index on a stream several ports feed (StreamOut passes it; 0 for
  // a push made without a port).
  // (Fewer slots in use than a producer's share leaves every producer room: asked first.)
  bool can_push(uint64_t cycle, uint32_t producer = 0) const {
    if (occupied(cycle) < depth_) return true;
    return shared_ ? can_push_shared(cycle, producer) : can_push_full(cycle);
  }
  // can_push without its side effects: false also where a lazy consumer's owed pops would make room.
  bool has_room(uint64_t cycle, uint32_t producer = 0) const {
    return occupied(cycle) < depth_ || (shared_ && occupied_by(cycle, producer) < depth_);
  }
  // Whether an item pushed now for `cycle` (a single producer's, ahead of its turn) fits with a slot
  // to spare and sets no new high-water mark: so the push on `cycle` itself, with the consumer's
  // pops by then, would also have fitted and marked nothing (and has no lazy consumer settle).
  bool fits_below_mark(uint64_t cycle) const {
    const size_t fill = occupied(cycle);
    return !shared_ && fill + 1 < depth_ && fill < high_water_;
  }
  // A producer's port registers itself: its index (from 1). Two or more make the slots per producer.
  static constexpr uint32_t kMaxProducers = 7;
  uint32_t add_producer() {
    if (ports_ >= kMaxProducers)
      throw std::logic_error("stream " + name_ + ": more than " + std::to_string(kMaxProducers) + " producers");
    shared_ = ++ports_ >= 2;
    return ports_;
  }
  // Items pushed on one cycle are queued in a fixed order, not in the order SystemC happened to
  // run their producers: by same_cycle_rank(item) when the stream has one, then by the producer's
  // tiebreak, then in push order. No consumer sees an item before the cycle after its push, so
  // the order is settled before anyone looks.
  void push(const T& value, uint64_t cycle, uint32_t tiebreak = 0, uint32_t producer = 0) {
    put(value, cycle, tiebreak, producer);
  }
  void push(T&& value, uint64_t cycle, uint32_t tiebreak = 0, uint32_t producer = 0) {
    put(std::move(value), cycle, tiebreak, producer);
  }
  // A single producer pushing several items at once, later cycles after earlier ones (the
  // completion arbiter's burst pushed ahead), tells the consumer of the first only, where the
  // consumer says it finds the rest when it acts for that one (finds_batches: the pipelined CQ
  // writer computes its next cycle from all it has queued). Else a push like any other.
  void push_untold(const T& value, uint64_t cycle) { put(value, cycle, 0, 0, !finds_batches); }
  // The head's place in push order (1 for the first item ever pushed): same-cycle items may leave
  // in another order than they came (push), and a mark taken as pushed() names them all.
  uint64_t front_seq() const { return items_.front().seq; }
  // The head's same-cycle order: its rank (high half) and its producer's tiebreak (low half).
  uint64_t front_order() const { return items_.front().order; }
  // Cycle from which the head is visible, or UINT64_MAX when empty.
  uint64_t head_ready_cycle() const { return items_.empty() ? UINT64_MAX : items_.front().cycle + 1; }
  bool ready(uint64_t cycle) const { return !items_.empty() && items_.front().cycle < cycle; }
  T& front() { return items_.front().value; }
  const T& back() const { return items_.back().value; }
  T pop(uint64_t cycle) {
    const bool was_full = head_was_full(cycle);
    T v = std::move(items_.front().value);
    drop_head(cycle, was_full);
    return v;
  }
  // Pops the head, handing it to `take` (to move it on without a copy) before its slot is freed:
  // a producer woken by the freed slot may push into it at once.
  template <typename Take>
  void pop_to(uint64_t cycle, Take&& take) {
    const bool was_full = head_was_full(cycle);
    take(items_.front().value);
    drop_head(cycle, was_full);
  }
  // The consumer takes the head, visible by `cycle`, as if it popped it on `cycle` (the next
  // cycle's, whose turn is already decided): its slot stays occupied until then, as it would have
  // been in the queue. For a consumer that acts ahead of its turn (the DMA engine issuing a write
  // ahead). (It has used the head in place: the item is dropped.)
  void pop_ahead(uint64_t cycle) {
    assert(!items_.empty() && items_.front().cycle < cycle && ahead_end_ <= cycle);
    const bool was_full = head_was_full(cycle - 1);
    if (shared_) share_taken_ahead();
    items_.pop_front();
    prev2_ahead_end_ = prev_ahead_end_;  // those taken ahead for the turns before may still hold their slots
    prev_ahead_end_ = ahead_end_;
    ahead_end_ = cycle + 1;
    slot_freed(cycle, was_full);
  }
  // Takes back the last item, which its producer pushed ahead for `cycle`, a cycle not yet begun:
  // no consumer can have seen it, only the taps, which are told (on_retract). For a single
  // producer that may pass an item on before its turn (the completion arbiter).
  void retract_back(uint64_t cycle) {
    assert(!items_.empty() && items_.back().cycle == cycle);
    on_retract(items_.back().value, cycle);
    if (counting_) --shares_[items_.back().producer].items;
    items_.pop_back();
    --pushed_;
  }
  bool empty() const { return items_.empty(); }
  size_t size() const override { return items_.size(); }
  void clear() {
    items_.clear();
    popped_ = 0;
    ahead_end_ = prev_ahead_end_ = prev2_ahead_end_ = 0;
    counting_ = false;
  }

  // The consumer's wake-up: one consumer per stream, set by the block that owns the stream.
  std::function<void(uint64_t cycle)> on_data;
  bool finds_batches = false;  // set by that block: push_untold needs no on_data
  // A lazy consumer's catch-up (the pipelined CQ writer may take an item on a cycle it did not
  // wake for): while *settle_owed is set, called before a push would be refused or would set a
  // new high-water mark, so that the pops the consumer owes for cycles before `cycle` are done
  // first. (An owed pop can only make the stream look fuller: an accepted push stays accepted.)
  std::function<void(uint64_t cycle)> settle;
  const bool* settle_owed = nullptr;  // read on every push: a flag, not a call
  // The order of a shared stream's same-cycle items (lower first), set by the block that owns it.
  uint32_t (*same_cycle_rank)(const T&) = nullptr;  // a plain function: one is called per push
  Observers<uint64_t> on_space;                // producers held by a full stream
  Observers<const T&, uint64_t> on_push;       // taps: told of every item as it is pushed
  Observers<const T&, uint64_t> on_retract;    // taps: told of an item taken back (retract_back)

 private:
  struct Slot {
    uint64_t cycle = 0;
    uint64_t order = 0;  // same_cycle_rank, tiebreak
    uint64_t seq = 0;    // push order
    uint32_t producer = 0;
    T value{};
  };
  // The item is copied or moved straight into its slot (a slot keeps its buffers from last time).
  template <typename U>
  void put(U&& value, uint64_t cycle, uint32_t tiebreak, uint32_t producer, bool tell = true) {
    // A new high-water mark is recorded from the exact fill (the consumer's owed pops done): the
    // slots in use on this cycle, a slot freed on it included (it is not reusable until the next),
    // so the mark does not depend on whether the consumer ran before this producer.
    // (A shared stream's mark may pass `depth`: its bound is depth a producer.)
    const bool marking = high_water_ < depth_ || shared_;
    if (marking && occupied(cycle) >= high_water_ && settle_owed && *settle_owed) settle_owed_pops(cycle);
    assert(can_push(cycle, producer));
    const uint64_t order = (same_cycle_rank ? uint64_t(same_cycle_rank(value)) << 32 : 0) | tiebreak;
    Slot& slot = items_.append();
    slot.cycle = cycle;
    slot.order = order;
    slot.seq = ++pushed_;
    slot.producer = producer;
    slot.value = std::forward<U>(value);
    if (counting_) ++shares_[producer].items;
    const size_t last = items_.size() - 1;
    const size_t i = last > 0 && goes_after(items_.at(last - 1), slot) ? sink_back() : last;
    if (marking)
      if (const size_t fill = occupied(cycle); fill > high_water_) high_water_ = fill;
    if (on_push.registered()) on_push(items_.at(i).value, cycle);
    if (tell && on_data) on_data(cycle + 1);
  }
  // The rarer halves of put(), out of line so that a push stays small.
  static bool goes_after(const Slot& a, const Slot& b) { return a.cycle == b.cycle && a.order > b.order; }
  __attribute__((noinline)) size_t sink_back() { return items_.sink_back(goes_after); }
  __attribute__((noinline)) void settle_owed_pops(uint64_t cycle) { settle(cycle); }
  void drop_head(uint64_t cycle, bool was_full) {
    if (shared_) share_popped(cycle);
    items_.pop_front();
    if (popped_cycle_ != cycle) popped_cycle_ = cycle, popped_ = 0;
    ++popped_;
    slot_freed(cycle, was_full);
  }
  // Whether the head's producer had no slot left on `cycle` (the whole stream, with one producer).
  bool head_was_full(uint64_t cycle) const {
    if (occupied(cycle) < depth_) return false;
    return !shared_ || occupied_by(cycle, items_.front().producer) >= depth_;
  }
  // A slot freed on `cycle` is usable from the next: a producer refused meanwhile is woken then.
  void slot_freed(uint64_t cycle, bool was_full) {
    if (!was_full && !refused_) return;
    refused_ = false;
    on_space(cycle + 1);
  }
  // can_push on a full-looking stream: a lazy consumer settles first; else the refusal.
  __attribute__((noinline)) bool can_push_full(uint64_t cycle) const {
    if (settle_owed && *settle_owed) {  // the consumer may owe pops: an item it took is not in the way
      settle(cycle);
      if (occupied(cycle) < depth_) return true;
    }
    if (items_.size() + held_ahead(cycle) < depth_)
      on_space(cycle + 1);
    else if (items_.size() < depth_)
      on_space(cycle < prev2_ahead_end_ ? prev2_ahead_end_ : cycle < prev_ahead_end_ ? prev_ahead_end_ : ahead_end_);  // an item taken ahead frees its slot then
    else
      refused_ = true;
    return false;
  }
  // Slots in use on `cycle`: the items, those popped on it (not reusable until the next), and
  // those taken ahead for it or a later cycle (pop_ahead).
  size_t occupied(uint64_t cycle) const {
    return items_.size() + (popped_cycle_ == cycle ? popped_ : 0) + held_ahead(cycle);
  }
  // Items are taken ahead for the next turns (the DMA engine's: the one for the next edge, and one
  // behind it for the edge after), so on any cycle at most three still hold their slots: the one
  // that counts as popped on it, and those for the next two.
  // (prev2_ahead_end_ < prev_ahead_end_ < ahead_end_ once set: one comparison where nothing is taken ahead.)
  size_t held_ahead(uint64_t cycle) const {
    return cycle < ahead_end_ ? 1 + size_t(cycle < prev_ahead_end_) + size_t(cycle < prev2_ahead_end_) : 0;
  }
  // A producer's slots on a stream several feed: its items, those of them popped on `cycle`, and
  // those taken ahead that still hold their slots.
  struct Share {
    uint32_t items = 0, popped = 0;
    uint64_t popped_cycle = UINT64_MAX;
  };
  // The head is about to be popped on `cycle`: whose slot it frees on that cycle is noted for a
  // later count, and a kept count is updated (until the stream empties). Out of line: only shared
  // streams pay for it.
  __attribute__((noinline)) void share_popped(uint64_t cycle) {
    const uint32_t producer = items_.front().producer;
    const size_t index = popped_cycle_ == cycle ? popped_ : 0;
    if (index < popped_by_.size()) popped_by_[index] = uint8_t(producer);
    if (!counting_) return;
    Share& s = shares_[producer];
    --s.items;
    if (s.popped_cycle != cycle) s.popped_cycle = cycle, s.popped = 0;
    ++s.popped;
    if (items_.size() == 1) counting_ = false;
  }
  __attribute__((noinline)) void share_taken_ahead() {
    const uint32_t producer = items_.front().producer;
    prev2_ahead_producer_ = prev_ahead_producer_;
    prev_ahead_producer_ = ahead_producer_;
    ahead_producer_ = producer;
    if (!counting_) return;
    --shares_[producer].items;
    if (items_.size() == 1) counting_ = false;
  }
  // The producers' counts, from the items and this cycle's pops, once the stream holds a share's
  // worth (below that every producer has room, and no count is kept: a push costs no upkeep). Kept
  // from then until the stream empties.
  __attribute__((noinline)) void count_shares(uint64_t cycle) const {
    shares_.fill(Share{});
    for (size_t i = 0; i < items_.size(); ++i) ++shares_[items_.at(i).producer].items;
    if (popped_cycle_ == cycle) {
      // Its consumers pop one item a cycle (the DMA write channel, the EQ engine); a count that
      // could not say whose slots more pops freed would admit a producer early.
      if (popped_ > popped_by_.size())
        throw std::logic_error("stream " + name_ + ": more pops on one cycle than a shared stream notes");
      for (size_t i = 0; i < popped_; ++i) {
        Share& s = shares_[popped_by_[i]];
        s.popped_cycle = cycle;
        ++s.popped;
      }
    }
    counting_ = true;
  }
  size_t held_ahead_by(uint64_t cycle, uint32_t producer) const {
    return size_t(cycle < ahead_end_ && ahead_producer_ == producer) +
           size_t(cycle < prev_ahead_end_ && prev_ahead_producer_ == producer) +
           size_t(cycle < prev2_ahead_end_ && prev2_ahead_producer_ == producer);
  }
  size_t occupied_by(uint64_t cycle, uint32_t producer) const {
    if (!counting_) count_shares(cycle);
    const Share& s = shares_[producer];
    return s.items + (s.popped_cycle == cycle ? s.popped : 0) + held_ahead_by(cycle, producer);
  }
  // can_push for one producer of a shared stream holding a share's worth or more.
  __attribute__((noinline)) bool can_push_shared(uint64_t cycle, uint32_t producer) const {
    if (occupied_by(cycle, producer) < depth_) return true;
    if (settle_owed && *settle_owed) {
      settle(cycle);
      if (occupied_by(cycle, producer) < depth_) return true;
    }
    const Share& s = shares_[producer];
    if (s.items + held_ahead_by(cycle, producer) < depth_)
      on_space(cycle + 1);
    else if (s.items < depth_)
      on_space(cycle < prev2_ahead_end_ && prev2_ahead_producer_ == producer ? prev2_ahead_end_
               : cycle < prev_ahead_end_ && prev_ahead_producer_ == producer ? prev_ahead_end_
                                                                               : ahead_end_);
    else
      refused_ = true;
    return false;
  }
  // By producer: 1 .. ports_, and 0 for pushes made without a port (a test's), which has a share of
  // its own outside the reported bound. Where several ports feed the stream (shared_), exact while
  // counting_ (count_shares).
  mutable std::array<Share, kMaxProducers + 1> shares_{};
  mutable bool counting_ = false;
  bool shared_ = false;
  std::array<uint8_t, 4> popped_by_{};  // the producers of the items popped on popped_cycle_
  uint32_t ahead_producer_ = 0, prev_ahead_producer_ = 0, prev2_ahead_producer_ = 0;
  uint64_t popped_cycle_ = UINT64_MAX;  // slots freed on this cycle are not reusable until the next
  size_t popped_ = 0;
  uint64_t ahead_end_ = 0;  // the cycle after the one the last item taken ahead counts as popped on
  uint64_t prev_ahead_end_ = 0;  // the same for the one taken ahead before it
  uint64_t prev2_ahead_end_ = 0;  // and for the one before that
  mutable bool refused_ = false;  // a producer found it full: the next pop wakes it
  SlotRing<Slot> items_;
};

// A producer's output: a named port, bound at elaboration to the consumer's StreamIn (or to a
// Stream). SystemC refuses to start with an unbound one ("port not bound", with its name). A
// producer held by a full stream is woken through on_space (an SC_METHOD's wake-up), or, from an
// SC_THREAD, push_held() holds the thread until the stream has room: nothing polls. A producer
// asks through the port (out.can_push(c), not out->can_push(c)) so that only a producer the
// stream refused is woken when it has room, not every producer of a shared stream.
template <typename T>
class StreamOut : public sc_core::sc_port<Stream<T>> {
 public:
  explicit StreamOut(const char* name) : sc_core::sc_port<Stream<T>>(name) {}
  // Wake-ups for a producer held by the full stream; registered with it at end of elaboration.
  void on_space(std::function<void(uint64_t cycle)> wake) { wakes_.push_back(std::move(wake)); }
  // Lets an SC_THREAD producer use push_held() (the clock turns the stream's cycles into time).
  void hold_threads(const SimClock& clock) { clock_ = &clock; }
  // Whether the stream takes an item on `cycle`; a refusal marks this producer for a wake-up.
  bool can_push(uint64_t cycle) const {
    refused_ = true;  // before asking: the stream may call on_space from inside can_push
    const bool ok = (*this)->can_push(cycle, producer());
    if (ok) refused_ = false;
    return ok;
  }
  // Pushes through the port, so that a stream several ports feed counts the item as this one's.
  void push(const T& value, uint64_t cycle, uint32_t tiebreak = 0) { (*this)->push(value, cycle, tiebreak, producer()); }
  void push(T&& value, uint64_t cycle, uint32_t tiebreak = 0) {
    (*this)->push(std::move(value), cycle, tiebreak, producer());  // moved once, into its slot
  }
  // Push on the current cycle, waiting while the stream is full (SC_THREAD only).
  void push_held(T value) {
    assert(clock_ && "push_held needs hold_threads()");
    while (!can_push(clock_->now())) sc_core::wait(space_);
    push(std::move(value), clock_->now());
  }
  // This port's index among the stream's producers (registered on first use, at the latest at the
  // end of elaboration): what a block that pushes through the stream itself passes along.
  uint32_t producer() const {
    if (producer_ == 0) producer_ = const_cast<Stream<T>*>((*this).operator->())->add_producer();
    return producer_;
  }
  const char* kind() const override { return "vhca_stream_out"; }

 protected:
  void end_of_elaboration() override {
    sc_core::sc_port<Stream<T>>::end_of_elaboration();
    producer();  // every producer counted before the first push
    if (wakes_.empty() && !clock_) return;
    (*this)->on_space.add([this](uint64_t c) {
      if (!refused_) return;  // another producer was refused
      refused_ = false;
      for (auto& wake : wakes_) wake(c);
      if (clock_) space_.notify(clock_->until(c));
    });
  }

 private:
  std::vector<std::function<void(uint64_t)>> wakes_;
  const SimClock* clock_ = nullptr;
  sc_core::sc_event space_;
  mutable bool refused_ = false;
  mutable uint32_t producer_ = 0;  // 0: not registered yet
};

// A consumer's input as the hierarchy shows it: a named export of a stream. It either owns the
// stream (depth given) or exports one that a non-SystemC engine owns (bind_to).
template <typename T>
class StreamIn : public sc_core::sc_export<Stream<T>> {
 public:
  StreamIn(const char* name, size_t depth)
      : sc_core::sc_export<Stream<T>>(name), owned_(std::make_unique<Stream<T>>(this->name(), depth)) {
    this->bind(*owned_);
  }
  explicit StreamIn(const char* name) : sc_core::sc_export<Stream<T>>(name) {}
  void bind_to(Stream<T>& s) {
    s.set_name(this->name());
    this->bind(s);
  }
  Stream<T>& stream() { return *(*this).operator->(); }
  const char* kind() const override { return "vhca_stream_in"; }

 private:
  std::unique_ptr<Stream<T>> owned_;
};

}  // namespace vhca
