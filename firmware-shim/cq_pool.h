// The kernel-style CQ abstraction (S23, after ib_alloc_cq): a CQ is allocated with a polling
// context; completions are dispatched to per-WR `done` callbacks (the WR's wr_id names its
// CqeDone); polling is budgeted; re-arming reports missed events and polls again; CQs that share
// a vector are served round-robin, one budget per turn, so a flooded CQ cannot starve another.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <systemc>
#include <vector>

#include "firmware-shim/dim.h"
#include "firmware-shim/verbs.h"
#include "model/common/observers.h"

namespace vhca {

enum class PollContext : uint8_t { direct, softirq, thread, workqueue };
const char* poll_context_name(PollContext c);

struct IbCq;

// Embed one in each request; put its address in the WR's wr_id (CqPool::wr_id_of).
struct CqeDone {
  std::function<void(IbCq&, const Wc&)> done;
};

struct IbCq {
  Cq* cq = nullptr;
  PollContext context = PollContext::direct;
  class Poller* poller = nullptr;
  bool queued = false;
  // An event arrived while the poller held this CQ (past its poll, re-arming): the turn must not
  // end with the CQ idle, or that event's wake-up is lost (NAPI's "missed" state).
  bool kicked = false;
  uint64_t completions = 0, turns = 0, rearms = 0, missed_events = 0, kicked_turns = 0;
  // Adaptive moderation (DIM), when the CQ was allocated with it.
  std::unique_ptr<CqDim> dim;
  PeriodMode dim_mode = PeriodMode::eqe;
  uint64_t dim_seen = 0;  // completions at the last event
  bool dim_applying = false;  // a MODIFY_CQ with DIM's new profile is in flight (free_cq waits for it)
  sc_core::sc_event dim_idle;
};

struct CqPoolConfig {
  int budget = 16;      // CQEs per CQ per turn (IB_POLL_BUDGET-like)
  int batch = 16;       // CQEs per poll_cq call (IB_POLL_BATCH)
};

// A polling context (a softirq poll list, a kthread, a workqueue worker) as kernel work: a task
// on its core (or its own lane on a host without cores), without a thread. Each turn polls one CQ
// in batches, a step per poll and per done callback (each runs once the CPU time charged before it
// has been served), then re-arms it.
// A polling context (a softirq poll list, a kthread, a workqueue worker) as kernel work: a task
// on its core (or its own lane on a host without cores), without a thread. Each turn polls one CQ
// in batches of up to `batch`, a step per poll and per done callback (each runs once the CPU time
// charged before it has been served), until `budget` CQEs or an empty poll; then it re-arms the
// CQ, or puts it back in the queue.
class Poller {
 public:
  struct Hooks {
    std::function<int(IbCq&, int n, CpuContext, Wc* out)> poll;      // poll_cq of at most n CQEs
    std::function<void(IbCq&, const Wc&)> deliver;                   // one completion's done callback
    std::function<void(IbCq&, const sc_core::sc_time&, int)> polled;  // (CQ, when the turn began, CQEs polled)
    // Whether `polled` is quiet now (CpuWork::next_quiet): if so, so is the step that ends a turn.
    std::function<bool()> polled_quiet;
  };
  // `core`: where it runs on a host with cores.
  Poller(HostCpu& cpu, CpuContext ctx, uint32_t core, sc_core::sc_time latency, const CqPoolConfig& cfg, Hooks hooks);
  void schedule(IbCq& cq);  // from the completion handler: the poller runs `latency` later if idle
  // Take a CQ out of this poller before it is freed (from a thread): waits while the poller is
  // polling it.
  void detach(IbCq& cq);
  uint64_t runs() const { return runs_; }

 private:
  void run();                 // the task's first step
  void begin_turn();          // the next CQ of the queue, or the end of the task
  void poll_step();           // one batch
  void deliver_step(int i);   // the batch's completion i
  void end_polling();         // budget used or CQ drained: re-arm, or back in the queue
  void after_rearm(int missed);
  bool end_quiet() const;     // end_polling is quiet now (CpuWork::next_quiet)

  HostCpu& cpu_;
  sc_core::sc_time latency_;
  CqPoolConfig cfg_;
  Hooks hooks_;
  std::unique_ptr<CpuCore> lane_;  // a host without cores: this context's own
  CpuCore* where_;
  CpuWork task_;
  std::deque<IbCq*> queue_;
  IbCq* turn_ = nullptr;     // the CQ of this turn
  IbCq* current_ = nullptr;  // the CQ being polled or re-armed (detach waits for it)
  sc_core::sc_time turn_began_;
  int turn_polled_ = 0;
  std::vector<Wc> batch_;
  int batch_size_ = 0;
  sc_core::sc_event turn_done_;  // notified only while detach() waits for it
  int detaching_ = 0;
  uint64_t runs_ = 0;
};

class CqPool {
 public:
  CqPool(Driver& dev, const CqPoolConfig& cfg = {});
  ~CqPool();

  // `adaptive`: DIM chooses the moderation from its profiles, starting at the one nearest `mod`
  // (dim_profile_near); the period mode stays `mod.mode`.
  IbCq* alloc_cq(int nr_cqe, uint32_t comp_vector, PollContext ctx, const CqModeration& mod = {},
                 bool adaptive = false);
  int free_cq(IbCq* cq);
  // IB_POLL_DIRECT: the caller polls; no events are requested.
  int process_cq_direct(IbCq& cq, int budget);

  static uint64_t wr_id_of(CqeDone& d) { return reinterpret_cast<uint64_t>(&d); }
  // A CqeDone is dispatched only if registered: a stray wr_id is reported, never followed.
  void track(CqeDone& d) { live_.insert(&d); }
  void untrack(CqeDone& d) { live_.erase(&d); }
  uint64_t unknown_wr_ids() const { return unknown_wr_ids_; }
  // DIM workers applying a new profile right now (each holds its CQ until its MODIFY_CQ is done).
  int dim_workers() const { return dim_workers_; }
  // Observation: DIM chose a new profile for `cq`; its worker starts in this delta cycle.
  Observers<IbCq&> on_dim_change;  // DIM chose a new profile for the CQ (dim->profile_index())
  // Observation: one polling turn of `cq` took from `begin` to now and returned `n` CQEs.
  Observers<IbCq&, const sc_core::sc_time&, int> on_poll_done;  // (CQ, when the turn began, CQEs polled)

 private:
  int process(IbCq& cq, int budget, CpuContext ctx);
  void deliver(IbCq& cq, const Wc& wc);
  void dim_event(IbCq& cq);
  Poller& poller_for(PollContext ctx, uint32_t vector);

  Driver& dev_;
  CqPoolConfig cfg_;
  std::map<std::pair<int, uint32_t>, std::unique_ptr<Poller>> shared_pollers_;
  std::vector<std::unique_ptr<Poller>> own_pollers_;
  std::set<CqeDone*> live_;
  std::map<const IbCq*, std::unique_ptr<IbCq>> cqs_;  // every CQ alloc_cq made until free_cq
  int dim_workers_ = 0;
  uint64_t unknown_wr_ids_ = 0;
};

}  // namespace vhca
