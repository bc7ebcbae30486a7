// Timed actions of one block, run by one SC_METHOD: in time order and, at one instant, in the
// order they were scheduled (or stand scheduled: at_ordered). A block whose work comes back
// later (a read completion, the next stage of a transaction) schedules the continuation here
// instead of holding a thread in wait(): no thread suspension per step, and one pending SystemC
// notification (for the earliest action) however many actions wait.
#pragma once
#include <cstdint>
#include <functional>
#include <algorithm>
#include <systemc>
#include <utility>
#include <vector>

#include "model/common/earliest_timer.h"
#include "model/common/sim_now.h"
#include "model/common/slot_ring.h"

namespace vhca {

class ActionQueue : public sc_core::sc_module {
 public:
  using Action = std::function<void()>;

  SC_HAS_PROCESS(ActionQueue);
  explicit ActionQueue(const sc_core::sc_module_name& name) : sc_module(name) {
    SC_METHOD(run_due);
    sensitive << timer_.near_event() << timer_.far_event();
    dont_initialize();
  }

  // Runs `action` at absolute time `at` (now or later; an earlier time means now).
  void at(const sc_core::sc_time& at, Action action) { at_ordered(at, std::move(action), sim_now()); }
  // The same, placed among the actions of its instant as if it had been scheduled at `scheduled`
  // (now or later): for an action scheduled ahead of the moment it stands for (a read's completion
  // told early, tlm/early_completion.h), so that the order at its instant stays that moment's.
  void at_ordered(const sc_core::sc_time& at, Action action, const sc_core::sc_time& scheduled) {
    const sc_core::sc_time when = std::max(at, sim_now());
    uint32_t slot;
    if (free_.empty()) {
      slot = uint32_t(actions_.size());
      actions_.push_back(std::move(action));
    } else {
      slot = free_.back();
      free_.pop_back();
      actions_[slot] = std::move(action);
    }
    queue_.push_back(Entry{when.value(), scheduled.value(), next_seq_++, slot});
    queue_.sink_back(later);  // one comparison when it comes in order
    timer_.arm(when);
  }
  size_t pending() const { return queue_.size(); }
  // Runs now the actions due at this instant, for a block that must see them before it decides
  // on this instant whichever process SystemC runs first (decisions.md 48). The notification
  // pending for them stays and, when it comes, finds them done and arms for the next.
  // Returns how many ran.
  size_t run_due_now() { return due_now() ? run_due_at(sim_now().value()) : 0; }
  bool due_now() const { return !queue_.empty() && queue_.front().at <= sim_now().value(); }

 private:
  size_t run_due_at(uint64_t now) {
    size_t ran = 0;
    while (!queue_.empty() && queue_.front().at <= now) {
      const uint32_t slot = queue_.front().slot;
      queue_.pop_front();
      Action a = std::move(actions_[slot]);
      free_.push_back(slot);
      a();  // may schedule more, for now (run in this loop) or later
      ++ran;
    }
    return ran;
  }

  // The queue orders small entries, kept sorted: the actions of both users (a link's stages, a
  // DMA engine's completions) are scheduled nearly in time order, so an entry goes in at the back
  // or a place or two before it, and the next is the front. The actions stay where they were
  // stored (a std::function is costly to move).
  struct Entry {
    uint64_t at;         // sc_time value
    uint64_t scheduled;  // sc_time value: at one instant, earlier scheduled first, then in order
    uint64_t seq;
    uint32_t slot;  // in actions_
  };
  static bool later(const Entry& a, const Entry& b) {
    if (a.at != b.at) return a.at > b.at;
    return a.scheduled != b.scheduled ? a.scheduled > b.scheduled : a.seq > b.seq;
  }

  void run_due() {
    timer_.fired();
    run_due_at(sim_now().value());
    if (!queue_.empty()) timer_.arm(sc_core::sc_time::from_value(queue_.front().at));
  }

  SlotRing<Entry> queue_;  // earliest first
  std::vector<Action> actions_;
  std::vector<uint32_t> free_;  // slots of actions_ not in use
  uint64_t next_seq_ = 0;
  EarliestTimer timer_;
};

}  // namespace vhca
