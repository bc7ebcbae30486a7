#include "model/cq/completion_arbiter.h"

#include <algorithm>
#include <cassert>

namespace vhca {

CompletionArbiter::CompletionArbiter(const sc_core::sc_module_name& name, const SimClock& clock,
                                     const CompletionArbiterConfig& cfg)
    : sc_module(name), clock_(clock), cfg_(cfg), wakeup_(clock), transport_(cfg.transport_depth) {
  s_transport.bind(*this);
  m_cpl.on_space([this](uint64_t c) { on_cpl_space(c); });
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

bool CompletionArbiter::try_put(const CompletionRecord& r) {
  const uint64_t now = clock_.now(), turn = next_turn();
  if (!ahead_.empty()) {  // those whose turns have not run: the round robin decides there
    const uint64_t open = ahead_open_from(turn);
    settle_ahead(open);
    take_back_ahead(open);
  }
  if (early_cycle_ != UINT64_MAX && early_cycle_ >= turn) take_back_early();  // its turn has not run
  const bool open = at_once_open(turn);
  if (open && !at_once_transport_) take_back_at_once();  // the turn's round robin decides
  const bool own_waiting = open && at_once_transport_;
  // Records pushed at once for this turn count as waiting for it, as they would have been.
  const size_t at_once = own_waiting ? at_once_ : 0;
  if (transport_.size() + at_once >= cfg_.transport_depth) {
    ++transport_stalls_;
    if (at_once > 0 && transport_.empty()) space_.notify(clock_.until(turn + 1));  // the turn frees them
    return false;
  }
  ++transport_puts_;
  if (passes_on_at_once(turn)) {
    pass_on_at_once(r, turn, true, own_waiting);
    return true;
  }
  transport_.push_back(r);
  transport_high_water_ = std::max(transport_high_water_, transport_.size() + at_once);
  wakeup_.wake(now);
  return true;
}

// A record put, transport's or an injection due by the next turn (this edge's, or the next edge's
// between edges), with nothing waiting from either source and no record passed on early, is what
// that turn would pass on first, stamped with its cycle: it is pushed at once instead of waking
// the turn (one kernel activation a record fewer). A record of the other source given for that
// turn before it would have run could still go first (the round robin): try_put and inject take
// those pushed at once back, and the turn runs as usual; so does the turn itself, should it run
// meanwhile for a record queued behind one scheduled later.
// (Its callers have taken back those pushed at once from the other source for this turn.)
bool CompletionArbiter::passes_on_at_once(uint64_t turn) const {
  return cfg_.pass_on_early && transport_.empty() && injections_.empty() && !in_step_ && early_cycle_ == UINT64_MAX &&
         ahead_.empty() && m_cpl->has_room(turn);
}

// Whether records pushed at once for `turn` still wait for it, as they would have: until the turn
// would have run, the delta cycle after the push on an edge (the turn's wake-up is a delta
// notification), at that edge for a push between edges (a timed one). Records given later (in
// the evaluation phase of that turn, whose order against it SystemC does not define, or after)
// come after them, as after the turn.
bool CompletionArbiter::at_once_open(uint64_t turn) const {
  if (at_once_cycle_ != turn || at_once_ == 0) return false;
  return at_once_between_edges_ ? !clock_.on_edge() : sc_core::sc_delta_count() == at_once_delta_;
}

void CompletionArbiter::pass_on_at_once(const CompletionRecord& r, uint64_t turn, bool transport, bool open) {
  if (!open) {
    at_once_cycle_ = turn;
    at_once_ = 0;
    at_once_transport_ = transport;
    at_once_between_edges_ = !clock_.on_edge();
    at_once_delta_ = sc_core::sc_delta_count();
  }
  ++at_once_;
  m_cpl->push(r, turn);
  if (transport) {
    // The queue's mark is the turn's: the records of one cycle would have waited for it together.
    transport_high_water_ = std::max(transport_high_water_, at_once_);
    ++passed_at_once_;
  } else {
    ++injected_;
    ++injections_at_once_;
  }
}

// Those pushed at once for their turn go back where they waited, in order, for it. (They are the
// last items of s_cpl: while they wait, nothing else is pushed; on_cpl_space passes nothing on
// early meanwhile.)
void CompletionArbiter::take_back_at_once(bool wake) {
  const uint64_t turn = at_once_cycle_;
  for (; at_once_ > 0; --at_once_) {
    if (at_once_transport_) {
      transport_.push_front(m_cpl->back());
      --passed_at_once_;
    } else {
      injections_.push_front(Injection{turn, m_cpl->back()});
      --injected_;
      --injections_at_once_;
    }
    m_cpl->retract_back(turn);
    ++taken_back_at_once_;
  }
  at_once_cycle_ = UINT64_MAX;
  if (wake) wakeup_.wake(turn);
}

void CompletionArbiter::inject(const CompletionRecord& r, uint64_t cycle) {
  const uint64_t now = clock_.now(), turn = next_turn();
  const uint64_t at = std::max(cycle, now);
  if (!ahead_.empty()) {  // those for a later cycle than this one's go back behind it
    settle_ahead(turn);
    if (!ahead_.empty() && ahead_.back() > at) take_back_ahead(turn);
  }
  if (at <= turn) {
    const bool open = at_once_open(turn);
    if (open && at_once_transport_) take_back_at_once();  // the turn's round robin decides
    if (passes_on_at_once(turn)) {
      pass_on_at_once(r, turn, false, open && !at_once_transport_);
      return;
    }
  }
  Injection& slot = injections_.append();
  slot.first = at;
  slot.second = r;
  injections_.sink_back([](const Injection& a, const Injection& b) { return a.first > b.first; });
  wakeup_.wake(injections_.front().first);
}

// Records pushed ahead of a turn that has not run are taken back first: they were never passed on.
void CompletionArbiter::reset() {
  settle_ahead(next_turn());
  take_back_ahead(next_turn());
  if (early_cycle_ != UINT64_MAX && early_cycle_ >= next_turn()) take_back_early();
  if (at_once_open(next_turn())) take_back_at_once();
  transport_.clear();
  injections_.clear();
  at_once_cycle_ = UINT64_MAX;
  at_once_ = 0;
  injection_held_since_ = UINT64_MAX;
  early_cycle_ = UINT64_MAX;
}

// s_cpl has a slot again from `cycle`: the CQ writer took a record from it, full, on the cycle
// before. If the arbiter's turn on `cycle` could only pass on the next injection, that is done
// now, stamped `cycle`, instead of waking for it (one kernel activation a record fewer under a
// flood): the injection is due already, so none given later goes before it (an injection is due
// no earlier than when it is given, and those of one cycle keep their order); the transport has
// nothing waiting; and the writer takes at most one record a cycle, so the turn has one slot. A
// transport record put before the turn on `cycle` has run (on an earlier cycle, or on that one
// before the turn) could still win the round robin: try_put takes the early record back (no one
// has seen it: it is visible from the cycle after), and the turn runs as usual. (With s_cpl one
// deep the writer may take a record lazily, and when it is told of one matters: then the arbiter
// wakes as usual.)
void CompletionArbiter::on_cpl_space(uint64_t cycle) {
  const uint64_t now = clock_.now();
  if (!ahead_.empty()) settle_ahead(next_turn());
  const bool only_an_injection = transport_.empty() && injection_due(now) && ahead_.empty();
  const bool slot_freed_now = cycle == now + 1 && m_cpl->depth() >= 2 && m_cpl->size() + 1 == m_cpl->depth();
  if (!cfg_.pass_on_early || in_step_ || early_cycle_ == cycle || !only_an_injection || !slot_freed_now ||
      (at_once_cycle_ != UINT64_MAX && at_once_cycle_ >= now && at_once_open(next_turn()))) {
    wakeup_.wake(cycle);
    return;
  }
  early_ = injections_.front();
  injections_.pop_front();
  early_cycle_ = cycle;
  early_held_since_ = injection_held_since_;
  m_cpl->push(early_.second, cycle);
  ++injected_;
  ++passed_on_early_;
  if (injection_held_since_ != UINT64_MAX) injection_stalls_ += cycle - injection_held_since_;
  injection_held_since_ = UINT64_MAX;
  // The rest of the turn: a next record due by then finds s_cpl full (and is woken by its next
  // slot); one due later is woken for.
  if (injection_due(cycle)) {
    const bool room = m_cpl.can_push(cycle);
    assert(!room);
    (void)room;
    injection_held_since_ = cycle;
  } else if (!injections_.empty()) {
    wakeup_.wake(std::max(injections_.front().first, cycle + 1));
  }
}

void CompletionArbiter::take_back_early() {
  m_cpl->retract_back(early_cycle_);
  injections_.push_front(early_);
  --injected_;
  if (early_held_since_ != UINT64_MAX) injection_stalls_ -= early_cycle_ - early_held_since_;
  injection_held_since_ = early_held_since_;
  early_cycle_ = UINT64_MAX;
  --passed_on_early_;
  ++taken_back_;
  wakeup_.wake(clock_.now());  // the turn on the early record's cycle runs as usual
}

void CompletionArbiter::step() {
  const uint64_t now = clock_.now();
  if (!clock_.on_edge()) {  // off the edge: act on the next one
    wakeup_.wake(now + 1);
    return;
  }
  wakeup_.count();
  if (early_cycle_ <= now) early_cycle_ = UINT64_MAX;  // the turn on the early record's cycle has run
  settle_ahead(now + 1);                                // so have this cycle's and the earlier ones
  if (at_once_open(now)) take_back_at_once(false);  // they waited for this turn: it passes them on
  in_step_ = true;
  const bool transport_was_full = transport_.size() >= cfg_.transport_depth;
  bool held = false, pushed = false;
  for (;;) {
    const bool from_transport = !transport_.empty(), from_injection = injection_due(now);
    if (!from_transport && !from_injection) break;
    if (!m_cpl.can_push(now)) {
      if (from_injection && injection_held_since_ == UINT64_MAX) injection_held_since_ = now;
      held = true;
      break;  // m_cpl's on_space wakes this again
    }
    const bool take_transport = from_transport && (transport_turn_ || !from_injection);
    if (take_transport) {
      m_cpl->push(transport_.front(), now);
      transport_.pop_front();
    } else {
      m_cpl->push(injections_.front().second, now);
      injections_.pop_front();
      ++injected_;
      if (injection_held_since_ != UINT64_MAX) injection_stalls_ += now - injection_held_since_;
      injection_held_since_ = UINT64_MAX;
    }
    if (from_transport && from_injection) transport_turn_ = !take_transport;
    pushed = true;
  }
  if (!held) push_ahead(now, pushed);
  in_step_ = false;
  // A slot freed on this cycle is the transport's from the next.
  if (transport_was_full && transport_.size() < cfg_.transport_depth) space_.notify(clock_.until(now + 1));
  // Held by a full s_cpl, it sleeps until its on_space (no activation per cycle of the stall).
  if (!held && !injections_.empty() && transport_.empty()) wakeup_.wake(std::max(injections_.front().first, now + 1));
}

// The injections due on the next cycles, with the transport's side empty, are what those cycles'
// turns would pass on, one turn after another, if nothing else came: each is pushed now, stamped
// with its own turn's cycle, instead of waking for each turn (one activation for a burst instead
// of one a record). Only while s_cpl has a slot to spare and the push sets no new high-water mark
// (Stream::fits_below_mark): the writer's pops by then only add room, so each turn would have found
// room and marked nothing. A transport record put before one of those turns, or an injection
// given for an earlier cycle than one pushed, takes back those whose turns have not run
// (take_back_ahead), and the turns run as usual. Not while a record pushed early or at once waits
// for its turn (both are taken back from the end of s_cpl). The writer is told of the first record
// of the turn's pushes only (`told`: one was pushed for this turn): it finds the rest when it acts
// for that one (Stream::push_untold).
void CompletionArbiter::push_ahead(uint64_t now, bool told) {
  if (!cfg_.pass_on_early || !transport_.empty() || early_cycle_ != UINT64_MAX || at_once_open(next_turn())) return;
  while (!injections_.empty()) {
    const uint64_t due = injections_.front().first;
    if (due <= now || due > now + cfg_.ahead_cycles || !m_cpl->fits_below_mark(due)) break;
    if (told)
      m_cpl->push_untold(injections_.front().second, due);
    else
      m_cpl->push(injections_.front().second, due), told = true;
    injections_.pop_front();
    ahead_.append() = due;
    ++injected_;
    ++passed_on_early_;
  }
}

// The first cycle whose records pushed ahead a record put now may still go before: the next turn's,
// but on an edge past its first delta cycle this edge's turn has run (the turn a record pushed
// ahead for this cycle stands for is woken by a timed notification, so it runs in the first delta):
// a put then comes after this cycle's records, as after the turn.
uint64_t CompletionArbiter::ahead_open_from(uint64_t turn) const {
  return clock_.on_edge() && sc_core::sc_delta_count_at_current_time() > 0 ? turn + 1 : turn;
}

// Those pushed ahead for `from` or later go back to the front of the schedule, in order; the
// turn of the first is woken for.
void CompletionArbiter::take_back_ahead(uint64_t from) {
  bool took = false;
  while (!ahead_.empty() && ahead_.back() >= from) {
    const uint64_t cycle = ahead_.back();
    injections_.push_front(Injection{cycle, m_cpl->back()});
    m_cpl->retract_back(cycle);
    ahead_.pop_back();
    --injected_;
    --passed_on_early_;
    ++taken_back_;
    took = true;
  }
  if (took) wakeup_.wake(std::max(injections_.front().first, clock_.now()));
}

}  // namespace vhca
