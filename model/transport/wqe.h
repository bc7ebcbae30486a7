// Work queue entries as the device decodes them from host memory, and the memory-region checks
// every block that touches host memory on a QP's behalf applies.
#pragma once
#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "model/qp/qp_table.h"
#include "model/regs/tables.h"

namespace vhca {

// The scatter/gather entries of one decoded WQE, held in place: a WQE has room for at most
// sqwqe::kMaxSge or rqwqe::kMaxSge of them (the decoder refuses more), so a WQE is decoded, and
// a request's gather list copied, without an allocation. The decoders check the count before
// they fill one (push_back past the capacity is a model error).
class SgeList {
 public:
  static constexpr uint32_t kCapacity = std::max(sqwqe::kMaxSge, rqwqe::kMaxSge);
  void push_back(const Sge& s) {
    assert(count_ < kCapacity);
    items_[count_++] = s;
  }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  Sge& back() { return items_[count_ - 1]; }
  const Sge& operator[](size_t i) const { return items_[i]; }
  Sge* begin() { return items_.data(); }
  Sge* end() { return items_.data() + count_; }
  const Sge* begin() const { return items_.data(); }
  const Sge* end() const { return items_.data() + count_; }

 private:
  std::array<Sge, kCapacity> items_{};
  uint8_t count_ = 0;
};

// A send WQE's plain values: a WQE handed from the fetch to the requester moves as one block.
struct SendWqeFields {
  uint16_t index = 0;
  uint64_t wr_id = 0;
  uint8_t opcode = 0;
  bool signaled = false, solicited = false, fence = false, is_inline = false;
  uint32_t imm = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t compare_add = 0, swap = 0;
  uint32_t ud_dest_qpn = 0, ud_qkey = 0;
  uint16_t ud_dlid = 0;
  uint8_t ud_sl = 0;
  bool ud_grh = false;
  SgeList sges;
  uint32_t length = 0;
  uint8_t decode_error = 0;  // a syndrome found when the WQE was decoded
  // Progress (the requester's).
  bool started = false;
  uint32_t first_psn = 0, npkts = 0;
  uint32_t resp_pkts = 0;    // READ: response packets placed
  bool done = false;         // ACKed, response placed, or UD transmitted
  uint8_t status = 0;
};
static_assert(std::is_trivially_copyable_v<SendWqeFields>);

struct SendWqe : SendWqeFields {
  std::vector<uint8_t> inline_data;
  bool is_read_or_atomic() const;
};

struct RecvWqe {
  uint16_t index = 0;
  uint64_t wr_id = 0;
  SgeList sges;
  uint32_t capacity = 0;
  uint8_t decode_error = 0;
  bool translated = false;  // its SGEs checked against their MRs and now host-memory addresses
};

SendWqe decode_send_wqe(const uint8_t* bytes, uint16_t index, QpType type);
RecvWqe decode_recv_wqe(const uint8_t* bytes, uint16_t index);

// MR checks: the key names a valid MR of the QP's PD that covers [addr, addr+len) with `access`.
bool mr_allows(const QpTables& tables, uint32_t pdn, uint32_t key, uint64_t addr, uint64_t len, uint32_t access);
bool sges_allowed(const QpTables& tables, uint32_t pdn, const SgeList& sges, uint32_t access);
// Where `addr` of the MR `key` names lies in host memory (the MR's translation; call after
// mr_allows said yes). A zero-length access names no MR: its address stays as it is.
uint64_t mr_host_address(const QpTables& tables, uint32_t key, uint64_t addr);
// sges_allowed, and if every entry passes, each address rewritten to where it lies in host
// memory, for the DMA that follows.
bool check_and_translate(const QpTables& tables, uint32_t pdn, SgeList& sges, uint32_t access);

// Calls visit(address, bytes, position in the data) for each piece of [offset, offset+len) of
// the buffer an SGE list describes.
template <typename Visit>
void for_each_piece(const SgeList& sges, uint32_t offset, uint32_t len, Visit visit) {
  uint32_t done = 0;
  for (const Sge& s : sges) {
    if (done == len) break;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const uint32_t n = std::min(len - done, s.length - offset);
    visit(s.addr + offset, n, done);
    done += n;
    offset = 0;
  }
}

}  // namespace vhca
