// Every code the hardware contract names — CQE opcodes, WQE opcodes, completion syndromes, EQE
// types and their syndromes, CQ states, CQ control ops, arm commands and the reasons a doorbell
// is refused — is listed once here, as X-macro lists of (name, value, meaning). The lists declare
// the C++ constants and enums below, the value tables in docs/formats.md and the RTL's
// localparams in rtl/vhca_codes.vh (vhca-gen-docs writes both; docs_up_to_date checks them). No
// other file spells these values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

// CQE opcode, op_own[7:4].
#define VHCA_CQE_OPCODES(X)                                                      \
  X(kReq, 0x0, "requester completion (send queue), successful")                   \
  X(kRespWriteImm, 0x1, "responder: RDMA WRITE with immediate consumed a receive") \
  X(kRespSend, 0x2, "responder: SEND")                                            \
  X(kRespSendImm, 0x3, "responder: SEND with immediate")                          \
  X(kReqErr, 0xD, "requester completion with error (syndrome valid)")             \
  X(kRespErr, 0xE, "responder completion with error (syndrome valid)")            \
  X(kInvalid, 0xF, "the driver's pre-fill: the entry holds no CQE")

// Send WQE opcode (also a requester CQE's send_opcode).
#define VHCA_WQE_OPCODES(X)                        \
  X(kRdmaWrite, 0x08, "RDMA WRITE")                 \
  X(kRdmaWriteImm, 0x09, "RDMA WRITE with immediate") \
  X(kSend, 0x0A, "SEND")                            \
  X(kSendImm, 0x0B, "SEND with immediate")          \
  X(kRdmaRead, 0x10, "RDMA READ")                   \
  X(kAtomicCs, 0x11, "atomic compare and swap")     \
  X(kAtomicFa, 0x12, "atomic fetch and add")

// Completion status syndrome of an error CQE (IB completion errors).
#define VHCA_SYNDROMES(X)                                                            \
  X(kLocalLength, 0x01, "local length error")                                       \
  X(kLocalQpOp, 0x02, "local QP operation error")                                   \
  X(kLocalProtection, 0x04, "local protection error")                               \
  X(kWrFlush, 0x05, "work request flushed (the QP is in error)")                   \
  X(kBadResponse, 0x10, "bad response")                                             \
  X(kLocalAccess, 0x11, "local access error")                                       \
  X(kRemoteInvalidRequest, 0x12, "remote invalid request")                          \
  X(kRemoteAccess, 0x13, "remote access error")                                     \
  X(kRemoteOp, 0x14, "remote operation error")                                      \
  X(kRetryExceeded, 0x15, "transport retry counter exceeded")                       \
  X(kRnrRetryExceeded, 0x16, "RNR retry counter exceeded")

// EQE event type.
#define VHCA_EQE_TYPES(X)                                                          \
  X(kCompletion, 0x00, "completion event: the CQN is valid")                       \
  X(kSqDrained, 0x03, "send queue drained (SQD): data is the QPN")                 \
  X(kCqError, 0x04, "CQ error: CQN and syndrome valid")                            \
  X(kQpFatal, 0x05, "QP fatal (work queue catastrophic error): data is the QPN")   \
  X(kDmaError, 0x08, "a device DMA failed at the host: syndrome is the source, data the address") \
  X(kPortChange, 0x09, "the port's state changed: syndrome is the new state (PORT_CHANGE syndromes), data the port number") \
  X(kCommandDone, 0x0A, "command completion: syndrome is the status, data the token") \
  X(kEqOverrun, 0x0B, "an EQ overran: data is its EQN")                          \
  X(kSrqLimit, 0x14, "an armed SRQ holds fewer WQEs than its limit (it is disarmed): data is the SRQN")

// Syndrome of a QP fatal EQE.
#define VHCA_QP_FATAL_SYNDROMES(X)                             \
  X(kQpCqOverrun, 0x01, "a CQ of the QP overflowed")           \
  X(kQpCqError, 0x02, "a CQ of the QP entered error")

