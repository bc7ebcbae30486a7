#include "firmware-shim/cpu_core.h"

#include <algorithm>
#include <stdexcept>

#include "model/common/sanitizer_stack.h"
#include "model/common/sim_now.h"

namespace vhca {

CpuWork* CpuCore::stepping_ = nullptr;
uint64_t CpuCore::activation_ = 0;
sc_core::sc_time CpuCore::horizon_;
sc_core::sc_time CpuCore::earliest_submitted_;

const char* context_name(CpuContext c) {
  switch (c) {
    case CpuContext::hardirq: return "hardirq";
    case CpuContext::softirq: return "softirq";
    case CpuContext::thread: return "thread";
    case CpuContext::workqueue: return "workqueue";
    case CpuContext::app: return "app";
  }
  return "?";
}

int level_of(CpuContext c) { return c == CpuContext::hardirq ? 0 : c == CpuContext::softirq ? 1 : 2; }

CpuCore::CpuCore(const std::string& name, Counters& counters, Issue issue,
                 std::function<const sc_core::sc_event&()> space, bool run_ahead)
    : may_run_ahead_(run_ahead), counters_(counters), issue_(std::move(issue)), space_(std::move(space)) {
  sc_core::sc_spawn_options opts;
  opts.spawn_method();
  opts.dont_initialize();
  opts.set_sensitivity(&wake_);
  sc_core::sc_spawn([this] { run(); }, sc_core::sc_gen_unique_name(name.c_str()), &opts);
}

void CpuCore::submit(CpuWork& w, const sc_core::sc_time& at) {
  w.queued = true;
  if (at < earliest_submitted_) earliest_submitted_ = at;
  const sc_core::sc_time now = sim_now();
  if (at <= now) {
    ready_[level_of(w.ctx)].push_back(&w);
    if (!in_run_) wake_.notify(sc_core::SC_ZERO_TIME);  // inside run(), its loop takes it
    return;
  }
  auto it = arrivals_.end();  // arrivals come mostly in time order: search from the back
  while (it != arrivals_.begin() && std::prev(it)->at > at) --it;
  arrivals_.insert(it, Arrival{at, &w});
  if (!in_run_) wake_.notify(at - now);  // sc_event keeps the earliest notification
}

sc_core::sc_time CpuCore::busy(CpuContext ctx) const {
  sc_core::sc_time t = busy_[int(ctx)];
  if (active_ >= 0 && held_[active_]->ctx == ctx) t += sim_now() - since_;
  return t;
}

void CpuCore::run() {
  ++counters_.activations;
  const sc_core::sc_time now = sim_now();
  in_run_ = true;
  ++activation_;  // quiet marks made before hold no longer: others may have run since
  settle(now);
  admit(now);
  if (reserved_owner_) {  // the delta cycle after a thread's charge ended: its next charge goes first
    SlotRing<CpuWork*>& q = ready_[reserved_level_];
    size_t i = 0;
    while (i < q.size() && q.at(i)->owner != reserved_owner_) ++i;
    if (i < q.size())
      for (; i > 0; --i) std::swap(q.at(i - 1), q.at(i));  // to the front; the others keep their order
    reserved_owner_ = nullptr;
    reserved_level_ = -1;
  }
  dispatch(now);
  in_run_ = false;
  schedule_wake(now);
}

void CpuCore::settle(const sc_core::sc_time& now) {
  if (active_ < 0) return;
  CpuWork& w = *held_[active_];
  if (!w.stalled) {  // a stalled write serves no CPU time
    const sc_core::sc_time served = std::min(now - since_, w.remaining);
    w.remaining -= served;
    busy_[int(w.ctx)] += served;
  }
  since_ = now;
  issue_due_writes(w);
}

void CpuCore::issue_writes_from(CpuWork& w) {
  const sc_core::sc_time served = w.served_in_step();
  for (; w.writes_issued < w.writes.size() && w.writes[w.writes_issued].at <= served; ++w.writes_issued)
    if (!issue_(w.writes[w.writes_issued], sc_core::SC_ZERO_TIME, nullptr)) {
      w.stalled = true;
      return;
    }
}

void CpuCore::admit(const sc_core::sc_time& now) {
  if (arrivals_.empty() || arrivals_.front().at > now) return;  // most wake-ups: a step's end, no arrival
  size_t due = 0;
  while (due < arrivals_.size() && arrivals_[due].at <= now) {
    CpuWork* w = arrivals_[due++].work;
    ready_[level_of(w->ctx)].push_back(w);
  }
  if (due == arrivals_.size())
    arrivals_.clear();  // the usual case: one arrival, now due
  else
    arrivals_.erase(arrivals_.begin(), arrivals_.begin() + long(due));
}

int CpuCore::top_level() const {
  const int limit = reserved_owner_ ? reserved_level_ : kLevels;  // a reservation holds its level and below
  for (int l = 0; l < limit; ++l)
    if (held_[l] || !ready_[l].empty()) return l;
  return -1;
}

void CpuCore::dispatch(const sc_core::sc_time& now) {
  for (;;) {
    if (active_ >= 0 && held_[active_]->remaining == sc_core::SC_ZERO_TIME && !held_[active_]->stalled) {
      advance(active_);
      continue;
    }
    const int level = top_level();
    if (level < 0) {
      active_ = -1;
      return;
    }
    if (!held_[level]) {
      held_[level] = ready_[level].front();
      ready_[level].pop_front();
    }
    if (active_ > level) ++counters_.preemptions;  // a lower level, with time still owed, loses the core
    active_ = level;
    since_ = now;
    if (held_[level]->stalled) issue_due_writes(*held_[level]);  // credits may have returned meanwhile
    if (held_[level]->remaining != sc_core::SC_ZERO_TIME || held_[level]->stalled) {  // served from now on
      if (may_run_ahead_ && !held_[level]->stalled && now < horizon_) run_ahead(now);
      return;
    }
  }
}

void CpuCore::advance(int level) {
  CpuWork& w = *held_[level];
  if (w.next) {
    run_step(w);
    issue_due_writes(w);  // those made before any charge
    return;
  }
  finish(level);
}

// Its step_total is what it owes once the step has run: a step run ahead adds to the time still
// owed for the one before, and its writes are due at their place in the whole.
void CpuCore::run_step(CpuWork& w) {
  StepFn step = w.next;  // the step names its successor in w.next
  w.next = nullptr;
  w.next_quiet = 0;
  w.writes.clear();
  w.writes_issued = 0;
  stepping_ = &w;
  step();
  stepping_ = nullptr;
  w.step_total = w.remaining;
}

void CpuCore::finish(int level) {
  CpuWork& w = *held_[level];
  held_[level] = nullptr;
  active_ = -1;
  w.queued = false;
  if (w.served) {
    // The thread goes on in this evaluation phase; if it charges again at once, that charge goes
    // before other work of its level (a delta cycle later), as a thread keeps its CPU until it blocks.
    w.served->notify();
    bool waiting = false;
    for (int l = level; l < kLevels; ++l) waiting |= held_[l] || !ready_[l].empty();
    if (waiting) {
      reserved_owner_ = w.owner;
      reserved_level_ = level;
    }
  }
  if (w.done) {
    StepFn done = w.done;  // it may free `w` or start it again
    done();
  }
}

bool CpuCore::alone(int level) const {
  for (int l = 0; l < kLevels; ++l)
    if ((l != level && held_[l]) || !ready_[l].empty()) return false;
  return true;
}

// The held work's next moment (its next write, else its step's end: the next step or the end)
// done now, while it is quiet and nothing else in the simulation comes first; again for the moment
// after, until one is not.
//
// What comes first is SystemC's first pending activity, asked of the kernel before the first
// moment. After that the core takes what it did as known instead of asking again: a step run ahead
// adds only the work it started on cores (submit notes the earliest; HostCpu::start counts from
// the step's instant), as a quiet step notifies nothing, and work due before the step's own instant
// refuses it at once; a write issued ahead adds nothing sooner than the link says (its arrival, a
// latency after its entry: PcieCreditIf::posted_effects_after). That nothing else was made
// pending is checked when the core stops, asking the kernel once more: nothing may be due before
// the last moment done ahead (a step, a write, an end), or something marked quiet was not, or the
// link broke its word, and the core ran past what was made pending. (A notification for that last
// moment's instant or later goes unseen: that part of the contract is the marking's.)
void CpuCore::run_ahead(const sc_core::sc_time& now) {
  if (reserved_owner_) return;
  const int level = active_;
  sc_core::sc_time next;  // the first pending activity known (now: at this instant; the horizon: none before it)
  bool known = false;        // the kernel asked (before the first moment only)
  sc_core::sc_time done_to;  // the instant of the last moment done ahead (a step, a write, an end)
  bool done_ahead = false;
  for (;;) {
    CpuWork& w = *held_[level];
    if (w.served) break;  // a thread's charge
    const bool write_next = w.writes_issued < w.writes.size();
    if (!write_next && (w.next ? w.next_quiet != activation_ : !(w.end_quiet && alone(level) && w.end_quiet()))) break;
    const sc_core::sc_time wait = write_next ? w.writes[w.writes_issued].at - w.served_in_step() : w.remaining;
    const sc_core::sc_time at = now + wait;
    if (at >= horizon_ || (!arrivals_.empty() && arrivals_.front().at <= at)) break;
    if (!known) {
      next = next_activity_at(horizon_);
      known = true;
    }
    if (next <= at) {  // something else happens first, or at that instant
      ++counters_.ahead_declined;
      break;
    }
    running_ahead = wait;
    if (write_next) {
      sc_core::sc_time effects_after;
      const bool issued = issue_(w.writes[w.writes_issued], wait, &effects_after);
      running_ahead = sc_core::SC_ZERO_TIME;
      if (!issued) break;  // no credits now: issued at its instant, or the core stalls then
      done_to = at;
      done_ahead = true;  // on the link's word, checked when the core stops
      ++w.writes_issued;
      ++counters_.writes_ahead;
      if (at + effects_after < next) next = at + effects_after;
      continue;
    }
    done_to = at;
    done_ahead = true;
    if (w.next) {
      earliest_submitted_ = horizon_;
      run_step(w);
      running_ahead = sc_core::SC_ZERO_TIME;
      ++counters_.steps_ahead;
      if (earliest_submitted_ < next) next = earliest_submitted_;
      if (next < at) refuse_not_quiet("a step");  // it started work due before its own instant
      continue;
    }
    // Its end: the time it still owes is served by then, as far as anyone can tell.
    busy_[int(w.ctx)] += w.remaining;
    w.remaining = sc_core::SC_ZERO_TIME;
    finish(level);
    running_ahead = sc_core::SC_ZERO_TIME;
    ++counters_.ends_ahead;
    break;
  }
  if (done_ahead && next_activity_at(horizon_) < done_to)
    refuse_not_quiet("a step or the end of a task (or a write, had the PCIe link broken its word: posted_effects_after)");
}

void CpuCore::refuse_not_quiet(const char* what) {
  // Thrown out of this process on the main stack, into SystemC: AddressSanitizer needs its
  // bounds, which SystemC's coroutine switches left unset (model/common/sanitizer_stack.h).
  restore_main_stack_bounds();
  throw std::logic_error(std::string("host CPU: ") + what +
                         " run ahead of its instant as quiet notified an event or started work before its instant "
                         "or before a later moment the core ran ahead (it must not be marked quiet: HostCpu::then, "
                         "CpuWork::end_quiet)");
}

void CpuCore::schedule_wake(const sc_core::sc_time& now) {
  if (reserved_owner_) {
    wake_.notify(sc_core::SC_ZERO_TIME);
    return;
  }
  if (active_ >= 0 && held_[active_]->stalled) {
    // Woken when the link's credits return (to try the write again) or when work arrives.
    if (arrivals_.empty()) sc_core::next_trigger(wake_ | space_());
    else sc_core::next_trigger(arrivals_.front().at - now, wake_ | space_());
    return;
  }
  if (active_ >= 0) {
    const CpuWork& w = *held_[active_];
    sc_core::sc_time left = w.remaining;  // to the step's end, or to its next write
    if (w.writes_issued < w.writes.size()) left = std::min(left, w.writes[w.writes_issued].at - w.served_in_step());
    if (!arrivals_.empty()) left = std::min(left, arrivals_.front().at - now);
    wake_.notify(left);
  } else if (!arrivals_.empty()) {
    wake_.notify(arrivals_.front().at - now);
  }
}

}  // namespace vhca
