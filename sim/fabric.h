// Set-up helpers for work-request traffic, shared by the tests and vhca-sim: protection
// domains, registered buffers, QPs and the MODIFY_QP sequences that connect an RC pair or make
// a UD QP ready. Each throws std::runtime_error naming the failed verb, so a tool reports it and
// a test fails with the message.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "firmware-shim/qp_verbs.h"
#include "firmware-shim/verbs.h"
#include "tlm/host_memory.h"

namespace vhca::fabric {

inline void check(Driver& dev, int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string(what) + " failed: " + dev.last_error());
}

inline Pd* alloc_pd(Driver& dev) {
  Pd* pd = nullptr;
  check(dev, verbs::alloc_pd(dev, &pd), "alloc_pd");
  return pd;
}

inline Cq* create_cq(Driver& dev, int size, const CqModeration& mod = {}, uint32_t vector = 0) {
  Cq* cq = nullptr;
  check(dev, verbs::create_cq(dev, size, vector, &cq, mod), "create_cq");
  return cq;
}

// A zero-filled host buffer registered as an MR.
struct Buffer {
  uint64_t addr = 0, length = 0;
  Mr* mr = nullptr;
  Sge sge(uint64_t offset, uint32_t len) const { return Sge{addr + offset, len, mr->lkey}; }
};

inline constexpr uint32_t kAllAccess = kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite | kAccessRemoteAtomic;

inline Buffer reg_buffer(Pd& pd, uint64_t length, uint32_t access = kAllAccess) {
  Buffer b;
  b.length = length;
  b.addr = pd.dev->memory().allocate(length);
  check(*pd.dev, verbs::reg_mr(pd, b.addr, length, access, &b.mr), "reg_mr");
  return b;
}

inline Qp* create_qp(Pd& pd, Cq* scq, Cq* rcq, QpType type = QpType::rc, uint32_t depth = 64,
                     bool sig_all = false) {
  Qp* qp = nullptr;
  QpInitAttr a{type, scq, rcq, depth, depth, sig_all};
  check(*pd.dev, verbs::create_qp(pd, a, &qp), "create_qp");
  return qp;
}

// One host's end of a connection: PD, send and receive CQs, QP, and a registered buffer.
struct Endpoint {
  Driver* dev = nullptr;
  Pd* pd = nullptr;
  Cq* scq = nullptr;
  Cq* rcq = nullptr;
  Qp* qp = nullptr;
  Buffer buf;
};

inline Endpoint make_endpoint(Driver& dev, uint64_t buf_len, QpType type = QpType::rc, uint32_t depth = 64) {
  Endpoint e;
  e.dev = &dev;
  e.pd = alloc_pd(dev);
  e.scq = create_cq(dev, 256);
  e.rcq = create_cq(dev, 256);
  e.qp = create_qp(*e.pd, e.scq, e.rcq, type, depth);
  e.buf = reg_buffer(*e.pd, buf_len);
  return e;
}

struct RcParams {
  uint8_t path_mtu = 5;        // 4096 bytes
  uint8_t timeout = 14;        // 4.096 us * 2^14 = 67 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;       // 7: retry for ever
  uint8_t min_rnr_timer = 1;   // 10 us
  uint32_t access = kAccessRemoteRead | kAccessRemoteWrite | kAccessRemoteAtomic;
  uint8_t max_rd_atomic = 4;
};

// RESET -> INIT -> RTR -> RTS for one side of an RC or UC connection to `remote_qpn` behind the
// port with `remote_lid` (0: the far end of a point-to-point link; a switch routes by it). UC takes
// no RNR timer, no timeout or retries and no READ/atomic depth, and remote write access only.
inline void rc_to_rts(Qp& qp, uint32_t remote_qpn, const RcParams& p, uint32_t sq_psn = 0, uint32_t rq_psn = 0,
                      uint16_t remote_lid = 0) {
  Driver& dev = *qp.pd->dev;
  const bool rc = qp.type == QpType::rc;
  QpAttr a;
  a.cur_state = QpState::reset;
  a.new_state = QpState::init;
  a.access = p.access & remote_access_allowed(qp.type);
  check(dev, verbs::modify_qp(qp, a), "modify_qp to INIT");
  a = QpAttr{};
  a.cur_state = QpState::init;
  a.new_state = QpState::rtr;
  a.dest_qpn = remote_qpn;
  a.dlid = remote_lid;
  a.rq_psn = rq_psn;
  a.path_mtu = p.path_mtu;
  if (rc) {
    a.min_rnr_timer = p.min_rnr_timer;
    a.max_dest_rd_atomic = p.max_rd_atomic;
  }
  check(dev, verbs::modify_qp(qp, a), "modify_qp to RTR");
  a = QpAttr{};
  a.cur_state = QpState::rtr;
  a.new_state = QpState::rts;
  a.sq_psn = sq_psn;
  if (rc) {
    a.timeout = p.timeout;
    a.retry_cnt = p.retry_cnt;
    a.rnr_retry = p.rnr_retry;
    a.max_rd_atomic = p.max_rd_atomic;
  }
  check(dev, verbs::modify_qp(qp, a), "modify_qp to RTS");
}

// Connects two RC (or two UC) QPs (on two HCAs, or on one for a loopback) to each other; through a
// switch, `lid_a` and `lid_b` are their HCAs' LIDs.
inline void connect_rc(Qp& a, Qp& b, const RcParams& p = {}, uint16_t lid_a = 0, uint16_t lid_b = 0) {
  rc_to_rts(a, b.qpn, p, 0x100, 0x200, lid_b);
  rc_to_rts(b, a.qpn, p, 0x200, 0x100, lid_a);
}

inline void ud_to_rts(Qp& qp, uint32_t qkey) {
  Driver& dev = *qp.pd->dev;
  QpAttr a;
  a.cur_state = QpState::reset;
  a.new_state = QpState::init;
  a.qkey = qkey;
  check(dev, verbs::modify_qp(qp, a), "modify_qp to INIT");
  a = QpAttr{};
  a.cur_state = QpState::init;
  a.new_state = QpState::rtr;
  check(dev, verbs::modify_qp(qp, a), "modify_qp to RTR");
  a = QpAttr{};
  a.cur_state = QpState::rtr;
  a.new_state = QpState::rts;
  check(dev, verbs::modify_qp(qp, a), "modify_qp to RTS");
}

inline void post_send(Qp& qp, const SendWr& wr) { check(*qp.pd->dev, verbs::post_send(qp, {wr}), "post_send"); }
inline void post_recv(Qp& qp, const RecvWr& wr) { check(*qp.pd->dev, verbs::post_recv(qp, {wr}), "post_recv"); }

inline void fill(Driver& dev, uint64_t addr, uint32_t len, uint32_t seed) {
  std::vector<uint8_t> b(len);
  for (uint32_t i = 0; i < len; ++i) b[i] = uint8_t((i * 131u + seed * 7u + (i >> 8)) & 0xFF);
  dev.memory().write(addr, b.data(), len);
}
inline std::vector<uint8_t> read(Driver& dev, uint64_t addr, uint32_t len) {
  std::vector<uint8_t> b(len);
  dev.memory().read(addr, b.data(), len);
  return b;
}

}  // namespace vhca::fabric