// Syndrome of a DMA error EQE: what failed (the posted write's source, DmaSource's value).
#define VHCA_DMA_ERROR_SYNDROMES(X)                                                   \
  X(kDmaCommandBlock, 0x00, "the command block could not be read (command not executed)") \
  X(kDmaEqe, 0x02, "an EQE write")                                                   \
  X(kDmaCommandReply, 0x04, "a command completion write")                            \
  X(kDmaTransportData, 0x05, "the transport's data: payload, READ response data, received data")

// Syndrome of a port change EQE: the port's new state (mlx5's port change subtypes; the values
// PORT_STATE reads).
#define VHCA_PORT_CHANGE_SYNDROMES(X)                                      \
  X(kPortDown, 0x01, "the link went down: packets sent are lost")        \
  X(kPortActive, 0x04, "the link is up and the port active")

// Syndrome of a CQ error EQE.
#define VHCA_CQ_ERROR_SYNDROMES(X)                                                 \
  X(kCqOverrun, 0x01, "a CQE found the CQ full")                                   \
  X(kCqAccessViolation, 0x02, "a CQE write failed at the host")                    \
  X(kCqBadDoorbellRecord, 0x03, "the doorbell record's consumer index is outside [pi - size, pi] (an unreadable record is 0x02)")

// CQ context state.
#define VHCA_CQ_STATES(X)                                                 \
  X(disarmed, 0, "no notification requested")                             \
  X(armed_next, 1, "armed: the next CQE raises an event")                 \
  X(armed_solicited, 2, "armed: the next solicited or error CQE raises an event") \
  X(always_armed, 3, "every CQE may raise an event (moderation applies)") \
  X(error, 4, "in error: CQEs are dropped and counted")

// Control op from the firmware to the CQ writer.
#define VHCA_CQ_CONTROL_OPS(X)                                            \
  X(create, 0, "load a context")                                          \
  X(modify_moderation, 1, "change count, period and mode")                \
  X(resize_begin, 2, "hold completions while the firmware copies the ring") \
  X(resize_commit, 3, "switch to the new ring")                           \
  X(resize_abort, 4, "release completions, keep the old ring")            \
  X(destroy, 5, "invalidate the context")

// Arm doorbell command (ARMDB cmd, doorbell record arm_cmd).
#define VHCA_ARM_COMMANDS(X)                                   \
  X(next, 0, "NEXT: the next CQE raises an event")             \
  X(solicited, 1, "SOLICITED: the next solicited or error CQE does")

// Reason a doorbell was refused (LAST_BAD_DOORBELL[31:24]).
#define VHCA_DOORBELL_ERRORS(X)                                            \
  X(kUnknownObject, 1, "unknown CQN, EQN or QPN")                          \
  X(kObjectInError, 2, "the CQ is in error")                               \
  X(kIndexOutOfRange, 3, "index out of range (or an unknown arm command)") \
  X(kStaleArmSn, 4, "stale arm sequence number")                           \
  X(kFifoFull, 5, "FIFO full (no longer raised: the PCIe link holds the write)") \
  X(kQpState, 6, "the QP's state does not take doorbells")

// QP state (MODIFY_QP cur_state and new_state, QUERY_QP out[0]); the meaning is its name.
#define VHCA_QP_STATES(X) \
  X(reset, 0, "RESET")    \
  X(init, 1, "INIT")      \
  X(rtr, 2, "RTR")        \
  X(rts, 3, "RTS")        \
  X(sqd, 4, "SQD")        \
  X(sqe, 5, "SQE")        \
  X(err, 6, "ERR")

// QP type (CREATE_QP in[0]): GSI is QP1, SMI is QP0; UC was added after the others, hence its
// number. The meaning is its name.
#define VHCA_QP_TYPES(X) \
  X(rc, 0, "RC")         \
  X(ud, 1, "UD")         \
  X(gsi, 2, "GSI")       \
  X(smi, 3, "SMI")       \
  X(uc, 4, "UC")

