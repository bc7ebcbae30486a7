// Protection domains, memory regions and queue pairs from the driver side (the command plane of
// the work-request path): alloc/dealloc PD, reg/dereg MR, create/modify/query/destroy QP, with
// the checks a verbs library makes before anything reaches the device and the S15 size advice.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "firmware-shim/verbs.h"
#include "model/qp/qp_table.h"

namespace vhca {

struct Pd {
  Driver* dev = nullptr;
  uint32_t pdn = 0;
};

struct Mr {
  Pd* pd = nullptr;
  uint64_t addr = 0, length = 0;
  uint32_t access = 0, lkey = 0, rkey = 0;
};

// A shared receive queue: its ring of receive WQEs and its doorbell record (rq_pi: the producer
// counter), from which the QPs created on it take their receive WQEs.
struct Srq {
  Pd* pd = nullptr;
  uint32_t srqn = 0;
  uint32_t depth = 0;
  uint64_t base = 0, dbr = 0;
  uint16_t pi = 0, ci = 0;  // posted; consumed (known from the receive CQEs polled)
  bool user_memory = false;
};

struct SrqInitAttr {
  uint32_t max_wr = 16;
  uint16_t limit = 0;  // 0: not armed
  uint64_t user_ring = 0, user_dbr = 0;  // memory a verbs program provides (both, or none)
};

struct QpInitAttr {
  QpType type = QpType::rc;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  uint32_t max_send_wr = 16;
  uint32_t max_recv_wr = 16;
  bool sq_sig_all = false;  // every send WR produces a CQE, signaled or not
  // Rings and doorbell record in memory a verbs program provides (all three, or none: the driver
  // allocates them), sized by wq_log_size; the driver neither allocates nor frees it.
  uint64_t user_sq = 0, user_rq = 0, user_dbr = 0;
  Srq* srq = nullptr;  // its receives come from this SRQ (it has no RQ: max_recv_wr and user_rq unused)
};

struct Qp {
  Pd* pd = nullptr;
  uint32_t qpn = 0;
  QpType type = QpType::rc;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  uint32_t sq_depth = 0, rq_depth = 0;
  uint64_t sq_base = 0, rq_base = 0, dbr = 0;
  QpState state = QpState::reset;  // as the driver last knew it (an error CQE tells it of ERR)
  bool sq_sig_all = false;
  // Producer and consumer counters (16-bit, as in the doorbell record), advanced by posting
  // and by polling the CQEs of this QP.
  uint16_t sq_pi = 0, sq_ci = 0, rq_pi = 0, rq_ci = 0;
  bool user_memory = false;
  Srq* srq = nullptr;
};

// MODIFY_QP attributes; only those of the transition are sent (others must stay zero).
struct QpAttr {
  QpState cur_state = QpState::reset, new_state = QpState::init;
  uint16_t pkey_index = 0;
  uint32_t qkey = 0, access = 0, dest_qpn = 0, rq_psn = 0, sq_psn = 0;
  uint8_t path_mtu = 0, min_rnr_timer = 0, timeout = 0, retry_cnt = 0, rnr_retry = 0, max_rd_atomic = 0,
          max_dest_rd_atomic = 0;
  uint16_t dlid = 0;  // INIT->RTR (RC, UC): the remote port's LID (0: the far end of a point-to-point link)
};

namespace verbs {
int alloc_pd(Driver& dev, Pd** out);
int dealloc_pd(Pd* pd);
// `host_address`: where the region lies in host memory when that is not `addr` (a verbs program's
// buffer, whose address is its own virtual address).
int reg_mr(Pd& pd, uint64_t addr, uint64_t length, uint32_t access, Mr** out, const uint64_t* host_address = nullptr);
// log2 of the entries create_qp gives a work queue asked for `wrs` (the rule, for callers that
// provide the memory).
uint8_t wq_log_size(uint32_t wrs);
int dereg_mr(Mr* mr);
// S15: warns (Driver::warnings(), log) when a CQ is smaller than the WQ depths associated with it.
int create_qp(Pd& pd, const QpInitAttr& attr, Qp** out);
int modify_qp(Qp& qp, const QpAttr& attr);
int query_qp(Qp& qp, QpAttr& attr);
int destroy_qp(Qp* qp);
// S20: a request the QP cannot carry out is refused here with -EINVAL (-ENOMEM when the queue is
// full) and nothing of it reaches the device. WRs before the bad one are posted; *bad (if given)
// is the index of the first WR not posted. One doorbell covers the whole list.
int post_send(Qp& qp, const std::vector<SendWr>& wrs, size_t* bad = nullptr);
int post_recv(Qp& qp, const std::vector<RecvWr>& wrs, size_t* bad = nullptr);
// Shared receive queues: -EINVAL for bad sizes or limits, -EBUSY destroying one a QP uses.
int create_srq(Pd& pd, const SrqInitAttr& attr, Srq** out);
int destroy_srq(Srq* srq);
int arm_srq(Srq& srq, uint16_t limit);     // 0 disarms; the device raises one SRQ-limit event
int query_srq(Srq& srq, uint16_t& limit);  // the armed limit (0: none, or the event fired)
// Writes the WQEs into the ring and the producer counter into the doorbell record (no MMIO: the
// device reads the record when it needs WQEs). -ENOMEM when the ring is full.
int post_srq_recv(Srq& srq, const std::vector<RecvWr>& wrs, size_t* bad = nullptr);
// The driver's view after polling a CQE of this QP: frees ring slots, notes an error.
void note_completion(Driver& dev, const Wc& wc);
}  // namespace verbs
}  // namespace vhca
