#include "model/transport/wqe.h"

#include "model/common/bytes.h"
#include "model/regs/tables.h"

namespace vhca {

bool SendWqe::is_read_or_atomic() const {
  return opcode == sqwqe::kRdmaRead || opcode == sqwqe::kAtomicCs || opcode == sqwqe::kAtomicFa;
}

namespace {
// The data segment of either WQE: `n` scatter/gather entries; returns their total length.
uint32_t read_sges(const uint8_t* at, uint32_t n, SgeList& out) {
  uint32_t total = 0;
  for (uint32_t i = 0; i < n; ++i, at += sge::kSize) {
    out.push_back({get_field(at, sge::addr), uint32_t(get_field(at, sge::length)), uint32_t(get_field(at, sge::lkey))});
    total += out.back().length;
  }
  return total;
}
}  // namespace

SendWqe decode_send_wqe(const uint8_t* b, uint16_t index, QpType type) {
  SendWqe w;
  w.index = index;
  w.wr_id = get_field(b, sqwqe::wr_id);
  w.opcode = uint8_t(get_field(b, sqwqe::opcode));
  w.signaled = get_field(b, sqwqe::signaled);
  w.solicited = get_field(b, sqwqe::solicited);
  w.fence = get_field(b, sqwqe::fence);
  w.is_inline = get_field(b, sqwqe::inline_data);
  w.imm = uint32_t(get_field(b, sqwqe::imm));
  w.remote_addr = get_field(b, sqwqe::remote_addr);
  w.rkey = uint32_t(get_field(b, sqwqe::rkey));
  w.compare_add = get_field(b, sqwqe::compare_add);
  w.swap = get_field(b, sqwqe::swap);
  w.ud_dest_qpn = uint32_t(get_field(b, sqwqe::ud_dest_qpn));
  w.ud_qkey = uint32_t(get_field(b, sqwqe::ud_qkey));
  w.ud_dlid = uint16_t(get_field(b, sqwqe::ud_dlid));
  w.ud_sl = uint8_t(get_field(b, sqwqe::ud_sl));
  w.ud_grh = get_field(b, sqwqe::ud_grh);
  const uint32_t num_sge = uint32_t(get_field(b, sqwqe::num_sge));
  const uint32_t inline_len = uint32_t(get_field(b, sqwqe::inline_len));
  if (!send_opcode_allowed(type, w.opcode) || uint16_t(get_field(b, sqwqe::wqe_index)) != index ||
      (w.is_inline ? inline_len > sqwqe::kMaxInline : num_sge > sqwqe::kMaxSge) ||
      (w.is_inline && w.is_read_or_atomic())) {
    w.decode_error = syndrome::kLocalQpOp;
    return w;
  }
  if (w.is_inline) {
    w.inline_data.assign(b + sqwqe::kDataOffset, b + sqwqe::kDataOffset + inline_len);
    w.length = inline_len;
  } else {
    w.length = read_sges(b + sqwqe::kDataOffset, num_sge, w.sges);
  }
  if ((w.opcode == sqwqe::kAtomicCs || w.opcode == sqwqe::kAtomicFa) && w.length != 8)
    w.decode_error = syndrome::kLocalLength;
  return w;
}

RecvWqe decode_recv_wqe(const uint8_t* b, uint16_t index) {
  RecvWqe w;
  w.index = index;
  w.wr_id = get_field(b, rqwqe::wr_id);
  const uint32_t num_sge = uint32_t(get_field(b, rqwqe::num_sge));
  if (num_sge > rqwqe::kMaxSge || uint16_t(get_field(b, rqwqe::wqe_index)) != index) {
    w.decode_error = syndrome::kLocalQpOp;
    return w;
  }
  w.capacity = read_sges(b + rqwqe::kDataOffset, num_sge, w.sges);
  return w;
}

bool mr_allows(const QpTables& tables, uint32_t pdn, uint32_t key, uint64_t addr, uint64_t len, uint32_t access) {
  if (len == 0) return true;  // a zero-length access touches no memory (IB: no key check)
  const uint32_t index = key >> 8;
  if (index >= tables.mrs.size()) return false;
  const MrContext& m = tables.mrs[index];
  if (!m.valid || m.key != key || m.pdn != pdn) return false;
  if (addr < m.start || addr + len < addr || addr + len > m.start + m.length) return false;
  return (m.access & access) == access;
}

bool sges_allowed(const QpTables& tables, uint32_t pdn, const SgeList& sges, uint32_t access) {
  for (const Sge& s : sges)
    if (!mr_allows(tables, pdn, s.lkey, s.addr, s.length, access)) return false;
  return true;
}

uint64_t mr_host_address(const QpTables& tables, uint32_t key, uint64_t addr) {
  const uint32_t index = key >> 8;
  if (index >= tables.mrs.size() || !tables.mrs[index].valid || tables.mrs[index].key != key) return addr;
  const MrContext& m = tables.mrs[index];
  return m.pa + (addr - m.start);
}

bool check_and_translate(const QpTables& tables, uint32_t pdn, SgeList& sges, uint32_t access) {
  if (!sges_allowed(tables, pdn, sges, access)) return false;
  for (Sge& s : sges)
    if (s.length) s.addr = mr_host_address(tables, s.lkey, s.addr);
  return true;
}

}  // namespace vhca
