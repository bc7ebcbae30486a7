// Proves the sanitizer build (bash tools/bootstrap.sh sanitize) catches what it is there for: each
// mode commits one fault, and its ctest passes only if ASan or UBSan reports that fault by name
// and the program fails. Built only with VHCA_SANITIZE.
//   sanitizer_probe leak|overflow|use-after-free|signed-overflow|thread-unwound
#include <cstdio>
#include <cstring>
#include <string>
#include <systemc>
#include <vector>

#include "sim/system.h"

namespace {

volatile int sink = 0;

int leak() {
  auto* lost = new std::vector<int>(100, 1);
  sink = (*lost)[7];
  lost = nullptr;
  return 0;
}

int overflow() {
  std::vector<int> v(4, 0);
  int* p = v.data();
  sink = p[4 + sink];
  return 0;
}

int use_after_free() {
  int* p = new int(3);
  delete p;
  sink = *p;
  return 0;
}

int signed_overflow() {
  volatile int big = 0x7fffffff;
  sink = big + 1;
  return 0;
}

// A model thread that owns memory and is never resumed: System's destructor kills it, so its
// stack unwinds and nothing leaks (this mode must pass, where the others must fail).
int thread_unwound() {
  vhca::SystemConfig cfg;
  vhca::System sys(cfg);
  try {
    sys.run([] {
      std::vector<int> held(1000, 1);
      sc_core::wait(sc_core::sc_time(1, sc_core::SC_SEC));
      sink = held[3];
    }, sc_core::sc_time(1, sc_core::SC_US));
  } catch (const std::runtime_error&) {  // the limit cuts the body off, as intended
  }
  return 0;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "leak") return leak();
  if (mode == "overflow") return overflow();
  if (mode == "use-after-free") return use_after_free();
  if (mode == "signed-overflow") return signed_overflow();
  if (mode == "thread-unwound") return thread_unwound();
  std::fprintf(stderr, "usage: sanitizer_probe leak|overflow|use-after-free|signed-overflow|thread-unwound\n");
  return 2;
}
