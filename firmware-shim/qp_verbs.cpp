#include "firmware-shim/qp_verbs.h"

#include <algorithm>
#include <cerrno>
#include <iterator>

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

void unmap_rings(Qp& qp) {
  HostMemory& memory = qp.pd->dev->memory();
  memory.unmap(qp.sq_base, uint64_t(sqwqe::kSize) * qp.sq_depth);
  if (qp.rq_depth) memory.unmap(qp.rq_base, uint64_t(rqwqe::kSize) * qp.rq_depth);
  memory.unmap(qp.dbr, 64);
}

}  // namespace

int alloc_pd(Driver& dev, Pd** out) {
  CommandResult r = dev.exec(cmd::kAllocPd);
  if (!r.ok()) return fail(dev, command_errno(r), "alloc_pd: " + r.message());
  *out = dev.own(std::make_unique<Pd>(Pd{&dev, r.out[0]}));
  return 0;
}

int dealloc_pd(Pd* pd) {
  CommandResult r = pd->dev->exec(cmd::kDeallocPd, {pd->pdn});
  if (!r.ok()) return fail(*pd->dev, command_errno(r), "dealloc_pd: " + r.message());
  pd->dev->free_owned(pd);
  return 0;
}

int reg_mr(Pd& pd, uint64_t addr, uint64_t length, uint32_t access, Mr** out, const uint64_t* host_address) {
  const uint64_t pa = host_address ? *host_address : 0;
  CommandResult r = pd.dev->exec(cmd::kRegMr, {pd.pdn, uint32_t(addr >> 32), uint32_t(addr), uint32_t(length >> 32),
                                               uint32_t(length), access | (host_address ? kRegMrTranslated : 0),
                                               uint32_t(pa >> 32), uint32_t(pa)});
  if (!r.ok()) return fail(*pd.dev, command_errno(r), "reg_mr: " + r.message());
  *out = pd.dev->own(std::make_unique<Mr>(Mr{&pd, addr, length, access, r.out[0], r.out[1]}));
  return 0;
}

int dereg_mr(Mr* mr) {
  CommandResult r = mr->pd->dev->exec(cmd::kDeregMr, {mr->lkey});
  if (!r.ok()) return fail(*mr->pd->dev, command_errno(r), "dereg_mr: " + r.message());
  mr->pd->dev->free_owned(mr);
  return 0;
}

uint8_t wq_log_size(uint32_t wrs) { return log2_at_least(wrs); }

int create_qp(Pd& pd, const QpInitAttr& attr, Qp** out) {
  Driver& dev = *pd.dev;
  *out = nullptr;
  if (!attr.send_cq || !attr.recv_cq) return fail(dev, EINVAL, "create_qp: a send and a receive CQ are required");
  if (attr.max_send_wr < 1 || attr.max_send_wr > 32768 || (!attr.srq && (attr.max_recv_wr < 1 || attr.max_recv_wr > 32768)))
    return fail(dev, EINVAL, "create_qp: max_send_wr and max_recv_wr (without an SRQ) must be in 1..32768");
  Qp* qp = dev.own(std::make_unique<Qp>());
  qp->pd = &pd;
  qp->type = attr.type;
  qp->send_cq = attr.send_cq;
  qp->recv_cq = attr.recv_cq;
  const bool on_srq = attr.srq != nullptr;
  const uint8_t log_sq = wq_log_size(attr.max_send_wr), log_rq = on_srq ? 0 : wq_log_size(attr.max_recv_wr);
  qp->srq = attr.srq;
  qp->sq_depth = 1u << log_sq;
  qp->rq_depth = on_srq ? 0 : 1u << log_rq;
  qp->sq_sig_all = attr.sq_sig_all;
  qp->user_memory = attr.user_sq && attr.user_dbr && (attr.user_rq || on_srq);
  qp->sq_base = qp->user_memory ? attr.user_sq : dev.memory().allocate(uint64_t(sqwqe::kSize) << log_sq);
  qp->rq_base = on_srq ? 0 : qp->user_memory ? attr.user_rq : dev.memory().allocate(uint64_t(rqwqe::kSize) << log_rq);
  qp->dbr = qp->user_memory ? attr.user_dbr : dev.memory().allocate(64, 64);
  CommandResult r =
      dev.exec(cmd::kCreateQp, {uint32_t(attr.type), pd.pdn, attr.send_cq->cqn, attr.recv_cq->cqn, log_sq, log_rq,
                                uint32_t(qp->sq_base >> 32), uint32_t(qp->sq_base), uint32_t(qp->rq_base >> 32),
                                uint32_t(qp->rq_base), uint32_t(qp->dbr >> 32), uint32_t(qp->dbr),
                                on_srq ? (1u << 31) | attr.srq->srqn : 0u});
  if (!r.ok()) {
    if (!qp->user_memory) unmap_rings(*qp);
    dev.free_owned(qp);
    return fail(dev, command_errno(r), "create_qp: " + r.message());
  }
  qp->qpn = r.out[0];
  dev.attach(qp);
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
                              uint32_t(a.max_rd_atomic) | uint32_t(a.max_dest_rd_atomic) << 8, a.dlid});
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
  dev.detach(qp);
  if (!qp->user_memory) unmap_rings(*qp);
  dev.free_owned(qp);
  return 0;
}

