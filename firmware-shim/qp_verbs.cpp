#include "firmware-shim/qp_verbs.h"

#include <cerrno>

#include "firmware-shim/verbs_util.h"

#include "model/common/log.h"
#include "tlm/host_memory.h"

namespace vhca::verbs {
namespace {

using detail::command_errno;
using detail::fail;
using detail::log2_at_least;

// S15: a CQ should hold every CQE its work queues can produce at once.
void advise_cq_size(Driver& dev, Cq& cq) {
  if (cq.wq_depth > cq.cqe)
    dev.warn(fmt::format("CQ {} has {} entries but its work queues can hold {} requests: it may overflow (S15)", cq.cqn,
                         cq.cqe, cq.wq_depth));
}

}  // namespace

int alloc_pd(Driver& dev, Pd** out) {
  CommandResult r = dev.exec(cmd::kAllocPd);
  if (!r.ok()) return fail(dev, command_errno(r), "alloc_pd: " + r.message());
  *out = new Pd{&dev, r.out[0]};
  return 0;
}

int dealloc_pd(Pd* pd) {
  CommandResult r = pd->dev->exec(cmd::kDeallocPd, {pd->pdn});
  if (!r.ok()) return fail(*pd->dev, command_errno(r), "dealloc_pd: " + r.message());
  delete pd;
  return 0;
}

int reg_mr(Pd& pd, uint64_t addr, uint64_t length, uint32_t access, Mr** out) {
  CommandResult r = pd.dev->exec(cmd::kRegMr, {pd.pdn, uint32_t(addr >> 32), uint32_t(addr), uint32_t(length >> 32),
                                               uint32_t(length), access});
  if (!r.ok()) return fail(*pd.dev, command_errno(r), "reg_mr: " + r.message());
  *out = new Mr{&pd, addr, length, access, r.out[0], r.out[1]};
  return 0;
}

int dereg_mr(Mr* mr) {
  CommandResult r = mr->pd->dev->exec(cmd::kDeregMr, {mr->lkey});
  if (!r.ok()) return fail(*mr->pd->dev, command_errno(r), "dereg_mr: " + r.message());
  delete mr;
  return 0;
}

int create_qp(Pd& pd, const QpInitAttr& attr, Qp** out) {
  Driver& dev = *pd.dev;
  *out = nullptr;
  if (!attr.send_cq || !attr.recv_cq) return fail(dev, EINVAL, "create_qp: a send and a receive CQ are required");
  if (attr.max_send_wr < 1 || attr.max_send_wr > 32768 || attr.max_recv_wr < 1 || attr.max_recv_wr > 32768)
    return fail(dev, EINVAL, "create_qp: max_send_wr and max_recv_wr must be in 1..32768");
  auto* qp = new Qp;
  qp->pd = &pd;
  qp->type = attr.type;
  qp->send_cq = attr.send_cq;
  qp->recv_cq = attr.recv_cq;
  const uint8_t log_sq = log2_at_least(attr.max_send_wr), log_rq = log2_at_least(attr.max_recv_wr);
  qp->sq_depth = 1u << log_sq;
  qp->rq_depth = 1u << log_rq;
  qp->sq_base = dev.memory().allocate(uint64_t(64) << log_sq);
  qp->rq_base = dev.memory().allocate(uint64_t(64) << log_rq);
  qp->dbr = dev.memory().allocate(64, 64);
  CommandResult r =
      dev.exec(cmd::kCreateQp, {uint32_t(attr.type), pd.pdn, attr.send_cq->cqn, attr.recv_cq->cqn, log_sq, log_rq,
                                uint32_t(qp->sq_base >> 32), uint32_t(qp->sq_base), uint32_t(qp->rq_base >> 32),
                                uint32_t(qp->rq_base), uint32_t(qp->dbr >> 32), uint32_t(qp->dbr)});
  if (!r.ok()) {
    dev.memory().unmap(qp->sq_base, uint64_t(64) << log_sq);
    dev.memory().unmap(qp->rq_base, uint64_t(64) << log_rq);
    dev.memory().unmap(qp->dbr, 64);
    delete qp;
    return fail(dev, command_errno(r), "create_qp: " + r.message());
  }
  qp->qpn = r.out[0];
  qp->send_cq->wq_depth += qp->sq_depth;
  qp->recv_cq->wq_depth += qp->rq_depth;
  advise_cq_size(dev, *qp->send_cq);
  if (qp->recv_cq != qp->send_cq) advise_cq_size(dev, *qp->recv_cq);
  *out = qp;
  return 0;
}

int modify_qp(Qp& qp, const QpAttr& a) {
  Driver& dev = *qp.pd->dev;
  CommandResult r = dev.exec(cmd::kModifyQp,
                             {qp.qpn, uint32_t(a.cur_state), uint32_t(a.new_state), a.pkey_index, a.qkey, a.access,
                              a.dest_qpn, a.rq_psn, a.path_mtu, a.min_rnr_timer, a.sq_psn,
                              uint32_t(a.timeout) | uint32_t(a.retry_cnt) << 8 | uint32_t(a.rnr_retry) << 12,
                              uint32_t(a.max_rd_atomic) | uint32_t(a.max_dest_rd_atomic) << 8});
  if (!r.ok()) return fail(dev, command_errno(r), "modify_qp: " + r.message());
  qp.state = a.new_state;
  return 0;
}

int query_qp(Qp& qp, QpAttr& a) {
  Driver& dev = *qp.pd->dev;
  CommandResult r = dev.exec(cmd::kQueryQp, {qp.qpn});
  if (!r.ok()) return fail(dev, command_errno(r), "query_qp: " + r.message());
  a = QpAttr{};
  a.cur_state = a.new_state = QpState(r.out[0]);
  a.dest_qpn = r.out[7];
  a.sq_psn = r.out[8];
  a.rq_psn = r.out[9];
  a.path_mtu = uint8_t(r.out[10]);
  a.access = r.out[11];
  a.qkey = r.out[12];
  qp.state = a.cur_state;
  return 0;
}

int destroy_qp(Qp* qp) {
  Driver& dev = *qp->pd->dev;
  CommandResult r = dev.exec(cmd::kDestroyQp, {qp->qpn});
  if (!r.ok()) return fail(dev, command_errno(r), "destroy_qp: " + r.message());
  qp->send_cq->wq_depth -= qp->sq_depth;
  qp->recv_cq->wq_depth -= qp->rq_depth;
  dev.memory().unmap(qp->sq_base, uint64_t(64) * qp->sq_depth);
  dev.memory().unmap(qp->rq_base, uint64_t(64) * qp->rq_depth);
  dev.memory().unmap(qp->dbr, 64);
  delete qp;
  return 0;
}

}  // namespace vhca::verbs
