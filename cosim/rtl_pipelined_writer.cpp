// Verilator's headers come first (see rtl_cq_writer.cpp).
#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vcq_writer_pipelined_4k.h"
#include "Vcq_writer_pipelined_4k___024root.h"
#include "Vcq_writer_pipelined_64.h"
#include "Vcq_writer_pipelined_64___024root.h"
#include "Vcq_writer_pipelined_64k.h"
#include "Vcq_writer_pipelined_64k___024root.h"
#include "cosim/rtl_pins.h"
#include "cosim/rtl_pipelined_writer.h"
#include "cosim/stream_checker.h"

#include <algorithm>
#include <array>
#include <deque>
#include <stdexcept>

#include "model/cq/timer_wheel.h"
#include "model/regs/tables.h"

namespace vhca {

namespace {

// The context word's fields (F_* in rtl/cq_writer_pipelined.v).
enum CtxField : unsigned {
  kValid = 0, kState = 1, kLog = 4, kBase = 9, kDbr = 73, kEqn = 137, kMcount = 161, kMperiod = 177, kPmode = 189,
  kOi = 190, kAlways = 191, kPi = 192, kCi = 216, kLastN = 240, kLastS = 264, kAnyS = 288, kSn = 289, kPend = 291,
  kPeriodEnd = 307, kRun = 339, kDl = 340, kListed = 372
};

template <typename Words>
uint64_t bits(const Words& w, unsigned lo, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = lo + i;
    v |= uint64_t((w[b / 32] >> (b % 32)) & 1) << i;
  }
  return v;
}

template <typename V>
class RtlPipelined final : public RtlEngine {
 public:
  RtlPipelined(const CqeWriterConfig& cfg, const RtlFaults& faults, uint32_t init_seed)
      : RtlEngine(cfg), context_(std::make_unique<VerilatedContext>()), faults_(faults) {
    context_->traceEverOn(true);
    context_->randReset(init_seed ? 2 : 0);
    context_->randSeed(int(init_seed));
    top_ = std::make_unique<V>(context_.get(), "cq_writer_pipelined");
    reset();
  }
  ~RtlPipelined() override {
    if (vcd_) vcd_->close();
    top_->final();
  }

  void trace(const std::string& path, uint64_t from, uint64_t to) override {
    vcd_ = std::make_unique<VerilatedVcdC>();
    top_->trace(vcd_.get(), 99);
    vcd_->open(path.c_str());
    trace_from_ = from;
    trace_to_ = to;
  }
  uint64_t evaluations() const override { return evals_; }
  const std::vector<std::string>& protocol_violations() const override { return violations_; }

  void reset() override {
    pulse_reset(*top_);
    clear_inputs();
    stats_ = {};
    counts_.reset(cfg_.num_cqs);
    controls_.clear();
    cqes_seen_ = events_seen_ = 0;
    delayed_event_pending_ = false;
    started_ = false;
  }

  bool act(uint64_t now) override {
    if (!started_) {
      started_ = true;
      first_cycle_ = now;
      last_cycle_ = now - 1;
    }
    for (uint64_t c = last_cycle_ + 1; c <= now; ++c) clock(c);
    last_cycle_ = now;
    return true;
  }
  bool holds_outputs() const override { return true; }
  // As the C++ model's (the RTL is Verilated with CYCLES_PER_US = 500; the wheel has kSlots heads).
  uint64_t clearing_cycles() const override { return std::max<uint64_t>(cfg_.num_cqs, TimerWheel::kSlots); }
  uint64_t period_end_cycle(uint64_t start, uint32_t period_us) const override {
    return tick_start((start - first_cycle_) / kCyclesPerUs + period_us);
  }

  // As CqWriterPipeline::next_cycle, from the pins: o_busy (something in flight, or the wheel
  // walking), o_ready (the table and wheel cleared), o_timers (a timer running).
  uint64_t next_cycle(uint64_t now) override {
    if (!started_ || top_->o_busy || delayed_event_pending_) return now + 1;
    const uint64_t tick = tick_start((now - first_cycle_) / kCyclesPerUs + 1);
    if (!top_->o_ready) return std::min<uint64_t>(first_cycle_ + clearing_cycles(), tick);
    const uint64_t next = next_input_cycle(now, false, UINT64_MAX);
    return top_->o_timers ? std::min(next, tick) : next;
  }

