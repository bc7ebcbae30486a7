#include "testbench/system.h"

#include <exception>
#include <stdexcept>

namespace vhca {

System::System(const SystemConfig& c)
    : cfg(c),
      memory("memory"),
      router("router"),
      msi("msi"),
      link("link", c.link),
      hca("hca", c.hca),
      cpu("cpu", c.cpu),
      driver(cpu, memory, c.driver) {
  router.to_memory.bind(memory.socket);
  router.to_msi.bind(msi.socket);
  link.up_out.bind(router.in);
  cpu.mem.bind(router.in);
  hca.dma_socket().bind(link.up_in);
  cpu.mmio.bind(link.down_in);
  link.down_out.bind(hca.bar());
  msi.raise = [this](uint32_t v) { cpu.raise(v); };
  link.on_upstream_write_error = [this](DmaSource s, uint32_t id, uint64_t addr) {
    hca.upstream_write_failed(s, id, addr);
  };
}

void System::run(std::function<void()> body, sc_core::sc_time limit) {
  bool done = false;
  std::exception_ptr error;
  sc_core::sc_spawn(
      [&] {
        try {
          body();
        } catch (...) {
          error = std::current_exception();
        }
        done = true;
        sc_core::sc_pause();
      },
      sc_core::sc_gen_unique_name("run"));
  const sc_core::sc_time end = sc_core::sc_time_stamp() + limit;
  while (!done) {
    sc_core::sc_start(end - sc_core::sc_time_stamp(), sc_core::SC_EXIT_ON_STARVATION);
    if (done) break;
    if (sc_core::sc_time_stamp() >= end) throw std::runtime_error("simulated time limit reached before the body finished");
    if (!sc_core::sc_pending_activity()) throw std::runtime_error("simulation starved before the body finished");
  }
  if (error) std::rethrow_exception(error);
}

void System::wait_cycle(uint64_t c) {
  sc_core::sc_time t = hca.clock.at(c);
  if (t > sc_core::sc_time_stamp()) sc_core::wait(t - sc_core::sc_time_stamp());
}

}  // namespace vhca
