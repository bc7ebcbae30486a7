// Hosts with their HCAs: each Node is one host (memory and MSI sink behind the host router, the
// host CPU with its driver) and one HCA joined to it by a PCIe link. One node's IB port is looped
// back to itself; two nodes are joined by one IB link; more are each cabled to one IB switch. Tests and vhca-sim build exactly one
// System per process (SystemC elaborates once) and then advance time with run().
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "firmware-shim/driver.h"
#include "firmware-shim/host_cpu.h"
#include "model/hca.h"
#include "sim/invariants.h"
#include "tlm/host_memory.h"
#include "tlm/host_router.h"
#include "tlm/ib_link.h"
#include "tlm/ib_switch.h"
#include "tlm/msi_sink.h"
#include "tlm/pcie_link.h"

namespace vhca {

struct SystemConfig {
  HcaConfig hca;
  PcieLinkConfig link;
  HostCpuConfig cpu;
  DriverConfig driver;
  // 1: the HCA's port is looped back; 2: two hosts, their HCAs on one IB link; 3..kMaxHosts: each
  // HCA cabled to a port of one switch, routing by LID (node i's HCA has LID i + 1).
  uint32_t hosts = 1;
  static constexpr uint32_t kMaxHosts = 64;
  // The link, or with a switch the path between two HCAs: cable, switch, cable. Each cable then
  // has (latency - switch latency) / 2, so a switched pair sees the link's timing.
  IbLinkConfig ib;
  IbSwitchConfig ib_switch;
  // System::run gives up after this much wall-clock time (seconds; 0: no limit), with a message
  // naming the simulated time reached.
  double wall_limit_s = 0;
  // The wall-clock tick behind the livelock check and wall_limit_s (once a second, between delta
  // cycles). vhca-bench turns it off: a pause at a wall-clock moment would add a few instructions
  // at a different point on each run, and its counts must repeat exactly.
  bool wall_clock_watch = true;
  // The S29 invariant checker (sim/invariants.h) watches every node from the first run() on.
  bool check_invariants = false;
};

// One host and its HCA. The HCA of node i has LID i + 1 unless the configuration sets one.
class Node : public sc_core::sc_module {
 public:
  Node(const sc_core::sc_module_name& name, const SystemConfig& cfg, uint32_t index);

  HostMemory memory;
  HostRouter router;
  MsiSink msi;
  PcieLink link;
  Hca hca;
  HostCpu cpu;
  Driver driver;
};

// Kills every SystemC thread still waiting, so that each unwinds (see system.cpp); System's
// destructor calls it.
void end_threads();

class System {
 public:
  explicit System(const SystemConfig& cfg = {});
  // Kills the threads still waiting (end_threads) before the blocks they use go.
  ~System();

  // Runs `body` in a new SC_THREAD and advances the simulation until it returns. Throws (a
  // std::runtime_error saying which, and the simulated time) if the simulation starves (no more
  // events), if `limit` of simulated time passes first, if simulated time stops advancing (a
  // process notifying itself without delay: delta cycles for two seconds of wall time at one
  // instant), or if cfg.wall_limit_s of wall-clock time passes; rethrows anything `body` threw
  // (a failed test assertion).
  void run(std::function<void()> body, sc_core::sc_time limit = sc_core::sc_time(1, sc_core::SC_SEC));
  // The invariant checker, when cfg.check_invariants (else null).
  InvariantChecker* invariants() { return invariants_.get(); }

  // Wait in the calling thread until the edge of `cycle` (a device core-clock cycle).
  void wait_cycle(uint64_t cycle);
  uint64_t cycle() const { return hca.clock.now(); }
  Node& node(uint32_t i) { return *nodes_.at(i); }
  uint32_t hosts() const { return uint32_t(nodes_.size()); }

  SystemConfig cfg;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<IbLink>> cables_;  // one link; or, with a switch, one per host
  std::unique_ptr<IbSwitch> switch_;
  std::unique_ptr<InvariantChecker> invariants_;
  bool invariants_attached_ = false;

 public:
  // The IB link (with a switch: host 0's cable); cable(i): host i's (the one link up to two hosts).
  IbLink& ib;
  IbLink& cable(uint32_t host) { return *cables_.at(switch_ ? host : 0); }
  IbSwitch* ib_switch() { return switch_.get(); }
  // Node 0, under the names single-host tests use.
  HostMemory& memory;
  HostRouter& router;
  MsiSink& msi;
  PcieLink& link;
  Hca& hca;
  HostCpu& cpu;
  Driver& driver;
};

}  // namespace vhca
