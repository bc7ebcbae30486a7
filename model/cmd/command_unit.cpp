#include "model/cmd/command_unit.h"

#include <cstring>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/common/sim_now.h"

namespace vhca {

using namespace cmd;

CommandUnit::CommandUnit(const sc_core::sc_module_name& name, const SimClock& clock, const CommandUnitConfig& cfg,
                         CqeWriter& cq, EqEngine& eq, DmaEngine& dma, RegisterFile& regs, QpTables& qp_tables)
    : sc_module(name),
      clock_(clock),
      cfg_(cfg),
      cq_(cq),
      eq_(eq),
      dma_(dma),
      regs_(regs),
      cmdq_addr_hi_(regs.ref(reg::cmdq_addr_hi)),
      cmdq_addr_lo_(regs.ref(reg::cmdq_addr_lo)),
      qp_(qp_tables) {
  cq_.on_control_done.add([this](const CqControl&, uint64_t) { control_done_.notify(to_edge(sc_core::SC_ZERO_TIME)); });
  m_ctl.hold_threads(clock);
  m_event.hold_threads(clock);
  m_dma.hold_threads(clock);
  SC_THREAD(run);
}

void CommandUnit::ring() {
  if (busy_) {
    log::error("command doorbell rung while a command is executing: ignored (one command at a time)");
    regs_.set(reg::bad_doorbells, regs_.value(reg::bad_doorbells) + 1);
    return;
  }
  const uint64_t addr = cmdq_addr_hi_.value() << 32 | cmdq_addr_lo_.value();
  if (addr == 0 || addr % 128) {
    log::error("command doorbell: CMDQ_ADDR {:#x} is not a 128-byte aligned address: ignored", addr);
    regs_.set(reg::bad_doorbells, regs_.value(reg::bad_doorbells) + 1);
    return;
  }
  // The block is read from here (the read channel issues it on the next edge); the firmware
  // thread wakes when it has arrived, or after the latency.
  busy_ = true;
  block_addr_ = addr;
  dma_.firmware_read(addr, block_.data(), cmdblk::kSize, [this](bool ok, uint64_t usable) { block_arrived(ok, usable); });
}

void CommandUnit::reset() {
  qp_.clear();
  release_all_cqns();
  set_initialized(false);
}

void CommandUnit::set_initialized(bool on) {
  initialized_ = on;
  uint64_t h = regs_.value(reg::health);
  regs_.set(reg::health, on ? h | kHealthInitialized : h & ~uint64_t(kHealthInitialized));
}

// The firmware acts on clock edges. Its wake-ups are notified for the edge itself (rather than
// waking and then waiting for the edge): one thread switch per wake-up, not two.
sc_core::sc_time CommandUnit::to_edge(const sc_core::sc_time& after) const {
  return clock_.until(clock_.cycle_at_or_after(sim_now() + after));
}

// The block's completion has arrived (told by the DMA engine as it does), its data usable from
// cycle `usable`: an owned block executes after the firmware latency, counted from that cycle;
// anything else is answered on it. One wake-up of the firmware thread covers the doorbell, the
// read and the latency.
void CommandUnit::block_arrived(bool ok, uint64_t usable) {
  fetched_ok_ = ok;
  const bool owned = ok && get_field(block_.data(), cmdblk::ownership);
  fetched_.notify(owned ? clock_.until(clock_.cycle_at_or_after(clock_.at(usable) + cfg_.latency))
                        : clock_.until(usable));
}

void CommandUnit::run() {
  for (;;) {
    sc_core::wait(fetched_);  // a doorbell's block arrived (ring, block_arrived)
    const uint64_t addr = block_addr_;
    uint8_t* const block = block_.data();
    if (!fetched_ok_) {
      log::error("command block at {:#x} could not be read: command not executed", addr);
      m_event.push_held(DeviceEvent{eqe::kDmaError, 0, 0, eqe::kDmaCommandBlock, addr});
      busy_ = false;
      continue;
    }
    if (!get_field(block, cmdblk::ownership)) {
      log::error("command block at {:#x} is not owned by the device (ownership bit 0): ignored", addr);
      regs_.set(reg::bad_doorbells, regs_.value(reg::bad_doorbells) + 1);
      busy_ = false;
      continue;
    }
    const uint16_t opcode = uint16_t(get_field(block, cmdblk::opcode));
    In in{};
    Out out{};
    for (unsigned i = 0; i < in.size(); ++i) in[i] = get_be32(block + cmdblk::input.byte + 4 * i);
    Result r = get_field(block, cmdblk::op_mod) ? fail(kBadParam, kFieldOpMod, kReservedSet) : execute(opcode, in, out);
    ++executed_;
    uint32_t syndrome = 0;
    if (r.status != kOk) {
      ++refused_;
      syndrome = uint32_t(opcode) << 16 | uint32_t(r.dword) << 8 | r.reason;
      log::write(log::Cat::cmd, "command {:#x} refused: {} ({})", opcode, status_name(r.status),
                 describe_failure(syndrome));
    } else {
      log::write(log::Cat::cmd, "command {:#x} done", opcode);
    }
    uint8_t reply[cmdblk::kSize] = {};
    put_field(reply, cmdblk::status, r.status);
    put_field(reply, cmdblk::syndrome, syndrome);
    for (unsigned i = 0; i < out.size(); ++i) put_be32(reply + cmdblk::output.byte + 4 * i, out[i]);
    put_field(reply, cmdblk::ownership, 0);
    DmaWrite w;  // the second half of the block, ownership byte included, in one write
    w.addr = addr + cmdblk::status.byte;
    w.len = cmdblk::kSize - cmdblk::status.byte;
    w.source = DmaSource::command;
    std::memcpy(w.data.data(), reply + cmdblk::status.byte, w.len);
    m_dma.push_held(w);
    // A command-done EQE only when an EQ takes them (the firmware's event mode); a polling
    // driver gets none, and the EQ engine spends no cycle on one.
    const uint8_t token = uint8_t(get_field(block, cmdblk::token));
    if (eq_.takes_command_events()) m_event.push_held(DeviceEvent{eqe::kCommandDone, 0, 0, r.status, token});
    busy_ = false;
  }
}

CommandUnit::Result CommandUnit::check_reserved(const CommandSpec& spec, const In& in) const {
  uint32_t used = 0;
  for (const auto& d : spec.inputs) used |= 1u << d.index;
  for (uint8_t i = 0; i < in.size(); ++i)
    if (in[i] != 0 && !(used >> i & 1)) return fail(kBadParam, i, kReservedSet);
  return {};
}

CommandUnit::Result CommandUnit::execute(uint16_t opcode, const In& in, Out& out) {
  const CommandSpec* spec = find(opcode);
  if (!spec) return fail(kBadOp, kFieldNone, kUnknownObject);
  if (Result r = check_reserved(*spec, in); r.status != kOk) return r;
  if (opcode == kQueryCap) return query_cap(out);
  if (opcode == kInit) {
    if (initialized_) return fail(kBadSysState, kFieldNone, kWrongState);
    set_initialized(true);
    return {};
  }
  if (!initialized_) return fail(kBadSysState, kFieldNone, kWrongState);
  switch (opcode) {
    case kTeardown:
      for (uint32_t n = 1; n < next_cqn_; ++n)
        if (cq_.cq_exists(n)) cq_control(CqControl{CqControl::Op::destroy, n, {}});
      release_all_cqns();
      eq_.reset();
      qp_.clear();
      on_qp_state(UINT32_MAX, QpState::reset, QpState::reset);
      set_initialized(false);
      return {};
    case kCreateEq: return create_eq(in, out);
    case kDestroyEq: return destroy_eq(in);
    case kQueryEq: return query_eq(in, out);
    case kCreateCq: return create_cq(in, out);
    case kDestroyCq: return destroy_cq(in);
    case kQueryCq: return query_cq(in, out);
    case kModifyCq: return modify_cq(in, out);
    case kAllocPd: return alloc_pd(out);
    case kDeallocPd: return dealloc_pd(in);
    case kRegMr: return reg_mr(in, out);
    case kDeregMr: return dereg_mr(in);
    case kCreateQp: return create_qp(in, out);
    case kModifyQp: return modify_qp(in);
    case kQueryQp: return query_qp(in, out);
    case kDestroyQp: return destroy_qp(in);
    case kCreateSrq: return create_srq(in, out);
    case kDestroySrq: return destroy_srq(in);
    case kQuerySrq: return query_srq(in, out);
    case kArmSrq: return arm_srq(in);
  }
  return fail(kBadOp, kFieldNone, kUnknownObject);
}

CommandUnit::Result CommandUnit::query_cap(Out& out) {
  auto log2 = [](uint32_t v) { uint32_t l = 0; while ((1u << (l + 1)) <= v) ++l; return l; };
  out[0] = log2(cq_.config().num_cqs);
  out[1] = cq_.config().log_max_cq_size;
  out[2] = log2(eq_.config().num_eqs);
  out[3] = eq_.config().log_max_eq_size;
  out[4] = kNumMsixVectors;
  out[5] = kNumUars;
  out[6] = uint32_t(regs_.value(reg::caps));
  out[7] = uint32_t(regs_.value(reg::core_clock_khz));
  out[8] = 0xFFFF;
  out[9] = 0xFFF;
  return {};
}

CommandUnit::Result CommandUnit::create_eq(const In& in, Out& out) {
  EqConfig c;
  if (in[0] < 1 || in[0] > eq_.config().log_max_eq_size) return fail(kBadParam, 0, kOutOfRange);
  c.log_size = uint8_t(in[0]);
  c.base = uint64_t(in[1]) << 32 | in[2];
  if (c.base == 0) return fail(kBadParam, 2, kOutOfRange);
  if (c.base % 4096) return fail(kBadParam, 2, kMisaligned);
  if (in[3] >= kNumMsixVectors) return fail(kBadParam, 3, kOutOfRange);
  c.vector = in[3];
  if (in[4] == 0) return fail(kBadParam, 4, kOutOfRange);
  if (in[4] & ~(kEqMaskCompletion | kEqMaskAsync | kEqMaskCommand)) return fail(kBadParam, 4, kReservedSet);
  c.event_mask = in[4];
  int free_eqn = -1;
  for (uint32_t n = 0; n < eq_.config().num_eqs; ++n) {
    if (!eq_.exists(n)) {
      if (free_eqn < 0) free_eqn = int(n);
      continue;
    }
    if (eq_.context(n).cfg.event_mask & c.event_mask & (kEqMaskAsync | kEqMaskCommand))
      return fail(kResourceBusy, 4, kBusy);
  }
  if (free_eqn < 0) return fail(kNoResources, kFieldNone, kOutOfRange);
  eq_.create(uint32_t(free_eqn), c);
  out[0] = uint32_t(free_eqn);
  return {};
}

CommandUnit::Result CommandUnit::destroy_eq(const In& in) {
  if (!eq_.exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  for (uint32_t n = 0; n < cq_.config().num_cqs; ++n)
    if (cq_.cq_exists(n) && cq_.context(n).cfg.eqn == in[0]) return fail(kResourceBusy, 0, kBusy);
  eq_.destroy(in[0]);
  return {};
}

CommandUnit::Result CommandUnit::query_eq(const In& in, Out& out) {
  if (!eq_.exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  const EqContext& e = eq_.context(in[0]);
  out = {e.cfg.log_size, e.cfg.vector, e.pi, e.ci, e.armed, e.cfg.event_mask};
  return {};
}

CommandUnit::Result CommandUnit::create_cq(const In& in, Out& out) {
  CqConfig c;
  if (in[0] > cq_.config().log_max_cq_size) return fail(kBadParam, 0, kOutOfRange);
  c.log_size = uint8_t(in[0]);
  c.base = uint64_t(in[1]) << 32 | in[2];
  if (c.base == 0) return fail(kBadParam, 2, kOutOfRange);
  if (c.base % 4096) return fail(kBadParam, 2, kMisaligned);
  c.dbr = uint64_t(in[3]) << 32 | in[4];
  if (c.dbr == 0) return fail(kBadParam, 4, kOutOfRange);
  if (c.dbr % 8) return fail(kBadParam, 4, kMisaligned);
  if (!eq_.exists(in[5])) return fail(kBadParam, 5, kUnknownObject);
  if (!(eq_.context(in[5]).cfg.event_mask & kEqMaskCompletion)) return fail(kBadParam, 5, kWrongState);
  c.eqn = in[5];
  if (in[6] > 0xFFFF) return fail(kBadParam, 6, kOutOfRange);
  if (in[7] > 0xFFF) return fail(kBadParam, 7, kOutOfRange);
  if (in[8] & ~(kCqFlagPeriodModeCqe | kCqFlagOverrunIgnore | kCqFlagAlwaysArmed)) return fail(kBadParam, 8, kReservedSet);
  c.mod_count = uint16_t(in[6]);
  c.mod_period = uint16_t(in[7]);
  c.period_mode = (in[8] & kCqFlagPeriodModeCqe) ? PeriodMode::cqe : PeriodMode::eqe;
  c.overrun_ignore = in[8] & kCqFlagOverrunIgnore;
  c.always_armed = in[8] & kCqFlagAlwaysArmed;
  const uint32_t cqn = lowest_free_cqn();
  if (cqn >= cq_.config().num_cqs) return fail(kNoResources, kFieldNone, kOutOfRange);
  take_cqn(cqn);
  cq_control(CqControl{CqControl::Op::create, cqn, c});
  out[0] = cqn;
  return {};
}

CommandUnit::Result CommandUnit::destroy_cq(const In& in) {
  if (!cq_.cq_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  if (qp_.cq_in_use(in[0])) return fail(kResourceBusy, 0, kBusy);  // S4: a WQ is still associated
  cq_control(CqControl{CqControl::Op::destroy, in[0], {}});
  release_cqn(in[0]);
  return {};
}

// CQNs: the lowest free one is handed out (CQN 0 never, so a zeroed handle never names a live CQ),
// found without a scan of the table: numbers never used are [next_cqn_, num_cqs), freed ones wait
// in freed_cqns_.
uint32_t CommandUnit::lowest_free_cqn() const { return freed_cqns_.empty() ? next_cqn_ : *freed_cqns_.begin(); }

void CommandUnit::take_cqn(uint32_t cqn) {
  if (!freed_cqns_.empty() && cqn == *freed_cqns_.begin())
    freed_cqns_.erase(freed_cqns_.begin());
  else
    ++next_cqn_;
}

void CommandUnit::release_cqn(uint32_t cqn) { freed_cqns_.insert(cqn); }

void CommandUnit::release_all_cqns() {
  freed_cqns_.clear();
  next_cqn_ = 1;
}

CommandUnit::Result CommandUnit::query_cq(const In& in, Out& out) {
  if (!cq_.cq_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  const CqContext c = cq_.context(in[0]);
  uint32_t flags = (c.cfg.period_mode == PeriodMode::cqe ? kCqFlagPeriodModeCqe : 0) |
                   (c.cfg.overrun_ignore ? kCqFlagOverrunIgnore : 0) | (c.cfg.always_armed ? kCqFlagAlwaysArmed : 0);
  out = {c.cfg.log_size, c.pi, c.ci, uint32_t(c.state), c.cfg.eqn, c.cfg.mod_count, c.cfg.mod_period, flags,
         c.arm_sn, c.last_notified};
  return {};
}

CommandUnit::Result CommandUnit::modify_cq(const In& in, Out& out) {
  const uint32_t cqn = in[0];
  if (!cq_.cq_exists(cqn)) return fail(kBadResource, 0, kUnknownObject);
  const uint32_t select = in[1];
  if (select == 0) return fail(kBadParam, 1, kOutOfRange);
  if (select & ~(kModifySelectModeration | kModifySelectResize)) return fail(kBadParam, 1, kReservedSet);
  if (select & kModifySelectModeration) {
    if (in[2] > 0xFFFF) return fail(kBadParam, 2, kOutOfRange);
    if (in[3] > 0xFFF) return fail(kBadParam, 3, kOutOfRange);
    if (in[4] & ~kCqFlagPeriodModeCqe) return fail(kBadParam, 4, kReservedSet);
  } else {
    for (uint8_t i = 2; i <= 4; ++i)
      if (in[i]) return fail(kBadParam, i, kReservedSet);
  }
  if (select & kModifySelectResize) {
    if (!(regs_.value(reg::caps) & kCapResize)) return fail(kBadParam, 1, kNotSupported);
    if (in[5] > cq_.config().log_max_cq_size) return fail(kBadParam, 5, kOutOfRange);
    uint64_t base = uint64_t(in[6]) << 32 | in[7];
    if (base == 0) return fail(kBadParam, 7, kOutOfRange);
    if (base % 4096) return fail(kBadParam, 7, kMisaligned);
    if (cq_.context(cqn).state == CqState::error) return fail(kBadResState, 0, kWrongState);
  } else {
    for (uint8_t i = 5; i <= 7; ++i)
      if (in[i]) return fail(kBadParam, i, kReservedSet);
  }
  if (select & kModifySelectResize)
    if (Result r = resize_cq(cqn, in); r.status != kOk) return r;
  if (select & kModifySelectModeration) {
    CqConfig c = cq_.context(cqn).cfg;
    c.mod_count = uint16_t(in[2]);
    c.mod_period = uint16_t(in[3]);
    c.period_mode = (in[4] & kCqFlagPeriodModeCqe) ? PeriodMode::cqe : PeriodMode::eqe;
    cq_control(CqControl{CqControl::Op::modify_moderation, cqn, c});
  }
  out[0] = cq_.context(cqn).cfg.log_size;
  return {};
}

// S3: hold completion intake, read the consumer index from the doorbell record, refuse a size
// below the outstanding CQEs, copy the outstanding CQEs in order into the new buffer with owner
// bits for the new size, then switch. Nothing is lost, duplicated or reordered.
CommandUnit::Result CommandUnit::resize_cq(uint32_t cqn, const In& in) {
  cq_control(CqControl{CqControl::Op::resize_begin, cqn, {}});
  const CqContext cq = cq_.context(cqn);
  uint8_t dbr[4];
  if (!dma_.read_blocking(cq.cfg.dbr, dbr, 4)) {
    cq_control(CqControl{CqControl::Op::resize_abort, cqn, {}});
    return fail(kBadResState, 0, kWrongState);
  }
  const uint32_t ci = get_be32(dbr) & kIndexMask;
  const uint32_t outstanding = index_distance(ci, cq.pi);
  const uint8_t new_log = uint8_t(in[5]);
  const uint64_t new_base = uint64_t(in[6]) << 32 | in[7];
  if (outstanding > cq.size() || outstanding > (1u << new_log)) {
    cq_control(CqControl{CqControl::Op::resize_abort, cqn, {}});
    return fail(kBadSize, 5, kBelowOutstanding);
  }
  for (uint32_t i = 0; i < outstanding; ++i) {
    const uint32_t index = (ci + i) & kIndexMask;
    DmaWrite w;
    if (!dma_.read_blocking(cq.cfg.base + uint64_t(index & (cq.size() - 1)) * cqe::kSize, w.data.data(), cqe::kSize)) {
      cq_control(CqControl{CqControl::Op::resize_abort, cqn, {}});
      return fail(kBadResState, 0, kWrongState);
    }
    put_field(w.data.data(), cqe::owner, (index >> new_log) & 1);
    w.addr = new_base + uint64_t(index & ((1u << new_log) - 1)) * cqe::kSize;
    w.len = cqe::kSize;
    w.source = DmaSource::cqe_copy;
    w.id = cqn;
    m_dma.push_held(w);
  }
  CqConfig c = cq.cfg;
  c.log_size = new_log;
  c.base = new_base;
  cq_control(CqControl{CqControl::Op::resize_commit, cqn, c});
  return {};
}

CommandUnit::Result CommandUnit::alloc_pd(Out& out) {
  for (uint32_t n = 1; n < qp_.pds.size(); ++n)  // PD 0 is never handed out
    if (!qp_.pds[n]) {
      qp_.pds[n] = true;
      out[0] = n;
      return {};
    }
  return fail(kNoResources, kFieldNone, kOutOfRange);
}

CommandUnit::Result CommandUnit::dealloc_pd(const In& in) {
  if (!qp_.pd_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  if (qp_.pd_in_use(in[0])) return fail(kResourceBusy, 0, kBusy);
  qp_.pds[in[0]] = false;
  return {};
}

CommandUnit::Result CommandUnit::reg_mr(const In& in, Out& out) {
  if (!qp_.pd_exists(in[0])) return fail(kBadParam, 0, kUnknownObject);
  const uint64_t start = uint64_t(in[1]) << 32 | in[2], length = uint64_t(in[3]) << 32 | in[4];
  if (length == 0) return fail(kBadParam, 4, kOutOfRange);
  if (start + length - 1 < start) return fail(kBadParam, 4, kOutOfRange);
  const uint32_t all = kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite | kAccessRemoteAtomic;
  if (in[5] & ~(all | kRegMrTranslated)) return fail(kBadParam, 5, kReservedSet);
  const bool translated = in[5] & kRegMrTranslated;
  if (!translated && (in[6] || in[7])) return fail(kBadParam, 6, kReservedSet);
  const uint64_t pa = translated ? uint64_t(in[6]) << 32 | in[7] : start;
  if (pa + length - 1 < pa) return fail(kBadParam, 7, kOutOfRange);
  // IB: remote write or remote atomic access requires local write.
  if ((in[5] & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(in[5] & kAccessLocalWrite))
    return fail(kBadParam, 5, kOutOfRange);
  for (uint32_t i = 0; i < qp_.mrs.size(); ++i) {
    if (qp_.mrs[i].valid) continue;
    const uint32_t key = i << 8 | ++qp_.mr_variant;
    qp_.mrs[i] = MrContext{true, in[0], start, length, pa, in[5] & all, key};
    out[0] = out[1] = key;
    return {};
  }
  return fail(kNoResources, kFieldNone, kOutOfRange);
}

CommandUnit::Result CommandUnit::dereg_mr(const In& in) {
  const uint32_t index = in[0] >> 8;
  if (index >= qp_.mrs.size() || !qp_.mrs[index].valid || qp_.mrs[index].key != in[0])
    return fail(kBadResource, 0, kUnknownObject);
  qp_.mrs[index] = MrContext{};
  return {};
}

CommandUnit::Result CommandUnit::create_qp(const In& in, Out& out) {
  if (in[0] > uint32_t(QpType::uc)) return fail(kBadParam, 0, kOutOfRange);
  const QpType type = QpType(in[0]);
  const bool special = type == QpType::gsi || type == QpType::smi;
  if (!qp_.pd_exists(in[1])) return fail(kBadParam, 1, kUnknownObject);
  for (uint8_t d : {2, 3}) {
    if (!cq_.cq_exists(in[d])) return fail(kBadParam, d, kUnknownObject);
    if (qp_.cq_shared_across_special(in[d], special)) return fail(kBadParam, d, kBusy);  // S25
  }
  if (in[4] > 15) return fail(kBadParam, 4, kOutOfRange);
  if (in[5] > 15) return fail(kBadParam, 5, kOutOfRange);
  const uint64_t sq = uint64_t(in[6]) << 32 | in[7], rq = uint64_t(in[8]) << 32 | in[9],
                 dbr = uint64_t(in[10]) << 32 | in[11];
  const bool has_srq = in[12] & (1u << 31);
  if (in[12] & ~((1u << 31) | 0xFFFFFFu)) return fail(kBadParam, 12, kReservedSet);
  if (has_srq && !qp_.srq_exists(in[12] & 0xFFFFFF)) return fail(kBadParam, 12, kUnknownObject);
  if (!has_srq && in[12]) return fail(kBadParam, 12, kReservedSet);
  if (sq == 0) return fail(kBadParam, 7, kOutOfRange);
  if (sq % 4096) return fail(kBadParam, 7, kMisaligned);
  if (has_srq) {
    if (in[5]) return fail(kBadParam, 5, kReservedSet);  // no RQ of its own
    if (rq) return fail(kBadParam, 9, kReservedSet);
  } else {
    if (rq == 0) return fail(kBadParam, 9, kOutOfRange);
    if (rq % 4096) return fail(kBadParam, 9, kMisaligned);
  }
  if (dbr == 0) return fail(kBadParam, 11, kOutOfRange);
  if (dbr % 8) return fail(kBadParam, 11, kMisaligned);
  uint32_t qpn = type == QpType::smi ? 0 : type == QpType::gsi ? 1 : 2;
  if (special) {
    if (qp_.qps[qpn].valid) return fail(kResourceBusy, 0, kBusy);
  } else {
    while (qpn < qp_.qps.size() && qp_.qps[qpn].valid) ++qpn;
    if (qpn >= qp_.qps.size()) return fail(kNoResources, kFieldNone, kOutOfRange);
  }
  QpContext& q = qp_.qps[qpn];
  q = QpContext{};
  q.valid = true;
  q.type = type;
  q.pdn = in[1];
  q.send_cqn = in[2];
  q.recv_cqn = in[3];
  q.log_sq_size = uint8_t(in[4]);
  q.log_rq_size = uint8_t(in[5]);
  q.sq_base = sq;
  q.rq_base = rq;
  q.dbr = dbr;
  q.has_srq = has_srq;
  q.srqn = in[12] & 0xFFFFFF;
  out[0] = qpn;
  return {};
}

CommandUnit::Result CommandUnit::create_srq(const In& in, Out& out) {
  if (!qp_.pd_exists(in[0])) return fail(kBadParam, 0, kUnknownObject);
  if (in[1] > 15) return fail(kBadParam, 1, kOutOfRange);
  const uint64_t base = uint64_t(in[2]) << 32 | in[3], dbr = uint64_t(in[4]) << 32 | in[5];
  if (base == 0) return fail(kBadParam, 3, kOutOfRange);
  if (base % 4096) return fail(kBadParam, 3, kMisaligned);
  if (dbr == 0) return fail(kBadParam, 5, kOutOfRange);
  if (dbr % 8) return fail(kBadParam, 5, kMisaligned);
  if (in[6] >= (1u << in[1])) return fail(kBadParam, 6, kOutOfRange);
  for (uint32_t srqn = 0; srqn < qp_.srqs.size(); ++srqn) {
    if (qp_.srqs[srqn].valid) continue;
    qp_.srqs[srqn] = SrqContext{true, in[0], uint8_t(in[1]), base, dbr, uint16_t(in[6])};
    on_srq(srqn, true);
    out[0] = srqn;
    return {};
  }
  return fail(kNoResources, kFieldNone, kOutOfRange);
}

CommandUnit::Result CommandUnit::destroy_srq(const In& in) {
  if (!qp_.srq_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  if (qp_.srq_in_use(in[0])) return fail(kResourceBusy, 0, kBusy);
  qp_.srqs[in[0]] = SrqContext{};
  on_srq(in[0], true);
  return {};
}

CommandUnit::Result CommandUnit::query_srq(const In& in, Out& out) {
  if (!qp_.srq_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  const SrqContext& s = qp_.srqs[in[0]];
  out[0] = s.pdn;
  out[1] = s.log_size;
  out[2] = s.limit;
  return {};
}

CommandUnit::Result CommandUnit::arm_srq(const In& in) {
  if (!qp_.srq_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  SrqContext& s = qp_.srqs[in[0]];
  if (in[1] >= (1u << s.log_size)) return fail(kBadParam, 1, kOutOfRange);
  s.limit = uint16_t(in[1]);
  on_srq(in[0], false);
  return {};
}

// MODIFY_QP: the transition must be allowed, the caller's current state right, and only the
// attributes that transition takes may be non-zero, each within its range.
CommandUnit::Result CommandUnit::modify_qp(const In& in) {
  if (!qp_.qp_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  QpContext& q = qp_.qps[in[0]];
  if (in[1] > 6) return fail(kBadParam, 1, kOutOfRange);
  if (in[2] > 6) return fail(kBadParam, 2, kOutOfRange);
  if (QpState(in[1]) != q.state) return fail(kBadResState, 1, kWrongState);
  const QpState to = QpState(in[2]);
  if (!qp_transition_allowed(q.type, q.state, to)) return fail(kBadResState, 2, kWrongState);
  const bool rc = q.type == QpType::rc, uc = q.type == QpType::uc;
  // Which attribute dwords this transition takes (UC: RC's without the ACK-related ones: no RNR
  // timer, no timeout or retries, no READ/atomic depth).
  uint32_t allowed = 0;
  auto allow = [&](std::initializer_list<uint8_t> dwords) {
    for (uint8_t d : dwords) allowed |= 1u << d;
  };
  if (to == QpState::init) allow(is_connected(q.type) ? std::initializer_list<uint8_t>{3, 5} : std::initializer_list<uint8_t>{3, 4});
  if (q.state == QpState::init && to == QpState::rtr && rc) allow({6, 7, 8, 9, 12, 13});
  if (q.state == QpState::init && to == QpState::rtr && uc) allow({6, 7, 8, 13});
  if (q.state == QpState::rtr && to == QpState::rts) allow(rc ? std::initializer_list<uint8_t>{10, 11, 12} : std::initializer_list<uint8_t>{10});
  if ((q.state == QpState::rts || q.state == QpState::sqd || q.state == QpState::sqe) && to == QpState::rts)
    allow(rc ? std::initializer_list<uint8_t>{5, 9} : uc ? std::initializer_list<uint8_t>{5} : std::initializer_list<uint8_t>{4});
  for (uint8_t d = 3; d <= 13; ++d)
    if (!(allowed & (1u << d)) && in[d]) return fail(kBadParam, d, kReservedSet);
  if (in[3] > 127) return fail(kBadParam, 3, kOutOfRange);
  if (in[5] & ~(kAccessRemoteRead | kAccessRemoteWrite | kAccessRemoteAtomic)) return fail(kBadParam, 5, kReservedSet);
  if (in[5] & ~remote_access_allowed(q.type)) return fail(kBadParam, 5, kOutOfRange);  // UC: remote write only
  if (in[6] > 0xFFFFFF) return fail(kBadParam, 6, kOutOfRange);
  if (in[7] > 0xFFFFFF) return fail(kBadParam, 7, kOutOfRange);
  if ((allowed & (1u << 8)) && (in[8] < 1 || in[8] > 5)) return fail(kBadParam, 8, kOutOfRange);
  if (in[9] > 31) return fail(kBadParam, 9, kOutOfRange);
  if (in[10] > 0xFFFFFF) return fail(kBadParam, 10, kOutOfRange);
  if ((in[11] & ~0x771Fu) != 0) return fail(kBadParam, 11, kOutOfRange);
  if ((in[12] & 0xFF) > kMaxRdAtomic || ((in[12] >> 8) & 0xFF) > kMaxRdAtomic || (in[12] >> 16))
    return fail(kBadParam, 12, kOutOfRange);
  if (in[13] > 0xFFFF) return fail(kBadParam, 13, kOutOfRange);
  if (to == QpState::reset) {
    const QpContext keep = q;
    q = QpContext{};
    q.valid = true;
    q.type = keep.type;
    q.pdn = keep.pdn;
    q.send_cqn = keep.send_cqn;
    q.recv_cqn = keep.recv_cqn;
    q.log_sq_size = keep.log_sq_size;
    q.log_rq_size = keep.log_rq_size;
    q.sq_base = keep.sq_base;
    q.rq_base = keep.rq_base;
    q.dbr = keep.dbr;
    q.has_srq = keep.has_srq;
    q.srqn = keep.srqn;
    on_qp_state(in[0], keep.state, QpState::reset);
    return {};
  }
  if (allowed & (1u << 3)) q.pkey_index = uint16_t(in[3]);
  if (allowed & (1u << 4)) q.qkey = in[4];
  if (allowed & (1u << 5)) q.access = in[5];
  if (allowed & (1u << 6)) q.dest_qpn = in[6];
  if (allowed & (1u << 7)) q.rq_psn = in[7];
  if (allowed & (1u << 8)) q.path_mtu = uint8_t(in[8]);
  if (allowed & (1u << 9)) q.min_rnr_timer = uint8_t(in[9]);
  if (allowed & (1u << 10)) q.sq_psn = in[10];
  if (allowed & (1u << 13)) q.dlid = uint16_t(in[13]);
  if (allowed & (1u << 11)) {
    q.timeout = uint8_t(in[11] & 0x1F);
    q.retry_cnt = uint8_t((in[11] >> 8) & 7);
    q.rnr_retry = uint8_t((in[11] >> 12) & 7);
  }
  if (q.state == QpState::init && to == QpState::rtr) q.max_dest_rd_atomic = uint8_t(in[12] >> 8);
  if (q.state == QpState::rtr && to == QpState::rts) q.max_rd_atomic = uint8_t(in[12] & 0xFF);
  const QpState from = q.state;
  q.state = to;
  on_qp_state(in[0], from, to);
  return {};
}

CommandUnit::Result CommandUnit::query_qp(const In& in, Out& out) {
  if (!qp_.qp_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  const QpContext& q = qp_.qps[in[0]];
  out = {uint32_t(q.state), uint32_t(q.type), q.pdn, q.send_cqn, q.recv_cqn, q.log_sq_size, q.log_rq_size,
         q.dest_qpn, q.sq_psn, q.rq_psn, q.path_mtu, q.access, q.qkey};
  return {};
}

CommandUnit::Result CommandUnit::destroy_qp(const In& in) {
  if (!qp_.qp_exists(in[0])) return fail(kBadResource, 0, kUnknownObject);
  const QpState from = qp_.qps[in[0]].state;
  qp_.qps[in[0]] = QpContext{};
  on_qp_state(in[0], from, QpState::reset);
  return {};
}

void CommandUnit::cq_control(const CqControl& c) {
  m_ctl.push_held(c);
  sc_core::wait(control_done_);
}

}  // namespace vhca
