// A port left unbound is refused at elaboration, with the port's name (before ports these were
// null dereferences, or silence, at the first use). One case per run, named by the argument:
//   stream  the CQ writer's event output: "hca.cq.m_event"
//   irq     the MSI sink's interrupt output to the host CPU: "node.msi.m_irq"
//   flow    the PCIe link's doorbell flow control toward the HCA: "node.link.down_ready"
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/cq/cqe_writer.h"
#include "model/dma/dma_engine.h"
#include "tlm/msi_sink.h"
#include "tlm/pcie_link.h"

namespace {

// The CQ writer beside its DMA engine, every output bound but its event output.
struct UnboundStream : sc_core::sc_module {
  vhca::SimClock clock;
  vhca::DmaEngine dma{"dma", clock};
  vhca::CqeWriter cq{"cq", clock};
  explicit UnboundStream(const sc_core::sc_module_name& n) : sc_module(n) {
    cq.m_dma(dma.s_write);
    cq.m_ci_req(dma.s_ci_req);
    dma.m_ci_rsp(cq.s_ci);
  }
};

// A memory target that takes everything (the far side of a socket that must be bound).
struct Sink : sc_core::sc_module {
  tlm_utils::simple_target_socket<Sink> socket{"socket"};
  explicit Sink(const sc_core::sc_module_name& n) : sc_module(n) {
    socket.register_b_transport(this, &Sink::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& tx, sc_core::sc_time&) { tx.set_response_status(tlm::TLM_OK_RESPONSE); }
};

// The MSI sink with its socket bound and its interrupt output not.
struct UnboundIrq : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<UnboundIrq> to_msi{"to_msi"};
  vhca::MsiSink msi{"msi"};
  explicit UnboundIrq(const sc_core::sc_module_name& n) : sc_module(n) { to_msi.bind(msi.socket); }
};

// The PCIe link with every socket and its error report bound, its doorbell flow control not.
struct UnboundFlow : sc_core::sc_module, vhca::WriteErrorIf {
  tlm_utils::simple_initiator_socket<UnboundFlow> device{"device"}, host{"host"};
  Sink memory{"memory"}, bar{"bar"};
  vhca::PcieLink link{"link"};
  sc_core::sc_export<vhca::WriteErrorIf> errors{"errors"};
  explicit UnboundFlow(const sc_core::sc_module_name& n) : sc_module(n) {
    device.bind(link.up_in);
    host.bind(link.down_in);
    link.up_out.bind(memory.socket);
    link.down_out.bind(bar.socket);
    errors.bind(*this);
    link.up_errors.bind(errors);
  }
  void upstream_write_failed(vhca::DmaSource, uint32_t, uint64_t) override {}
};

}  // namespace

int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  const std::string which = argc > 1 ? argv[1] : "stream";
  std::unique_ptr<sc_core::sc_module> top;
  std::string port;
  if (which == "stream") {
    top = std::make_unique<UnboundStream>("hca");
    port = "hca.cq.m_event";
  } else if (which == "irq") {
    top = std::make_unique<UnboundIrq>("node");
    port = "node.msi.m_irq";
  } else if (which == "flow") {
    top = std::make_unique<UnboundFlow>("node");
    port = "node.link.down_ready";
  } else {
    std::fprintf(stderr, "usage: test_elaboration stream|irq|flow\n");
    return 2;
  }
  try {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  } catch (const sc_core::sc_report& r) {
    const std::string what = r.what();
    const bool names_port = what.find(port) != std::string::npos;
    const bool says_unbound = what.find("not bound") != std::string::npos;
    std::printf("elaboration refused: %s\n%s\n", what.c_str(),
                names_port && says_unbound ? "1 passed, 0 failed" : "0 passed, 1 failed");
    return names_port && says_unbound ? 0 : 1;
  }
  std::printf("elaboration accepted the unbound port %s\n0 passed, 1 failed\n", port.c_str());
  return 1;
}
