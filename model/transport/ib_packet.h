// An InfiniBand packet as it crosses the link between two HCAs: the base transport header and
// the extended headers the opcode carries (RETH, AtomicETH, AETH, AtomicAckETH, DETH, ImmDt, GRH),
// decoded into fields, and the payload bytes. wire_bytes() is what the packet occupies on the
// wire (LRH, GRH, BTH, extension headers, payload, ICRC, VCRC), so the link times it exactly.
#pragma once
#include <cstdint>
#include <tlm>
#include <type_traits>
#include <utility>
#include <vector>

namespace vhca {

enum class IbOp : uint8_t {
  send_first, send_middle, send_last, send_only,
  write_first, write_middle, write_last, write_only,
  read_request, read_resp_first, read_resp_middle, read_resp_last, read_resp_only,
  ack, atomic_ack, cmp_swap, fetch_add,
  ud_send,
};
const char* ib_op_name(IbOp op);

inline bool is_response(IbOp op) {
  return op == IbOp::read_resp_first || op == IbOp::read_resp_middle || op == IbOp::read_resp_last ||
         op == IbOp::read_resp_only || op == IbOp::ack || op == IbOp::atomic_ack;
}
inline bool is_first_or_only(IbOp op) {
  return op == IbOp::send_first || op == IbOp::send_only || op == IbOp::write_first || op == IbOp::write_only;
}
inline bool is_last_or_only(IbOp op) {
  return op == IbOp::send_last || op == IbOp::send_only || op == IbOp::write_last || op == IbOp::write_only;
}
inline bool is_send(IbOp op) {
  return op == IbOp::send_first || op == IbOp::send_middle || op == IbOp::send_last || op == IbOp::send_only;
}
inline bool is_write(IbOp op) {
  return op == IbOp::write_first || op == IbOp::write_middle || op == IbOp::write_last || op == IbOp::write_only;
}

// AETH syndrome kinds and NAK codes (IB spec 9.7.5.2.2).
enum class AckKind : uint8_t { ack = 0, rnr_nak = 1, nak = 3 };
enum NakCode : uint8_t { kNakPsnSeqError = 0, kNakInvalidRequest = 1, kNakRemoteAccess = 2, kNakRemoteOp = 3 };

// 24-bit PSN arithmetic.
constexpr uint32_t kPsnMask = 0xFFFFFF;
inline uint32_t psn_add(uint32_t psn, int64_t n) { return uint32_t(int64_t(psn) + n) & kPsnMask; }
// a - b as a signed distance in the 24-bit PSN space.
inline int32_t psn_diff(uint32_t a, uint32_t b) {
  int32_t d = int32_t((a - b) & kPsnMask);
  return d >= 0x800000 ? d - 0x1000000 : d;
}

// Everything but the payload: plain values, so that a packet handed from one holder to another
// (the slots of the links and the receiver keep their payload storage) is swapped cheaply.
struct IbHeaders {
  IbOp op = IbOp::send_only;
  // LRH / BTH.
  uint16_t slid = 0, dlid = 0;
  uint8_t sl = 0;
  bool grh = false;
  uint32_t dest_qpn = 0;
  uint32_t psn = 0;
  bool ack_req = false;
  bool se = false;
  bool uc = false;  // BTH transport: UC (the RC opcodes' UC twins); RC otherwise, UD for ud_send
  // DETH (UD): Q_Key and source QPN.
  uint32_t qkey = 0, src_qpn = 0;
  // ImmDt.
  bool has_imm = false;
  uint32_t imm = 0;
  // RETH (first/only WRITE, READ request) and AtomicETH.
  uint64_t va = 0;
  uint32_t rkey = 0, dma_len = 0;
  uint64_t compare_add = 0, swap = 0;
  // AETH (ACK, NAK, first/last/only READ response, atomic ACK) and AtomicAckETH.
  AckKind ack_kind = AckKind::ack;
  uint8_t ack_code = 0;  // NAK code, or the RNR timer field of an RNR NAK
  uint32_t msn = 0;
  uint64_t atomic_orig = 0;
  bool corrupt = false;  // the ICRC check fails at the receiver (link fault injection)
};

static_assert(std::is_trivially_copyable_v<IbHeaders>);

struct IbPacket : IbHeaders {
  std::vector<uint8_t> payload;

  void exchange(IbPacket& other) noexcept {
    std::swap(static_cast<IbHeaders&>(*this), static_cast<IbHeaders&>(other));
    payload.swap(other.payload);
  }
  uint32_t header_bytes() const;
  uint32_t wire_bytes() const { return header_bytes() + uint32_t((payload.size() + 3) & ~size_t(3)); }
};

// The TLM extension that carries a packet across the link socket.
struct IbPacketExt : tlm::tlm_extension<IbPacketExt> {
  IbPacket packet;
  tlm::tlm_extension_base* clone() const override { return new IbPacketExt(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const IbPacketExt&>(other); }
};

// Sends the packet in `ext` through a TLM forward interface as a write whose data is the payload,
// in `tx`: the sender's own transaction, reused (a payload allocates its extension array when
// built), and left without the extension afterwards. A target copies the packet it keeps: the
// sender's packet is its own again when the call returns.
void carry_packet(tlm::tlm_fw_transport_if<>& target, IbPacketExt& ext, sc_core::sc_time& delay,
                  tlm::tlm_generic_payload& tx);

}  // namespace vhca
