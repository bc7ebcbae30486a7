#include "firmware-shim/verbs.h"

#include "firmware-shim/qp_verbs.h"

#include <cerrno>

#include "firmware-shim/verbs_util.h"

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/regs/tables.h"
#include "tlm/host_memory.h"

namespace vhca::verbs {
namespace {

using detail::command_errno;
using detail::fail;
using detail::log2_at_least;

// A fresh CQ buffer: every entry INVALID with owner 1, so nothing is valid on the first pass.
uint64_t alloc_cq_buffer(Driver& dev, uint8_t log_size) {
  uint64_t buf = dev.memory().allocate(uint64_t(cqe::kSize) << log_size);
  // Every entry pre-filled with opcode INVALID and owner 1, written a page at a time from one
  // pre-filled page (every entry alike).
  static const std::vector<uint8_t> page = [] {
    std::vector<uint8_t> p(HostMemory::kPageSize);
    queue_format::prefill_cqes(p.data(), p.size());
    return p;
  }();
  const uint64_t len = uint64_t(cqe::kSize) << log_size;
  for (uint64_t at = 0; at < len; at += page.size())
    dev.cpu().write(buf + at, page.data(), uint32_t(std::min<uint64_t>(page.size(), len - at)));
  return buf;
}

const uint8_t* cqe_at(Cq& cq, uint32_t index, uint8_t* buf) {
  cq.dev->cpu().read(cq.buf + uint64_t(index & (cq.cqe - 1)) * cqe::kSize, buf, cqe::kSize);
  return buf;
}

bool valid(const Cq& cq, const uint8_t* e, uint32_t index) { return queue_format::cqe_valid(e, index, cq.log_size); }

// The first index from cq.ci whose entry is not yet valid (scans at most the whole CQ).
uint32_t first_invalid(Cq& cq, uint32_t limit) {
  uint8_t e[cqe::kSize];
  uint32_t i = 0;
  while (i < limit && valid(cq, cqe_at(cq, cq.ci + i, e), (cq.ci + i) & kIndexMask)) ++i;
  return i;
}

void write_consumer_index(Cq& cq) {
  uint8_t rec[4] = {};
  put_field(rec, dbr::consumer_index, cq.ci);
  cq.dev->cpu().write(cq.dbr, rec, 4);
}

}  // namespace

uint8_t cq_log_size(int min_cqe) { return log2_at_least(uint32_t(std::max(min_cqe, 1))); }

namespace {

// The CQ's ring and doorbell record, unless they are a program's. (The record's page was kept
// after a destroy until the MMIO fuzz target, which makes and destroys a CQ per input, showed host
// memory growing by a page a CQ.)
void release_cq_memory(Cq& cq) {
  if (cq.user_memory) return;
  cq.dev->memory().unmap(cq.buf, uint64_t(cqe::kSize) << cq.log_size);
  cq.dev->memory().unmap(cq.dbr, 64);
}

}  // namespace

void abandon_cq(Cq* cq) {
  Driver& dev = *cq->dev;
  dev.detach(cq);
  release_cq_memory(*cq);
  dev.free_owned(cq);
}

int create_cq(Driver& dev, int min_cqe, uint32_t comp_vector, Cq** out, const CqModeration& mod,
              uint32_t create_flags, const UserCqMemory* user) {
  *out = nullptr;
  if (!dev.booted()) return fail(dev, ENODEV, "create_cq: the device is not booted");
  if (min_cqe < 1) return fail(dev, EINVAL, fmt::format("create_cq: size {} is below 1", min_cqe));
  if (comp_vector >= dev.num_comp_vectors())
    return fail(dev, EINVAL, fmt::format("create_cq: completion vector {} does not exist ({} vectors)", comp_vector,
                                         dev.num_comp_vectors()));
  const uint8_t log_size = cq_log_size(min_cqe);
  if (log_size > dev.caps().log_max_cq_sz)
    return fail(dev, EINVAL, fmt::format("create_cq: size {} is above the device maximum {}", min_cqe,
                                         1u << dev.caps().log_max_cq_sz));
  Cq* cq = dev.own(std::make_unique<Cq>());
  cq->dev = &dev;
  cq->log_size = log_size;
  cq->cqe = 1u << log_size;
  cq->comp_vector = comp_vector;
  cq->user_memory = user != nullptr;
  cq->buf = user ? user->buf : alloc_cq_buffer(dev, log_size);
  cq->dbr = user ? user->dbr : dev.memory().allocate(64, 64);
  uint32_t flags = create_flags | (mod.mode == PeriodMode::cqe ? cmd::kCqFlagPeriodModeCqe : 0);
  CommandResult r = dev.exec(cmd::kCreateCq, {log_size, uint32_t(cq->buf >> 32), uint32_t(cq->buf),
                                              uint32_t(cq->dbr >> 32), uint32_t(cq->dbr), dev.eqn_for_vector(comp_vector),
                                              mod.count, mod.period_us, flags});
  if (!r.ok()) {
    release_cq_memory(*cq);
    dev.free_owned(cq);
    return fail(dev, command_errno(r), "create_cq: " + r.message());
  }
  cq->cqn = r.out[0];
  dev.attach(cq);
  *out = cq;
  return 0;
}

int query_cq(Cq& cq, CqInfo& info) {
  CommandResult r = cq.dev->exec(cmd::kQueryCq, {cq.cqn});
  if (!r.ok()) return fail(*cq.dev, command_errno(r), "query_cq: " + r.message());
  info.cqe = 1u << r.out[0];
  info.producer_index = r.out[1];
  info.state = r.out[3];
  info.moderation = CqModeration{uint16_t(r.out[5]), uint16_t(r.out[6]),
                                 (r.out[7] & cmd::kCqFlagPeriodModeCqe) ? PeriodMode::cqe : PeriodMode::eqe};
  return 0;
}

int resize_cq(Cq& cq, int min_cqe) {
  Driver& dev = *cq.dev;
  if (!(dev.caps().flags & kCapResize)) return fail(dev, EOPNOTSUPP, "resize_cq: the device cannot resize CQs");
  if (min_cqe < 1) return fail(dev, EINVAL, fmt::format("resize_cq: size {} is below 1", min_cqe));
  const uint8_t log_size = log2_at_least(uint32_t(min_cqe));
  if (log_size > dev.caps().log_max_cq_sz)
    return fail(dev, EINVAL, fmt::format("resize_cq: size {} is above the device maximum", min_cqe));
  const uint64_t buf = alloc_cq_buffer(dev, log_size);
  CommandResult r = dev.exec(cmd::kModifyCq, {cq.cqn, cmd::kModifySelectResize, 0, 0, 0, log_size,
                                              uint32_t(buf >> 32), uint32_t(buf)});
  if (!r.ok()) {
    dev.memory().unmap(buf, uint64_t(cqe::kSize) << log_size);
    return fail(dev, r.status == cmd::kBadSize ? EINVAL : command_errno(r), "resize_cq: " + r.message());
  }
  dev.memory().unmap(cq.buf, uint64_t(cqe::kSize) << cq.log_size);
  cq.buf = buf;
  cq.log_size = log_size;
  cq.cqe = 1u << log_size;
  return int(cq.cqe);
}

int destroy_cq(Cq* cq) {
  Driver& dev = *cq->dev;
  CommandResult r = dev.exec(cmd::kDestroyCq, {cq->cqn});
  if (!r.ok()) return fail(dev, command_errno(r), "destroy_cq: " + r.message());
  abandon_cq(cq);
  return 0;
}

void set_comp_handler(Cq& cq, std::function<void(Cq&)> handler, bool quiet) {
  cq.comp_handler = std::move(handler);
  cq.comp_handler_quiet = quiet && cq.comp_handler;
}

int poll_cq(Cq& cq, int n, Wc* wc, CpuContext ctx) {
  HostCpu& cpu = cq.dev->cpu();
  uint8_t e[cqe::kSize];
  int got = 0;
  while (got < n && valid(cq, cqe_at(cq, cq.ci, e), cq.ci)) {
    wc[got] = queue_format::parse_cqe(e);
    note_completion(*cq.dev, wc[got++]);
    cq.ci = (cq.ci + 1) & kIndexMask;
  }
  if (got) {
    write_consumer_index(cq);
    cpu.charge(ctx, cpu.config().cqe_cost * double(got));
  } else {
    cpu.charge(ctx, cpu.config().empty_poll_cost);
  }
  return got;
}

int req_notify_cq(Cq& cq, uint32_t flags, CpuContext ctx) {
  if (flags & ~uint32_t(kNotifySolicited | kReportMissedEvents))
    return fail(*cq.dev, EINVAL, fmt::format("req_notify_cq: unknown flags {:#x}", flags));
  // Arm with the index of the first entry not yet written: CQEs already present do not raise an
  // event (S9); one written after this scan but before the doorbell lands does, at once.
  const uint32_t present = first_invalid(cq, cq.cqe);
  const uint32_t seen = (cq.ci + present) & kIndexMask;
  const uint32_t cmd = (flags & kNotifySolicited) ? 1 : 0;
  uint8_t rec[dbr::kSize];
  cq.dev->cpu().read(cq.dbr, rec, dbr::kSize);
  queue_format::put_arm_word(rec, seen, cmd, cq.arm_sn);
  cq.dev->cpu().write(cq.dbr, rec, dbr::kSize);
  const uint64_t db = queue_format::arm_doorbell(cq.cqn, seen, cmd, cq.arm_sn);
  cq.dev->cpu().mmio_write64(cq.dev->doorbells().cq_arm, db, ctx);
  return (flags & kReportMissedEvents) && present > 0 ? 1 : 0;
}

int modify_cq(Cq& cq, const CqModeration& mod) {
  CommandResult r = cq.dev->exec(cmd::kModifyCq, {cq.cqn, cmd::kModifySelectModeration, mod.count, mod.period_us,
                                                  mod.mode == PeriodMode::cqe ? cmd::kCqFlagPeriodModeCqe : 0u});
  if (!r.ok()) return fail(*cq.dev, command_errno(r), "modify_cq: " + r.message());
  return 0;
}

int peek_cq(Cq& cq, int n) {
  if (n < 0) return fail(*cq.dev, EINVAL, "peek_cq: negative count");
  return int(first_invalid(cq, std::min<uint32_t>(uint32_t(n), cq.cqe)));
}

}  // namespace vhca::verbs