  CqContext context(uint32_t cqn) const override {
    CqContext c;
    if (cqn >= cfg_.num_cqs) return c;
    const auto& w = top_->rootp->cq_writer_pipelined__DOT__ctx_table__DOT__ram__DOT__mem[cqn];
    c.valid = bits(w, kValid, 1);
    c.state = CqState(bits(w, kState, 3));
    c.cfg.log_size = uint8_t(bits(w, kLog, 5));
    c.cfg.base = bits(w, kBase, 64);
    c.cfg.dbr = bits(w, kDbr, 64);
    c.cfg.eqn = uint32_t(bits(w, kEqn, 24));
    c.cfg.mod_count = uint16_t(bits(w, kMcount, 16));
    c.cfg.mod_period = uint16_t(bits(w, kMperiod, 12));
    c.cfg.period_mode = bits(w, kPmode, 1) ? PeriodMode::cqe : PeriodMode::eqe;
    c.cfg.overrun_ignore = bits(w, kOi, 1);
    c.cfg.always_armed = bits(w, kAlways, 1);
    c.pi = uint32_t(bits(w, kPi, 24));
    c.ci = uint32_t(bits(w, kCi, 24));
    c.last_notified = uint32_t(bits(w, kLastN, 24));
    c.arm_sn = uint8_t(bits(w, kSn, 2));
    c.mod_pending = uint16_t(bits(w, kPend, 16));
    if (faults_.misread_pending_from && last_cycle_ >= faults_.misread_pending_from && c.mod_pending) ++c.mod_pending;
    c.timer_deadline = bits(w, kRun, 1) ? bits(w, kDl, 32) : 0;
    c.timer_listed = bits(w, kListed, 1);
    counts_.fill(cqn, c);
    return c;
  }
  bool cq_exists(uint32_t cqn) const override { return context(cqn).valid; }

 private:
  void eval(uint64_t now, int phase) {
    top_->eval();
    ++evals_;
    if (vcd_ && now >= trace_from_ && now <= trace_to_) vcd_->dump(now * 2 + uint64_t(phase));
  }

  void drive_inputs(uint64_t c) {
    V& t = *top_;
    // Ready only where an item is offered (valid is a register: known before this cycle's
    // evaluation): a full stream asked needlessly would wake its producers when it drains.
    t.m_dma_ready = t.m_dma_valid && m_dma->can_push(c, m_dma_producer);
    t.m_event_ready = t.m_event_valid && !delayed_event_pending_ && m_event->can_push(c, m_event_producer);
    t.m_ci_req_ready = t.m_ci_req_valid && m_ci_req->can_push(c);
    t.i_timestamp = c;  // the device's cycle count (its timestamp unit)
    drive_input_pins(t, *this, c);
  }

  // The outputs leaving the skid buffers on this edge, and what stage 3 did this cycle.
  void collect_outputs(uint64_t c) {
    V& t = *top_;
    if (delayed_event_pending_ && m_event->can_push(c, m_event_producer)) {
      m_event->push(delayed_event_, c, 0, m_event_producer);
      delayed_event_pending_ = false;
    }
    if (t.m_dma_valid && t.m_dma_ready) {
      DmaWrite w = cqe_write_on_pins(t);
      if (++cqes_seen_ == faults_.flip_owner_at_cqe) w.data[63] ^= 1;
      m_dma->push(w, c, 0, m_dma_producer);
    }
    if (t.m_event_valid && t.m_event_ready) {
      DeviceEvent ev{t.m_event_type, t.m_event_eqn, t.m_event_cqn, t.m_event_syndrome, t.m_event_data};
      if (++events_seen_ == faults_.delay_event_at) {
        delayed_event_ = ev;
        delayed_event_pending_ = true;
      } else {
        m_event->push(ev, c, 0, m_event_producer);
      }
    }
    if (t.m_ci_req_valid && t.m_ci_req_ready) m_ci_req->push(CiRequest{t.m_ci_req_cqn, t.m_ci_req_dbr}, c);
    // Per CQ, counted as stage 3 acts (as the model's context counts them).
    const uint32_t cov = t.o_cov, cqn = t.o_cov_cqn;
    if (cov & 1) counts_.cqe(cqn);
    if ((cov >> 1) & 1) counts_.event(cqn, cov);
    if (t.o_bad_db_valid) on_bad_doorbell(t.o_bad_db_reason, t.o_bad_db_cqn);
    if (t.o_hold) note_output_stall();
    count_rtl_coverage(stats_, cov);
  }

