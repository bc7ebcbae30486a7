// A step marked quiet that notifies an event for after its instant, before the core's next moment:
// the core, which takes a quiet step's effects as known without asking SystemC again, must not
// run that moment ahead silently (firmware-shim/cpu_core.cpp, decisions.md 50). Its own file: a
// refusal ends the simulation (test_run_ahead has the other refusal, by a delta notification).
#include "testbench/test_support.h"

void vhca::test::configure(vhca::SystemConfig&) {}  // a host without cores: each kernel context a lane

using namespace vhca;
using namespace vhca::test;
using Time = sc_core::sc_time;

TEST_CASE("a quiet step that notifies for before the core's next moment is refused when that moment ran ahead") {
  HostCpu& cpu = sys().cpu;
  std::unique_ptr<CpuCore> lane;
  CpuWork work;
  sc_core::sc_event told;
  bool heard = false;
  Time t0;  // the first step's instant
  std::string error;
  try {
    sys().run([&] {
      lane = cpu.make_lane("refusal_test");
      sc_core::wait(Time(10, sc_core::SC_US));  // boot's last writes are over: nothing pending
      sc_core::sc_spawn([&] {
        sc_core::wait(told);
        heard = true;
      });
      work.ctx = CpuContext::softirq;
      // Instants from the start: the first step, then a step marked quiet at 1 us (run ahead) that
      // notifies for 1.05 us (not quiet) and posts an MMIO write that leaves at 1.1 us. The write
      // must not go ahead past 1.05 us unseen: shown to fail when the check counts only steps and
      // ends as moments done ahead.
      work.next = [&] {
        t0 = sc_core::sc_time_stamp();
        cpu.charge(CpuContext::softirq, Time(1, sc_core::SC_US));
        cpu.then(
            [&] {
              told.notify(t0 + Time(1050, sc_core::SC_NS) - sc_core::sc_time_stamp());
              cpu.charge(CpuContext::softirq, Time(90, sc_core::SC_NS));
              cpu.mmio_write32(Driver::offset_of(reg::msix_data, 5), 5, CpuContext::softirq);  // 10 ns: leaves at 1.1 us
              cpu.charge(CpuContext::softirq, Time(100, sc_core::SC_NS));
            },
            true);
      };
      cpu.start(work, *lane);
      sc_core::wait(Time(5, sc_core::SC_US));
    });
  } catch (const std::exception& e) {
    error = e.what();
  }
  INFO(error);
  CHECK(error.find("run ahead of its instant as quiet notified an event or started work before its instant or "
                   "before a later moment the core ran ahead") != std::string::npos);
  CHECK_FALSE(heard);  // refused before SystemC reached the notification
}
