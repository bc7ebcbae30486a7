// Identifies who issued a posted write, so that an error found where it lands (an unmapped
// host address) can be reported back to the block that issued it.
#pragma once
#include <cstdint>
#include <tlm>

namespace vhca {

// cqe_copy: an entry the firmware moves into a resized ring (a CQE already counted, not a new one;
// a failed copy is a CQ access error like a failed CQE). recv_data: a message's bytes placed in a
// receive WQE's buffers (id: recv_data_id), which the S29 checker adds up against the receive
// CQE's byte count; a failure reports it as the transport's data (other, 5), as docs/errors.md says.
enum class DmaSource : uint8_t { cqe = 1, eqe = 2, msix = 3, command = 4, other = 5, cqe_copy = 6, recv_data = 7 };

// The id of a recv_data write: the QPN (24 bits), the receive WQE's index (low 7 bits: the CQE's
// wqe_counter names it) and whether the write begins the message (offset 0).
constexpr uint32_t recv_data_id(uint32_t qpn, uint16_t wqe_index, bool message_start) {
  return (qpn & 0xFFFFFF) | uint32_t(wqe_index & 0x7F) << 24 | (message_start ? 1u << 31 : 0u);
}
constexpr uint32_t recv_data_qpn(uint32_t id) { return id & 0xFFFFFF; }
constexpr uint8_t recv_data_wqe(uint32_t id) { return uint8_t(id >> 24 & 0x7F); }
constexpr bool recv_data_starts(uint32_t id) { return id >> 31; }

struct PostedTag : tlm::tlm_extension<PostedTag> {
  DmaSource source = DmaSource::other;
  uint32_t id = 0;  // CQN for CQEs, EQN for EQEs, vector for MSI-X
  tlm::tlm_extension_base* clone() const override { return new PostedTag(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const PostedTag&>(other);
  }
};

}  // namespace vhca
