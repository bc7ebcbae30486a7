// The command interface: opcodes, status codes, failure reasons and, per command, the meaning of
// each input and output dword. The command unit validates against this, the driver names failed
// fields from it, and tools/gen_docs.cpp writes docs/commands.md from it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/regs/codes.h"

namespace vhca::cmd {

enum Opcode : uint16_t {
  kQueryCap = 0x100,
  kInit = 0x102,
  kTeardown = 0x103,
  kCreateEq = 0x301,
  kDestroyEq = 0x302,
  kQueryEq = 0x303,
  kCreateCq = 0x400,
  kDestroyCq = 0x401,
  kQueryCq = 0x402,
  kModifyCq = 0x403,
  kRegMr = 0x200,
  kDeregMr = 0x201,
  kCreateQp = 0x500,
  kModifyQp = 0x501,
  kQueryQp = 0x502,
  kDestroyQp = 0x503,
  kCreateSrq = 0x700,
  kDestroySrq = 0x701,
  kQuerySrq = 0x702,
  kArmSrq = 0x703,
  kAllocPd = 0x800,
  kDeallocPd = 0x801,
};

// Status codes (Status) and failure reasons (Reason, the low byte of a failure syndrome: why the
// named field was refused) are in model/regs/codes.h.

constexpr uint8_t kFieldOpMod = 0xFE;  // the dword byte of a syndrome about the op_mod header field
constexpr uint8_t kFieldNone = 0xFF;   // a syndrome about no particular field

// Flags and selects.
constexpr uint32_t kCqFlagPeriodModeCqe = 1u << 0, kCqFlagOverrunIgnore = 1u << 1, kCqFlagAlwaysArmed = 1u << 2;
constexpr uint32_t kModifySelectModeration = 1u << 0, kModifySelectResize = 1u << 1;

struct DwordSpec {
  uint8_t index;
  const char* name;
  const char* description;
};

struct CommandSpec {
  Opcode opcode;
  const char* name;
  const char* description;
  std::vector<DwordSpec> inputs;   // dwords not listed must be zero
  std::vector<DwordSpec> outputs;
};

const std::vector<CommandSpec>& commands();
const CommandSpec* find(uint16_t opcode);
const char* status_name(uint8_t status);
const char* reason_name(uint8_t reason);
// "CREATE_CQ in[0] log_size: out of range" from a failure syndrome.
std::string describe_failure(uint32_t syndrome);

}  // namespace vhca::cmd
