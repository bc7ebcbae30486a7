// Fuzz target 2 (issue 14, item 4): the command interface. Each input is a run of command blocks
// (an opcode and 14 input dwords each, 64 bytes) executed through the command mailbox as the
// driver does (block in host memory, ownership bit, command doorbell). The opcode is taken from the
// real ones most of the time so that every command's field checks are reached. The device must
// answer every block with a defined status, never time out, never crash, and still serve the next
// command (system_harness.h).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "testbench/fuzz/system_harness.h"

namespace {
constexpr uint16_t kOpcodes[] = {vhca::cmd::kQueryCap,   vhca::cmd::kInit,       vhca::cmd::kTeardown,
                                 vhca::cmd::kCreateEq,   vhca::cmd::kDestroyEq,  vhca::cmd::kQueryEq,
                                 vhca::cmd::kCreateCq,   vhca::cmd::kDestroyCq,  vhca::cmd::kQueryCq,
                                 vhca::cmd::kModifyCq,   vhca::cmd::kRegMr,      vhca::cmd::kDeregMr,
                                 vhca::cmd::kCreateQp,   vhca::cmd::kModifyQp,   vhca::cmd::kQueryQp,
                                 vhca::cmd::kDestroyQp,  vhca::cmd::kCreateSrq,  vhca::cmd::kDestroySrq,
                                 vhca::cmd::kQuerySrq,   vhca::cmd::kArmSrq,     vhca::cmd::kAllocPd,
                                 vhca::cmd::kDeallocPd};
constexpr size_t kBlock = 2 + 14 * 4;

bool defined_status(uint8_t s) {
  using namespace vhca::cmd;
  for (uint8_t ok : {kOk, kInternalError, kBadOp, kBadParam, kBadSysState, kBadResource, kResourceBusy, kBadResState,
                     kNoResources, kBadSize})
    if (s == ok) return true;
  return false;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8 * kBlock) return 0;
  vhca::System& s = vhca::fuzz::sys();
  s.run([&] {
    vhca::fuzz::begin_input();
    for (size_t at = 0; at + kBlock <= size; at += kBlock) {
      const uint16_t pick = uint16_t(data[at] | data[at + 1] << 8);
      // One in four opcodes is taken raw, the rest from the real ones.
      const uint16_t opcode = (pick & 3) == 0 ? uint16_t(pick >> 2) : kOpcodes[(pick >> 2) % std::size(kOpcodes)];
      vhca::Driver::Input in{};
      std::memcpy(in.data(), data + at + 2, sizeof in);
      const vhca::CommandResult r = s.driver.exec(opcode, in);
      if (r.timed_out) vhca::fuzz::finding("a command timed out");
      if (!defined_status(r.status)) vhca::fuzz::finding("a command answered with an undefined status");
    }
    vhca::fuzz::check_commands_answer();
  }, sc_core::sc_time(10, sc_core::SC_MS));
  return 0;
}

// libsystemc defines main() and calls sc_main from it; this program's main is libFuzzer's (or the
// replay driver's): the System is elaborated on the first input.
int sc_main(int, char*[]) { return 0; }
