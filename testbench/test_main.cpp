// sc_main for the Catch2 test executables: elaborate one System (SystemC elaborates once per
// process), then let Catch2 run the cases; each case advances simulated time with sys().run().
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <systemc>

#include "testbench/test_support.h"
#ifdef VHCA_RTL_IN_THE_LOOP
#include "cosim/rtl_pipelined_writer.h"
#endif

namespace vhca::test {
static System* g_system = nullptr;
System& sys() { return *g_system; }
}  // namespace vhca::test

int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  vhca::SystemConfig cfg;
  cfg.check_invariants = true;  // S29 on in every test: a breach fails the test (below)
  vhca::test::configure(cfg);
#ifdef VHCA_RTL_IN_THE_LOOP
  // The same tests with the Verilated RTL of the pipelined CQ writer (at the HCA's 65,536 CQs) in
  // place of its C++ model.
  cfg.hca.cq_engine = [](const vhca::CqeWriterConfig& c) { return vhca::make_rtl_pipelined_writer(c); };
#endif
  vhca::System system(cfg);
  vhca::test::g_system = &system;
  const int failed = Catch::Session().run(argc, argv);
  if (vhca::InvariantChecker* inv = system.invariants()) {
    inv->check_queues(system);
    for (const std::string& v : inv->violations()) std::fprintf(stderr, "S29 invariant broken: %s\n", v.c_str());
    if (!inv->violations().empty()) return failed ? failed : 1;
  }
  return failed;
}