  // Every stream at the pins, as the edge will see it: the RTL's outputs (valid held until ready,
  // data stable meanwhile) and the inputs the adapter drives.
  void check_streams(uint64_t c) {
    V& t = *top_;
    std::array<uint32_t, 19> dma{};
    for (unsigned i = 0; i < 16; ++i) dma[i] = t.m_dma_data[i];
    dma[16] = uint32_t(t.m_dma_addr), dma[17] = uint32_t(t.m_dma_addr >> 32), dma[18] = t.m_dma_cqn;
    if (t.m_dma_valid && !t.m_dma_ready && ++dma_waits_ == faults_.unstable_cqe_at) dma[0] ^= 1;
    dma_check_.sample(c, t.m_dma_valid, t.m_dma_ready, dma);
    std::array<uint64_t, 5> ev{t.m_event_type, t.m_event_eqn, t.m_event_cqn, t.m_event_syndrome, t.m_event_data};
    event_check_.sample(c, t.m_event_valid, t.m_event_ready, ev);
    ci_check_.sample(c, t.m_ci_req_valid, t.m_ci_req_ready, std::array<uint64_t, 2>{t.m_ci_req_cqn, t.m_ci_req_dbr});
    cpl_check_.sample(c, t.s_cpl_valid, t.s_cpl_ready, std::array<uint64_t, 2>{t.s_cpl_cqn, t.s_cpl_wr_id});
    arm_check_.sample(c, t.s_arm_valid, t.s_arm_ready, std::array<uint64_t, 2>{t.s_arm_cqn, t.s_arm_ci});
    violations_.clear();
    for (auto* v : {&dma_check_.violations(), &event_check_.violations(), &ci_check_.violations(),
                    &cpl_check_.violations(), &arm_check_.violations()})
      violations_.insert(violations_.end(), v->begin(), v->end());
  }

  void clock(uint64_t c) {
    drive_inputs(c);
    V& t = *top_;
    t.clk = 0;
    eval(c, 0);
    check_streams(c);
    collect_outputs(c);
    const bool ctl_done = t.o_ctl_done;
    if (t.s_ctl_valid && t.s_ctl_ready) {
      controls_.push_back(s_ctl.pop(c));
    }
    if (t.s_aerr_valid && t.s_aerr_ready) s_access_error.pop(c);
    if (t.s_ci_valid && t.s_ci_ready) s_ci.pop(c);
    if (t.s_arm_valid && t.s_arm_ready) s_arm.pop(c);
    if (t.s_cpl_valid && t.s_cpl_ready) s_cpl.pop(c);
    t.clk = 1;
    eval(c, 1);
    if (ctl_done && !controls_.empty()) {
      const CqControl k = controls_.front();
      controls_.pop_front();
      if (k.op == CqControl::Op::create) counts_.restart(k.cqn);
      on_control_done(k, c);
    }
  }

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<V> top_;
  std::unique_ptr<VerilatedVcdC> vcd_;
  uint64_t trace_from_ = 0, trace_to_ = 0;
  RtlFaults faults_;
  bool started_ = false;
  static constexpr uint64_t kCyclesPerUs = 500;
  uint64_t tick_start(uint64_t tick) const { return first_cycle_ + tick * kCyclesPerUs; }  // its first cycle
  uint64_t first_cycle_ = 0, last_cycle_ = 0;
  uint64_t cqes_seen_ = 0, events_seen_ = 0, evals_ = 0;
  PerCqCounts counts_;
  std::deque<CqControl> controls_;  // controls taken and not yet acted on
  bool delayed_event_pending_ = false;
  DeviceEvent delayed_event_;
  StreamChecker<std::array<uint32_t, 19>> dma_check_{"m_dma"};
  StreamChecker<std::array<uint64_t, 5>> event_check_{"m_event"};
  StreamChecker<std::array<uint64_t, 2>> ci_check_{"m_ci_req"}, cpl_check_{"s_cpl"}, arm_check_{"s_arm"};
  uint64_t dma_waits_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace

const std::vector<uint32_t>& rtl_pipelined_sizes() {
  static const std::vector<uint32_t> kSizes{64, 4096, 65536};
  return kSizes;
}

std::unique_ptr<RtlEngine> make_rtl_pipelined_writer(const CqeWriterConfig& cfg, const RtlFaults& faults,
                                                     uint32_t init_seed) {
  switch (cfg.num_cqs) {
    case 64: return std::make_unique<RtlPipelined<Vcq_writer_pipelined_64>>(cfg, faults, init_seed);
    case 4096: return std::make_unique<RtlPipelined<Vcq_writer_pipelined_4k>>(cfg, faults, init_seed);
    case 65536: return std::make_unique<RtlPipelined<Vcq_writer_pipelined_64k>>(cfg, faults, init_seed);
    default:
      throw std::invalid_argument("the pipelined RTL CQ writer is built with 64, 4096 or 65536 CQ contexts, not " +
                                  std::to_string(cfg.num_cqs));
  }
}

}  // namespace vhca
