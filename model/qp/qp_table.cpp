#include "model/qp/qp_table.h"

#include "model/regs/codes.h"

namespace vhca {

const char* qp_state_name(QpState s) {
  static constexpr CodeName names[] = {VHCA_QP_STATES(VHCA_CODE_NAME)};
  return code_name(names, uint32_t(s), "?");
}

const char* qp_type_name(QpType t) {
  static constexpr CodeName names[] = {VHCA_QP_TYPES(VHCA_CODE_NAME)};
  return code_name(names, uint32_t(t), "?");
}

bool send_opcode_allowed(QpType t, uint8_t opcode) {
  const bool send = opcode == sqwqe::kSend || opcode == sqwqe::kSendImm;
  const bool write = opcode == sqwqe::kRdmaWrite || opcode == sqwqe::kRdmaWriteImm;
  const bool read_or_atomic = opcode == sqwqe::kRdmaRead || opcode == sqwqe::kAtomicCs || opcode == sqwqe::kAtomicFa;
  if (t == QpType::rc) return send || write || read_or_atomic;
  if (t == QpType::uc) return send || write;
  return send;
}

uint32_t remote_access_allowed(QpType t) {
  if (t == QpType::rc) return kAccessRemoteRead | kAccessRemoteWrite | kAccessRemoteAtomic;
  if (t == QpType::uc) return kAccessRemoteWrite;
  return 0;
}

bool qp_transition_allowed(QpType type, QpState from, QpState to) {
  if (to == QpState::reset || to == QpState::err) return true;  // any state may go to RESET or ERR
  switch (from) {
    case QpState::reset: return to == QpState::init;
    case QpState::init: return to == QpState::init || to == QpState::rtr;
    case QpState::rtr: return to == QpState::rts;
    case QpState::rts: return to == QpState::rts || to == QpState::sqd;
    case QpState::sqd: return to == QpState::sqd || to == QpState::rts;
    case QpState::sqe: return to == QpState::rts && type != QpType::rc;  // RC has no SQE state
    case QpState::err: return false;
  }
  return false;
}

bool QpTables::cq_in_use(uint32_t cqn) const {
  for (const QpContext& q : qps)
    if (q.valid && (q.send_cqn == cqn || q.recv_cqn == cqn)) return true;
  return false;
}

bool QpTables::cq_shared_across_special(uint32_t cqn, bool special) const {
  for (const QpContext& q : qps) {
    if (!q.valid || (q.send_cqn != cqn && q.recv_cqn != cqn)) continue;
    const bool q_special = q.type == QpType::gsi || q.type == QpType::smi;
    if (q_special != special) return true;
  }
  return false;
}

bool QpTables::pd_in_use(uint32_t pdn) const {
  for (const QpContext& q : qps)
    if (q.valid && q.pdn == pdn) return true;
  for (const MrContext& m : mrs)
    if (m.valid && m.pdn == pdn) return true;
  for (const SrqContext& s : srqs)
    if (s.valid && s.pdn == pdn) return true;
  return false;
}

bool QpTables::srq_in_use(uint32_t srqn) const {
  for (const QpContext& q : qps)
    if (q.valid && q.has_srq && q.srqn == srqn) return true;
  return false;
}

void QpTables::clear() {
  for (auto& q : qps) q = QpContext{};
  for (auto& m : mrs) m = MrContext{};
  for (auto& s : srqs) s = SrqContext{};
  pds.assign(pds.size(), false);
}

}  // namespace vhca
