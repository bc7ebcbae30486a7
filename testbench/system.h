// One host and one HCA joined by a PCIe link: host memory and the MSI sink behind the host
// router, the host CPU with its driver. Tests and vhca-sim build exactly one System per process
// (SystemC elaborates once) and then advance time with run().
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <systemc>

#include "firmware-shim/driver.h"
#include "firmware-shim/host_cpu.h"
#include "model/hca.h"
#include "tlm/host_memory.h"
#include "tlm/host_router.h"
#include "tlm/msi_sink.h"
#include "tlm/pcie_link.h"

namespace vhca {

struct SystemConfig {
  HcaConfig hca;
  PcieLinkConfig link;
  HostCpuConfig cpu;
  DriverConfig driver;
};

class System {
 public:
  explicit System(const SystemConfig& cfg = {});

  // Runs `body` in a new SC_THREAD and advances the simulation until it returns. Throws if the
  // simulation starves (no more events) or `limit` of simulated time passes first, and rethrows
  // anything `body` threw (a failed test assertion).
  void run(std::function<void()> body, sc_core::sc_time limit = sc_core::sc_time(1, sc_core::SC_SEC));

  // Wait in the calling thread until the edge of `cycle` (a device core-clock cycle).
  void wait_cycle(uint64_t cycle);
  uint64_t cycle() const { return hca.clock.now(); }

  SystemConfig cfg;
  HostMemory memory;
  HostRouter router;
  MsiSink msi;
  PcieLink link;
  Hca hca;
  HostCpu cpu;
  Driver driver;
};

}  // namespace vhca
