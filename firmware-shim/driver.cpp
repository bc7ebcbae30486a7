#include "firmware-shim/driver.h"

#include "firmware-shim/qp_verbs.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include "firmware-shim/verbs.h"
#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/common/sim_now.h"
#include "model/eq/eq_engine.h"
#include "tlm/host_memory.h"
#include "tlm/msi_sink.h"

namespace vhca {

std::string CommandResult::message() const {
  if (timed_out) return "command timed out (device did not clear the ownership bit)";
  if (status == cmd::kOk) return "OK";
  return fmt::format("{}: {}", cmd::status_name(status), cmd::describe_failure(syndrome));
}

void Driver::log_warning(const std::string& w) { log::write(log::Cat::drv, "warning: {}", w); }

Driver::Driver(HostCpu& cpu, HostMemory& memory, const DriverConfig& cfg)
    : cpu_(cpu),
      memory_(memory),
      cfg_(cfg),
      doorbells_{offset_of(reg::eq_db_arm, cfg.uar), offset_of(reg::cq_arm_db, cfg.uar), offset_of(reg::sq_db, cfg.uar),
                 offset_of(reg::rq_db, cfg.uar), offset_of(reg::sq_bf, cfg.uar)} {
  cmd_wake_ |= cmd_reply_;
  cmd_wake_ |= cmd_timeout_.near_event();
  cmd_wake_ |= cmd_timeout_.far_event();
}

uint64_t Driver::offset_of(const char* name, uint32_t index) {
  // Doorbells look their offsets up on every post and poll: the reg:: names are constants, so a
  // cache keyed by the name's address answers them without comparing strings.
  static std::unordered_map<const char*, const RegSpec*> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    const RegSpec* found = nullptr;
    for (const RegSpec& s : bar0_registers())
      if (std::strcmp(s.name, name) == 0) found = &s;
    if (!found) throw std::out_of_range(std::string("no register named ") + name);
    it = cache.emplace(name, found).first;
  }
  return it->second->offset + uint64_t(index) * it->second->stride;
}

uint32_t Driver::read_register(const char* name, uint32_t index) {
  uint32_t v = 0;
  if (!cpu_.mmio_read32(offset_of(name, index), v)) set_last_error(fmt::format("MMIO read of {} failed", name));
  return v;
}

CommandResult Driver::fail_local(const std::string& what) {
  last_error_ = what;
  log::error("driver: {}", what);
  CommandResult r;
  r.status = cmd::kInternalError;
  return r;
}

bool Driver::wait_ready() {
  const sc_core::sc_time deadline = sim_now() + cfg_.reset_timeout;
  while (sim_now() < deadline) {
    if (read_register(reg::health) & kHealthReady) return true;
    sc_core::wait(1, sc_core::SC_US);
  }
  return false;
}

