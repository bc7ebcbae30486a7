// A core of the modelled host CPU as an event-driven state machine. Work runs on it at three
// priority levels — hard IRQ over softirq over threads (kthreads, workqueue workers, the
// application) — one piece of work per level at a time; the highest level with work runs, a
// higher level arriving preempts a lower one, which resumes where it stopped. One SC_METHOD,
// woken only when work arrives or the running segment ends: no thread per context.
//
// Work is either kernel work (an interrupt handler, a polling loop: a task advanced a step at a
// time by the core, without a thread) or the CPU time a thread charges (the thread waits for it).
// A step runs at one instant; the CPU time it charges is served after it (preemptibly), then the
// task's next step runs. On a host without cores each kernel context has a core of its own (a
// lane), so contexts run in parallel.
//
// Run ahead (decisions.md 50): where the running work's next moment — its next MMIO write, its next
// step, its end — comes before anything else in the simulation, and what happens there is quiet
// (seen by nothing before that instant: a step that only reads and writes host memory, charges,
// posts MMIO writes, starts work on cores and names its next step; a write the link has credits
// for now, issued with the delay to its instant annotated; an end that tells no one), the core
// does it at once instead of waking for it. The results are those of waking: nothing else ran in
// between.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <string>
#include <systemc>
#include <type_traits>
#include <vector>

#include "model/common/sim_now.h"
#include "model/common/slot_ring.h"

namespace vhca {

enum class CpuContext : uint8_t { hardirq, softirq, thread, workqueue, app };
constexpr int kCpuContexts = 5;
const char* context_name(CpuContext c);
// A core's priority level of a context: hard IRQ 0, softirq 1, every thread 2.
int level_of(CpuContext c);

// A posted MMIO write made in a step: it leaves once the CPU time the step charged before it has
// been served (as from a thread that waits for each charge), later if the step is preempted. A
// write the link has no credits for stalls its core until it can leave, as a core stalls on a full
// write-combining buffer: nothing is queued behind the core's back.
struct DeferredWrite {
  DeferredWrite() {}  // user-provided: made in place, `data` is not zeroed first (value-initialisation would)
  sc_core::sc_time at;  // CPU time into the step (a step run ahead: into what was owed when it began)
  uint64_t offset = 0;
  uint32_t len = 0;
  std::array<uint8_t, 128> data;  // up to a BlueFlame WQE: its first `len` bytes (the rest unset, as never read)
};

// A step of kernel work, or what runs when the work ends: a callable kept in place and copied as
// bytes. A lambda capturing pointers, references and numbers (every step's does) fits; one that
// owns memory does not compile. A core moves a step in and out of its work several times an
// interrupt, where std::function's manager calls cost some 35 instructions each time.
class StepFn {
 public:
  StepFn() = default;
  StepFn(std::nullptr_t) {}
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, StepFn> &&
                                                    !std::is_same_v<std::decay_t<F>, std::nullptr_t>>>
  StepFn(F&& f) {
    using Fn = std::decay_t<F>;
    static_assert(sizeof(Fn) <= kBytes && alignof(Fn) <= alignof(std::max_align_t),
                  "a step captures at most 56 bytes (pointers, references, numbers)");
    static_assert(std::is_trivially_copyable_v<Fn> && std::is_trivially_destructible_v<Fn>,
                  "a step's captures are copied as bytes: nothing that owns memory");
    ::new (static_cast<void*>(bytes_)) Fn(std::forward<F>(f));
    call_ = [](void* fn) { (*static_cast<Fn*>(fn))(); };
  }
  StepFn& operator=(std::nullptr_t) {
    call_ = nullptr;
    return *this;
  }
  explicit operator bool() const { return call_ != nullptr; }
  void operator()() { call_(bytes_); }

 private:
  static constexpr size_t kBytes = 56;
  alignas(std::max_align_t) unsigned char bytes_[kBytes];
  void (*call_)(void*) = nullptr;
};

// Something that wants CPU time on a core.
struct CpuWork {
  CpuContext ctx = CpuContext::app;  // its level, and whose busy time it is
  sc_core::sc_time remaining;        // CPU time owed before what follows runs
  // Kernel work: its next step (empty: the task ends once `remaining` is served), and what runs
  // when it has ended. A step names the one after it with HostCpu::then().
  StepFn next;
  StepFn done;
  // A thread's charge: notified once `remaining` is served; `owner` is the thread, which keeps its
  // level through charges it makes back to back (a thread runs until it blocks).
  sc_core::sc_event* served = nullptr;
  const void* owner = nullptr;
  // `next` is quiet (HostCpu::then(step, true)): it reads and writes host memory, charges CPU time,
  // posts MMIO writes, starts work on cores (HostCpu::start, which counts from its instant) and
  // names its next step, and nothing else — no event, no user's code, no read of SystemC's time.
  // It may run ahead of its instant. Judged when the step is named: it holds while the core runs
  // on without letting anything else run, and is dropped when the core next wakes (what it was
  // judged on may have changed): it is the activation it was named in (CpuCore::activation()),
  // which any core's next activation leaves behind; 0: not quiet.
  uint64_t next_quiet = 0;
  // Whether the work's end (`done`) is quiet now, in the same sense, asked when it is due (null:
  // never).
  std::function<bool()> end_quiet;
  bool queued = false;  // on a core: arriving, ready or running
  // The current step's CPU time and its MMIO writes (DeferredWrite), issued in order as it is served
  // (a step run ahead counts the time still owed before it in its own).
  sc_core::sc_time step_total;
  std::vector<DeferredWrite> writes;
  size_t writes_issued = 0;
  bool stalled = false;  // its next write found no link credits: the core waits, serving nothing
  sc_core::sc_time served_in_step() const { return step_total - remaining; }
};

class CpuCore {
 public:
  static constexpr int kLevels = 3;
  // What a host's cores count together: the times a level lost its core to a higher one, and the
  // cores' activations.
  struct Counters {
    uint64_t preemptions = 0, activations = 0;
    // Run ahead: steps, writes and ends done before their instant, and the times the core could
    // have but something else in the simulation was due first.
    uint64_t steps_ahead = 0, writes_ahead = 0, ends_ahead = 0, ahead_declined = 0;
  };
  // `issue` posts a step's MMIO write when it is due (delay zero); when it cannot (no link
  // credits) it returns false, and the core tries again when `space` is notified. With a delay,
  // the write's instant is that far ahead: it is issued, with the delay annotated, only if the link
  // has credits for it now, asking nothing otherwise (false), and `effects_after` says how long
  // after its instant anything its issue made pending comes, at the soonest (the link's
  // PcieCreditIf::posted_effects_after; zero when the host has no link to ask).
  using Issue = std::function<bool(const DeferredWrite&, const sc_core::sc_time& delay, sc_core::sc_time* effects_after)>;
  // `run_ahead`: whether it may (HostCpuConfig::run_ahead).
  CpuCore(const std::string& name, Counters& counters, Issue issue, std::function<const sc_core::sc_event&()> space,
          bool run_ahead = true);
  CpuCore(const CpuCore&) = delete;
  CpuCore& operator=(const CpuCore&) = delete;