namespace {

// Builds the WQE in `w` and writes it to the ring; an inline WR's data is gathered by the CPU.
void write_send_wqe(Qp& qp, const SendWr& wr, uint16_t index, uint8_t (&w)[sqwqe::kSize]) {
  Driver& dev = *qp.pd->dev;
  uint8_t gathered[sqwqe::kMaxInline];
  if (wr.flags & kSendInline) {
    uint32_t off = 0;
    for (const Sge& s : wr.sg_list) {
      dev.cpu().read(s.addr, gathered + off, s.length);
      off += s.length;
    }
  }
  queue_format::encode_send_wqe(w, wr, qp.qpn, qp.sq_sig_all || (wr.flags & kSendSignaled), index, gathered);
  dev.cpu().write(qp.sq_base + uint64_t(index & (qp.sq_depth - 1)) * sqwqe::kSize, w, sqwqe::kSize);
}

void write_recv_wqe(Qp& qp, const RecvWr& wr, uint16_t index) {
  uint8_t w[rqwqe::kSize];
  queue_format::encode_recv_wqe(w, wr, index);
  qp.pd->dev->cpu().write(qp.rq_base + uint64_t(index & (qp.rq_depth - 1)) * rqwqe::kSize, w, rqwqe::kSize);
}

// The doorbell record first, then (for the SQ) the MMIO doorbell: the device may read the
// record at any time and must never see a counter ahead of the WQEs. With `blueflame` (one WQE
// posted, as mlx5's provider does for a single inline WR) the doorbell is the WQE itself, written
// whole through the doorbell page (write-combined: one posted write), so the device need not
// fetch it.
void ring_doorbell(Qp& qp, bool sq, bool mmio, const uint8_t* blueflame = nullptr) {
  Driver& dev = *qp.pd->dev;
  uint8_t rec[qpdbr::kSize];
  dev.cpu().read(qp.dbr, rec, qpdbr::kSize);
  put_field(rec, sq ? qpdbr::sq_pi : qpdbr::rq_pi, sq ? qp.sq_pi : qp.rq_pi);
  dev.cpu().write(qp.dbr, rec, qpdbr::kSize);
  if (!mmio) return;
  if (blueflame) {
    dev.cpu().mmio_write_block(dev.doorbells().sq_bf, blueflame, sqwqe::kSize);
    return;
  }
  const uint64_t v = queue_format::wq_doorbell(qp.qpn, sq ? qp.sq_pi : qp.rq_pi);
  dev.cpu().mmio_write64(sq ? dev.doorbells().sq : dev.doorbells().rq, v);
}

// Whether a work queue has no free slot for the next WQE. One that looks full while WQE charges
// are owed is looked at again once they are paid: the consumer index the pollers advance
// (note_completion) is then read at the instant a charge apiece would have read it. (Looking not
// full needs no payment: the index only moves on, so it stays not full.)
template <typename ConsumerIndex>
bool queue_full(PieceCharges& building, ConsumerIndex ci, uint16_t pi, uint32_t depth) {
  if (uint16_t(pi - ci()) < depth) return false;
  building.pay();
  return uint16_t(pi - ci()) >= depth;
}

}  // namespace

