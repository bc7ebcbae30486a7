// A host with cores (HostCpuConfig::cores): a core runs one context of each priority at a time,
// a hard IRQ preempts softirq and thread work on its core and delays it by exactly its own
// length, other cores are not disturbed, contexts of one kind take turns, and per-core busy time
// never exceeds the time that passed. Kernel work runs on the cores without a thread, a step at a
// time, and its MMIO writes leave where its charged time puts them.
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

namespace {
// Downstream bytes the PCIe link has put on the wire: an MMIO write adds to them the moment the
// CPU issues it (nothing else crosses downstream in these tests).
uint64_t down_bytes() { return sys().link.bytes_on_wire(false); }
}  // namespace

TEST_CASE("kernel work runs a step at a time without a thread, and a hard IRQ that preempts it delays its MMIO write and its end by exactly the handler's length") {
  sys().run([] {
    HostCpu& cpu = sys().cpu;
    cpu.set_irq_handler(kCore0Vector, [] {});  // a hard IRQ of handler_entry alone
    const sc_time t0 = sc_core::sc_time_stamp(), entry = cpu.config().handler_entry;
    const uint64_t preempted = cpu.preemptions(), bytes0 = down_bytes();
    const sc_time busy0 = cpu.core_busy(0, CpuContext::softirq);
    sc_time second_step;
    bool in_thread = true;
    CpuWork work;
    work.ctx = CpuContext::softirq;
    work.next = [&] {
      in_thread = sc_core::sc_get_current_process_handle().proc_kind() == sc_core::SC_THREAD_PROC_;
      uint32_t version = 0;  // a step cannot wait for a read's round trip
      CHECK_THROWS_AS(cpu.mmio_read32(Driver::offset_of(reg::version), version), std::logic_error);
      cpu.charge(CpuContext::softirq, sc_time(2, SC_US));
      CHECK(cpu.local_time() == t0 + sc_time(2, SC_US));
      cpu.mmio_write32(Driver::offset_of(reg::msix_data, 5), 5, CpuContext::softirq);  // leaves 2.01 us of CPU time in
      cpu.charge(CpuContext::softirq, sc_time(1, SC_US));
      cpu.then([&] { second_step = sc_core::sc_time_stamp(); });
    };
    cpu.start(work, cpu.core(0));
    sc_core::sc_spawn([&] {
      sc_core::wait(sc_time(500, SC_NS));
      cpu.raise(kCore0Vector);  // taken at 1.5 us, on core 0: preempts the softirq work for `entry`
    });
    const sc_time write_due = t0 + sc_time(2010, SC_NS) + entry;
    sc_core::wait(write_due - sc_time(1, SC_NS) - sc_core::sc_time_stamp());
    CHECK(down_bytes() == bytes0);
    wait_us(0.002);
    CHECK(down_bytes() > bytes0);
    wait_us(2);
    CHECK_FALSE(in_thread);
    CHECK(second_step == t0 + sc_time(3010, SC_NS) + entry);
    CHECK(cpu.preemptions() == preempted + 1);
    CHECK(cpu.core_busy(0, CpuContext::softirq) - busy0 == sc_time(3010, SC_NS));
  });
}
