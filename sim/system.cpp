#include "sim/system.h"

#include "model/common/sanitizer_stack.h"

#include <signal.h>
#include <sys/time.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

namespace vhca {
namespace {

// A wall-clock tick while System::run is simulating: SIGALRM once a second sets a flag and pauses
// the kernel after its current delta cycle (sc_pause only sets the kernel's pause flag), so that
// run() can look at the clock and at simulated time even when a delta-cycle livelock would never
// hand control back. A paused simulation resumes exactly where it stopped.
volatile std::sig_atomic_t g_wall_tick = 0;
extern "C" void on_wall_tick(int) {
  g_wall_tick = 1;
  sc_core::sc_pause();
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

class WallTicker {
 public:
  WallTicker() {
    struct sigaction sa = {};
    sa.sa_handler = on_wall_tick;
    sa.sa_flags = SA_RESTART;  // a tick never fails a write the model is doing
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old_action_);
    itimerval every_second = {{1, 0}, {1, 0}};
    setitimer(ITIMER_REAL, &every_second, &old_timer_);
  }
  ~WallTicker() {
    setitimer(ITIMER_REAL, &old_timer_, nullptr);
    sigaction(SIGALRM, &old_action_, nullptr);
    g_wall_tick = 0;
  }
  WallTicker(const WallTicker&) = delete;
  WallTicker& operator=(const WallTicker&) = delete;

 private:
  struct sigaction old_action_ = {};
  itimerval old_timer_ = {};
};

HcaConfig hca_config_for(const SystemConfig& c, uint32_t index) {
  HcaConfig h = c.hca;
  if (index > 0 || h.transport.lid == 0) h.transport.lid = uint16_t(index + 1);
  return h;
}

std::vector<std::unique_ptr<Node>> make_nodes(const SystemConfig& c) {
  if (c.hosts < 1 || c.hosts > SystemConfig::kMaxHosts)
    throw std::invalid_argument("SystemConfig.hosts must be 1 to " + std::to_string(SystemConfig::kMaxHosts));
  std::vector<std::unique_ptr<Node>> nodes;
  for (uint32_t i = 0; i < c.hosts; ++i)
    nodes.push_back(std::make_unique<Node>(sc_core::sc_module_name(("host" + std::to_string(i)).c_str()), c, i));
  return nodes;
}

std::vector<std::unique_ptr<IbLink>> make_cables(const SystemConfig& c) {
  std::vector<std::unique_ptr<IbLink>> cables;
  if (c.hosts <= 2) {
    cables.push_back(std::make_unique<IbLink>("ib", c.hosts, c.ib));
    return cables;
  }
  if (c.ib.latency < c.ib_switch.latency)
    throw std::invalid_argument("the IB latency (" + c.ib.latency.to_string() + ") is below the switch's (" +
                                c.ib_switch.latency.to_string() + "): no time is left for the cables");
  IbLinkConfig cable = c.ib;
  cable.latency = (c.ib.latency - c.ib_switch.latency) / 2;
  for (uint32_t i = 0; i < c.hosts; ++i)
    cables.push_back(std::make_unique<IbLink>(("cable" + std::to_string(i)).c_str(), 2, cable));
  return cables;
}

std::unique_ptr<IbSwitch> make_switch(const SystemConfig& c) {
  if (c.hosts <= 2) return nullptr;
  IbSwitchConfig s = c.ib_switch;
  s.gbit_per_s = c.ib.gbit_per_s;
  auto sw = std::make_unique<IbSwitch>("switch", c.hosts, s);
  for (uint32_t i = 0; i < c.hosts; ++i) sw->route(hca_config_for(c, i).transport.lid, i);
  return sw;
}

// An HCA port and the far end of its link (side 0 of a cable, or side `side` of the one link).
template <typename Port>
void bind_port(Port& port, IbLink& link, uint32_t side) {
  port.port_out().bind(link.in(side));
  link.out(side).bind(port.port_in());
  port.port_credits().bind(link.credits(side));
  port.port_flow().bind(link.rx_flow(side));
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
  msi.m_irq.bind(cpu.s_irq);
  link.up_errors.bind(hca.s_dma_errors);
  link.down_ready.bind(hca.s_mmio_ready);
  hca.m_mmio_resume.bind(link.down_resume);
  // Device writes into plain host memory land when the host looks (tlm/pending_writes.h).
  link.up_lands_quietly = [this](uint64_t addr, uint64_t len) {
    return !router.is_msi(addr) && memory.lands_quietly(addr, len);
  };
  memory.pending_writes.bind(link.up_pending);
  cpu.pending_writes.bind(link.up_pending);
}

System::System(const SystemConfig& c)
    : cfg(c),
      nodes_(make_nodes(c)),
      cables_(make_cables(c)),
      switch_(make_switch(c)),
      ib(*cables_[0]),
      memory(nodes_[0]->memory),
      router(nodes_[0]->router),
      msi(nodes_[0]->msi),
      link(nodes_[0]->link),
      hca(nodes_[0]->hca),
      cpu(nodes_[0]->cpu),
      driver(nodes_[0]->driver) {
  if (!switch_) {
    for (uint32_t i = 0; i < c.hosts; ++i) bind_port(nodes_[i]->hca, ib, i);
    ib.on_state.add([this](bool up) {
      for (auto& n : nodes_) n->hca.link_state_changed(up);
    });
    return;
  }
  // Host i's HCA on side 0 of cable i, switch port i on side 1.
  for (uint32_t i = 0; i < c.hosts; ++i) {
    IbLink& cable = *cables_[i];
    bind_port(nodes_[i]->hca, cable, 0);
    switch_->out(i).bind(cable.in(1));
    cable.out(1).bind(switch_->in(i));
    switch_->credits(i).bind(cable.credits(1));
    switch_->flow(i).bind(cable.rx_flow(1));
    cable.on_state.add([this, i](bool up) { nodes_[i]->hca.link_state_changed(up); });
  }
}

namespace {

void collect_threads(const std::vector<sc_core::sc_object*>& objects, std::vector<sc_core::sc_process_handle>& out) {
  for (sc_core::sc_object* o : objects) {
    sc_core::sc_process_handle h(o);
    if (h.valid() && h.proc_kind() != sc_core::SC_METHOD_PROC_ && !h.terminated()) out.push_back(h);
    collect_threads(o->get_child_objects(), out);
  }
}

}  // namespace

// SystemC never resumes a thread still waiting when the simulation ends, so its stack is never
// unwound and whatever its locals own is never freed (a run's pollers, drivers, test bodies cut
// off by a limit). Killing each one unwinds it: the destructors run, and a leak checker sees only
// real leaks. A kill must come from a process (SystemC's kill dereferences the current one), so a
// method does it, in one delta cycle at the instant the simulation stopped.
void end_threads() {
  // Only a paused simulation can run the delta cycle (never started: no thread has a stack yet;
  // stopped: it cannot be resumed).
  if (sc_core::sc_get_status() != sc_core::SC_PAUSED) return;
  sc_core::sc_spawn_options method;
  method.spawn_method();
  sc_core::sc_spawn(
      [] {
        std::vector<sc_core::sc_process_handle> threads;
        collect_threads(sc_core::sc_get_top_level_objects(), threads);
        for (sc_core::sc_process_handle& h : threads)
          if (!h.terminated()) h.kill();
      },
      sc_core::sc_gen_unique_name("end_threads"), &method);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  restore_main_stack_bounds();
}

System::~System() { end_threads(); }

void System::run(std::function<void()> body, sc_core::sc_time limit) {
  // The checker taps streams through their exports, which answer once elaboration is done: it is
  // attached on the first run, before the first body runs.
  if (cfg.check_invariants && !invariants_) invariants_ = std::make_unique<InvariantChecker>();
  if (invariants_ && !invariants_attached_) {
    invariants_attached_ = true;
    invariants_->attach(*this);
  }
  // The body's thread outlives this call when a limit cuts it off (it waits on, and is killed
  // at the end: end_threads), so what it shares with this call is on the heap, not this frame.
  struct Outcome {
    bool done = false;
    std::exception_ptr error;
  };
  auto outcome = std::make_shared<Outcome>();
  sc_core::sc_spawn(
      [outcome, body = std::move(body)] {
        try {
          body();
        } catch (const sc_core::sc_unwind_exception&) {
          throw;  // killed (end_threads): SystemC's unwinding goes on through
        } catch (...) {
          outcome->error = std::current_exception();
        }
        outcome->done = true;
        CpuCore::set_horizon(sc_core::sc_time_stamp());  // what the caller reads next is as of now
        sc_core::sc_pause();
      },
      sc_core::sc_gen_unique_name("run"));
  const bool& done = outcome->done;
  const sc_core::sc_time start = sc_core::sc_time_stamp(), end = start + limit;
  auto limit_reached = [&](const std::string& detail) {
    return std::runtime_error("simulated time limit reached before the body finished: " + limit.to_string() +
                              " from " + start.to_string() + detail);
  };
  std::optional<WallTicker> ticker;
  if (cfg.wall_clock_watch) ticker.emplace();
  // Host cores may run ahead (firmware-shim/cpu_core.h) while the body runs, up to the limit: past
  // it, or once the body is done, nothing is to happen yet.
  struct Horizon {
    explicit Horizon(const sc_core::sc_time& end) { CpuCore::set_horizon(end); }
    ~Horizon() { CpuCore::set_horizon(sc_core::SC_ZERO_TIME); }
  } horizon(end);
  const auto wall0 = std::chrono::steady_clock::now();
  sc_core::sc_time tick_time = sc_core::sc_time_stamp();
  int still_ticks = 0;  // wall-clock ticks in a row at one simulated instant, with deltas running
  uint64_t tick_deltas = sc_core::sc_delta_count();
  while (!done) {
    // SC_EXIT_ON_STARVATION returns when no event is left before `end` without moving time to
    // it, so each outcome is told apart here; none may start the loop over unchanged.
    sc_core::sc_start(end - sc_core::sc_time_stamp(), sc_core::SC_EXIT_ON_STARVATION);
    restore_main_stack_bounds();
    if (done) break;
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (g_wall_tick) {  // paused by the wall-clock tick: look, then go on
      g_wall_tick = 0;
      const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      if (cfg.wall_limit_s > 0 && wall_s >= cfg.wall_limit_s)
        throw std::runtime_error("wall-clock limit of " + seconds(cfg.wall_limit_s) + " s reached at simulated time " +
                                 now.to_string() + " (started at " + start.to_string() + ")");
      const uint64_t deltas = sc_core::sc_delta_count();
      still_ticks = now == tick_time && deltas != tick_deltas ? still_ticks + 1 : 0;
      if (still_ticks >= 2)
        throw std::runtime_error("simulated time stopped advancing at " + now.to_string() + ": " +
                                 std::to_string(deltas - tick_deltas) + " delta cycles in " + std::to_string(still_ticks) +
                                 " s of wall time without moving it (a process notifying itself without delay?)");
      if (still_ticks == 0) tick_deltas = deltas;
      tick_time = now;
      if (now < end) continue;
    }
    if (now >= end) throw limit_reached("");
    if (!sc_core::sc_pending_activity())
      throw std::runtime_error("simulation starved at " + now.to_string() +
                               " before the body finished: no event is pending (a deadlock)");
    const sc_core::sc_time next = now + sc_core::sc_time_to_pending_activity();
    if (next > end) throw limit_reached("; the next event is at " + next.to_string());
  }
  if (outcome->error) std::rethrow_exception(outcome->error);
}

void System::wait_cycle(uint64_t c) {
  sc_core::sc_time t = hca.clock.at(c);
  if (t > sc_core::sc_time_stamp()) sc_core::wait(t - sc_core::sc_time_stamp());
}

}  // namespace vhca