int post_send(Qp& qp, const std::vector<SendWr>& wrs, size_t* bad) {
  Driver& dev = *qp.pd->dev;
  uint8_t wqe[sqwqe::kSize];
  size_t posted = 0;
  int rc = 0;
  if (qp.state == QpState::reset || qp.state == QpState::init || qp.state == QpState::rtr) {
    rc = fail(dev, EINVAL, fmt::format("post_send: QP {:#x} is in {}: its send queue is not active", qp.qpn,
                                       qp_state_name(qp.state)));
  } else {
    // Each WQE's cost is charged after it is built; the device sees none of them before the
    // doorbell, so the charges wait once, before anything the program or the device sees.
    PieceCharges building(dev.cpu(), CpuContext::app, dev.cpu().config().post_wr_cost);
    for (const SendWr& wr : wrs) {
      const std::string problem = queue_format::send_wr_problem(qp.type, wr);
      if (!problem.empty()) {
        building.pay();
        rc = fail(dev, EINVAL, fmt::format("post_send: QP {:#x} WR {:#x}: {}", qp.qpn, wr.wr_id, problem));
        break;
      }
      if (queue_full(building, [&] { return qp.sq_ci; }, qp.sq_pi, qp.sq_depth)) {
        rc = fail(dev, ENOMEM, fmt::format("post_send: QP {:#x} send queue full ({} WQEs)", qp.qpn, qp.sq_depth));
        break;
      }
      if (wr.flags & kSendInline) building.pay();  // it reads its data from host memory
      write_send_wqe(qp, wr, qp.sq_pi, wqe);
      ++qp.sq_pi;
      ++posted;
      building.add();
    }
    building.pay();
  }
  const bool blueflame = dev.config().blueflame && posted == 1 && (wrs.front().flags & kSendInline);
  if (posted) ring_doorbell(qp, true, true, blueflame ? wqe : nullptr);
  if (bad) *bad = posted;
  return rc;
}

int post_recv(Qp& qp, const std::vector<RecvWr>& wrs, size_t* bad) {
  Driver& dev = *qp.pd->dev;
  size_t posted = 0;
  int rc = 0;
  if (qp.state == QpState::reset) {
    rc = fail(dev, EINVAL, fmt::format("post_recv: QP {:#x} is in RESET", qp.qpn));
  } else {
    PieceCharges building(dev.cpu(), CpuContext::app, dev.cpu().config().post_wr_cost);  // as post_send's
    for (const RecvWr& wr : wrs) {
      if (wr.sg_list.size() > rqwqe::kMaxSge) {
        building.pay();
        rc = fail(dev, EINVAL, fmt::format("post_recv: QP {:#x} WR {:#x}: {} scatter entries exceed {}", qp.qpn,
                                           wr.wr_id, wr.sg_list.size(), rqwqe::kMaxSge));
        break;
      }
      if (queue_full(building, [&] { return qp.rq_ci; }, qp.rq_pi, qp.rq_depth)) {
        rc = fail(dev, ENOMEM, fmt::format("post_recv: QP {:#x} receive queue full ({} WQEs)", qp.qpn, qp.rq_depth));
        break;
      }
      write_recv_wqe(qp, wr, qp.rq_pi);
      ++qp.rq_pi;
      ++posted;
      building.add();
    }
    building.pay();
  }
  // A QP in error learns of new receive WQEs only through the MMIO doorbell (to flush them).
  if (posted) ring_doorbell(qp, false, dev.config().rq_doorbell_mmio || qp.state == QpState::err);
  if (bad) *bad = posted;
  return rc;
}

int create_srq(Pd& pd, const SrqInitAttr& attr, Srq** out) {
  Driver& dev = *pd.dev;
  *out = nullptr;
  if (attr.max_wr < 1 || attr.max_wr > 32768) return fail(dev, EINVAL, "create_srq: max_wr must be in 1..32768");
  const uint8_t log_size = wq_log_size(attr.max_wr);
  Srq* srq = dev.own(std::make_unique<Srq>());
  srq->pd = &pd;
  srq->depth = 1u << log_size;
  srq->user_memory = attr.user_ring && attr.user_dbr;
  srq->base = srq->user_memory ? attr.user_ring : dev.memory().allocate(uint64_t(rqwqe::kSize) << log_size);
  srq->dbr = srq->user_memory ? attr.user_dbr : dev.memory().allocate(64, 64);
  CommandResult r = dev.exec(cmd::kCreateSrq, {pd.pdn, log_size, uint32_t(srq->base >> 32), uint32_t(srq->base),
                                               uint32_t(srq->dbr >> 32), uint32_t(srq->dbr), attr.limit});
  if (!r.ok()) {
    if (!srq->user_memory) {
      dev.memory().unmap(srq->base, uint64_t(rqwqe::kSize) * srq->depth);
      dev.memory().unmap(srq->dbr, 64);
    }
    dev.free_owned(srq);
    return fail(dev, command_errno(r), "create_srq: " + r.message());
  }
  srq->srqn = r.out[0];
  *out = srq;
  return 0;
}