  // `w` becomes ready at `at` (now or later) and runs at its context's level when the core gets
  // to it: work of one level in the order it became ready.
  void submit(CpuWork& w, const sc_core::sc_time& at);
  // CPU time served in `ctx` before now: the running segment counts up to now, so work that
  // starts at this instant adds nothing yet, whichever process asks first.
  sc_core::sc_time busy(CpuContext ctx) const;
  // The kernel work running a step right now, on any core (null outside a step): HostCpu::charge
  // adds to its time and HostCpu::then names its next step. One process runs at a time, so one
  // pointer serves every host.
  static CpuWork* stepping() { return stepping_; }
  // The core activation running now, of all cores (one process runs at a time): a quiet mark
  // holds only within the activation that made it (CpuWork::next_quiet).
  static uint64_t activation() { return activation_; }
  // The time as the code running now sees it: in a step, the instant the step began plus the CPU
  // time it has charged so far (TLM's local time of a temporally decoupled initiator); elsewhere,
  // SystemC's time. What a step stamps (a post, a callback's moment) reads this.
  static sc_core::sc_time local_time() {
    return stepping_ ? sim_now() + stepping_->remaining : sim_now() + running_ahead;
  }
  // The instant of the step running now, or of the end being done: SystemC's time, or ahead of it
  // in work run ahead. Memory a step touches is touched at this instant.
  static sc_core::sc_time step_instant() { return sim_now() + running_ahead; }
  // Run ahead only up to `t`, the end of the run in progress (sim/system.cpp): what comes after it
  // is not yet to happen, whatever the kernel has pending. Zero (the default): never.
  static void set_horizon(const sc_core::sc_time& t) { horizon_ = t; }

 private:
  void run();
  void settle(const sc_core::sc_time& now);  // the running segment's time is served up to now
  void admit(const sc_core::sc_time& now);   // arrivals due by now become ready
  void dispatch(const sc_core::sc_time& now);
  void advance(int level);  // the held work of `level` has been served: its next step, or its end
  void run_step(CpuWork& w);  // its next step, at once
  void finish(int level);     // the held work of `level` ends
  void run_ahead(const sc_core::sc_time& now);
  [[noreturn]] static void refuse_not_quiet(const char* what);  // work run ahead as quiet was not
  bool alone(int level) const;  // nothing else on this core, but the work held at `level`
  // Its MMIO writes due by what it has served, in order (inline: most steps post none).
  void issue_due_writes(CpuWork& w) {
    w.stalled = false;
    if (w.writes_issued != w.writes.size()) issue_writes_from(w);
  }
  void issue_writes_from(CpuWork& w);
  int top_level() const;    // the highest level with work to run (-1: none)
  void schedule_wake(const sc_core::sc_time& now);

  struct Arrival {
    sc_core::sc_time at;
    CpuWork* work;
  };
  std::vector<Arrival> arrivals_;            // in time order (ties: in submission order); a few at most
  SlotRing<CpuWork*> ready_[kLevels];      // waiting for their level
  CpuWork* held_[kLevels] = {};              // started at each level (a lower one may be paused)
  int active_ = -1;                          // the level being served now
  sc_core::sc_time since_;                   // when the active segment began
  // A thread whose charge just ended keeps its level for the rest of the instant: nothing of its
  // level or below starts until a delta cycle later, when a charge it made again goes first.
  const void* reserved_owner_ = nullptr;
  int reserved_level_ = -1;
  sc_core::sc_time busy_[kCpuContexts];
  sc_core::sc_event wake_;
  bool in_run_ = false;
  bool may_run_ahead_;
  Counters& counters_;
  Issue issue_;
  std::function<const sc_core::sc_event&()> space_;
  static CpuWork* stepping_;
  static uint64_t activation_;
  static sc_core::sc_time horizon_;
  // The earliest instant work was submitted for, on any core, since run_ahead last set it to the
  // horizon (before a step it runs ahead): what that step made pending.
  static sc_core::sc_time earliest_submitted_;
};

}  // namespace vhca
