#include "firmware-shim/queue_format.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace vhca::queue_format {

Wc parse_cqe(const uint8_t* e) {
  Wc wc;
  wc.wr_id = get_field(e, cqe::wr_id);
  wc.timestamp = get_field(e, cqe::timestamp);
  wc.opcode = uint8_t(get_field(e, cqe::opcode));
  wc.qpn = uint32_t(get_field(e, cqe::qpn));
  wc.wqe_counter = uint16_t(get_field(e, cqe::wqe_counter));
  if (wc.opcode == cqe::kReqErr || wc.opcode == cqe::kRespErr) {
    wc.status = uint8_t(get_field(e, cqe::syndrome));
    wc.vendor_err = uint8_t(get_field(e, cqe::vendor_syndrome));
    return wc;  // S16: on error only wr_id, status and QPN are defined
  }
  wc.byte_len = uint32_t(get_field(e, cqe::byte_cnt));
  wc.imm_present = get_field(e, cqe::imm_present);
  wc.imm = uint32_t(get_field(e, cqe::imm));
  wc.send_opcode = uint8_t(get_field(e, cqe::send_opcode));
  wc.src_qp = uint32_t(get_field(e, cqe::src_qpn));
  wc.slid = uint16_t(get_field(e, cqe::slid));
  wc.sl = uint8_t(get_field(e, cqe::sl));
  wc.grh = get_field(e, cqe::grh);
  wc.pkey_index = uint16_t(get_field(e, cqe::pkey_index));
  wc.se = get_field(e, cqe::se);
  return wc;
}

bool cqe_valid(const uint8_t* e, uint32_t index, uint8_t log_size) {
  return get_field(e, cqe::opcode) != cqe::kInvalid && get_field(e, cqe::owner) == ((index >> log_size) & 1);
}

void prefill_cqes(uint8_t* buf, uint64_t bytes) {
  std::memset(buf, 0, bytes);
  for (uint64_t at = 0; at + cqe::kSize <= bytes; at += cqe::kSize) {
    put_field(buf + at, cqe::opcode, cqe::kInvalid);
    put_field(buf + at, cqe::owner, 1);
  }
}

bool is_send_completion(const Wc& wc) { return wc.opcode == cqe::kReq || wc.opcode == cqe::kReqErr; }

namespace {

bool is_known_send_opcode(uint8_t op) {
  return op == sqwqe::kSend || op == sqwqe::kSendImm || op == sqwqe::kRdmaWrite || op == sqwqe::kRdmaWriteImm ||
         op == sqwqe::kRdmaRead || op == sqwqe::kAtomicCs || op == sqwqe::kAtomicFa;
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

}  // namespace

std::string send_wr_problem(QpType type, const SendWr& wr) {
  const bool read_or_atomic =
      wr.opcode == sqwqe::kRdmaRead || wr.opcode == sqwqe::kAtomicCs || wr.opcode == sqwqe::kAtomicFa;
  if (!is_known_send_opcode(wr.opcode)) return fmt::format("opcode {:#x} is not a send opcode", wr.opcode);
  if (!send_opcode_allowed(type, wr.opcode))
    return fmt::format("opcode {:#x} is not allowed on a {} QP ({})", wr.opcode, qp_type_name(type),
                       type == QpType::uc ? "SENDs and RDMA WRITEs only" : "only SEND and SEND with immediate");
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
  if (!is_connected(type) && wr.remote_qpn > 0xFFFFFF) return fmt::format("remote QPN {:#x} exceeds 24 bits", wr.remote_qpn);
  return "";
}

void encode_send_wqe(uint8_t* w, const SendWr& wr, uint32_t qpn, bool signaled, uint16_t index,
                     const uint8_t* inline_bytes) {
  std::memset(w, 0, sqwqe::kSize);
  put_field(w, sqwqe::qpn, qpn);
  put_field(w, sqwqe::wr_id, wr.wr_id);
  put_field(w, sqwqe::opcode, wr.opcode);
  put_field(w, sqwqe::signaled, signaled ? 1 : 0);
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
    uint32_t len = 0;
    for (const Sge& s : wr.sg_list) len += s.length;
    put_field(w, sqwqe::inline_data, 1);
    if (len) std::memcpy(w + sqwqe::kDataOffset, inline_bytes, len);
    put_field(w, sqwqe::inline_len, len);
  } else {
    put_field(w, sqwqe::num_sge, wr.sg_list.size());
    put_sges(w + sqwqe::kDataOffset, wr.sg_list);
  }
}

void encode_recv_wqe(uint8_t* w, const RecvWr& wr, uint16_t index) {
  std::memset(w, 0, rqwqe::kSize);
  put_field(w, rqwqe::wr_id, wr.wr_id);
  put_field(w, rqwqe::num_sge, wr.sg_list.size());
  put_field(w, rqwqe::wqe_index, index);
  put_sges(w + rqwqe::kDataOffset, wr.sg_list);
}

uint64_t wq_doorbell(uint32_t qpn, uint16_t pi) { return with_bits(with_bits(0, wqdb::qpn, qpn), wqdb::pi, pi); }

uint64_t arm_doorbell(uint32_t cqn, uint32_t ci, uint32_t cmd, uint8_t sn) {
  uint64_t db = 0;
  db = with_bits(db, armdb::cqn, cqn);
  db = with_bits(db, armdb::arm_ci, ci);
  db = with_bits(db, armdb::arm_cmd, cmd);
  return with_bits(db, armdb::arm_sn, sn);
}

void put_arm_word(uint8_t* record, uint32_t ci, uint32_t cmd, uint8_t sn) {
  put_field(record, dbr::arm_sn, sn);
  put_field(record, dbr::arm_cmd, cmd);
  put_field(record, dbr::arm_ci, ci);
}

}  // namespace vhca::queue_format
