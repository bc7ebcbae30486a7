#include "model/transport/ib_packet.h"

namespace vhca {

const char* ib_op_name(IbOp op) {
  static const char* names[] = {"SEND_FIRST", "SEND_MIDDLE", "SEND_LAST", "SEND_ONLY", "WRITE_FIRST", "WRITE_MIDDLE",
                                "WRITE_LAST", "WRITE_ONLY", "READ_REQUEST", "READ_RESP_FIRST", "READ_RESP_MIDDLE",
                                "READ_RESP_LAST", "READ_RESP_ONLY", "ACK", "ATOMIC_ACK", "CMP_SWAP", "FETCH_ADD",
                                "UD_SEND_ONLY"};
  return names[unsigned(op)];
}

// LRH 8, BTH 12, ICRC 4, VCRC 2; GRH 40; RETH 16; AtomicETH 28; AETH 4; AtomicAckETH 8; DETH 8;
// ImmDt 4 (IB spec chapter 9 header sizes).
uint32_t IbPacket::header_bytes() const {
  uint32_t n = 8 + 12 + 4 + 2;
  if (grh) n += 40;
  switch (op) {
    case IbOp::write_first:
    case IbOp::write_only:
    case IbOp::read_request: n += 16; break;
    case IbOp::cmp_swap:
    case IbOp::fetch_add: n += 28; break;
    case IbOp::read_resp_first:
    case IbOp::read_resp_last:
    case IbOp::read_resp_only:
    case IbOp::ack: n += 4; break;
    case IbOp::atomic_ack: n += 4 + 8; break;
    case IbOp::ud_send: n += 8; break;
    default: break;
  }
  if (has_imm) n += 4;
  return n;
}

void carry_packet(tlm::tlm_fw_transport_if<>& target, IbPacketExt& ext, sc_core::sc_time& delay,
                  tlm::tlm_generic_payload& tx) {
  tx.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  tx.set_command(tlm::TLM_WRITE_COMMAND);
  tx.set_data_ptr(ext.packet.payload.data());
  tx.set_data_length(uint32_t(ext.packet.payload.size()));
  tx.set_streaming_width(uint32_t(ext.packet.payload.size()));
  // The extension is the sender's: it leaves the transaction however the call ends (a
  // transaction deletes the extensions it still holds when it is destroyed).
  struct Detach {
    tlm::tlm_generic_payload& tx;
    IbPacketExt& ext;
    ~Detach() { tx.clear_extension(&ext); }
  } detach{tx, ext};
  tx.set_extension(&ext);
  target.b_transport(tx, delay);
}

}  // namespace vhca