CommandResult Driver::boot() {
  booted_ = false;
  cpu_.mmio_write32(offset_of(reg::reset), 1);
  sc_core::wait(1, sc_core::SC_US);
  if (!wait_ready()) return fail_local("device did not become ready after reset");
  const uint32_t version = read_register(reg::version);
  if (version >> 16 != kDeviceVersion >> 16)
    return fail_local(fmt::format("device interface version {:#x} is not major {}", version, kDeviceVersion >> 16));
  if (read_register(reg::health) & kHealthFatal) return fail_local("device reports a fatal error");
  if (read_register(reg::num_msix) < cfg_.num_comp_vectors + 1)
    return fail_local("device has fewer MSI-X vectors than completion vectors + 1");
  if (!cmd_block_) {
    cmd_block_ = memory_.allocate(4096);
    memory_.watch(cmd_block_, cmdblk::kSize, [this] { reply_landed(); });
  }
  cpu_.mmio_write32(offset_of(reg::cmdq_addr_hi), uint32_t(cmd_block_ >> 32));
  cpu_.mmio_write32(offset_of(reg::cmdq_addr_lo), uint32_t(cmd_block_));

  CommandResult r = exec(cmd::kQueryCap);
  if (!r.ok()) return r;
  caps_ = DeviceCaps{r.out[0], r.out[1], r.out[2], r.out[3], r.out[4], r.out[5], r.out[6], r.out[7], r.out[8], r.out[9]};
  if ((r = exec(cmd::kInit)); !r.ok()) return r;

  // A boot after another (a driver recovering the device): the reset forgot the event queues of
  // the last boot; their rings are released here, as teardown does.
  for (const Eq& eq : eqs_) memory_.unmap(eq.base, (64ull << eq.log_size));
  eqs_.clear();
  comp_eqs_.clear();
  cqs_.clear();
  for (uint32_t v = 0; v <= cfg_.num_comp_vectors; ++v) program_msix(v);
  Eq async_eq;
  // Asynchronous events only: the driver polls its commands (decision 8), so it does not ask for
  // a command-completion EQE and the interrupt each would cost.
  if ((r = create_eq(0, cfg_.async_eq_log_size, kEqMaskAsync, async_eq)); !r.ok()) return r;
  async_eq_ = eqs_.size();
  eqs_.push_back(async_eq);
  for (uint32_t v = 1; v <= cfg_.num_comp_vectors; ++v) {
    Eq eq;
    if ((r = create_eq(v, cfg_.eq_log_size, kEqMaskCompletion, eq)); !r.ok()) return r;
    comp_eqs_.push_back(eqs_.size());
    eqs_.push_back(eq);
  }
  for (size_t i = 0; i < eqs_.size(); ++i) {
    cpu_.set_irq_handler(eqs_[i].vector, [this, i] { handle_eq(i); }, true);  // its first step reads the EQE: quiet
    cpu_.mmio_write32(doorbells_.eq_arm, eqs_[i].eqn << 24 | 0);  // arm with ci 0
  }
  booted_ = true;
  log::write(log::Cat::drv, "boot done: {} completion vectors, caps {:#x}", cfg_.num_comp_vectors, caps_.flags);
  return r;
}

CommandResult Driver::teardown() {
  CommandResult r = exec(cmd::kTeardown);
  if (r.ok()) {
    booted_ = false;
    cqs_.clear();
    for (const Eq& eq : eqs_) memory_.unmap(eq.base, (64ull << eq.log_size));
    eqs_.clear();
  }
  return r;
}

void Driver::program_msix(uint32_t v) {
  cpu_.mmio_write32(offset_of(reg::msix_addr_lo, v), uint32_t(MsiSink::kWindowBase));
  cpu_.mmio_write32(offset_of(reg::msix_addr_hi, v), uint32_t(MsiSink::kWindowBase >> 32));
  cpu_.mmio_write32(offset_of(reg::msix_data, v), v);  // host vector number = MSI-X index
  cpu_.mmio_write32(offset_of(reg::msix_ctrl, v), 0);  // unmask
}

CommandResult Driver::create_eq(uint32_t vector, uint8_t log_size, uint32_t mask, Eq& eq) {
  eq.base = memory_.allocate(64ull << log_size);
  eq.log_size = log_size;
  eq.vector = vector;
  uint8_t init[eqe::kSize] = {};
  put_field(init, eqe::owner, 1);  // initial owner 1: nothing valid on the first pass
  for (uint32_t i = 0; i < (1u << log_size); ++i) cpu_.write(eq.base + uint64_t(i) * eqe::kSize, init, eqe::kSize);
  CommandResult r = exec(cmd::kCreateEq, {log_size, uint32_t(eq.base >> 32), uint32_t(eq.base), vector, mask});
  eq.eqn = r.out[0];
  return r;
}

