// The one table of the hardware contract. The model builds its BAR0 register file from
// kBar0Registers and packs CQEs/EQEs/doorbell records/command blocks with the Field constants
// below; tools/gen_docs.cpp writes docs/registers.md and docs/formats.md from the same lists, and
// the RTL includes a header generated from them. Change the contract here and only here.
#pragma once
#include <cstdint>
#include <vector>

#include "model/common/bytes.h"
#include "model/regs/codes.h"

namespace vhca {

enum class Access : uint8_t { ro, rw, wo };
const char* access_name(Access a);

// A register, or an array of `count` registers `stride` bytes apart (UAR pages, MSI-X vectors).
struct RegSpec {
  const char* name;
  uint32_t offset;
  uint8_t width;  // bytes: 4 or 8, or a block (UAR_SQ_BF: one send WQE) written whole
  uint32_t count;
  uint32_t stride;
  uint64_t reset;
  Access access;
  const char* description;
};

// BAR0 geometry.
constexpr uint32_t kUarBase = 0x1000, kUarStride = 0x1000, kNumUars = 16;
constexpr uint32_t kMsixTableBase = 0x20000, kMsixEntryStride = 16, kNumMsixVectors = 32;
constexpr uint32_t kMsixPbaBase = 0x30000;
constexpr uint32_t kBar0Size = 0x40000;
constexpr uint32_t kDeviceVersion = 0x0001'0000;  // major 1, minor 0

// Register names the model binds behaviour to.
namespace reg {
constexpr const char* version = "VERSION";
constexpr const char* caps = "CAPS";
constexpr const char* health = "HEALTH";
constexpr const char* reset = "RESET";
constexpr const char* cmdq_addr_hi = "CMDQ_ADDR_HI";
constexpr const char* cmdq_addr_lo = "CMDQ_ADDR_LO";
constexpr const char* cmd_doorbell = "CMD_DOORBELL";
constexpr const char* core_clock_khz = "CORE_CLOCK_KHZ";
constexpr const char* num_uars = "NUM_UARS";
constexpr const char* num_msix = "NUM_MSIX";
constexpr const char* bad_doorbells = "BAD_DOORBELLS";
constexpr const char* last_bad_doorbell = "LAST_BAD_DOORBELL";
constexpr const char* lost_events = "LOST_EVENTS";
constexpr const char* bad_accesses = "BAD_ACCESSES";
constexpr const char* port_lid = "PORT_LID";
constexpr const char* port_state = "PORT_STATE";
constexpr const char* sq_db = "UAR_SQ_DB";
constexpr const char* rq_db = "UAR_RQ_DB";
constexpr const char* sq_bf = "UAR_SQ_BF";
constexpr const char* cq_arm_db = "UAR_CQ_ARM";
constexpr const char* eq_db_arm = "UAR_EQ_ARM";
constexpr const char* eq_db_noarm = "UAR_EQ_UPDATE";
constexpr const char* msix_addr_lo = "MSIX_ADDR_LO";
constexpr const char* msix_addr_hi = "MSIX_ADDR_HI";
constexpr const char* msix_data = "MSIX_DATA";
constexpr const char* msix_ctrl = "MSIX_CTRL";
constexpr const char* msix_pba = "MSIX_PBA";
}  // namespace reg

// HEALTH bits.
constexpr uint32_t kHealthReady = 1u << 0, kHealthInitialized = 1u << 1, kHealthFatal = 1u << 31;
// CAPS bits (QUERY_CAP gives the full list).
constexpr uint32_t kCapResize = 1u << 0, kCapModeration = 1u << 1, kCapCqePeriodMode = 1u << 2,
                   kCapAlwaysArmed = 1u << 3;

const std::vector<RegSpec>& bar0_registers();

// A field of a big-endian hardware format: `width` bits starting at bit `lo` of the `size`-byte
// big-endian container at byte `byte`.
struct Field {
  uint16_t byte;
  uint8_t size;
  uint8_t lo;
  uint8_t width;
};
struct FieldSpec {
  const char* name;
  Field field;
  const char* description;
};

// Always inlined: a constant Field then folds to one load or store of its container and a byte
// swap (the CQE path formats one per CQE and the driver parses it); out of line, the container
// size is not a constant and the accessors cost several times more.
inline __attribute__((always_inline)) uint64_t get_field(const uint8_t* buf, Field f) {
  const uint64_t word = get_be(buf + f.byte, f.size);
  if (f.width == 64) return word;
  return (word >> f.lo) & ((uint64_t(1) << f.width) - 1);
}
inline __attribute__((always_inline)) void put_field(uint8_t* buf, Field f, uint64_t value) {
  if (f.lo == 0 && f.width == 8u * f.size) return put_be(buf + f.byte, f.size, value);  // the whole container
  const uint64_t mask = f.width == 64 ? ~uint64_t(0) : ((uint64_t(1) << f.width) - 1) << f.lo;
  const uint64_t word = get_be(buf + f.byte, f.size);
  put_be(buf + f.byte, f.size, (word & ~mask) | ((value << f.lo) & mask));
}

// CQE: 64 bytes.
#define VHCA_CQE_FIELDS(X)                                                                        \
  X(wr_id, 0x00, 8, 0, 64, "wr_id of the work request; valid in every CQE, success or error")    \
  X(timestamp, 0x10, 8, 0, 64, "core-clock cycle on which the device issued this CQE's write")    \
  X(slid, 0x20, 2, 0, 16, "UD receive: source LID")                                               \
  X(pkey_index, 0x22, 2, 0, 16, "GSI QP receive: P_Key index")                                    \
  X(imm, 0x24, 4, 0, 32, "immediate data (valid when imm_present)")                                \
  X(imm_present, 0x28, 4, 31, 1, "immediate data present")                                        \
  X(grh, 0x28, 4, 28, 1, "UD receive: GRH present in the first 40 bytes of the buffer")          \
  X(sl, 0x28, 4, 24, 4, "UD receive: service level")                                              \
  X(src_qpn, 0x28, 4, 0, 24, "UD receive: source QPN")                                            \
  X(byte_cnt, 0x2C, 4, 0, 32, "bytes transferred")                                                \
  X(vendor_syndrome, 0x36, 1, 0, 8, "error CQE: vendor syndrome")                                 \
  X(syndrome, 0x37, 1, 0, 8, "error CQE: completion status syndrome (see below)")                 \
  X(send_opcode, 0x38, 4, 24, 8, "requester CQE: the WQE opcode that completed")                 \
  X(qpn, 0x38, 4, 0, 24, "local QPN")                                                             \
  X(wqe_counter, 0x3C, 2, 0, 16, "index of the WQE in its work queue")                            \
  X(opcode, 0x3F, 1, 4, 4, "CQE opcode (0xF = INVALID: entry not yet written)")                   \
  X(format, 0x3F, 1, 2, 2, "CQE format (0)")                                                      \
  X(se, 0x3F, 1, 1, 1, "solicited event bit of the message")                                      \
  X(owner, 0x3F, 1, 0, 1, "owner: (producer index >> log_size) & 1 when written")

// EQE: 64 bytes.
#define VHCA_EQE_FIELDS(X)                                                                \
  X(event_type, 0x01, 1, 0, 8, "event type (see below)")                                 \
  X(sub_type, 0x03, 1, 0, 8, "event sub-type")                                           \
  X(cqn, 0x20, 4, 0, 24, "completion and CQ-error events: the CQN")                      \
  X(syndrome, 0x24, 1, 0, 8, "error events: the syndrome")                               \
  X(data, 0x28, 8, 0, 64, "event-specific data (CQ error: producer index; DMA error: address)") \
  X(timestamp, 0x30, 8, 0, 64, "core-clock cycle on which the device issued this EQE's write")     \
  X(owner, 0x3F, 1, 0, 1, "owner: (producer index >> log_size) & 1 when written; initially 1")

// Send queue WQE: 128 bytes (kSqWqeSize) in the SQ ring. Segments: control (0x00), remote
// address (0x10), atomic (0x20), UD address (0x30), then the data segment at 0x40: up to four
// scatter/gather entries, or up to 64 bytes of inline data.
#define VHCA_SQ_WQE_FIELDS(X)                                                                          \
  X(wr_id, 0x00, 8, 0, 64, "wr_id, returned in the CQE")                                            \
  X(opcode, 0x08, 1, 0, 8, "0x08 RDMA WRITE, 0x09 WRITE with imm, 0x0A SEND, 0x0B SEND with imm, 0x10 RDMA READ, 0x11 compare-and-swap, 0x12 fetch-and-add") \
  X(signaled, 0x09, 1, 0, 1, "produce a CQE on success (errors always do)")                        \
  X(solicited, 0x09, 1, 1, 1, "set the solicited-event bit in the message")                         \
  X(fence, 0x09, 1, 2, 1, "wait for earlier RDMA READs and atomics to complete first")              \
  X(inline_data, 0x09, 1, 3, 1, "the data segment holds inline_len bytes of data, not SGEs")        \
  X(num_sge, 0x0A, 1, 0, 8, "scatter/gather entries in the data segment, 0..4")                     \
  X(imm, 0x0C, 4, 0, 32, "immediate data (the *with imm* opcodes)")                                 \
  X(remote_addr, 0x10, 8, 0, 64, "RDMA and atomic: remote virtual address")                          \
  X(rkey, 0x18, 4, 0, 32, "RDMA and atomic: remote key")                                            \
  X(inline_len, 0x1C, 1, 0, 8, "inline data length, 0..64")                                          \
  X(qpn, 0x1C, 4, 0, 24, "the QP's number: names the QP when the WQE is written through UAR_SQ_BF (the device ignores it in the ring)") \
  X(compare_add, 0x20, 8, 0, 64, "compare-and-swap: compare value; fetch-and-add: addend")           \
  X(swap, 0x28, 8, 0, 64, "compare-and-swap: swap value")                                            \
  X(ud_dest_qpn, 0x30, 4, 0, 24, "UD: destination QPN")                                             \
  X(ud_qkey, 0x34, 4, 0, 32, "UD: Q_Key (high bit set: use the QP's own Q_Key)")                   \
  X(ud_dlid, 0x38, 2, 0, 16, "UD: destination LID")                                                  \
  X(ud_sl, 0x3A, 1, 0, 4, "UD: service level")                                                       \
  X(ud_grh, 0x3B, 1, 0, 1, "UD: send a GRH")                                                         \
  X(wqe_index, 0x3C, 2, 0, 16, "the WQE's index in the SQ (producer counter when posted), checked by the device")

// Receive queue WQE: 64 bytes (kRqWqeSize): wr_id and up to three scatter entries.
#define VHCA_RQ_WQE_FIELDS(X)                                                  \
  X(wr_id, 0x00, 8, 0, 64, "wr_id, returned in the CQE")                    \
  X(num_sge, 0x08, 1, 0, 8, "scatter entries that follow, 0..3")            \
  X(wqe_index, 0x0C, 2, 0, 16, "the WQE's index in the RQ, checked by the device")

// Scatter/gather entry: 16 bytes, at 0x40 + 16*i in an SQ WQE and 0x10 + 16*i in an RQ WQE.
#define VHCA_SGE_FIELDS(X)                                         \
  X(addr, 0x00, 8, 0, 64, "buffer address")                      \
  X(length, 0x08, 4, 0, 32, "buffer length in bytes")            \
  X(lkey, 0x0C, 4, 0, 32, "local key of the MR holding the buffer")

// QP doorbell record: 8 bytes in host memory. The device reads the RQ producer counter when a
// message needs a receive WQE and its cached copy has none.
#define VHCA_QP_DBR_FIELDS(X)                                                        \
  X(rq_pi, 0x00, 4, 0, 16, "RQ producer counter: receive WQEs posted so far (mod 2^16)") \
  X(sq_pi, 0x04, 4, 0, 16, "SQ producer counter: send WQEs posted so far (mod 2^16)")

// The 64-bit SQ and RQ doorbells written to UAR_SQ_DB / UAR_RQ_DB (little-endian MMIO value).
#define VHCA_WQ_DB_FIELDS(X)                                                     \
  X(qpn, 0x00, 8, 0, 24, "QPN (bits 23:0)")                                      \
  X(pi, 0x00, 8, 32, 16, "producer counter: WQEs posted so far, mod 2^16 (bits 47:32)")

// CQ doorbell record: 8 bytes in host memory.
#define VHCA_DBR_FIELDS(X)                                                         \
  X(consumer_index, 0x00, 4, 0, 24, "consumer index, written by the driver after polling") \
  X(arm_sn, 0x04, 4, 28, 2, "arm sequence number of the last arm")                 \
  X(arm_cmd, 0x04, 4, 24, 4, "arm command of the last arm: 0 NEXT, 1 SOLICITED")  \
  X(arm_ci, 0x04, 4, 0, 24, "consumer index carried by the last arm")

// The 64-bit CQ arm doorbell written to UAR_CQ_ARM (little-endian MMIO value).
#define VHCA_ARM_DB_FIELDS(X)                                                   \
  X(cqn, 0x00, 8, 0, 24, "CQN (bits 23:0 of the 64-bit value)")                  \
  X(arm_ci, 0x00, 8, 32, 24, "consumer index the driver has seen (bits 55:32)")  \
  X(arm_cmd, 0x00, 8, 56, 4, "0 NEXT, 1 SOLICITED (bits 59:56)")                 \
  X(arm_sn, 0x00, 8, 60, 2, "arm sequence number (bits 61:60)")

// The 32-bit EQ doorbell written to UAR_EQ_ARM / UAR_EQ_UPDATE.
#define VHCA_EQ_DB_FIELDS(X)                                            \
  X(eqn, 0x00, 4, 24, 8, "EQN (bits 31:24)")                             \
  X(consumer_index, 0x00, 4, 0, 24, "EQ consumer index (bits 23:0)")

// Command block: 128 bytes in host memory, pointed to by CMDQ_ADDR.
#define VHCA_CMD_FIELDS(X)                                                                   \
  X(opcode, 0x00, 2, 0, 16, "command opcode")                                               \
  X(op_mod, 0x02, 2, 0, 16, "opcode modifier (must be 0)")                                  \
  X(token, 0x04, 1, 0, 8, "token, echoed in the command-completion EQE")                    \
  X(input, 0x08, 4, 0, 32, "input dwords in[0..13] at 0x08 + 4*i")                         \
  X(status, 0x40, 1, 0, 8, "status written by the device (see the command list)")          \
  X(syndrome, 0x44, 4, 0, 32, "(opcode << 16) | (input dword << 8) | reason of a failure")  \
  X(output, 0x48, 4, 0, 32, "output dwords out[0..12] at 0x48 + 4*i")                       \
  X(ownership, 0x7F, 1, 0, 1, "1: owned by the device (driver sets before the doorbell); the device clears it last")

#define VHCA_DECLARE_FIELD(n, b, s, l, w, d) constexpr Field n{b, s, l, w};
namespace cqe {
VHCA_CQE_FIELDS(VHCA_DECLARE_FIELD)
constexpr uint32_t kSize = 64;  // opcodes: model/regs/codes.h
}  // namespace cqe
namespace eqe {
VHCA_EQE_FIELDS(VHCA_DECLARE_FIELD)
constexpr uint32_t kSize = 64;  // event types and syndromes: model/regs/codes.h
}  // namespace eqe
namespace dbr {
VHCA_DBR_FIELDS(VHCA_DECLARE_FIELD)
constexpr uint32_t kSize = 8;
}
namespace sqwqe {
VHCA_SQ_WQE_FIELDS(VHCA_DECLARE_FIELD)
constexpr uint32_t kSize = 128, kDataOffset = 0x40, kMaxSge = 4, kMaxInline = 64;  // opcodes: codes.h
}  // namespace sqwqe
namespace rqwqe {
VHCA_RQ_WQE_FIELDS(VHCA_DECLARE_FIELD)
constexpr uint32_t kSize = 64, kDataOffset = 0x10, kMaxSge = 3;
}  // namespace rqwqe
namespace sge {
VHCA_SGE_FIELDS(VHCA_DECLARE_FIELD)
constexpr uint32_t kSize = 16;
}
namespace qpdbr {
VHCA_QP_DBR_FIELDS(VHCA_DECLARE_FIELD)
constexpr uint32_t kSize = 8;
}
namespace wqdb {
VHCA_WQ_DB_FIELDS(VHCA_DECLARE_FIELD)
}
namespace armdb {
VHCA_ARM_DB_FIELDS(VHCA_DECLARE_FIELD)
}
namespace eqdb {
VHCA_EQ_DB_FIELDS(VHCA_DECLARE_FIELD)
}
namespace cmdblk {
VHCA_CMD_FIELDS(VHCA_DECLARE_FIELD)
constexpr uint32_t kSize = 128, kInputDwords = 14, kOutputDwords = 13;
}  // namespace cmdblk
#undef VHCA_DECLARE_FIELD


struct FormatSpec {
  const char* name;
  const char* prefix;  // of the RTL `define names
  uint32_t size;
  std::vector<FieldSpec> fields;
};
const std::vector<FormatSpec>& formats();

}  // namespace vhca

namespace vhca {
// Fields of an MMIO value (doorbells): the `lo`/`width` of the Field, byte/size ignored.
inline uint64_t bits_of(uint64_t value, Field f) {
  return f.width == 64 ? value : (value >> f.lo) & ((uint64_t(1) << f.width) - 1);
}
inline uint64_t with_bits(uint64_t value, Field f, uint64_t v) {
  uint64_t mask = f.width == 64 ? ~uint64_t(0) : ((uint64_t(1) << f.width) - 1) << f.lo;
  return (value & ~mask) | ((v << f.lo) & mask);
}
}  // namespace vhca
