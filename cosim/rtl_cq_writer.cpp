// Verilator's headers come first: they take the SystemC time base if SystemC is already seen,
// and this C++-mode model has its own.
#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vcq_writer.h"
#include "cosim/rtl_cq_writer.h"
#include "cosim/rtl_pins.h"

#include <stdexcept>
#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {

RtlCqWriter::RtlCqWriter(const CqeWriterConfig& cfg, const RtlFaults& faults)
    : RtlEngine(cfg), context_(std::make_unique<VerilatedContext>()), faults_(faults) {
  if (cfg.num_cqs > kRtlNumCqs)
    throw std::invalid_argument("the RTL CQ writer is built with " + std::to_string(kRtlNumCqs) +
                                " CQ contexts; configure num_cqs <= that");
  context_->traceEverOn(true);
  top_ = std::make_unique<Vcq_writer>(context_.get(), "cq_writer");
  reset();
}

RtlCqWriter::~RtlCqWriter() {
  if (vcd_) vcd_->close();
  top_->final();
}

void RtlCqWriter::trace(const std::string& path, uint64_t from, uint64_t to) {
  vcd_ = std::make_unique<VerilatedVcdC>();
  top_->trace(vcd_.get(), 99);
  vcd_->open(path.c_str());
  trace_from_ = from;
  trace_to_ = to;
}

void RtlCqWriter::eval(uint64_t now, int phase) {
  top_->eval();
  ++evals_;
  if (vcd_ && now >= trace_from_ && now <= trace_to_) vcd_->dump(now * 2 + uint64_t(phase));
}

void PerCqCounts::reset(uint32_t cqs) {
  cqes_.assign(cqs, 0);
  events_.assign(cqs, 0);
  causes_.assign(cqs, {});
}

void PerCqCounts::restart(uint32_t cqn) {
  if (cqn < cqes_.size()) cqes_[cqn] = events_[cqn] = 0, causes_[cqn] = {};
}

void PerCqCounts::cqe(uint32_t cqn) {
  if (cqn < cqes_.size()) ++cqes_[cqn];
}

void PerCqCounts::event(uint32_t cqn, uint32_t cov) {
  if (cqn >= events_.size()) return;
  ++events_[cqn];
  for (int k = 0; k < kEventCauses; ++k) causes_[cqn][size_t(k)] += (cov >> (kCovFirstCause + k)) & 1;
}

void PerCqCounts::fill(uint32_t cqn, CqContext& c) const {
  if (cqn >= cqes_.size()) return;
  c.cqes = cqes_[cqn];
  c.events = events_[cqn];
  for (int k = 0; k < kEventCauses; ++k) c.events_by[k] = causes_[cqn][size_t(k)];
}

void RtlCqWriter::reset() {
  pulse_reset(*top_);
  clear_inputs();
  stats_ = {};
  counts_.reset(cfg_.num_cqs);
  cqes_seen_ = events_seen_ = 0;
  delayed_event_pending_ = false;
}

void RtlCqWriter::drive_inputs(uint64_t now) {
  Vcq_writer& t = *top_;
  t.i_cycle = now;
  t.m_dma_ready = m_dma->can_push(now);
  t.m_event_ready = m_event->can_push(now);
  t.m_ci_req_ready = m_ci_req->can_push(now);

  drive_input_pins(t, *this, now);
}

void count_rtl_coverage(CqeWriterStats& stats, uint32_t cov) {
  auto bit = [&](int b) { return (cov >> b) & 1; };
  stats.cqes += bit(0);
  stats.events += bit(1);
  for (int c = 0; c < kEventCauses; ++c) stats.events_of(EventCause(c)) += bit(kCovFirstCause + c);
  stats.arms += bit(6);
  stats.arms_upgraded += bit(7);
  stats.arms_ignored_pending += bit(8);
  stats.arms_stale += bit(9);
  stats.ci_refreshes += bit(10);
  stats.overflows += bit(11);
  stats.owner_wraps += bit(12);
  stats.dropped += bit(13);
  stats.bad_records += bit(14);
  stats.timer_expiries += bit(15);
  stats.arms_owed += bit(16);
  if (bit(14)) log::error("RTL CQ writer: completion record for a CQ that does not exist: dropped");
  if (bit(11)) log::error("RTL CQ writer: CQ overflow, CQE not written");
}

