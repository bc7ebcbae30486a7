#include "model/cq/cq_writer_core.h"

#include <cmath>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/cq/cqe_format.h"
#include "model/regs/tables.h"

namespace vhca {

const char* event_cause_name(EventCause c) {
  static const char* const kNames[kEventCauses] = {"count", "period", "immediate", "at_arm"};
  return kNames[int(c)];
}

const char* arm_event_name(ArmEvent a) { return a == ArmEvent::at_once ? "at-arm" : "moderated"; }

bool parse_arm_event(const std::string& text, ArmEvent& out) {
  if (text == "moderated") out = ArmEvent::moderated;
  else if (text == "at-arm") out = ArmEvent::at_once;
  else return false;
  return true;
}

const char* state_name(CqState s) {
  switch (s) {
    case CqState::disarmed: return "disarmed";
    case CqState::armed_next: return "armed-next";
    case CqState::armed_solicited: return "armed-solicited";
    case CqState::always_armed: return "always-armed";
    case CqState::error: return "error";
  }
  return "?";
}

CqWriterCore::CqWriterCore(const CqeWriterConfig& cfg, double clock_mhz)
    : CqWriterEngine(cfg), clock_mhz_(clock_mhz), table_(cfg.num_cqs) {}

void CqWriterCore::reset() {
  table_.clear();
  timers_ = {};
  waiting_ci_ = false;
  refreshed_ = false;
  resizing_ = 0;
  stats_ = {};
  clear_inputs();
}

// One action per cycle, in fixed priority: control, access error, CI response, timer expiry,
// arm, completion. docs/timing.md.
bool CqWriterCore::act(uint64_t now) {
  if (s_ctl.ready(now)) {
    apply_control(s_ctl.pop(now), now);
    return true;
  }
  if (s_access_error.ready(now)) {
    apply_access_error(s_access_error.pop(now), now);
    return true;
  }
  if (s_ci.ready(now)) {
    CiResponse r = s_ci.pop(now);
    return apply_ci_response(r, now);
  }
  if (expire_timer(now)) return true;
  if (s_arm.ready(now)) {
    apply_arm(s_arm.pop(now), now);
    return true;
  }
  if (s_cpl.ready(now) && !waiting_ci_ && resizing_ == 0) {
    if (apply_completion(s_cpl.front(), now)) s_cpl.pop(now);
    return true;
  }
  return false;
}

uint64_t CqWriterCore::next_cycle(uint64_t now) {
  while (!timers_.empty() && timers_.top().gen != table_[timers_.top().cqn].timer_gen) timers_.pop();
  return next_input_cycle(now, waiting_ci_ || resizing_ != 0, timers_.empty() ? UINT64_MAX : timers_.top().deadline);
}

void CqWriterCore::apply_control(const CqControl& c, uint64_t now) {
  CqContext& cq = table_.touch_at(c.cqn);
  switch (c.op) {
    case CqControl::Op::create: {
      const uint32_t gen = cq.timer_gen + 1;  // timers of an earlier CQ with this CQN stay stale
      const bool listed = cq.timer_listed;    // a wheel's list still holds the CQN (CqWriterPipeline)
      cq = CqContext{};
      cq.timer_listed = listed;
      cq.valid = true;
      cq.cfg = c.cfg;
      cq.state = c.cfg.always_armed ? CqState::always_armed : CqState::disarmed;
      cq.timer_start = now;
      cq.timer_gen = gen;
      log::write(log::Cat::cq, "CQ {} created: {} entries at {:#x}, EQ {}, moderation {}/{}us", c.cqn, cq.size(),
                 c.cfg.base, c.cfg.eqn, c.cfg.mod_count, c.cfg.mod_period);
      break;
    }
    case CqControl::Op::modify_moderation:
      cq.cfg.mod_count = c.cfg.mod_count;
      cq.cfg.mod_period = c.cfg.mod_period;
      cq.cfg.period_mode = c.cfg.period_mode;
      stop_timer(cq);
      cq.timer_start = now;
      reevaluate(cq, c.cqn, now);
      break;
    case CqControl::Op::resize_begin:
      ++resizing_;
      break;
    case CqControl::Op::resize_commit:
      cq.cfg.log_size = c.cfg.log_size;
      cq.cfg.base = c.cfg.base;
      if (resizing_) --resizing_;
      break;
    case CqControl::Op::resize_abort:
      if (resizing_) --resizing_;
      break;
    case CqControl::Op::destroy:
      stop_timer(cq);
      cq.valid = false;
      break;
  }
  on_control_done(c, now);
}

void CqWriterCore::apply_access_error(uint32_t cqn, uint64_t now) {
  if (!cq_exists(cqn) || table_[cqn].state == CqState::error) return;
  log::error("CQ {}: a CQE write failed at the host (buffer unmapped): CQ enters error", cqn);
  enter_error(table_.touch(cqn), cqn, eqe::kCqAccessViolation, now);
}

bool CqWriterCore::apply_ci_response(const CiResponse& r, uint64_t now) {
  // Only the response the head completion waits for counts (a late one, e.g. from before a device
  // reset, is dropped).
  const CompletionRecord* head = head_completion();
  if (!waiting_ci_ || !head || head->cqn != r.cqn || r.cqn >= table_.size()) return true;
  waiting_ci_ = false;
  CqContext& cq = table_.touch(r.cqn);
  if (!cq.valid) return true;
  if (!r.ok) {
    log::error("CQ {}: doorbell record read at {:#x} failed: CQ enters error", r.cqn, cq.cfg.dbr);
    enter_error(cq, r.cqn, eqe::kCqAccessViolation, now);
    ++stats_.dropped;
    retire_head(now);
    return true;
  }
  uint32_t ci = r.ci & kIndexMask;
  if (index_distance(ci, cq.pi) > cq.size()) {
    log::error("CQ {}: doorbell record consumer index {:#x} is outside [pi-size, pi] (pi {:#x}): CQ enters error",
               r.cqn, ci, cq.pi);
    enter_error(cq, r.cqn, eqe::kCqBadDoorbellRecord, now);
    ++stats_.dropped;
    retire_head(now);
    return true;
  }
  cq.ci = ci;
  refreshed_ = true;
  if (resizing_) return true;  // decided after the resize commits, with the new size
  // The waiting completion is decided on this same cycle: write it, or overflow.
  if (apply_completion(*head, now)) retire_head(now);
  return true;
}

bool CqWriterCore::expire_timer(uint64_t now) {
  while (!timers_.empty()) {
    Timer t = timers_.top();
    CqContext& cq = table_.touch(t.cqn);
    if (t.gen != cq.timer_gen || cq.timer_deadline == 0) {
      timers_.pop();
      continue;
    }
    if (t.deadline > now) return false;
    timers_.pop();
    timer_due(cq, t.cqn, now);
    return true;
  }
  return false;
}

void CqWriterCore::timer_due(CqContext& cq, uint32_t cqn, uint64_t now) {
  cq.timer_deadline = 0;
  ++stats_.timer_expiries;
  if (armed(cq) && cq.mod_pending > 0) fire(cq, cqn, now, EventCause::period);
}

void CqWriterCore::apply_arm(const ArmRequest& a, uint64_t now) {
  ++stats_.arms;
  if (!cq_exists(a.cqn)) {
    log::error("arm doorbell for CQ {} which does not exist: ignored", a.cqn);
    on_bad_doorbell(dberr::kUnknownObject, a.cqn);
    return;
  }
  CqContext& cq = table_.touch(a.cqn);
  if (cq.state == CqState::error) {
    log::error("arm doorbell for CQ {} which is in error: ignored", a.cqn);
    on_bad_doorbell(dberr::kObjectInError, a.cqn);
    return;
  }
  if (index_distance(a.ci, cq.pi) > cq.size()) {
    log::error("arm doorbell for CQ {}: consumer index {:#x} is not within [pi-size, pi] (pi {:#x}): ignored", a.cqn,
               a.ci, cq.pi);
    on_bad_doorbell(dberr::kIndexOutOfRange, a.cqn);
    return;
  }
  if (a.sn != cq.arm_sn) {
    // An arm from before the last event (the driver has not seen that event yet): stale.
    ++stats_.arms_stale;
    log::write(log::Cat::cq, "CQ {}: stale arm sn {} (expected {}) ignored", a.cqn, a.sn, cq.arm_sn);
    on_bad_doorbell(dberr::kStaleArmSn, a.cqn);
    return;
  }
  // The arm's index is what the driver has seen, not what it has consumed: it never updates
  // the cached consumer index (only the doorbell record does).
  switch (cq.state) {
    case CqState::armed_next:
    case CqState::always_armed:
      ++stats_.arms_ignored_pending;  // S10: a pending request absorbs further requests
      return;
    case CqState::armed_solicited:
      if (a.cmd == ArmCmd::next) {
        cq.state = CqState::armed_next;  // S11: NEXT takes precedence
        ++stats_.arms_upgraded;
      } else {
        ++stats_.arms_ignored_pending;
        return;
      }
      break;
    default:
      cq.state = a.cmd == ArmCmd::next ? CqState::armed_next : CqState::armed_solicited;
      cq.mod_pending = 0;
      break;
  }
  log::write(log::Cat::cq, "CQ {} armed {} ci={:#x} pi={:#x}", a.cqn, state_name(cq.state), a.ci, cq.pi);
  // S9: CQEs newer than the arm's index (qualifying: any for NEXT, a solicited one for SOLICITED)
  // are owed an event, so that a wake-up is never lost.
  const uint32_t newer = index_distance(a.ci, cq.pi);
  const bool owed = cq.state == CqState::armed_next
                        ? newer > 0
                        : cq.any_solicited && index_distance(a.ci, cq.last_solicited) >= 1 &&
                              index_distance(a.ci, cq.last_solicited) <= newer;
  if (!owed) return;
  if (cfg_.arm_event == ArmEvent::at_once) {
    fire(cq, a.cqn, now, EventCause::at_arm);
    return;
  }
  // S26: the owed CQEs count towards moderation like CQEs arriving now, and the event waits for
  // the count or the period (EQE mode: from the last event; CQE mode: from the last CQE).
  ++stats_.arms_owed;
  cq.mod_pending = cq.state == CqState::armed_next ? uint16_t(std::min<uint32_t>(newer, 0xFFFF)) : 1;
  reevaluate(cq, a.cqn, now);
}

bool CqWriterCore::apply_completion(const CompletionRecord& r, uint64_t now) {
  const bool refreshed = refreshed_;
  refreshed_ = false;
  if (!cq_exists(r.cqn)) {
    ++stats_.bad_records;
    log::error("completion record for CQ {} which does not exist: dropped (wr_id {:#x})", r.cqn, r.wr_id);
    return true;
  }
  CqContext& cq = table_.touch(r.cqn);
  if (cq.state == CqState::error) {
    ++stats_.dropped;
    ++cq.dropped;
    log::error("CQ {} is in error: completion wr_id {:#x} dropped", r.cqn, r.wr_id);
    return true;
  }
  if (looks_full(cq)) {
    if (!refreshed) {
      // The cached consumer index says full: read the doorbell record before deciding (S14).
      emit_ci_request(CiRequest{r.cqn, cq.cfg.dbr}, now);
      waiting_ci_ = true;
      ++stats_.ci_refreshes;
      return false;
    }
    ++stats_.overflows;
    ++stats_.dropped;
    ++cq.dropped;
    log::error("CQ {} overflow: {} entries all unconsumed (ci {:#x}, pi {:#x}); CQE wr_id {:#x} not written", r.cqn,
               cq.size(), cq.ci, cq.pi, r.wr_id);
    enter_error(cq, r.cqn, eqe::kCqOverrun, now);
    return true;
  }
  write_cqe(cq, r.cqn, r, now);
  moderate(cq, r.cqn, r, now);
  return true;
}

void CqWriterCore::write_cqe(CqContext& cq, uint32_t cqn, const CompletionRecord& r, uint64_t now) {
  DmaWrite& w = dma_slot(now);  // it keeps what it held last: every field is set
  w.addr = cq.cfg.base + uint64_t(cq.pi & (cq.size() - 1)) * cqe::kSize;
  w.len = cqe::kSize;
  w.bulk.clear();
  w.source = DmaSource::cqe;
  w.id = cqn;
  format_cqe(r, cq.pi, cq.cfg.log_size, timestamp(now), w.data.data());
  const uint64_t addr = w.addr;
  emit_dma(now);
  log::write(log::Cat::cq, "CQ {} CQE pi={:#x} wr_id={:#x} syndrome={:#x} -> {:#x}", cqn, cq.pi, r.wr_id, r.syndrome,
             addr);
  cq.pi = (cq.pi + 1) & kIndexMask;
  if ((cq.pi & (cq.size() - 1)) == 0) ++stats_.owner_wraps;
  if (r.solicited()) {
    cq.last_solicited = cq.pi;
    cq.any_solicited = true;
  } else if (cq.any_solicited && index_distance(cq.last_solicited, cq.pi) > cq.size()) {
    cq.any_solicited = false;  // consumed long ago: must not alias after the index wraps
  }
  ++cq.cqes;
  ++stats_.cqes;
}

bool CqWriterCore::armed(const CqContext& cq) const {
  return cq.state == CqState::armed_next || cq.state == CqState::armed_solicited ||
         cq.state == CqState::always_armed;
}

bool CqWriterCore::qualifies(const CqContext& cq, const CompletionRecord& r) const {
  return cq.state == CqState::armed_solicited ? r.solicited() : armed(cq);
}

// S12. A qualifying CQE on an armed CQ counts; the event fires on the count threshold, or when
// the period has passed since its start (EQE mode: the last event; CQE mode: the last CQE). With
// neither threshold set the event fires at once.
void CqWriterCore::moderate(CqContext& cq, uint32_t cqn, const CompletionRecord& r, uint64_t now) {
  const bool counts = qualifies(cq, r);
  // CQE mode: every CQE restarts the period, so that an arm finding CQEs owed (S26) sees when the
  // burst ended. With events at the arm (the old rule) only counted CQEs restart it, as before.
  if (cq.cfg.period_mode == PeriodMode::cqe && (counts || cfg_.arm_event == ArmEvent::moderated))
    cq.timer_start = now;
  if (!counts) {
    if (cq.mod_pending > 0) reevaluate(cq, cqn, now);  // a running CQE-mode timer moves
    return;
  }
  if (cq.mod_pending < 0xFFFF) ++cq.mod_pending;
  reevaluate(cq, cqn, now);
}

void CqWriterCore::reevaluate(CqContext& cq, uint32_t cqn, uint64_t now) {
  if (!armed(cq) || cq.mod_pending == 0) return;
  const bool no_moderation = cq.cfg.mod_count == 0 && cq.cfg.mod_period == 0;
  if (no_moderation || (cq.cfg.mod_count != 0 && cq.mod_pending >= cq.cfg.mod_count)) {
    fire(cq, cqn, now, no_moderation ? EventCause::immediate : EventCause::count);
    return;
  }
  if (cq.cfg.mod_period == 0) return;
  const uint64_t deadline = period_deadline(cq);
  if (deadline_passed(deadline, now)) {
    fire(cq, cqn, now, EventCause::period);
  } else if (cq.timer_deadline != deadline) {
    start_timer(cq, cqn, deadline);
  }
}

void CqWriterCore::fire(CqContext& cq, uint32_t cqn, uint64_t now, EventCause cause) {
  ++cq.events_by[int(cause)];
  ++stats_.events_of(cause);
  emit_event(DeviceEvent{eqe::kCompletion, cq.cfg.eqn, cqn, 0, cq.pi}, now);
  log::write(log::Cat::cq, "CQ {} event -> EQ {} (pending {}, pi {:#x})", cqn, cq.cfg.eqn, cq.mod_pending, cq.pi);
  if (cq.state != CqState::always_armed) cq.state = CqState::disarmed;
  cq.mod_pending = 0;
  cq.last_notified = cq.pi;
  cq.timer_start = now;
  cq.arm_sn = (cq.arm_sn + 1) & 3;
  stop_timer(cq);
  ++cq.events;
  ++stats_.events;
}

void CqWriterCore::enter_error(CqContext& cq, uint32_t cqn, uint8_t syndrome, uint64_t now) {
  cq.state = CqState::error;
  stop_timer(cq);
  emit_event(DeviceEvent{eqe::kCqError, 0, cqn, syndrome, cq.pi}, now);
}

void CqWriterCore::start_timer(CqContext& cq, uint32_t cqn, uint64_t deadline) {
  cq.timer_deadline = deadline;
  ++cq.timer_gen;
  timers_.push(Timer{deadline, cqn, cq.timer_gen});
}

void CqWriterCore::stop_timer(CqContext& cq) {
  cq.timer_deadline = 0;
  ++cq.timer_gen;
}

}  // namespace vhca
