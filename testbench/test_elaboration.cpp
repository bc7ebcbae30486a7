// An output stream left unbound is refused at elaboration, with the port's name: the CQ writer's
// event output is left unbound on purpose, and SystemC must refuse to start and name
// "hca.cq.m_event" (before ports, it was a null dereference at the first event).
#include <cstdio>
#include <string>
#include <systemc>

#include "model/cq/cqe_writer.h"
#include "model/dma/dma_engine.h"

int sc_main(int, char*[]) {
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  struct Top : sc_core::sc_module {
    vhca::SimClock clock;
    vhca::DmaEngine dma{"dma", clock};
    vhca::CqeWriter cq{"cq", clock};
    explicit Top(const sc_core::sc_module_name& n) : sc_module(n) {
      cq.m_dma(dma.s_write);
      cq.m_ci_req(dma.s_ci_req);
      dma.m_ci_rsp(cq.s_ci);
      // cq.m_event is not bound.
    }
  } top("hca");
  try {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  } catch (const sc_core::sc_report& r) {
    const std::string what = r.what();
    const bool names_port = what.find("hca.cq.m_event") != std::string::npos;
    const bool says_unbound = what.find("not bound") != std::string::npos;
    std::printf("elaboration refused: %s\n%s\n", what.c_str(),
                names_port && says_unbound ? "1 passed, 0 failed" : "0 passed, 1 failed");
    return names_port && says_unbound ? 0 : 1;
  }
  std::printf("elaboration accepted an unbound output port\n0 passed, 1 failed\n");
  return 1;
}
