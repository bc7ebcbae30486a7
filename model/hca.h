// The HCA: BAR0, command unit, transport engine (doorbells, WQE fetch, RC/UD), completion
// arbiter, CQ writer, EQ engine, MSI-X and DMA engine, joined by finite streams whose ports are
// bound here, at elaboration (docs/architecture.md draws them). Two TLM sockets face the PCIe
// link: `bar` (MMIO in) and `dma` (DMA out); two face the IB link: `port_out` and `port_in`.
// The transport engine and the injection port (records put in at chosen cycles by tests and
// tools) share the CQ writer's completion input through the completion arbiter.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <systemc>
#include <tlm>
#include <vector>

#include "model/bar/bar0.h"
#include "model/cmd/command_unit.h"
#include "model/common/sim_clock.h"
#include "model/common/wakeup.h"
#include "model/cq/completion_arbiter.h"
#include "model/cq/cqe_writer.h"
#include "model/dma/dma_engine.h"
#include "model/eq/eq_engine.h"
#include "model/msix/msix.h"
#include "model/qp/qp_table.h"
#include "model/transport/transport_engine.h"
#include "tlm/pcie_flow.h"

namespace vhca {

struct HcaConfig {
  double clock_mhz = 500.0;
  // Makes the CQ writer engine; unset: the C++ model. The co-simulation sets the Verilated RTL.
  std::function<std::unique_ptr<CqWriterEngine>(const CqeWriterConfig&)> cq_engine;
  sc_core::sc_time reset_time{10, sc_core::SC_US};  // assumption; HEALTH.ready also waits for the CQ writer's clearing
  CqeWriterConfig cq;
  EqEngineConfig eq;
  DmaEngineConfig dma;
  CommandUnitConfig cmd;
  CompletionArbiterConfig arbiter;
  MsixConfig msix;
  TransportConfig transport;
  uint32_t num_qps = 1024;
  uint32_t num_mrs = 4096;
};

// What is wrong with a configuration, naming the field ("" if nothing): a queue of depth 0, an
// outbox too small for one packet, no clock. The Hca's constructor throws std::invalid_argument
// with it, before any block is built.
std::string hca_config_error(const HcaConfig& cfg);

class Hca : public sc_core::sc_module, public PostedReadyIf, public WriteErrorIf {
 public:
  SC_HAS_PROCESS(Hca);
  Hca(const sc_core::sc_module_name& name, const HcaConfig& cfg = {});

  // Toward the PCIe link (tlm/pcie_flow.h): its doorbell FIFOs' flow control (held writes are let
  // go through m_mmio_resume when a FIFO has room), and the upstream writes that failed.
  sc_core::sc_export<PostedReadyIf> s_mmio_ready{"s_mmio_ready"};
  sc_core::sc_port<PostedResumeIf> m_mmio_resume{"m_mmio_resume"};
  sc_core::sc_export<WriteErrorIf> s_dma_errors{"s_dma_errors"};

  // Sockets: the BAR target and the DMA initiator.
  tlm_utils::simple_target_socket<Bar0>& bar() { return bar0.socket; }
  tlm_utils::simple_initiator_socket<DmaEngine>& dma_socket() { return dma.socket; }
  // The IB port: packets out to the link, packets in from it.
  tlm::tlm_initiator_socket<>& port_out() { return transport.port_out; }
  tlm::tlm_target_socket<>& port_in() { return transport.port_in; }
  // The IB link's flow control (S27): the credits the port sends with, the buffer it advertises.
  sc_core::sc_port<IbCreditIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND>& port_credits() { return transport.tx.credits; }
  sc_core::sc_port<IbRxFlowIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND>& port_flow() { return transport.rx.flow; }

  // Doorbell backpressure (PCIe posted-write credits): may the posted MMIO write to `offset` be
  // delivered now? A full doorbell FIFO (SQ/RQ, CQ arm, EQ) holds it, and everything behind it,
  // in the link until m_mmio_resume says the FIFO has room again: no doorbell is dropped.
  bool mmio_ready(uint64_t offset) const override;

  // Injection port: the record enters the CQ writer's input on `cycle` (now if in the past) and
  // is visible to it one cycle later. Records for the same cycle keep their order.
  void inject(const CompletionRecord& r, uint64_t cycle) { arbiter.inject(r, cycle); }
  void inject_now(const CompletionRecord& r) { inject(r, clock.now()); }
  uint64_t injected() const { return arbiter.injected(); }
  uint64_t injection_stalls() const { return arbiter.injection_stalls(); }

  // A posted write failed where it landed (told by the link, through s_dma_errors).
  void upstream_write_failed(DmaSource source, uint32_t id, uint64_t addr) override;
  // The IB link at the port went down or came up (System wires the link's on_state here):
  // PORT_STATE follows, and a port change EQE goes to the async EQ.
  void link_state_changed(bool up);
  bool port_active() const { return port_up_; }

  const HcaConfig& config() const { return cfg_; }

  SimClock clock;
  Bar0 bar0;
  DmaEngine dma;
  CompletionArbiter arbiter;
  CqeWriter cq;
  EqEngine eq;
  Msix msix;
  QpTables qp_tables;
  TransportEngine transport;
  CommandUnit cmd;

 private:
  void bind_streams();
  void bind_registers();
  void bad_doorbell(uint8_t reason, uint32_t object);
  void count_lost_event();
  void device_reset();
  void reset_done() { bar0.regs.set(reg::health, kHealthReady); }
  void bind_transport();

  HcaConfig cfg_;
  struct UarDoorbells {  // offsets within a UAR page, from the register table
    uint32_t sq, rq, sq_bf, cq_arm, eq_arm, eq_update;
  } uar_{};
  sc_core::sc_event reset_done_event_;
  bool port_up_ = true;
};

}  // namespace vhca