void RtlCqWriter::collect_outputs(uint64_t now) {
  Vcq_writer& t = *top_;
  if (delayed_event_pending_ && m_event->can_push(now)) {
    m_event->push(delayed_event_, now);
    delayed_event_pending_ = false;
  }
  if (t.m_dma_valid) {
    DmaWrite w = cqe_write_on_pins(t);
    if (++cqes_seen_ == faults_.flip_owner_at_cqe) w.data[63] ^= 1;
    counts_.cqe(w.id);
    m_dma->push(w, now);
  }
  if (t.m_event_valid) {
    DeviceEvent ev{t.m_event_type, t.m_event_eqn, t.m_event_cqn, t.m_event_syndrome, t.m_event_data};
    if (ev.type == eqe::kCompletion) counts_.event(ev.cqn, t.o_cov);  // its cause: the same action's o_cov
    if (++events_seen_ == faults_.delay_event_at) {
      delayed_event_ = ev;
      delayed_event_pending_ = true;
    } else {
      m_event->push(ev, now);
    }
  }
  if (t.m_ci_req_valid) m_ci_req->push(CiRequest{t.m_ci_req_cqn, t.m_ci_req_dbr}, now);
  if (t.o_bad_db_valid && on_bad_doorbell) on_bad_doorbell(t.o_bad_db_reason, t.o_bad_db_cqn);
  count_rtl_coverage(stats_, t.o_cov);
}

bool RtlCqWriter::act(uint64_t now) {
  last_cycle_ = now;
  drive_inputs(now);
  top_->clk = 0;
  eval(now, 0);
  Vcq_writer& t = *top_;
  const bool acted = t.s_ctl_ready || t.s_aerr_ready || t.s_ci_ready || t.s_arm_ready || t.s_cpl_ready ||
                     t.m_dma_valid || t.m_event_valid || t.m_ci_req_valid || t.o_cov;
  collect_outputs(now);
  const bool ctl_done = t.o_ctl_done;
  CqControl ctl;
  if (t.s_ctl_valid && t.s_ctl_ready) {
    ctl = s_ctl.pop(now);
    if (ctl.op == CqControl::Op::create) counts_.restart(ctl.cqn);
  }
  if (t.s_aerr_valid && t.s_aerr_ready) s_access_error.pop(now);
  if (t.s_ci_valid && t.s_ci_ready) s_ci.pop(now);
  if (t.s_arm_valid && t.s_arm_ready) s_arm.pop(now);
  if (t.s_cpl_valid && t.s_cpl_ready) s_cpl.pop(now);
  top_->clk = 1;  // commit this cycle's action
  eval(now, 1);
  if (ctl_done && on_control_done) on_control_done(ctl, now);
  return acted;
}

uint64_t RtlCqWriter::next_cycle(uint64_t now) {
  const uint64_t deadline = top_->o_next_deadline == ~uint64_t(0) ? UINT64_MAX : top_->o_next_deadline;
  const uint64_t next = next_input_cycle(now, top_->o_waiting_ci || top_->o_resizing, deadline);
  return delayed_event_pending_ ? std::min(next, now + 1) : next;
}

// By value: the context is read through the RTL's query port, and a reference to one shared copy
// could be overwritten by another query while its holder (a resize) still uses it.
CqContext RtlCqWriter::context(uint32_t cqn) const {
  Vcq_writer& t = *top_;
  t.q_cqn = cqn & 0xFFFFFF;
  t.eval();
  CqContext c;
  c.valid = t.q_valid;
  c.state = CqState(t.q_state);
  c.cfg.log_size = t.q_log_size;
  c.cfg.base = t.q_base;
  c.cfg.dbr = t.q_dbr;
  c.cfg.eqn = t.q_eqn;
  c.cfg.mod_count = t.q_mod_count;
  c.cfg.mod_period = t.q_mod_period;
  c.cfg.period_mode = (t.q_flags & 1) ? PeriodMode::cqe : PeriodMode::eqe;
  c.cfg.overrun_ignore = t.q_flags & 2;
  c.cfg.always_armed = t.q_flags & 4;
  c.pi = t.q_pi;
  c.ci = t.q_ci;
  c.arm_sn = t.q_arm_sn;
  c.last_notified = t.q_last_notified;
  c.mod_pending = t.q_pending;
  if (faults_.misread_pending_from && last_cycle_ >= faults_.misread_pending_from && c.mod_pending) ++c.mod_pending;
  c.timer_deadline = t.q_deadline;
  counts_.fill(cqn, c);
  return c;
}

bool RtlCqWriter::cq_exists(uint32_t cqn) const { return cqn < cfg_.num_cqs && context(cqn).valid; }

}  // namespace vhca