CommandResult Driver::exec(uint16_t opcode, const Input& in) {
  cmd_lock_.lock();
  uint8_t block[cmdblk::kSize] = {};
  put_field(block, cmdblk::opcode, opcode);
  put_field(block, cmdblk::token, ++token_);
  for (unsigned i = 0; i < in.size(); ++i) put_be32(block + cmdblk::input.byte + 4 * i, in[i]);
  put_field(block, cmdblk::ownership, 1);
  cpu_.write(cmd_block_, block, cmdblk::kSize);
  cpu_.mmio_write32(offset_of(reg::cmd_doorbell), 1);
  CommandResult r;
  // The driver polls the block every poll interval from the doorbell (decision 8), so it sees the
  // reply at the first poll at or after the device's write lands, and times out at the first poll
  // at or after the deadline. Rather than waking for every poll, the thread sleeps until that
  // poll (reply_landed() sets the wake-up when the write lands) or the deadline's, and counts the
  // polling time it spent.
  cmd_start_ = sim_now();
  cmd_polls_ = 0;
  const sc_core::sc_time deadline = cmd_start_ + cfg_.command_timeout;
  cpu_.begin_polling(CpuContext::app, cpu_.config().command_poll_interval);
  for (;;) {
    cpu_.read(cmd_block_, block, cmdblk::kSize);
    if (!get_field(block, cmdblk::ownership)) break;
    if (sim_now() >= deadline) {
      r.timed_out = true;
      break;
    }
    cmd_timeout_.arm(poll_time(poll_at_or_after(deadline)));
    cmd_waiting_ = true;
    sc_core::wait(cmd_wake_);
    cmd_waiting_ = false;
    cmd_timeout_.fired();
    const uint64_t poll = next_poll();
    const sc_core::sc_time at = poll_time(poll), now = sim_now();
    if (at > now) sc_core::wait(at - now);
    cmd_polls_ = poll;
  }
  cpu_.end_polling(cmd_polls_);
  if (!r.timed_out) {
    r.status = uint8_t(get_field(block, cmdblk::status));
    r.syndrome = uint32_t(get_field(block, cmdblk::syndrome));
    for (unsigned i = 0; i < r.out.size(); ++i) r.out[i] = get_be32(block + cmdblk::output.byte + 4 * i);
  }
  if (!r.ok()) {
    last_error_ = r.message();
    log::write(log::Cat::drv, "command {:#x} failed: {}", opcode, last_error_);
  }
  cmd_lock_.unlock();
  return r;
}

uint64_t Driver::poll_at_or_after(const sc_core::sc_time& t) const {
  return uint64_t(std::ceil((t - cmd_start_) / cpu_.config().command_poll_interval));
}

sc_core::sc_time Driver::poll_time(uint64_t poll) const {
  return cmd_start_ + cpu_.config().command_poll_interval * double(poll);
}

// The first poll after the last that found the block owned, at or after now.
uint64_t Driver::next_poll() const { return std::max(cmd_polls_ + 1, poll_at_or_after(sim_now())); }

// The device's write into the command block has landed (called as it lands). The waiting command
// is woken at the poll that will see it, not now and then again at that poll: one thread
// switch, at the same time as two.
void Driver::reply_landed() {
  if (!cmd_waiting_) return;
  const sc_core::sc_time at = poll_time(next_poll()), now = sim_now();
  cmd_reply_.notify(at > now ? at - now : sc_core::SC_ZERO_TIME);
}

// Re-read each affected CQ's arm sequence number from the device and call its handler, as if its
// event had arrived: the handler polls and re-arms, so no CQ is left silent.
void Driver::recover_eq_overrun(uint32_t eqn) {
  std::vector<uint32_t> affected;
  for (uint32_t cqn = 0; cqn < cqs_.size(); ++cqn)
    if (cqs_[cqn] && eqn_for_vector(cqs_[cqn]->comp_vector) == eqn) affected.push_back(cqn);
  ++eq_overruns_recovered_;
  for (uint32_t cqn : affected) {
    CommandResult r = exec(cmd::kQueryCq, {cqn});
    Cq* cq = find_cq(cqn);
    if (!r.ok() || !cq) continue;
    cq->arm_sn = uint8_t(r.out[8] & 3);
    if (cq->comp_handler) cq->comp_handler(*cq);
  }
}

void Driver::attach(Qp* qp) { qps_[qp->qpn] = qp; }
void Driver::detach(Qp* qp) { qps_.erase(qp->qpn); }
Qp* Driver::find_qp(uint32_t qpn) const {
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second;
}

