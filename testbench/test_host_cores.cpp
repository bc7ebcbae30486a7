// A host with cores (HostCpuConfig::cores): a core runs one context of each priority at a time,
// a hard IRQ preempts softirq and thread work on its core and delays it by exactly its own
// length, other cores are not disturbed, contexts of one kind take turns, and per-core busy time
// never exceeds the time that passed.
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) { cfg.cpu.cores = 2; }
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;
using sc_core::sc_time;
using sc_core::SC_NS;
using sc_core::SC_US;

namespace {
// Host vectors 1 and 3 land on core 0, 2 on core 1 ((v - 1) mod 2).
constexpr uint32_t kCore0Vector = 3, kCore1Vector = 2;

// Runs `work` in a new process bound to `core` as `ctx`; returns when it finishes.
sc_time run_bound(uint32_t core, CpuContext ctx, sc_time work, bool* done = nullptr) {
  HostCpu& cpu = sys().cpu;
  sc_time finished;
  sc_core::sc_event end;
  sc_core::sc_spawn([&, core, ctx, work] {
    cpu.bind_current(core, ctx);
    cpu.charge(ctx, work);
    finished = sc_core::sc_time_stamp();
    cpu.unbind_current();
    if (done) *done = true;
    end.notify(sc_core::SC_ZERO_TIME);
  });
  sc_core::wait(end);
  return finished;
}
}  // namespace

TEST_CASE("a hard IRQ on a core preempts the thread work running there and delays it by exactly the handler's length") {
  sys().run([] {
    HostCpu& cpu = sys().cpu;
    REQUIRE(cpu.cores() == 2);
    CHECK(cpu.core_of_vector(kCore1Vector) == 1);
    CHECK(cpu.core_of_vector(kCore0Vector) == 0);
    CHECK(cpu.core_of_vector(0) == 0);  // the async vector
    CHECK(cpu.app_core() == 1);
    sc_time handler_ran;
    cpu.set_irq_handler(kCore1Vector, [&] { handler_ran = sc_core::sc_time_stamp(); });
    const sc_time t0 = sc_core::sc_time_stamp();
    const uint64_t preempted = cpu.preemptions();
    // The IRQ is raised 2 us in; it is taken irq_delivery (1 us) later and runs handler_entry (300 ns).
    sc_core::sc_spawn([&] {
      sc_core::wait(sc_time(2, SC_US));
      cpu.raise(kCore1Vector);
    });
    const sc_time end = run_bound(1, CpuContext::thread, sc_time(10, SC_US));
    const HostCpuConfig& c = cpu.config();
    CHECK(handler_ran == t0 + sc_time(2, SC_US) + c.irq_delivery + c.handler_entry);
    CHECK(end == t0 + sc_time(10, SC_US) + c.handler_entry);
    CHECK(cpu.preemptions() == preempted + 1);
    CHECK(cpu.core_busy(1, CpuContext::thread) == sc_time(10, SC_US));
    CHECK(cpu.core_busy(1, CpuContext::hardirq) == c.handler_entry);
  });
}

TEST_CASE("an IRQ on another core leaves the work alone, and a softirq is preempted by a hard IRQ but not by a thread") {
  sys().run([] {
    HostCpu& cpu = sys().cpu;
    cpu.set_irq_handler(kCore0Vector, [] {});
    const sc_time t0 = sc_core::sc_time_stamp();
    sc_core::sc_spawn([&] {
      sc_core::wait(sc_time(1, SC_US));
      cpu.raise(kCore0Vector);  // core 0
    });
    CHECK(run_bound(1, CpuContext::thread, sc_time(5, SC_US)) == t0 + sc_time(5, SC_US));
    // Core 0: a softirq of 4 us, a thread that wants the core 1 us in, an IRQ taken 2 us in.
    const sc_time t1 = sc_core::sc_time_stamp();
    sc_time thread_end;
    bool thread_done = false;
    sc_core::sc_spawn([&] {
      sc_core::wait(sc_time(1, SC_US));
      thread_end = run_bound(0, CpuContext::thread, sc_time(1, SC_US), &thread_done);
    });
    sc_core::sc_spawn([&] {
      sc_core::wait(sc_time(1, SC_US));
      cpu.raise(kCore0Vector);  // taken at t1 + 2 us
    });
    const sc_time softirq_end = run_bound(0, CpuContext::softirq, sc_time(4, SC_US));
    const sc_time handler = cpu.config().handler_entry;
    CHECK(softirq_end == t1 + sc_time(4, SC_US) + handler);
    wait_us(5);
    REQUIRE(thread_done);
    CHECK(thread_end == softirq_end + sc_time(1, SC_US));  // the thread ran only after the softirq
  });
}

TEST_CASE("two contexts of one kind on one core take turns: busy time never exceeds the time passed") {
  sys().run([] {
    HostCpu& cpu = sys().cpu;
    const sc_time t0 = sc_core::sc_time_stamp();
    const sc_time busy0 = cpu.core_busy(1, CpuContext::thread);
    sc_time first;
    sc_core::sc_spawn([&] { first = run_bound(1, CpuContext::thread, sc_time(3, SC_US)); });
    const sc_time second = run_bound(1, CpuContext::thread, sc_time(3, SC_US));
    wait_us(5);  // the other one too
    CHECK(std::max(first, second) == t0 + sc_time(6, SC_US));
    CHECK(std::min(first, second) == t0 + sc_time(3, SC_US));
    CHECK(cpu.core_busy(1, CpuContext::thread) - busy0 == sc_time(6, SC_US));
    CHECK(cpu.core_busy(1, CpuContext::thread) - busy0 <= sc_core::sc_time_stamp() - t0);
  });
}
