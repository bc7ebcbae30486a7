// What the two device fuzz targets share: one System elaborated for the whole process (SystemC
// elaborates once), booted again before each input, and the checks that the device still answers.
// A finding is a crash, a sanitizer report, a hang, or a check failing (abort).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "firmware-shim/verbs.h"
#include "model/regs/tables.h"
#include "sim/system.h"

namespace vhca::fuzz {

inline System& sys() {
  static std::unique_ptr<System> system = [] {
    SystemConfig cfg;
    cfg.wall_clock_watch = false;
    auto s = std::make_unique<System>(cfg);
    return s;
  }();
  return *system;
}

[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "FINDING: %s\n", what);
  std::abort();
}

// Inside a System::run body, before each input: the driver boots the device again (reset, command
// queue, INIT, event queues, MSI-X), as a driver recovers one; it must succeed whatever the
// previous input did, and every input starts from the same state.
inline void begin_input() {
  const CommandResult r = sys().driver.boot();
  if (!r.ok()) {
    std::fprintf(stderr, "boot: %s\n", r.message().c_str());
    finding("the device did not boot again after the previous input");
  }
}

// The command unit still answers (QUERY_CAP is allowed in every state).
inline void check_commands_answer() {
  if (sys().driver.exec(cmd::kQueryCap).timed_out) finding("QUERY_CAP timed out: the command unit is wedged");
}

}  // namespace vhca::fuzz