void Driver::attach(Cq* cq) {
  if (cq->cqn >= cqs_.size()) cqs_.resize(std::max<size_t>(cq->cqn + 1, 2 * cqs_.size()));
  cqs_[cq->cqn] = cq;
}
void Driver::detach(Cq* cq) {
  if (cq->cqn < cqs_.size()) cqs_[cq->cqn] = nullptr;
}
Cq* Driver::find_cq(uint32_t cqn) const { return cqn < cqs_.size() ? cqs_[cqn] : nullptr; }

// Hard-IRQ handler of one EQ, a step per EQE (kernel work, firmware-shim/cpu_core.h): each step
// reads the EQE at the consumer index and charges its cost; the next step dispatches it, then
// reads the next. The step that finds no valid EQE updates the consumer index and re-arms in one
// doorbell (arm-once: the next EQE interrupts again). A reboot under the handler ends it.
void Driver::handle_eq(size_t index) {
  if (!booted_ || index >= eqs_.size()) return;  // a late interrupt from before a reboot is ignored
  Eq& eq = eqs_[index];
  uint8_t* e = eq.taken.data();
  cpu_.read(eq.base + uint64_t(eq.ci & ((1u << eq.log_size) - 1)) * eqe::kSize, e, eqe::kSize);
  if (get_field(e, eqe::owner) != ((eq.ci >> eq.log_size) & 1)) {
    cpu_.mmio_write32(doorbells_.eq_arm, eq.eqn << 24 | eq.ci, CpuContext::hardirq);
    return;
  }
  cpu_.charge(CpuContext::hardirq, cpu_.config().eqe_cost);
  eq.ci = (eq.ci + 1) & 0xFFFFFF;
  ++eqes_handled_;
  cpu_.then(
      [this, index] {
        if (!booted_ || index >= eqs_.size()) return;
        dispatch(eqs_[index].taken.data());
        handle_eq(index);
      },
      dispatch_quiet(e));
}

// Whether dispatching EQE `e` is quiet (CpuWork::next_quiet): a completion event whose CQ's handler
// is (or that has none), with no one observing completion events. A command's is ignored; an
// asynchronous event goes to the owner's handler (and an overrun starts a thread).
bool Driver::dispatch_quiet(const uint8_t* e) const {
  const uint8_t type = uint8_t(get_field(e, eqe::event_type));
  if (type == eqe::kCommandDone) return true;
  if (type != eqe::kCompletion || on_completion_event.registered()) return false;
  const Cq* cq = find_cq(uint32_t(get_field(e, eqe::cqn)));
  return !cq || !cq->comp_handler || cq->comp_handler_quiet;
}

void Driver::dispatch(const uint8_t* e) {
  const uint8_t type = uint8_t(get_field(e, eqe::event_type));
  const uint32_t cqn = uint32_t(get_field(e, eqe::cqn));
  if (type == eqe::kCompletion) {
    Cq* cq = find_cq(cqn);
    if (!cq) {
      log::write(log::Cat::drv, "completion event for unknown CQ {}", cqn);
      return;
    }
    cq->arm_sn = (cq->arm_sn + 1) & 3;  // the device expects the next arm with the next sn
    ++cq->events;
    on_completion_event(*cq, e);
    if (cq->comp_handler) cq->comp_handler(*cq);
    return;
  }
  if (type == eqe::kCommandDone) return;  // commands are polled
  AsyncEvent ev{type, cqn, uint8_t(get_field(e, eqe::syndrome)), get_field(e, eqe::data), nullptr};
  if (type == eqe::kEqOverrun) {
    // Completion events were lost: the CQs on that EQ may have fired without the driver seeing
    // it (their arm sequence numbers moved on). Recover outside the interrupt handler.
    const uint32_t eqn = uint32_t(ev.data);
    sc_core::sc_spawn([this, eqn] { recover_eq_overrun(eqn); }, sc_core::sc_gen_unique_name("eq_overrun"));
  }
  if (type == eqe::kCqError) {
    ev.cq = find_cq(cqn);
    if (ev.cq) ev.cq->in_error = true;
  }
  log::write(log::Cat::drv, "async event type {:#x} cqn {} syndrome {}", type, cqn, ev.syndrome);
  if (async_handler) async_handler(ev);
}

}  // namespace vhca
