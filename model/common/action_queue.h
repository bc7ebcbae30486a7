// Timed actions of one block, run by one SC_METHOD: in time order and, at one instant, in the
// order they were scheduled. A block whose work comes back later (a read completion, the next
// stage of a transaction) schedules the continuation here instead of holding a thread in wait():
// no thread suspension per step, and one pending SystemC notification (for the earliest action)
// however many actions wait.
#pragma once
#include <cstdint>
#include <functional>
#include <queue>
#include <systemc>
#include <utility>
#include <vector>

#include "model/common/earliest_timer.h"

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
  void at(const sc_core::sc_time& at, Action action) {
    const sc_core::sc_time when = std::max(at, sc_core::sc_time_stamp());
    queue_.push(Entry{when, next_seq_++, std::move(action)});
    timer_.arm(when);
  }
  size_t pending() const { return queue_.size(); }

 private:
  struct Entry {
    sc_core::sc_time at;
    uint64_t seq;
    mutable Action action;
    bool operator>(const Entry& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  void run_due() {
    timer_.fired();
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    while (!queue_.empty() && queue_.top().at <= now) {
      Action a = std::move(queue_.top().action);
      queue_.pop();
      a();  // may schedule more, for now (run in this loop) or later
    }
    if (!queue_.empty()) timer_.arm(queue_.top().at);
  }

  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
  uint64_t next_seq_ = 0;
  EarliestTimer timer_;
};

}  // namespace vhca
