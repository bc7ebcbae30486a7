#include "model/cq/cq_writer_pipeline.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "model/common/log.h"

namespace vhca {

CqWriterPipeline::CqWriterPipeline(const CqeWriterConfig& cfg, double clock_mhz)
    : CqWriterCore(cfg, clock_mhz),
      cycles_per_us_(uint32_t(std::max<long long>(1, std::llround(clock_mhz)))),
      wheel_(cfg.num_cqs, cycles_per_us_) {
  reset();
}

void CqWriterPipeline::reset() {
  CqWriterCore::reset();
  started_ = false;
  settle_owed_ = catching_up_ = false;
  wake_asked_ = UINT64_MAX;
  next_control_ = 0;
  s2_ = s3_ = Op{};
  replay_.clear();
  issued_ = 0;
  dma_skid_.clear();
  event_skid_.clear();
  ci_skid_.clear();
  ins_skid_.clear();
  wheel_.reset();
  listed_ = 0;
  last_expiry_tick_ = written_cqn_ = UINT32_MAX;
  coverage_ = {};
}

uint64_t CqWriterPipeline::clearing_cycles() const { return std::max<uint64_t>(cfg_.num_cqs, TimerWheel::kSlots); }

bool CqWriterPipeline::act(uint64_t now) {
  if (!started_) {
    started_ = true;
    first_cycle_ = last_cycle_ = now;
    clock(now);
    return true;
  }
  settle_owed_ = false;
  wake_asked_ = UINT64_MAX;  // the wake-up it woke for is spent
  // Nobody runs the cycle it wakes for on its behalf (wake_asked_); were one to, it is not run twice.
  assert(now > last_cycle_);
  if (now <= last_cycle_) return true;
  if (now > last_cycle_ + 1) run_cycles_before(now);
  clock(now);
  last_cycle_ = now;
  return true;
}

// Completions held for a consumer-index refresh or a resize with nothing in the stages or the skid
// buffers, the cycle before's state settled (none issued, nothing written), the wheel idle: a
// cycle with no input ready selects nothing (a held completion is not issued), advances nothing
// and takes nothing (with the replay buffer full; else a completion ready is taken: an input).
inline bool CqWriterPipeline::held_with_stages_empty(uint64_t c) const {
  return (waiting_ci_ || resizing_ != 0) && s2_.kind == Kind::none && s3_.kind == Kind::none && issued_ == 0 &&
         written_cqn_ == UINT32_MAX && skids_empty() && wheel_.idle() && cycles_since_reset(c) >= clearing_cycles();
}

// The cycles since the last one clocked, up to `end` (not included). Where nothing is in flight
// and the wheel is idle they only count time, up to the edge that begins the next tick or the
// cycle an input is ready: those are skipped at once; so are those of completions held with the
// stages empty (a consumer-index refresh's round trip), and those of the wheel's clearing sweep
// after a reset, which only clear its head RAM.
void CqWriterPipeline::run_cycles_before(uint64_t end) {
  catching_up_ = true;
  for (uint64_t c = last_cycle_ + 1; c < end;) {
    if (quiet()) {
      if (const uint64_t skipped = skip_idle_wheel(c, std::min(end, next_input_cycle(c - 1, false, UINT64_MAX)))) {
        c += skipped;
        continue;
      }
      if (end - c >= 3 && lone_completion_enters(c)) {
        enter_lone_completion(c);
        c += 3;
        continue;
      }
    } else if (held_with_stages_empty(c)) {
      // Completions held (a consumer-index refresh, a resize), nothing in the stages: until an
      // input it can take is ready, a cycle only moves the idle wheel on, as when quiet.
      const bool takes_none = replay_.size() >= kReplayDepth;
      if (const uint64_t skipped = skip_idle_wheel(c, std::min(end, next_input_cycle(c - 1, takes_none, UINT64_MAX)))) {
        c += skipped;
        continue;
      }
    } else if (pipeline_empty() && wheel_.sweeping_only()) {
      const uint64_t skip = std::min<uint64_t>({end - c, wheel_.edges_before_tick(), wheel_.sweep_edges_left()});
      if (skip > 0) {
        wheel_.skip_sweep(uint32_t(skip));
        c += skip;
        continue;
      }
    }
    clock(c++);
  }
  last_cycle_ = end - 1;  // callers pass end > last_cycle_ + 1
  catching_up_ = false;
}

// Cycles c .. limit-1 (none when limit <= c) of an idle wheel with no input: where nothing else
// happens on them, they only count time up to the edge that begins the next tick, or, with no
// timer listed, walk empty slots. The edges it skipped (0: none; the cycle is clocked).
uint64_t CqWriterPipeline::skip_idle_wheel(uint64_t c, uint64_t limit) {
  if (limit <= c) return 0;
  if (listed_ == 0 && cycles_per_us_ >= 3) {
    // No timer listed: the ticks meanwhile only walk empty slots, all of them at once.
    wheel_.skip_empty(limit - c);
    return limit - c;
  }
  const uint64_t to_tick = std::min<uint64_t>(limit - c, wheel_.edges_before_tick());
  if (to_tick > 0) wheel_.skip_idle(uint32_t(to_tick));
  return to_tick;
}

// The first three cycles of a lone completion into a quiet writer (nothing in flight, the wheel
// idle), the wheel beginning no tick on them: taken (c), selected into stage 2 (c+1), moved into
// stage 3 (c+2), where it acts on the next cycle. Nothing else happens on them (no other input,
// nothing for the wheel), so they are run at once, with what clock() would leave.
bool CqWriterPipeline::lone_completion_enters(uint64_t c) const {
  return s_cpl.ready(c) && inputs_waiting() == 1 && !waiting_ci_ && resizing_ == 0 && !wheel_.outputs().exp_valid &&
         wheel_.edges_before_tick() >= 3 && cycles_since_reset(c) >= cfg_.num_cqs;
}

void CqWriterPipeline::enter_lone_completion(uint64_t c) {
  cycle_ = c;
  s_cpl.pop_to(c, [this](CompletionRecord& r) { replay_.append() = r; });  // clock()'s take
  issued_ = 1;
  s3_ = Op{};
  s3_.kind = Kind::completion;
  s3_.cqn = replay_.front().cqn;
  s2_ = Op{};
  written_cqn_ = UINT32_MAX;
  for (int edge = 0; edge < 3; ++edge) wheel_.edge(TimerWheel::Inputs{});
  cycle_ = c + 2;
}

size_t CqWriterPipeline::inputs_waiting() const {
  return s_cpl.size() + s_arm.size() + s_ctl.size() + s_ci.size() + s_access_error.size();
}

// A lone input into an idle writer (nothing in flight, the wheel idle, no other input) is taken
// on `ready` and first acts on its CQ two cycles later (a completion three: it spends a cycle in
// the replay buffer before it is selected), and the writer meets the world on none of the cycles
// between. Unwatched, it wakes then and takes the input in act()'s catch-up, with the same result;
// a timer's tick or another input wakes it sooner (from then on, as usual).
// A completion that acts unseen wakes it one cycle later still, where its outputs leave.
// A completion reaching a writer that wakes by ready+3 anyway (where it could act first, had it
// been taken on `ready`) is taken in that wake's catch-up: the take is all that happens before
// (a busy writer, or one that put off a lone input's take: its wake-up is where that acts).
// A busy writer woken before `ready` by a wake-up still to run (one for this cycle that has not
// acted yet: a producer SystemC ran first) needs none: that act computes its next cycle with the
// input there (UINT64_MAX: no wake-up asked).
uint64_t CqWriterPipeline::input_wake(uint64_t ready) {
  if (wake_asked_ < ready && wake_asked_ > last_cycle_ && !wake_every_busy_cycle && started_ && !quiet())
    return UINT64_MAX;
  if (wake_asked_ > ready && wake_asked_ <= ready + 3 && ready > last_cycle_ && !wake_every_busy_cycle && started_ &&
      completion_takes_unseen()) {
    settle_owed_ = true;  // a woken act() clears it
    return wake_asked_;
  }
  if (wake_every_busy_cycle || inputs_waiting() != 1 || !started_ || ready <= last_cycle_ || !quiet() ||
      ready < first_cycle_ + clearing_cycles())
    return ask_wake(ready);
  if (!s_cpl.empty() && (waiting_ci_ || resizing_ != 0)) return ask_wake(ready);  // held: the writer decides
  settle_owed_ = true;  // a woken act() clears it
  if (s_cpl.empty()) return ask_wake(ready + 2);
  return ask_wake(completion_acts_unseen(s_cpl.front().cqn) ? ready + 4 : ready + 3);
}

// Its wake-up is the earliest it asked for since it last acted (SystemC keeps the earliest
// notification): no one else runs that cycle or a later one on its behalf.
uint64_t CqWriterPipeline::ask_wake(uint64_t wake) {
  wake_asked_ = std::min(wake_asked_, wake);
  return wake;
}

// A producer is about to look at an input stream: the takes owed before its cycle are done first.
void CqWriterPipeline::settle(uint64_t cycle) {
  if (cycle > last_cycle_ + 1) run_cycles_before(cycle);
}

// Someone reads a context or a counter on cycle `now`: the cycles owed up to it (never the one it
// wakes for, which it runs itself) are run first. Not while it runs cycles itself.
void CqWriterPipeline::settle_for_query(uint64_t now) {
  if (settle_owed_ && !catching_up_ && wake_asked_ != 0) settle(std::min(now, wake_asked_ - 1) + 1);
}

// Whether a completion for `cqn` acting now would only fill skid buffers: a CQE, and perhaps an
// event or a timer insert. Not when it logs (the CQ does not exist or is in error, or the writer's
// log is on, whose lines carry the time they are written), nor when it would ask for the consumer
// index (the CQ looks full), which holds the completions behind it.
bool CqWriterPipeline::completion_acts_unseen(uint32_t cqn) const {
  if (log::enabled(log::Cat::cq) || cqn >= table_.size()) return false;
  const CqContext& cq = table_[cqn];
  return cq.valid && cq.state != CqState::error && !looks_full(cq);
}

// Completions waiting in s_cpl may be taken on cycles the writer does not wake for (act() runs
// them, and a producer looking at s_cpl settles them first), while the take is all that happens:
// they are the only input waiting, the stream is not full (a take from a full stream wakes its
// producers: on_space), and none is held (a consumer-index refresh or a resize).
bool CqWriterPipeline::completion_takes_unseen() const {
  return s_cpl.size() < s_cpl.depth() && inputs_waiting() == s_cpl.size() && !waiting_ci_ && resizing_ == 0 &&
         cycles_since_reset(cycle_) >= clearing_cycles();
}

bool CqWriterPipeline::skids_empty() const {
  return (dma_skid_.size() | event_skid_.size() | ci_skid_.size() | ins_skid_.size()) == 0;  // one test
}

bool CqWriterPipeline::pipeline_empty() const {
  return s2_.kind == Kind::none && s3_.kind == Kind::none && replay_.empty() && skids_empty();
}

bool CqWriterPipeline::quiet() const { return pipeline_empty() && wheel_.idle(); }

// Event-driven: with something in flight (or the wheel walking), the next cycle when watched, else
// the next on which it meets the world (next_busy_cycle); while the table clears, its end or the
// next tick (the wheel walks each tick's slot); with timers running, the next tick; else the next
// input. The cycles between are clocked when it next acts. Watched, it wakes on the cycles
// RtlPipelined::next_cycle (cosim/rtl_pipelined_writer.cpp) does; the lockstep compares them.
uint64_t CqWriterPipeline::next_cycle(uint64_t now) { return ask_wake(next_wake(now)); }

uint64_t CqWriterPipeline::next_wake(uint64_t now) {
  if (!started_) return now + 1;
  if (!quiet()) return wake_every_busy_cycle ? now + 1 : next_busy_cycle(now);
  const uint64_t tick = tick_start(tick_of(now) + 1);
  const uint64_t ready_at = first_cycle_ + clearing_cycles();
  if (now + 1 < ready_at) return std::min(ready_at, tick);
  const uint64_t next = next_input_cycle(now, false, UINT64_MAX);
  return listed_ != 0 ? std::min(next, tick) : next;
}

// With something in flight, the next cycle on which it touches the world: takes an input, hands
// an output on, or acts on a CQ's context where others see it (stage 3: its callbacks, its log).
// The cycles between only move items along the stages, select one from the replay buffer or act
// unseen; act() runs them when it next acts, with the same result, and a query runs them first.
// While anything it could take or hand on is waiting, or the wheel is busy, that is every cycle.
uint64_t CqWriterPipeline::next_busy_cycle(uint64_t now) {
  // The likeliest first (a flood keeps completions waiting and the DMA skid buffer full). A
  // completion waiting while the replay buffer is full is not taken on the next edge; one taken
  // unseen (completion_takes_unseen) is taken in the catch-up of the wake for its act.
  if (!skids_empty() || (s_arm.size() | s_ctl.size() | s_ci.size() | s_access_error.size()) != 0 || !wheel_.idle() ||
      cycles_since_reset(now + 1) < cfg_.num_cqs ||
      (!s_cpl.empty() && replay_.size() < kReplayDepth && !completion_takes_unseen()))
    return now + 1;
  // The next act: stage 3's on the next edge, stage 2's on the one after, and a completion
  // selected on the next edge two after that (one held, by a consumer-index refresh or a resize,
  // waits for an input, which wakes this). Nothing acts before it, so its CQ's context now is the
  // one it will act on: acting unseen, it is run in the catch-up of the edge after, where its
  // outputs leave.
  uint64_t act = UINT64_MAX;
  uint32_t cqn = 0;
  bool completion = false;
  if (s3_.kind != Kind::none) act = now + 1, cqn = s3_.cqn, completion = s3_.kind == Kind::completion;
  else if (s2_.kind != Kind::none) act = now + 2, cqn = s2_.cqn, completion = s2_.kind == Kind::completion;
  else if (!waiting_ci_ && resizing_ == 0 && issued_ < replay_.size())
    act = now + 3, cqn = replay_.at(issued_).cqn, completion = true;
  uint64_t next = act;
  if (completion && completion_acts_unseen(cqn)) {
    next = act + 1;
    settle_owed_ = true;  // a woken act() clears it
  }
  if (!s_cpl.empty()) settle_owed_ = true;  // its takes are run when it next acts, or settled
  // Running timers: the wheel walks the next tick's slot from its first edge.
  if (listed_ != 0) next = std::min(next, tick_start(tick_of(now) + 1));
  return next;
}

// Stage 3 may need every output it has: it holds while any skid buffer is full (their ready is a
// register, so the hold is decided from registers).
inline bool CqWriterPipeline::holds(uint64_t c) const {
  if (skids_empty()) return false;  // the usual case, asked every cycle
  return !dma_skid_.can_push(c) || !event_skid_.can_push(c) || !ci_skid_.can_push(c) || !ins_skid_.can_push(c);
}

// One clock cycle: every decision from the registers at its start, then the edge at its end.
void CqWriterPipeline::clock(uint64_t c) {
  cycle_ = c;
  const TimerWheel::Outputs wheel = wheel_.outputs();
  const bool ready = cycles_since_reset(c) >= cfg_.num_cqs && wheel.ready;
  const bool advance = ready && !holds(c);
  const bool take_cpl = ready && replay_.size() < kReplayDepth && s_cpl.ready(c);
  // An item for the CQ stage 3 acts on waits in stage 2 a cycle (the hazard stall).
  const bool hazard = s2_.kind != Kind::none && s3_.kind != Kind::none && s2_.cqn == s3_.cqn;
  Op s1 = advance && !hazard ? select(c, wheel) : Op{};
  if (ready && !advance) {
    ++coverage_.holds;
    note_output_stall();
  }
  if (advance) {
    note_bypass(hazard);
    if (s3_.kind != Kind::none) perform(s3_, c);
    written_cqn_ = s3_.kind != Kind::none ? s3_.cqn : UINT32_MAX;
    if (hazard) {
      s3_ = Op{};
    } else {
      s3_ = s2_;
      s2_ = s1;
    }
    if (waiting_ci_ || resizing_ != 0) {
      // Completions issued under the assumption that none would be held: squashed, issued again.
      for (Op* op : {&s3_, &s2_})
        if (op->kind == Kind::completion) *op = Op{}, ++coverage_.squashed;
      issued_ = 0;
    }
  }
  if (take_cpl) s_cpl.pop_to(c, [this](CompletionRecord& r) { replay_.append() = r; });
  if (!skids_empty()) drain_skids(c);
  TimerWheel::Inputs in;
  in.exp_ready = s1.kind == Kind::expiry;
  in.ins_valid = ins_skid_.ready(c);
  if (in.ins_valid) {
    in.ins_cqn = ins_skid_.front().cqn;
    in.ins_deadline = ins_skid_.front().deadline;
    if (wheel.ins_ready) ins_skid_.pop(c);
  }
  wheel_.edge(in);
}

void CqWriterPipeline::note_bypass(bool hazard) {
  if (hazard) ++coverage_.hazard_stalls;
  else if (s2_.kind != Kind::none && written_cqn_ == s2_.cqn) ++coverage_.bypass_written;
}

CqWriterPipeline::Op CqWriterPipeline::select(uint64_t c, const TimerWheel::Outputs& wheel) {
  Op op;
  if (s_ctl.ready(c)) {
    op.kind = Kind::control;
    op.control = next_control_;
    next_control_ = uint8_t((next_control_ + 1) % controls_.size());
    controls_[op.control] = s_ctl.pop(c);
    op.cqn = controls_[op.control].cqn;
  } else if (s_access_error.ready(c)) {
    op.kind = Kind::access_error;
    op.cqn = s_access_error.pop(c);
  } else if (s_ci.ready(c)) {
    op.kind = Kind::ci_response;
    const CiResponse ci = s_ci.pop(c);
    op.cqn = ci.cqn;
    op.value = ci.ci;
    op.ok = ci.ok;
  } else if (wheel.exp_valid) {
    op.kind = Kind::expiry;
    op.cqn = wheel.exp_cqn;
    op.value = wheel.exp_tick;
  } else if (s_arm.ready(c)) {
    op.kind = Kind::arm;
    const ArmRequest arm = s_arm.pop(c);
    op.cqn = arm.cqn;
    op.sn = arm.sn;
    op.cmd = arm.cmd;
    op.value = arm.ci;
  } else if (!waiting_ci_ && resizing_ == 0 && issued_ < replay_.size()) {
    op.kind = Kind::completion;
    op.cqn = replay_.at(issued_++).cqn;
  }
  return op;
}

void CqWriterPipeline::perform(const Op& op, uint64_t c) {
  switch (op.kind) {
    case Kind::none: break;
    case Kind::control: apply_control(controls_[op.control], c); break;
    case Kind::access_error: apply_access_error(op.cqn, c); break;
    case Kind::ci_response: apply_ci_response(CiResponse{op.cqn, op.value, op.ok}, c); break;
    case Kind::expiry:
      if (op.value == last_expiry_tick_) ++coverage_.same_tick;
      last_expiry_tick_ = op.value;
      expire(op.cqn, c);
      break;
    case Kind::arm: apply_arm(ArmRequest{op.cqn, op.sn, op.cmd, op.value}, c); break;
    case Kind::completion:
      assert(!replay_.empty());
      if (apply_completion(replay_.front(), c)) retire_head(c);
      break;
  }
}

void CqWriterPipeline::retire_head(uint64_t) {
  replay_.pop_front();
  if (issued_) --issued_;
}

// An expiry from the wheel: the CQ has left its list. A timer stopped meanwhile does nothing; one
// whose deadline moved later goes back into the wheel.
void CqWriterPipeline::expire(uint32_t cqn, uint64_t c) {
  CqContext& cq = table_.touch(cqn);
  cq.timer_listed = false;
  --listed_;
  if (cq.timer_deadline == 0) {
    ++coverage_.stale_expiries;
    return;
  }
  if (!deadline_passed(cq.timer_deadline, c)) {
    ++coverage_.reinserted;
    start_timer(cq, cqn, cq.timer_deadline);
    return;
  }
  timer_due(cq, cqn, c);
}

uint64_t CqWriterPipeline::period_end_cycle(uint64_t start, uint32_t period_us) const {
  return tick_start(uint64_t(tick_of(start)) + period_us);
}

// A period of P microseconds ends on the P-th tick after the one it began in, as a hardware timer
// counting a free-running microsecond tick does: never late, up to a microsecond early, and a
// period restarted at each event repeats exactly every P microseconds.
uint64_t CqWriterPipeline::period_deadline(const CqContext& cq) const {
  return uint32_t(tick_of(cq.timer_start) + cq.cfg.mod_period);
}

bool CqWriterPipeline::deadline_passed(uint64_t deadline, uint64_t now) const {
  return int32_t(tick_of(now) - uint32_t(deadline)) >= 0;
}

// A CQ is in at most one list: one already listed keeps its place, and its expiry re-inserts it
// if the deadline is still ahead then.
void CqWriterPipeline::start_timer(CqContext& cq, uint32_t cqn, uint64_t deadline) {
  cq.timer_deadline = deadline;
  if (cq.timer_listed) return;
  cq.timer_listed = true;
  ++listed_;
  ins_skid_.push(Insert{cqn, uint32_t(deadline) & TimerWheel::kTickMask}, cycle_);
}

void CqWriterPipeline::drain_skids(uint64_t c) {
  // (A skid buffer's freed slot wakes no one: its item may go on before it is popped.)
  if (dma_skid_.ready(c) && m_dma->can_push(c, m_dma_producer))
    dma_skid_.pop_to(c, [&](DmaWrite& w) { m_dma->push(std::move(w), c, 0, m_dma_producer); });
  if (event_skid_.ready(c) && m_event->can_push(c, m_event_producer))
    event_skid_.pop_to(c, [&](DeviceEvent& e) { m_event->push(std::move(e), c, 0, m_event_producer); });
  if (ci_skid_.ready(c) && m_ci_req->can_push(c)) ci_skid_.pop_to(c, [&](CiRequest& r) { m_ci_req->push(std::move(r), c); });
}

}  // namespace vhca
