// Protection domains, memory regions and queue pairs from the driver side (the command plane of
// the work-request path): alloc/dealloc PD, reg/dereg MR, create/modify/query/destroy QP, with
// the checks a verbs library makes before anything reaches the device and the S15 size advice.
#pragma once
#include <cstdint>
#include <string>

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

struct QpInitAttr {
  QpType type = QpType::rc;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  uint32_t max_send_wr = 16;
  uint32_t max_recv_wr = 16;
};

struct Qp {
  Pd* pd = nullptr;
  uint32_t qpn = 0;
  QpType type = QpType::rc;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  uint32_t sq_depth = 0, rq_depth = 0;
  uint64_t sq_base = 0, rq_base = 0, dbr = 0;
  QpState state = QpState::reset;
};

// MODIFY_QP attributes; only those of the transition are sent (others must stay zero).
struct QpAttr {
  QpState cur_state = QpState::reset, new_state = QpState::init;
  uint16_t pkey_index = 0;
  uint32_t qkey = 0, access = 0, dest_qpn = 0, rq_psn = 0, sq_psn = 0;
  uint8_t path_mtu = 0, min_rnr_timer = 0, timeout = 0, retry_cnt = 0, rnr_retry = 0, max_rd_atomic = 0,
          max_dest_rd_atomic = 0;
};

namespace verbs {
int alloc_pd(Driver& dev, Pd** out);
int dealloc_pd(Pd* pd);
int reg_mr(Pd& pd, uint64_t addr, uint64_t length, uint32_t access, Mr** out);
int dereg_mr(Mr* mr);
// S15: warns (Driver::warnings(), log) when a CQ is smaller than the WQ depths associated with it.
int create_qp(Pd& pd, const QpInitAttr& attr, Qp** out);
int modify_qp(Qp& qp, const QpAttr& attr);
int query_qp(Qp& qp, QpAttr& attr);
int destroy_qp(Qp* qp);
}  // namespace verbs
}  // namespace vhca
