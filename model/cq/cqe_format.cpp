#include "model/cq/cqe_format.h"

#include <cstring>

#include "model/regs/tables.h"

namespace vhca {

void format_cqe(const CompletionRecord& r, uint32_t pi, uint8_t log_size, uint64_t timestamp, uint8_t* out) {
  std::memset(out, 0, cqe::kSize);
  const bool error = r.syndrome != 0;
  put_field(out, cqe::wr_id, r.wr_id);
  put_field(out, cqe::timestamp, timestamp);
  put_field(out, cqe::qpn, r.qpn);
  put_field(out, cqe::wqe_counter, r.wqe_counter);
  if (error) {
    put_field(out, cqe::syndrome, r.syndrome);
    put_field(out, cqe::vendor_syndrome, r.vendor_syndrome);
    put_field(out, cqe::opcode, r.is_send ? cqe::kReqErr : cqe::kRespErr);
  } else {
    put_field(out, cqe::opcode, r.opcode);
    put_field(out, cqe::byte_cnt, r.byte_cnt);
    put_field(out, cqe::imm_present, r.imm_present);
    put_field(out, cqe::imm, r.imm);
    if (r.is_send) {
      put_field(out, cqe::send_opcode, r.send_opcode);
    } else {
      put_field(out, cqe::src_qpn, r.src_qpn);
      put_field(out, cqe::slid, r.slid);
      put_field(out, cqe::sl, r.sl);
      put_field(out, cqe::grh, r.grh);
      put_field(out, cqe::pkey_index, r.pkey_index);
      put_field(out, cqe::se, r.se);
    }
  }
  put_field(out, cqe::owner, (pi >> log_size) & 1);
}

}  // namespace vhca
