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
  qp->sq_sig_all = attr.sq_sig_all;
  qp->sq_base = dev.memory().allocate(uint64_t(sqwqe::kSize) << log_sq);
  qp->rq_base = dev.memory().allocate(uint64_t(rqwqe::kSize) << log_rq);
  qp->dbr = dev.memory().allocate(64, 64);
  CommandResult r =
      dev.exec(cmd::kCreateQp, {uint32_t(attr.type), pd.pdn, attr.send_cq->cqn, attr.recv_cq->cqn, log_sq, log_rq,
                                uint32_t(qp->sq_base >> 32), uint32_t(qp->sq_base), uint32_t(qp->rq_base >> 32),
                                uint32_t(qp->rq_base), uint32_t(qp->dbr >> 32), uint32_t(qp->dbr)});
  if (!r.ok()) {
    dev.memory().unmap(qp->sq_base, uint64_t(sqwqe::kSize) << log_sq);
    dev.memory().unmap(qp->rq_base, uint64_t(rqwqe::kSize) << log_rq);
    dev.memory().unmap(qp->dbr, 64);
    delete qp;
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
  dev.detach(qp);
  dev.memory().unmap(qp->sq_base, uint64_t(sqwqe::kSize) * qp->sq_depth);
  dev.memory().unmap(qp->rq_base, uint64_t(rqwqe::kSize) * qp->rq_depth);
  dev.memory().unmap(qp->dbr, 64);
  delete qp;
  return 0;
}