int destroy_srq(Srq* srq) {
  Driver& dev = *srq->pd->dev;
  CommandResult r = dev.exec(cmd::kDestroySrq, {srq->srqn});
  if (!r.ok()) return fail(dev, command_errno(r), "destroy_srq: " + r.message());
  if (!srq->user_memory) {
    dev.memory().unmap(srq->base, uint64_t(rqwqe::kSize) * srq->depth);
    dev.memory().unmap(srq->dbr, 64);
  }
  dev.free_owned(srq);
  return 0;
}

int arm_srq(Srq& srq, uint16_t limit) {
  Driver& dev = *srq.pd->dev;
  CommandResult r = dev.exec(cmd::kArmSrq, {srq.srqn, limit});
  return r.ok() ? 0 : fail(dev, command_errno(r), "arm_srq: " + r.message());
}

int query_srq(Srq& srq, uint16_t& limit) {
  Driver& dev = *srq.pd->dev;
  CommandResult r = dev.exec(cmd::kQuerySrq, {srq.srqn});
  if (!r.ok()) return fail(dev, command_errno(r), "query_srq: " + r.message());
  limit = uint16_t(r.out[2]);
  return 0;
}

int post_srq_recv(Srq& srq, const std::vector<RecvWr>& wrs, size_t* bad) {
  Driver& dev = *srq.pd->dev;
  size_t posted = 0;
  int rc = 0;
  PieceCharges building(dev.cpu(), CpuContext::app, dev.cpu().config().post_wr_cost);  // as post_send's
  for (const RecvWr& wr : wrs) {
    if (wr.sg_list.size() > rqwqe::kMaxSge) {
      building.pay();
      rc = fail(dev, EINVAL, fmt::format("post_srq_recv: SRQ {} WR {:#x}: {} scatter entries exceed {}", srq.srqn,
                                         wr.wr_id, wr.sg_list.size(), rqwqe::kMaxSge));
      break;
    }
    if (queue_full(building, [&] { return srq.ci; }, srq.pi, srq.depth)) {
      rc = fail(dev, ENOMEM, fmt::format("post_srq_recv: SRQ {} full ({} WQEs)", srq.srqn, srq.depth));
      break;
    }
    uint8_t w[rqwqe::kSize];
    queue_format::encode_recv_wqe(w, wr, srq.pi);
    dev.cpu().write(srq.base + uint64_t(srq.pi & (srq.depth - 1)) * rqwqe::kSize, w, rqwqe::kSize);
    ++srq.pi;
    ++posted;
    building.add();
  }
  building.pay();
  if (posted) {
    uint8_t rec[qpdbr::kSize] = {};
    put_field(rec, qpdbr::rq_pi, srq.pi);
    dev.cpu().write(srq.dbr, rec, qpdbr::kSize);
  }
  if (bad) *bad = posted;
  return rc;
}

void note_completion(Driver& dev, const Wc& wc) {
  Qp* qp = dev.find_qp(wc.qpn);
  if (!qp) return;
  const bool is_send = queue_format::is_send_completion(wc);
  if (is_send)
    qp->sq_ci = uint16_t(wc.wqe_counter + 1);  // this WQE and every unsignaled one before it
  else if (qp->srq)
    qp->srq->ci = uint16_t(wc.wqe_counter + 1);  // the SRQ's WQEs are consumed in order
  else
    ++qp->rq_ci;
  if (wc.status == 0) return;
  // An error CQE tells the driver what the device did: an RC QP is in ERR, and so is a UC QP whose
  // receive failed; a UC or datagram QP whose send failed is in SQE (its receive queue goes on).
  if (qp->type == QpType::rc || (qp->type == QpType::uc && !is_send))
    qp->state = QpState::err;
  else if (is_send && qp->state != QpState::err)
    qp->state = QpState::sqe;
}

}  // namespace vhca::verbs
