// Flow-control credits on their way back to a transmitter: the part the PCIe link's credits
// (tlm/pcie_credits.h) and the IB link's (tlm/ib_credits.h) share. Each return carries an amount
// (PCIe: header and data credits; IB: packet slots) and the time it arrives back. Returns are
// applied lazily, when the owner asks for credits; the return event fires only while a refused
// sender waits, and then wakes the senders registered with on_return.
#pragma once
#include <cassert>
#include <functional>
#include <systemc>
#include <vector>

#include "model/common/sim_now.h"
#include "model/common/slot_ring.h"

namespace vhca {

template <typename Amount>
class CreditReturns {
 public:
  // The event the owner's SC_METHOD is sensitive to; it then calls process().
  sc_core::sc_event& due_event() { return due_; }
  // Wake-ups for refused senders, told in the order they were registered.
  void on_return(std::function<void()> wake) { wakes_.push_back(std::move(wake)); }

  // `amount` comes back at `at`. Kept in time order, equal times in the order given: returns
  // nearly always come in time order, so they are appended to a ring and seldom move.
  // A sender waits: the event is armed for it if it is not armed sooner (a sender that slept
  // past the returns at the front, want_wake_after, has left them unapplied and unarmed).
  void give_back(const sc_core::sc_time& at, const Amount& amount) {
    returns_.push_back(Entry{at, amount});
    returns_.sink_back([](const Entry& a, const Entry& b) { return a.at > b.at; });
    if (waiting_) arm(at);
  }

  // A return given back for `from` comes back at `to` instead (the TLP it is for left later: one
  // entering the wire at the same instant went before it). The latest such return is moved.
  void move(const sc_core::sc_time& from, const sc_core::sc_time& to, const Amount& amount) {
    size_t i = returns_.size();
    while (i > 0 && !(returns_.at(i - 1).at == from && returns_.at(i - 1).amount == amount)) --i;
    assert(i > 0 && "moving a credit return that was never given back");
    for (; i < returns_.size(); ++i) std::swap(returns_.at(i - 1), returns_.at(i));
    returns_.pop_back();
    give_back(to, amount);
  }

  // Hands every return due by now to `apply(amount)`; true if there was any.
  template <typename Apply>
  bool apply_due(Apply&& apply) const {
    const sc_core::sc_time now = sim_now();
    bool any = false;
    while (!returns_.empty() && returns_.front().at <= now) {
      apply(returns_.front().amount);
      returns_.pop_front();
      any = true;
    }
    return any;
  }

  // A sender was refused: the return event fires at the next return (or when one is given back).
  void want_wake() const {
    waiting_ = true;
    if (!returns_.empty()) arm(returns_.front().at);
  }

  // For a sender that knows now it will be refused at `at` (later): calls `apply(amount)` for each
  // return due by then, in time order, until it returns false.
  template <typename Apply>
  void for_each_due_by(const sc_core::sc_time& at, Apply&& apply) const {
    for (size_t i = 0; i < returns_.size() && returns_.at(i).at <= at; ++i)
      if (!apply(returns_.at(i).amount)) return;
  }
  // That sender, refused at `at`: the return event fires at the first return now scheduled after
  // `at`, as it would for a sender refused then, not at the returns before it (unless another
  // sender, refused meanwhile, wants them), or sooner at a return given back meanwhile (a write
  // landing after this question, on a short link, may give one back due even before `at`).
  void want_wake_after(const sc_core::sc_time& at) const {
    waiting_ = true;
    for (size_t i = 0; i < returns_.size(); ++i)
      if (returns_.at(i).at > at) return arm(returns_.at(i).at);
  }

  // On the return event: applies what is due and, if anything came back, wakes the refused
  // senders (who ask again); else waits for the next return.
  template <typename Apply>
  void process(Apply&& apply) {
    armed_ = false;  // the event has fired
    if (!apply_due(apply)) {
      if (waiting_ && !returns_.empty()) arm(returns_.front().at);
      return;
    }
    waiting_ = false;
    for (auto& wake : wakes_) wake();
  }

 private:
  struct Entry {
    sc_core::sc_time at;
    Amount amount;
  };
  // The return event, for `at` unless it is already due by then (SystemC keeps the earliest).
  void arm(const sc_core::sc_time& at) const {
    if (armed_ && armed_at_ <= at) return;
    armed_ = true;
    armed_at_ = at;
    due_.notify(at - sim_now());
  }
  mutable SlotRing<Entry> returns_{16};  // grows to the most credits ever on their way
  mutable bool waiting_ = false;
  mutable bool armed_ = false;  // the return event is pending, for armed_at_
  mutable sc_core::sc_time armed_at_;
  mutable sc_core::sc_event due_;
  std::vector<std::function<void()>> wakes_;
};

}  // namespace vhca
