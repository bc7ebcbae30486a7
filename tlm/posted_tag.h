// Identifies who issued a posted write, so that an error found where it lands (an unmapped
// host address) can be reported back to the block that issued it.
#pragma once
#include <cstdint>
#include <tlm>

namespace vhca {

// cqe_copy: an entry the firmware moves into a resized ring (a CQE already counted, not a new one;
// a failed copy is a CQ access error like a failed CQE).
enum class DmaSource : uint8_t { cqe = 1, eqe = 2, msix = 3, command = 4, other = 5, cqe_copy = 6 };

struct PostedTag : tlm::tlm_extension<PostedTag> {
  DmaSource source = DmaSource::other;
  uint32_t id = 0;  // CQN for CQEs, EQN for EQEs, vector for MSI-X
  tlm::tlm_extension_base* clone() const override { return new PostedTag(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const PostedTag&>(other);
  }
};

}  // namespace vhca