// Command status (the command block's status byte); the meaning is its name.
#define VHCA_CMD_STATUSES(X)              \
  X(kOk, 0x00, "OK")                      \
  X(kInternalError, 0x01, "INTERNAL_ERROR") \
  X(kBadOp, 0x02, "BAD_OP")               \
  X(kBadParam, 0x03, "BAD_PARAM")         \
  X(kBadSysState, 0x04, "BAD_SYS_STATE")  \
  X(kBadResource, 0x05, "BAD_RESOURCE")   \
  X(kResourceBusy, 0x06, "RESOURCE_BUSY") \
  X(kBadResState, 0x09, "BAD_RES_STATE")  \
  X(kNoResources, 0x0F, "NO_RESOURCES")   \
  X(kBadSize, 0x10, "BAD_SIZE")

// Why a command's field was refused: the low byte of its failure syndrome.
#define VHCA_CMD_REASONS(X)                                           \
  X(kOutOfRange, 1, "out of range")                                   \
  X(kMisaligned, 2, "misaligned")                                     \
  X(kUnknownObject, 3, "no such object")                              \
  X(kReservedSet, 4, "reserved bits or unused field not zero")        \
  X(kBusy, 5, "object in use")                                        \
  X(kWrongState, 6, "wrong state")                                    \
  X(kBelowOutstanding, 7, "smaller than the CQEs outstanding")        \
  X(kNotSupported, 8, "not supported by this device")

#define VHCA_DECLARE_CODE(n, v, d) constexpr uint8_t n = v;
#define VHCA_ENUM_ITEM(n, v, d) n = v,

namespace vhca {
namespace cqe {
VHCA_CQE_OPCODES(VHCA_DECLARE_CODE)
}
namespace sqwqe {
VHCA_WQE_OPCODES(VHCA_DECLARE_CODE)
}
namespace syndrome {
VHCA_SYNDROMES(VHCA_DECLARE_CODE)
}
namespace eqe {
VHCA_EQE_TYPES(VHCA_DECLARE_CODE)
VHCA_QP_FATAL_SYNDROMES(VHCA_DECLARE_CODE)
VHCA_CQ_ERROR_SYNDROMES(VHCA_DECLARE_CODE)
VHCA_PORT_CHANGE_SYNDROMES(VHCA_DECLARE_CODE)
VHCA_DMA_ERROR_SYNDROMES(VHCA_DECLARE_CODE)
}  // namespace eqe
namespace dberr {
VHCA_DOORBELL_ERRORS(VHCA_DECLARE_CODE)
}

enum class CqState : uint8_t { VHCA_CQ_STATES(VHCA_ENUM_ITEM) };
enum class CqControlOp : uint8_t { VHCA_CQ_CONTROL_OPS(VHCA_ENUM_ITEM) };
enum class ArmCmd : uint8_t { VHCA_ARM_COMMANDS(VHCA_ENUM_ITEM) };
enum class QpState : uint8_t { VHCA_QP_STATES(VHCA_ENUM_ITEM) };
enum class QpType : uint8_t { VHCA_QP_TYPES(VHCA_ENUM_ITEM) };
namespace cmd {
enum Status : uint8_t { VHCA_CMD_STATUSES(VHCA_ENUM_ITEM) };
enum Reason : uint8_t { VHCA_CMD_REASONS(VHCA_ENUM_ITEM) };
}  // namespace cmd

// A code's name by value, from a list: static constexpr CodeName names[] = {LIST(VHCA_CODE_NAME)};
struct CodeName {
  uint32_t value;
  const char* name;
};
#define VHCA_CODE_NAME(n, v, d) CodeName{v, d},
template <size_t N>
constexpr const char* code_name(const CodeName (&names)[N], uint32_t value, const char* unknown) {
  for (const CodeName& c : names)
    if (c.value == value) return c.name;
  return unknown;
}

// The lists as data, for the generated docs and RTL header.
struct CodeSpec {
  const char* name;  // the C++ name
  uint32_t value;
  const char* meaning;
};
struct CodeList {
  const char* title;       // as docs/formats.md heads it
  const char* rtl_prefix;  // localparam <PREFIX>_<NAME> in rtl/vhca_codes.vh
  unsigned rtl_width;      // bits
  std::vector<CodeSpec> codes;
};
const std::vector<CodeList>& code_lists();

}  // namespace vhca

#undef VHCA_DECLARE_CODE
#undef VHCA_ENUM_ITEM
