#include "firmware-shim/cq_pool.h"

#include "model/common/log.h"
#include "model/common/sim_now.h"

namespace vhca {

const char* poll_context_name(PollContext c) {
  switch (c) {
    case PollContext::direct: return "direct";
    case PollContext::softirq: return "softirq";
    case PollContext::thread: return "thread";
    case PollContext::workqueue: return "workqueue";
  }
  return "?";
}

Poller::Poller(HostCpu& cpu, CpuContext ctx, uint32_t core, sc_core::sc_time latency, const CqPoolConfig& cfg,
               Hooks hooks)
    : cpu_(cpu), latency_(latency), cfg_(cfg), hooks_(std::move(hooks)), batch_(size_t(cfg.batch)) {
  if (cpu.cores() == 0) lane_ = cpu.make_lane(std::string("poller_") + context_name(ctx));
  where_ = lane_ ? lane_.get() : &cpu.core(core);
  task_.ctx = ctx;
  // Work scheduled while its last step's time was being served: the task goes on at once.
  task_.done = [this] {
    task_.next = [this] { run(); };
    if (!queue_.empty()) cpu_.start(task_, *where_);
  };
  task_.end_quiet = [this] { return queue_.empty(); };
  task_.next = [this] { run(); };
}

void Poller::detach(IbCq& cq) {
  ++detaching_;
  while (current_ == &cq) sc_core::wait(turn_done_);
  --detaching_;
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if (*it == &cq) {
      queue_.erase(it);
      break;
    }
  cq.queued = false;
  cq.poller = nullptr;
}

void Poller::schedule(IbCq& cq) {
  if (cq.queued) {
    cq.kicked = true;
    return;
  }
  cq.queued = true;
  queue_.push_back(&cq);
  if (!task_.queued) cpu_.start(task_, *where_, latency_);  // else its turns reach this CQ
}

void Poller::run() {
  ++runs_;
  begin_turn();
}

// Round-robin over the CQs with pending work, one budget per turn. A CQ that used its whole
// budget goes to the back of the queue; one that drained is re-armed, and polled again if the
// re-arm reports missed events.
void Poller::begin_turn() {
  if (queue_.empty()) return;  // the task ends
  IbCq* cq = queue_.front();
  queue_.pop_front();
  cq->kicked = false;
  ++cq->turns;
  turn_ = current_ = cq;
  turn_began_ = cpu_.step_instant();
  turn_polled_ = 0;
  poll_step();
}

void Poller::poll_step() {
  batch_size_ = hooks_.poll(*turn_, std::min(cfg_.batch, cfg_.budget - turn_polled_), task_.ctx, batch_.data());
  if (batch_size_ <= 0)
    cpu_.then([this] { end_polling(); }, end_quiet());
  else
    cpu_.then([this] { deliver_step(0); });  // a user's done callback
}

// The step that ends a turn tells the pool (quiet if no one observes it) and re-arms; its next
// step notifies only a detach() waiting, and polls (quiet) or ends.
bool Poller::end_quiet() const { return !detaching_ && hooks_.polled_quiet(); }

void Poller::deliver_step(int i) {
  hooks_.deliver(*turn_, batch_[size_t(i)]);
  if (i + 1 < batch_size_) {
    cpu_.then([this, i] { deliver_step(i + 1); });
    return;
  }
  turn_polled_ += batch_size_;
  if (turn_polled_ < cfg_.budget)
    cpu_.then([this] { poll_step(); }, true);
  else
    cpu_.then([this] { end_polling(); }, end_quiet());
}

void Poller::end_polling() {
  IbCq* cq = turn_;
  hooks_.polled(*cq, turn_began_, turn_polled_);
  current_ = nullptr;
  if (detaching_) turn_done_.notify(sc_core::SC_ZERO_TIME);
  if (!cq->poller) return begin_turn();  // detached while we polled it
  if (turn_polled_ >= cfg_.budget) {
    queue_.push_back(cq);
    return begin_turn();
  }
  ++cq->rearms;
  current_ = cq;
  const int missed = verbs::req_notify_cq(*cq->cq, kNotifyNext | kReportMissedEvents, task_.ctx);
  cpu_.then([this, missed] { after_rearm(missed); }, !detaching_);
}

void Poller::after_rearm(int missed) {
  IbCq* cq = turn_;
  current_ = nullptr;
  if (detaching_) turn_done_.notify(sc_core::SC_ZERO_TIME);
  if (cq->poller) {
    if (missed > 0) {
      ++cq->missed_events;
      queue_.push_back(cq);
    } else if (cq->kicked) {  // its event came during this turn: the re-arm may have been stale
      ++cq->kicked_turns;
      queue_.push_back(cq);
    } else {
      cq->queued = false;
    }
  }
  begin_turn();
}

CqPool::CqPool(Driver& dev, const CqPoolConfig& cfg) : dev_(dev), cfg_(cfg) {}
CqPool::~CqPool() = default;

Poller& CqPool::poller_for(PollContext ctx, uint32_t vector) {
  HostCpu& cpu = dev_.cpu();
  const HostCpuConfig& c = cpu.config();
  Poller::Hooks hooks{[](IbCq& cq, int n, CpuContext cc, Wc* out) { return verbs::poll_cq(*cq.cq, n, out, cc); },
                      [this](IbCq& cq, const Wc& wc) { deliver(cq, wc); },
                      [this](IbCq& cq, const sc_core::sc_time& begin, int n) {
                        cq.completions += uint64_t(n);
                        on_poll_done(cq, begin, n);
                      },
                      [this] { return on_poll_done.empty(); }};
  // Polling runs on the core that takes the vector's interrupt (Linux raises the softirq and
  // queues the work on the CPU that took the IRQ).
  const uint32_t core = cpu.core_of_vector(dev_.host_vector_of(vector));
  if (ctx == PollContext::thread) {  // one kthread per CQ
    own_pollers_.push_back(std::make_unique<Poller>(cpu, CpuContext::thread, core, c.thread_latency, cfg_, hooks));
    return *own_pollers_.back();
  }
  // softirq: one poll list per vector (per CPU in Linux); workqueue: one shared worker, or one per
  // vector's core on a host with cores.
  const bool per_vector = ctx == PollContext::softirq || cpu.cores() > 0;
  auto key = std::make_pair(int(ctx), per_vector ? vector : 0u);
  auto& slot = shared_pollers_[key];
  if (!slot) {
    slot = ctx == PollContext::softirq
               ? std::make_unique<Poller>(cpu, CpuContext::softirq, core, c.softirq_latency, cfg_, hooks)
               : std::make_unique<Poller>(cpu, CpuContext::workqueue, core, c.workqueue_latency, cfg_, hooks);
  }
  return *slot;
}

IbCq* CqPool::alloc_cq(int nr_cqe, uint32_t comp_vector, PollContext ctx, const CqModeration& mod, bool adaptive) {
  CqModeration start = mod;
  const size_t first_profile = dim_profile_near(mod.period_us, mod.count);
  if (adaptive)
    start = CqModeration{dim_profiles()[first_profile].count, dim_profiles()[first_profile].period_us, mod.mode};
  Cq* cq = nullptr;
  if (verbs::create_cq(dev_, nr_cqe, comp_vector, &cq, start) != 0) return nullptr;
  auto owned = std::make_unique<IbCq>();
  IbCq* ib = owned.get();
  cqs_.emplace(ib, std::move(owned));
  ib->cq = cq;
  ib->context = ctx;
  cq->context = ib;
  if (adaptive) {
    ib->dim = std::make_unique<CqDim>(first_profile);
    ib->dim_mode = mod.mode;
  }
  if (ctx != PollContext::direct) {
    ib->poller = &poller_for(ctx, comp_vector);
    // Quiet unless adaptive: DIM's decision may start a worker thread.
    verbs::set_comp_handler(
        *cq,
        [this, ib](Cq&) {
          if (ib->dim) dim_event(*ib);
          ib->poller->schedule(*ib);
        },
        !adaptive);
    verbs::req_notify_cq(*cq, kNotifyNext, CpuContext::app);
  }
  return ib;
}

// A completion event of an adaptive CQ: DIM counts it with the completions polled since the
// last one; a new profile is applied by MODIFY_CQ from a worker (a command waits for firmware,
// which a hard-IRQ handler may not), and DIM measures again once it has been applied.
void CqPool::dim_event(IbCq& ib) {
  const uint64_t completions = ib.completions - ib.dim_seen;
  ib.dim_seen = ib.completions;
  if (!ib.dim->on_event(completions, sim_now().to_seconds() * 1e9)) return;
  ib.dim_applying = true;
  ++dim_workers_;
  on_dim_change(ib);
  sc_core::sc_spawn(
      [this, &ib] {
        // A work item on the CQ's vector's core.
        dev_.cpu().bind_current(dev_.cpu().core_of_vector(dev_.host_vector_of(ib.cq->comp_vector)),
                                CpuContext::workqueue);
        const DimProfile& p = ib.dim->profile();
        if (verbs::modify_cq(*ib.cq, CqModeration{p.count, p.period_us, ib.dim_mode}) != 0)
          log::error("CQ {}: DIM could not apply ({} us, {}): {}", ib.cq->cqn, p.period_us, p.count, dev_.last_error());
        ib.dim->applied();
        ib.dim_applying = false;
        --dim_workers_;
        ib.dim_idle.notify(sc_core::SC_ZERO_TIME);
        dev_.cpu().unbind_current();
      },
      sc_core::sc_gen_unique_name("dim"));
}

int CqPool::free_cq(IbCq* ib) {
  if (ib->poller) ib->poller->detach(*ib);
  verbs::set_comp_handler(*ib->cq, nullptr);  // no new events, so no new DIM decisions
  while (ib->dim_applying) sc_core::wait(ib->dim_idle);  // the worker holds ib until its MODIFY_CQ is done
  int rc = verbs::destroy_cq(ib->cq);
  if (rc == 0) cqs_.erase(ib);
  return rc;
}

int CqPool::process_cq_direct(IbCq& cq, int budget) { return process(cq, budget, CpuContext::app); }

// A completion's done callback, if its wr_id names one registered: a stray wr_id is reported.
void CqPool::deliver(IbCq& ib, const Wc& wc) {
  auto* done = reinterpret_cast<CqeDone*>(wc.wr_id);
  if (!live_.count(done) || !done->done) {
    ++unknown_wr_ids_;
    log::error("CQ {}: completion with wr_id {:#x} names no registered CqeDone: not dispatched", ib.cq->cqn, wc.wr_id);
    return;
  }
  done->done(ib, wc);
}

// The direct context (a thread: the caller's own): the same polling, each charge waited for.
int CqPool::process(IbCq& ib, int budget, CpuContext ctx) {
  const sc_core::sc_time begin = sim_now();
  std::vector<Wc> wcs(size_t(cfg_.batch));
  int completed = 0;
  while (completed < budget) {
    int n = verbs::poll_cq(*ib.cq, std::min(cfg_.batch, budget - completed), wcs.data(), ctx);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) deliver(ib, wcs[size_t(i)]);
    completed += n;
  }
  ib.completions += uint64_t(completed);
  on_poll_done(ib, begin, completed);
  return completed;
}

}  // namespace vhca