namespace {

bool is_known_send_opcode(uint8_t op) {
  return op == sqwqe::kSend || op == sqwqe::kSendImm || op == sqwqe::kRdmaWrite || op == sqwqe::kRdmaWriteImm ||
         op == sqwqe::kRdmaRead || op == sqwqe::kAtomicCs || op == sqwqe::kAtomicFa;
}

// The S20 checks: why this WR cannot be posted, or "" if it can.
std::string send_wr_problem(const Qp& qp, const SendWr& wr) {
  const bool rc = qp.type == QpType::rc;
  const bool read_or_atomic =
      wr.opcode == sqwqe::kRdmaRead || wr.opcode == sqwqe::kAtomicCs || wr.opcode == sqwqe::kAtomicFa;
  if (!is_known_send_opcode(wr.opcode)) return fmt::format("opcode {:#x} is not a send opcode", wr.opcode);
  if (!rc && wr.opcode != sqwqe::kSend && wr.opcode != sqwqe::kSendImm)
    return fmt::format("opcode {:#x} is not allowed on a {} QP (only SEND and SEND with immediate)", wr.opcode,
                       qp_type_name(qp.type));
  uint64_t total = 0;
  for (const Sge& s : wr.sg_list) total += s.length;
  if (total > 0x80000000ull) return fmt::format("message of {} bytes exceeds 2 GiB", total);
  if (wr.flags & kSendInline) {
    if (read_or_atomic) return "inline data is not allowed on RDMA READ or atomics";
    if (total > sqwqe::kMaxInline) return fmt::format("{} bytes of inline data exceed {}", total, sqwqe::kMaxInline);
  } else if (wr.sg_list.size() > sqwqe::kMaxSge) {
    return fmt::format("{} scatter/gather entries exceed {}", wr.sg_list.size(), sqwqe::kMaxSge);
  }
  if (wr.opcode == sqwqe::kAtomicCs || wr.opcode == sqwqe::kAtomicFa) {
    if (total != 8) return fmt::format("an atomic needs one 8-byte local buffer, not {} bytes", total);
    if (wr.remote_addr % 8) return fmt::format("atomic remote address {:#x} is not 8-byte aligned", wr.remote_addr);
  }
  if (!rc && wr.remote_qpn > 0xFFFFFF) return fmt::format("remote QPN {:#x} exceeds 24 bits", wr.remote_qpn);
  return "";
}

// The data segment of either WQE: one 16-byte scatter/gather entry after another.
void put_sges(uint8_t* at, const std::vector<Sge>& sges) {
  for (const Sge& s : sges) {
    put_field(at, sge::addr, s.addr);
    put_field(at, sge::length, s.length);
    put_field(at, sge::lkey, s.lkey);
    at += sge::kSize;
  }
}

// Builds the WQE in `w` and writes it to the ring.
void write_send_wqe(Qp& qp, const SendWr& wr, uint16_t index, uint8_t (&w)[sqwqe::kSize]) {
  Driver& dev = *qp.pd->dev;
  std::fill(std::begin(w), std::end(w), uint8_t(0));
  put_field(w, sqwqe::qpn, qp.qpn);
  put_field(w, sqwqe::wr_id, wr.wr_id);
  put_field(w, sqwqe::opcode, wr.opcode);
  put_field(w, sqwqe::signaled, (qp.sq_sig_all || (wr.flags & kSendSignaled)) ? 1 : 0);
  put_field(w, sqwqe::solicited, (wr.flags & kSendSolicited) ? 1 : 0);
  put_field(w, sqwqe::fence, (wr.flags & kSendFence) ? 1 : 0);
  put_field(w, sqwqe::imm, wr.imm);
  put_field(w, sqwqe::remote_addr, wr.remote_addr);
  put_field(w, sqwqe::rkey, wr.rkey);
  put_field(w, sqwqe::compare_add, wr.compare_add);
  put_field(w, sqwqe::swap, wr.swap);
  put_field(w, sqwqe::ud_dest_qpn, wr.remote_qpn);
  put_field(w, sqwqe::ud_qkey, wr.remote_qkey);
  put_field(w, sqwqe::ud_dlid, wr.dlid);
  put_field(w, sqwqe::ud_sl, wr.sl);
  put_field(w, sqwqe::ud_grh, wr.grh ? 1 : 0);
  put_field(w, sqwqe::wqe_index, index);
  if (wr.flags & kSendInline) {
    // The CPU copies the data into the WQE: the device never reads the buffers.
    put_field(w, sqwqe::inline_data, 1);
    uint32_t off = 0;
    for (const Sge& s : wr.sg_list) {
      dev.cpu().read(s.addr, w + sqwqe::kDataOffset + off, s.length);
      off += s.length;
    }
    put_field(w, sqwqe::inline_len, off);
  } else {
    put_field(w, sqwqe::num_sge, wr.sg_list.size());
    put_sges(w + sqwqe::kDataOffset, wr.sg_list);
  }
  dev.cpu().write(qp.sq_base + uint64_t(index & (qp.sq_depth - 1)) * sqwqe::kSize, w, sqwqe::kSize);
}

void write_recv_wqe(Qp& qp, const RecvWr& wr, uint16_t index) {
  uint8_t w[rqwqe::kSize] = {};
  put_field(w, rqwqe::wr_id, wr.wr_id);
  put_field(w, rqwqe::num_sge, wr.sg_list.size());
  put_field(w, rqwqe::wqe_index, index);
  put_sges(w + rqwqe::kDataOffset, wr.sg_list);
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
    dev.cpu().mmio_write_block(Driver::offset_of(reg::sq_bf, dev.config().uar), blueflame, sqwqe::kSize);
    return;
  }
  uint64_t v = 0;
  v = with_bits(v, wqdb::qpn, qp.qpn);
  v = with_bits(v, wqdb::pi, sq ? qp.sq_pi : qp.rq_pi);
  dev.cpu().mmio_write64(Driver::offset_of(sq ? reg::sq_db : reg::rq_db, dev.config().uar), v);
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
    for (const SendWr& wr : wrs) {
      const std::string problem = send_wr_problem(qp, wr);
      if (!problem.empty()) {
        rc = fail(dev, EINVAL, fmt::format("post_send: QP {:#x} WR {:#x}: {}", qp.qpn, wr.wr_id, problem));
        break;
      }
      if (uint16_t(qp.sq_pi - qp.sq_ci) >= qp.sq_depth) {
        rc = fail(dev, ENOMEM, fmt::format("post_send: QP {:#x} send queue full ({} WQEs)", qp.qpn, qp.sq_depth));
        break;
      }
      write_send_wqe(qp, wr, qp.sq_pi, wqe);
      ++qp.sq_pi;
      ++posted;
      dev.cpu().charge(CpuContext::app, dev.cpu().config().post_wr_cost);
    }
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
    for (const RecvWr& wr : wrs) {
      if (wr.sg_list.size() > rqwqe::kMaxSge) {
        rc = fail(dev, EINVAL, fmt::format("post_recv: QP {:#x} WR {:#x}: {} scatter entries exceed {}", qp.qpn,
                                           wr.wr_id, wr.sg_list.size(), rqwqe::kMaxSge));
        break;
      }
      if (uint16_t(qp.rq_pi - qp.rq_ci) >= qp.rq_depth) {
        rc = fail(dev, ENOMEM, fmt::format("post_recv: QP {:#x} receive queue full ({} WQEs)", qp.qpn, qp.rq_depth));
        break;
      }
      write_recv_wqe(qp, wr, qp.rq_pi);
      ++qp.rq_pi;
      ++posted;
      dev.cpu().charge(CpuContext::app, dev.cpu().config().post_wr_cost);
    }
  }
  // A QP in error learns of new receive WQEs only through the MMIO doorbell (to flush them).
  if (posted) ring_doorbell(qp, false, dev.config().rq_doorbell_mmio || qp.state == QpState::err);
  if (bad) *bad = posted;
  return rc;
}

void note_completion(Driver& dev, const Wc& wc) {
  Qp* qp = dev.find_qp(wc.qpn);
  if (!qp) return;
  const bool is_send = wc.opcode == cqe::kReq || wc.opcode == cqe::kReqErr;
  if (is_send)
    qp->sq_ci = uint16_t(wc.wqe_counter + 1);  // this WQE and every unsignaled one before it
  else
    ++qp->rq_ci;
  if (wc.status == 0) return;
  // An error CQE tells the driver what the device did: an RC QP is in ERR; a datagram QP whose
  // send failed is in SQE (its receive queue goes on).
  if (qp->type == QpType::rc)
    qp->state = QpState::err;
  else if (is_send && qp->state != QpState::err)
    qp->state = QpState::sqe;
}

}  // namespace vhca::verbs
