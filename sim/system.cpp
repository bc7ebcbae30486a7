#include "sim/system.h"

#include <exception>
#include <stdexcept>
#include <string>

namespace vhca {
namespace {

HcaConfig hca_config_for(const SystemConfig& c, uint32_t index) {
  HcaConfig h = c.hca;
  if (index > 0 || h.transport.lid == 0) h.transport.lid = uint16_t(index + 1);
  return h;
}

std::vector<std::unique_ptr<Node>> make_nodes(const SystemConfig& c) {
  if (c.hosts < 1 || c.hosts > 2) throw std::invalid_argument("SystemConfig.hosts must be 1 or 2");
  std::vector<std::unique_ptr<Node>> nodes;
  for (uint32_t i = 0; i < c.hosts; ++i)
    nodes.push_back(std::make_unique<Node>(sc_core::sc_module_name(("host" + std::to_string(i)).c_str()), c, i));
  return nodes;
}

}  // namespace

Node::Node(const sc_core::sc_module_name& name, const SystemConfig& c, uint32_t index)
    : sc_module(name),
      memory("memory"),
      router("router"),
      msi("msi"),
      link("link", c.link),
      hca("hca", hca_config_for(c, index)),
      cpu("cpu", c.cpu),
      driver(cpu, memory, c.driver) {
  router.to_memory.bind(memory.socket);
  router.to_msi.bind(msi.socket);
  link.up_out.bind(router.in);
  cpu.mem.bind(router.in);
  hca.dma_socket().bind(link.up_in);
  cpu.mmio.bind(link.down_in);
  link.down_out.bind(hca.bar());
  hca.dma.credits.bind(link.up_credits);
  cpu.mmio_credits.bind(link.down_credits);
  msi.raise = [this](uint32_t v) { cpu.raise(v); };
  link.on_upstream_write_error = [this](DmaSource s, uint32_t id, uint64_t addr) {
    hca.upstream_write_failed(s, id, addr);
  };
  link.down_ready = [this](uint64_t addr) { return hca.mmio_ready(addr); };
  hca.on_mmio_space = [this](const sc_core::sc_time& delay) { link.resume_down(delay); };
}

System::System(const SystemConfig& c)
    : cfg(c),
      nodes_(make_nodes(c)),
      ib("ib", c.hosts, c.ib),
      memory(nodes_[0]->memory),
      router(nodes_[0]->router),
      msi(nodes_[0]->msi),
      link(nodes_[0]->link),
      hca(nodes_[0]->hca),
      cpu(nodes_[0]->cpu),
      driver(nodes_[0]->driver) {
  for (uint32_t i = 0; i < c.hosts; ++i) {
    nodes_[i]->hca.port_out().bind(ib.in(i));
    ib.out(i).bind(nodes_[i]->hca.port_in());
  }
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
  const sc_core::sc_time start = sc_core::sc_time_stamp(), end = start + limit;
  auto limit_reached = [&](const std::string& detail) {
    return std::runtime_error("simulated time limit reached before the body finished: " + limit.to_string() +
                              " from " + start.to_string() + detail);
  };
  while (!done) {
    // SC_EXIT_ON_STARVATION returns when no event is left before `end` without moving time to
    // it, so each outcome is told apart here; none may start the loop over unchanged.
    sc_core::sc_start(end - sc_core::sc_time_stamp(), sc_core::SC_EXIT_ON_STARVATION);
    if (done) break;
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (now >= end) throw limit_reached("");
    if (!sc_core::sc_pending_activity())
      throw std::runtime_error("simulation starved at " + now.to_string() +
                               " before the body finished: no event is pending (a deadlock)");
    const sc_core::sc_time next = now + sc_core::sc_time_to_pending_activity();
    if (next > end) throw limit_reached("; the next event is at " + next.to_string());
  }
  if (error) std::rethrow_exception(error);
}

void System::wait_cycle(uint64_t c) {
  sc_core::sc_time t = hca.clock.at(c);
  if (t > sc_core::sc_time_stamp()) sc_core::wait(t - sc_core::sc_time_stamp());
}

}  // namespace vhca
