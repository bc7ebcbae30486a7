// Protection domains, memory regions and QP contexts: the firmware-side tables the command unit
// keeps for CREATE/MODIFY/QUERY/DESTROY QP, ALLOC/DEALLOC PD and REG/DEREG MR. The QP state
// machine follows the IB specification (RESET, INIT, RTR, RTS, SQD, SQE, ERR); the data path
// (doorbells, WQE fetch, transport) reads these contexts.
#pragma once
#include <cstdint>
#include <vector>

#include "model/regs/codes.h"

namespace vhca {

// QpType and QpState are in model/regs/codes.h.
const char* qp_state_name(QpState s);
const char* qp_type_name(QpType t);
// RC and UC talk to one peer QP (dest_qpn) and send multi-packet messages; the others are datagrams.
inline bool is_connected(QpType t) { return t == QpType::rc || t == QpType::uc; }
// The send opcodes a QP type takes: RC all; UC SENDs and RDMA WRITEs (no READ, no atomics: nothing
// comes back on UC); datagram QPs SENDs only.
bool send_opcode_allowed(QpType t, uint8_t opcode);
// The remote access rights a QP type can grant (MODIFY_QP access): UC remote write only.
uint32_t remote_access_allowed(QpType t);

// MR access flags (REG_MR in[5], RC QP access in MODIFY_QP).
constexpr uint32_t kAccessLocalWrite = 1u << 0, kAccessRemoteRead = 1u << 1, kAccessRemoteWrite = 1u << 2,
                   kAccessRemoteAtomic = 1u << 3;
// REG_MR in[5] bit 31: the region lies in host memory at in[6..7], not at its start address.
constexpr uint32_t kRegMrTranslated = 1u << 31;

// A scatter/gather entry of a work request, as the driver writes it into a WQE and the device
// decodes it (format: sge:: in model/regs/tables.h).
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// The most READ and atomic requests a QP may have outstanding, as requester or as responder.
constexpr uint32_t kMaxRdAtomic = 16;

struct QpContext {
  bool valid = false;
  QpType type = QpType::rc;
  QpState state = QpState::reset;
  uint32_t pdn = 0, send_cqn = 0, recv_cqn = 0;
  uint8_t log_sq_size = 0, log_rq_size = 0;
  uint64_t sq_base = 0, rq_base = 0, dbr = 0;
  // Attributes set by MODIFY_QP.
  uint16_t pkey_index = 0;
  uint32_t qkey = 0, access = 0, dest_qpn = 0, rq_psn = 0, sq_psn = 0;
  // RC, UC: the remote port's LID, which the fabric routes the QP's packets by (0: the far end of
  // a point-to-point link or a loopback, which route nothing).
  uint16_t dlid = 0;
  // max_rd_atomic and max_dest_rd_atomic: at most kMaxRdAtomic (MODIFY_QP refuses more).
  uint8_t path_mtu = 0, min_rnr_timer = 0, timeout = 0, retry_cnt = 0, rnr_retry = 0, max_rd_atomic = 0,
          max_dest_rd_atomic = 0;
  // Its receive WQEs come from a shared receive queue (CREATE_QP in[12]), not from its own RQ.
  bool has_srq = false;
  uint32_t srqn = 0;
};

// A shared receive queue: a ring of receive WQEs (the RQ WQE format) and a doorbell record whose
// rq_pi field is its producer counter, from which the QPs attached to it take WQEs in the order
// their messages arrive. Armed with a limit, it raises one SRQ-limit event when fewer WQEs than
// the limit remain.
struct SrqContext {
  bool valid = false;
  uint32_t pdn = 0;
  uint8_t log_size = 0;
  uint64_t base = 0, dbr = 0;
  uint16_t limit = 0;  // armed while non-zero
};

struct MrContext {
  bool valid = false;
  uint32_t pdn = 0;
  uint64_t start = 0, length = 0;  // the range the keys check: virtual addresses (IOVA)
  // Where the region lies in host memory (the device's translation, an MTT of one contiguous
  // range): start unless REG_MR gave another place (a verbs program's buffer, whose virtual
  // address is its own and not the simulated host's).
  uint64_t pa = 0;
  uint32_t access = 0;
  uint32_t key = 0;  // lkey == rkey: index << 8 | variant byte
};

// Is `from -> to` a transition the IB QP state machine allows for this QP type?
bool qp_transition_allowed(QpType type, QpState from, QpState to);

struct QpTables {
  explicit QpTables(uint32_t num_qps = 1024, uint32_t num_mrs = 4096, uint32_t num_pds = 256, uint32_t num_srqs = 64)
      : qps(num_qps), mrs(num_mrs), pds(num_pds, false), srqs(num_srqs) {}
  std::vector<QpContext> qps;
  std::vector<MrContext> mrs;
  std::vector<bool> pds;
  std::vector<SrqContext> srqs;
  uint8_t mr_variant = 0;  // the key byte, so a stale key of a re-used MR index does not match

  bool qp_exists(uint32_t qpn) const { return qpn < qps.size() && qps[qpn].valid; }
  bool pd_exists(uint32_t pdn) const { return pdn < pds.size() && pds[pdn]; }
  bool srq_exists(uint32_t srqn) const { return srqn < srqs.size() && srqs[srqn].valid; }
  bool srq_in_use(uint32_t srqn) const;  // does a QP take its receives from it?
  // Does any QP have its SQ or RQ on this CQ?
  bool cq_in_use(uint32_t cqn) const;
  // QP0/QP1 may share a CQ only with each other (S25): is `cqn` used by a QP on the other side?
  bool cq_shared_across_special(uint32_t cqn, bool special) const;
  bool pd_in_use(uint32_t pdn) const;
  void clear();
};

}  // namespace vhca
