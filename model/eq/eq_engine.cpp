#include "model/eq/eq_engine.h"

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {

EqEngine::EqEngine(const sc_core::sc_module_name& name, const SimClock& clock, const EqEngineConfig& cfg)
    : sc_module(name), s_event("s_event", cfg.event_depth), s_db("s_db", cfg.doorbell_depth), clock_(clock), cfg_(cfg), wakeup_(clock),
      table_(cfg.num_eqs) {
  auto wake = [this](uint64_t c) { wakeup_.wake(c); };
  s_event->on_data = s_db->on_data = wake;
  // Events pushed on one cycle (the CQ writer's, the transport's, the firmware's) are taken in the
  // order of their type, whichever block SystemC ran first.
  s_event->same_cycle_rank = [](const DeviceEvent& e) { return uint32_t(e.type); };
  m_dma.on_space(wake);
  m_irq.on_space(wake);
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

void EqEngine::report(const DeviceEvent& ev) {
  if (reports_.size() >= cfg_.report_depth) {
    ++reports_lost_;
    log::error("event type {:#x} (data {:#x}) lost: {} reports already pending", ev.type, ev.data, reports_.size());
    on_report_lost();
    return;
  }
  reports_.push_back(ev);
  wakeup_.wake(clock_.now() + 1);
}

void EqEngine::reset() {
  for (auto& eq : table_) eq = EqContext{};
  find_event_targets();
  s_event->clear();
  s_db->clear();
  reports_.clear();
}

void EqEngine::create(uint32_t eqn, const EqConfig& cfg) {
  table_.at(eqn) = EqContext{};
  table_[eqn].valid = true;
  table_[eqn].cfg = cfg;
  find_event_targets();
  log::write(log::Cat::eq, "EQ {} created: {} entries at {:#x}, vector {}, mask {:#x}", eqn, 1u << cfg.log_size,
             cfg.base, cfg.vector, cfg.event_mask);
}

void EqEngine::destroy(uint32_t eqn) {
  table_.at(eqn).valid = false;
  find_event_targets();
}

// The EQ that takes asynchronous events, and the one that takes command completions: the first
// valid EQ whose mask names them (-1: none). Looked up when the table changes, not per event.
void EqEngine::find_event_targets() {
  async_target_ = command_target_ = -1;
  for (uint32_t i = 0; i < table_.size(); ++i) {
    if (!table_[i].valid) continue;
    if (async_target_ < 0 && (table_[i].cfg.event_mask & kEqMaskAsync)) async_target_ = int(i);
    if (command_target_ < 0 && (table_[i].cfg.event_mask & kEqMaskCommand)) command_target_ = int(i);
  }
}

// One action per cycle: a doorbell first, else an event, else a pending report.
void EqEngine::step() {
  if (!wakeup_.begin_cycle()) return;
  wakeup_.count();
  const uint64_t now = clock_.now();
  if (!m_dma.can_push(now) || !m_irq.can_push(now)) return;  // woken again by on_space
  bool acted = true;
  if (s_db->ready(now)) {
    apply_doorbell(s_db->pop(now), now);
  } else if (s_event->ready(now)) {
    write_eqe(s_event->pop(now), now);
  } else if (!reports_.empty()) {
    const DeviceEvent ev = reports_.front();
    reports_.pop_front();
    write_eqe(ev, now);
  } else {
    acted = false;
  }
  if (acted) on_acted(now);
  uint64_t next = std::min(s_db->head_ready_cycle(), s_event->head_ready_cycle());
  if (!reports_.empty()) next = now + 1;
  if (next != UINT64_MAX) wakeup_.wake(std::max(next, now + 1));
}

void EqEngine::apply_doorbell(const EqDoorbell& db, uint64_t now) {
  if (!exists(db.eqn)) {
    log::error("EQ doorbell for EQ {} which does not exist: ignored", db.eqn);
    on_bad_doorbell(dberr::kUnknownObject, db.eqn);
    return;
  }
  EqContext& eq = table_[db.eqn];
  if (index_distance(db.ci, eq.pi) > eq.size()) {
    log::error("EQ {} doorbell: consumer index {:#x} is not within [pi-size, pi] (pi {:#x}): ignored", db.eqn, db.ci,
               eq.pi);
    on_bad_doorbell(dberr::kIndexOutOfRange, db.eqn);
    return;
  }
  eq.ci = db.ci & kIndexMask;
  if (!db.arm) return;
  eq.armed = true;
  // Arm-once with no lost wake-up: EQEs beyond the consumer index interrupt at once.
  if (eq.ci != eq.pi) interrupt(eq, db.eqn, now);
}

int EqEngine::target_eq(const DeviceEvent& ev) const {
  if (ev.type == eqe::kCompletion) return exists(ev.eqn) ? int(ev.eqn) : -1;
  return ev.type == eqe::kCommandDone ? command_target_ : async_target_;
}

void EqEngine::write_eqe(const DeviceEvent& ev, uint64_t now) {
  int target = target_eq(ev);
  if (target < 0 && ev.type == eqe::kCommandDone) return;  // no command EQ: the driver polls
  if (target < 0) {
    ++dropped_;
    log::error("event type {:#x} (CQ {}) has no EQ to go to: dropped", ev.type, ev.cqn);
    return;
  }
  uint32_t eqn = uint32_t(target);
  EqContext& eq = table_[eqn];
  if (index_distance(eq.ci, eq.pi) >= eq.size()) {
    ++eq.overruns;
    ++dropped_;
    log::error("EQ {} overrun: event type {:#x} (CQ {}) dropped", eqn, ev.type, ev.cqn);
    if (!(eq.cfg.event_mask & kEqMaskAsync)) report(DeviceEvent{eqe::kEqOverrun, 0, 0, 0, eqn});
    return;
  }
  DmaWrite w;
  w.addr = eq.cfg.base + uint64_t(eq.pi & (eq.size() - 1)) * eqe::kSize;
  w.len = eqe::kSize;
  w.source = DmaSource::eqe;
  w.id = eqn;
  uint8_t* e = w.data.data();
  put_field(e, eqe::event_type, ev.type);
  put_field(e, eqe::cqn, ev.cqn);
  put_field(e, eqe::syndrome, ev.syndrome);
  put_field(e, eqe::data, ev.data);
  put_field(e, eqe::timestamp, now);
  put_field(e, eqe::owner, (eq.pi >> eq.cfg.log_size) & 1);
  m_dma.push(w, now);
  log::write(log::Cat::eq, "EQ {} EQE pi={:#x} type={:#x} cqn={}", eqn, eq.pi, ev.type, ev.cqn);
  eq.pi = (eq.pi + 1) & kIndexMask;
  ++eq.eqes;
  if (eq.armed) interrupt(eq, eqn, now);
}

void EqEngine::interrupt(EqContext& eq, uint32_t eqn, uint64_t now) {
  eq.armed = false;
  ++eq.interrupts;
  m_irq->push(eq.cfg.vector, now);
}

}  // namespace vhca
