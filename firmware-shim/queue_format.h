// The provider's side of the hardware contract, free of SystemC so that both the in-simulation
// driver and the verbs library (verbs/libibverbs.cpp, inside a program's process) build from it:
// work requests and the WQEs that encode them, CQEs and their validity, and the doorbell values.
// Every layout comes from the one table, model/regs/tables.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/qp/qp_table.h"
#include "model/regs/tables.h"

namespace vhca {

// A work completion as the verbs return it.
struct Wc {
  uint64_t wr_id = 0;
  uint8_t status = 0;  // 0 success, else the IB completion syndrome (codes.h syndrome::)
  uint8_t vendor_err = 0;
  uint8_t opcode = 0;  // CQE opcode
  uint8_t send_opcode = 0;
  uint32_t byte_len = 0;
  bool imm_present = false;
  uint32_t imm = 0;
  uint32_t qpn = 0;
  uint32_t src_qp = 0;
  uint16_t slid = 0;
  uint8_t sl = 0;
  bool grh = false;
  uint16_t pkey_index = 0;
  bool se = false;
  uint16_t wqe_counter = 0;
  uint64_t timestamp = 0;  // device cycle of the CQE write
};

enum SendFlags : uint32_t { kSendSignaled = 1u << 0, kSendSolicited = 1u << 1, kSendFence = 1u << 2, kSendInline = 1u << 3 };

// A send work request; opcodes are the WQE opcodes (codes.h sqwqe::kSend, ...).
struct SendWr {
  uint64_t wr_id = 0;
  uint8_t opcode = 0x0A;  // SEND
  uint32_t flags = 0;
  std::vector<Sge> sg_list;
  uint32_t imm = 0;
  uint64_t remote_addr = 0;  // RDMA and atomics
  uint32_t rkey = 0;
  uint64_t compare_add = 0, swap = 0;  // atomics
  // UD address: destination QPN, Q_Key (high bit: use the QP's), LID, SL, GRH.
  uint32_t remote_qpn = 0, remote_qkey = 0;
  uint16_t dlid = 0;
  uint8_t sl = 0;
  bool grh = false;
};

struct RecvWr {
  uint64_t wr_id = 0;
  std::vector<Sge> sg_list;
};

namespace queue_format {

// CQEs.
Wc parse_cqe(const uint8_t* cqe);
// Is the entry at consumer index `index` of a CQ of 2^log_size entries written (S-rule: opcode
// not INVALID and owner == (index >> log_size) & 1)?
bool cqe_valid(const uint8_t* cqe, uint32_t index, uint8_t log_size);
// A fresh CQ buffer of `bytes`: every entry INVALID with owner 1, so none is valid on the first pass.
void prefill_cqes(uint8_t* buf, uint64_t bytes);
// Is this CQE a requester's (send queue) completion?
bool is_send_completion(const Wc& wc);

// Work requests. Why `wr` cannot be posted on a QP of this type (S20), or "" if it can.
std::string send_wr_problem(QpType type, const SendWr& wr);
// The 128-byte send WQE; `inline_bytes` holds the gathered data of an inline WR (flags & kSendInline).
void encode_send_wqe(uint8_t* w, const SendWr& wr, uint32_t qpn, bool signaled, uint16_t index,
                     const uint8_t* inline_bytes);
void encode_recv_wqe(uint8_t* w, const RecvWr& wr, uint16_t index);

// Doorbells: the 64-bit UAR_SQ_DB / UAR_RQ_DB value, the CQ arm (UAR_CQ_ARM) value, and the arm
// word of the CQ doorbell record, which the driver writes before the arm doorbell.
uint64_t wq_doorbell(uint32_t qpn, uint16_t pi);
uint64_t arm_doorbell(uint32_t cqn, uint32_t ci, uint32_t cmd, uint8_t sn);
void put_arm_word(uint8_t* record, uint32_t ci, uint32_t cmd, uint8_t sn);

}  // namespace queue_format
}  // namespace vhca
