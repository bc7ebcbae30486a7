// A host core running ahead of its instant (firmware-shim/cpu_core.h, decisions.md 50): where the
// work's next step, MMIO write or end is quiet and nothing else in the simulation comes first, the
// core does it at once, with the effects it would have had at its instant; where something else is
// due first, it waits for the instant as before; and a step marked quiet that is not is refused.
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}  // a host without cores: kernel contexts on lanes of their own
}  // namespace vhca::test

using namespace vhca;
using namespace vhca::test;
using sc_core::sc_time;
using sc_core::SC_NS;
using sc_core::SC_US;

namespace {

// What a run of the kernel work below showed, in time from its start.
struct Outcome {
  sc_time instant;   // the quiet step's instant (HostCpu::step_instant)
  sc_time ran_at;    // SystemC's time when it ran
  sc_time landing;   // when its MMIO write reaches the device (sampled while it is on its way)
  sc_time busy;      // softirq time the lane served
  bool ended = false;
  CpuCore::Counters counters;  // what the host's cores ran ahead, during the run
};

// Kernel work on a lane of its own: a step that charges 1 us, then a step marked quiet that
// charges 200 ns, posts an MMIO write (10 ns more: it leaves 1.21 us in) and charges 100 ns, then
// a quiet end. With `probe`, a thread is due 600 ns in: something else comes before the quiet
// step's instant, so nothing may run ahead of it.
Outcome run_work(CpuCore& lane, bool probe) {
  HostCpu& cpu = sys().cpu;
  sc_core::wait(sc_time(10, SC_US));  // what came before (boot's last writes) is over
  REQUIRE(sc_core::sc_time_to_pending_activity() > sc_time(10, SC_US));
  Outcome o;
  const CpuCore::Counters before = cpu.core_counters();
  const sc_time t0 = sc_core::sc_time_stamp(), busy0 = cpu.busy(CpuContext::softirq);
  CpuWork work;
  work.ctx = CpuContext::softirq;
  work.next = [&] {
    cpu.charge(CpuContext::softirq, sc_time(1, SC_US));
    cpu.then(
        [&] {
          o.instant = cpu.step_instant() - t0;
          o.ran_at = sc_core::sc_time_stamp() - t0;
          CHECK(cpu.local_time() == cpu.step_instant());
          cpu.charge(CpuContext::softirq, sc_time(200, SC_NS));
          cpu.mmio_write32(Driver::offset_of(reg::msix_data, 5), 5, CpuContext::softirq);
          cpu.charge(CpuContext::softirq, sc_time(100, SC_NS));
        },
        true);
  };
  work.done = [&] { o.ended = true; };
  work.end_quiet = [] { return true; };
  if (probe)
    sc_core::sc_spawn([t0] { sc_core::wait(t0 + sc_time(600, SC_NS) - sc_core::sc_time_stamp()); });
  cpu.start(work, lane);
  // The write is on its way from 1.21 us to its arrival (200 ns of latency and more); the end, at
  // 1.31 us, comes before this look.
  sc_core::wait(sc_time(1350, SC_NS));
  o.landing = sys().link.posted_landed_by(false) - t0;
  sc_core::wait(sc_time(2, SC_US));
  CHECK_FALSE(work.queued);
  o.busy = cpu.busy(CpuContext::softirq) - busy0;
  const CpuCore::Counters& after = cpu.core_counters();
  o.counters.steps_ahead = after.steps_ahead - before.steps_ahead;
  o.counters.writes_ahead = after.writes_ahead - before.writes_ahead;
  o.counters.ends_ahead = after.ends_ahead - before.ends_ahead;
  o.counters.ahead_declined = after.ahead_declined - before.ahead_declined;
  o.counters.activations = after.activations - before.activations;
  return o;
}

}  // namespace

TEST_CASE("a quiet step, its MMIO write and its end run ahead of their instant, with the effects they would have had then") {
  sys().run([] {
    boot();
    std::unique_ptr<CpuCore> lane = sys().cpu.make_lane("ahead_test");
    const Outcome ahead = run_work(*lane, false);
    const Outcome waited = run_work(*lane, true);
    // Ahead: the quiet step ran at the first step's instant, its write and the end with it: the
    // lane was activated once (at the start).
    CHECK(ahead.ran_at == sc_core::SC_ZERO_TIME);
    CHECK(ahead.counters.steps_ahead == 1);
    CHECK(ahead.counters.writes_ahead == 1);
    CHECK(ahead.counters.ends_ahead == 1);
    CHECK(ahead.counters.activations == 1);
    // With a thread due 600 ns in, the quiet step waits for its instant (declined once), and then
    // its write and end run ahead (nothing else is due after 600 ns).
    CHECK(waited.ran_at == sc_time(1, SC_US));
    CHECK(waited.counters.steps_ahead == 0);
    CHECK(waited.counters.ahead_declined == 1);
    CHECK(waited.counters.writes_ahead == 1);
    CHECK(waited.counters.ends_ahead == 1);
    CHECK(waited.counters.activations == 2);
    // The same effects, at the same instants, either way.
    for (const Outcome* o : {&ahead, &waited}) {
      CHECK(o->instant == sc_time(1, SC_US));
      CHECK(o->ended);
      CHECK(o->busy == sc_time(1310, SC_NS));
      CHECK(o->landing > sc_time(1410, SC_NS));  // 1.21 us, then at least the link's latency
    }
    CHECK(ahead.landing == waited.landing);
  });
}

TEST_CASE("a quiet step may start work on another core: it becomes ready its latency after the step's instant") {
  sys().run([] {
    HostCpu& cpu = sys().cpu;
    std::unique_ptr<CpuCore> lane = cpu.make_lane("starter"), other = cpu.make_lane("started");
    sc_core::wait(sc_time(10, SC_US));
    const sc_time t0 = sc_core::sc_time_stamp();
    const uint64_t ahead0 = cpu.core_counters().steps_ahead;
    std::unique_ptr<CpuCore> third = cpu.make_lane("started_at_once");
    CpuWork work, started, at_once;
    sc_time started_at, at_once_at, ran_at = sc_time(1, sc_core::SC_SEC);
    started.ctx = at_once.ctx = CpuContext::softirq;
    started.next = [&] { started_at = cpu.step_instant() - t0; };
    at_once.next = [&] { at_once_at = cpu.step_instant() - t0; };
    work.ctx = CpuContext::softirq;
    work.next = [&] {
      cpu.charge(CpuContext::softirq, sc_time(1, SC_US));
      cpu.then(
          [&] {
            ran_at = sc_core::sc_time_stamp() - t0;
            cpu.start(started, *other, sc_time(300, SC_NS));
            cpu.start(at_once, *third);  // due at the step's instant: still quiet
          },
          true);
    };
    cpu.start(work, *lane);
    sc_core::wait(sc_time(3, SC_US));
    CHECK(ran_at == sc_core::SC_ZERO_TIME);  // run ahead, at the first step's instant
    CHECK(cpu.core_counters().steps_ahead == ahead0 + 1);
    CHECK(started_at == sc_time(1300, SC_NS));  // 1 us (the step's instant) + 300 ns
    CHECK(at_once_at == sc_time(1, SC_US));
  });
}

TEST_CASE("work a quiet step starts comes first: the core's next moment after its arrival waits for its instant") {
  sys().run([] {
    HostCpu& cpu = sys().cpu;
    std::unique_ptr<CpuCore> lane = cpu.make_lane("starts_first"), other = cpu.make_lane("started_first");
    sc_core::wait(sc_time(10, SC_US));
    const sc_time t0 = sc_core::sc_time_stamp();
    const CpuCore::Counters before = cpu.core_counters();
    CpuWork work, started;
    sc_time started_at, second_at, third_at, third_ran_at;
    started.ctx = work.ctx = CpuContext::softirq;
    started.next = [&] { started_at = cpu.step_instant() - t0; };
    // Quiet steps at 1 us (it starts work on another lane for 1.3 us), 1.1 us and 1.6 us: the
    // second runs ahead (before the arrival), the third waits for its instant (the arrival comes
    // first). The core takes what the step started as known, without asking SystemC again: shown
    // to fail (the third run ahead, then refused) when it does not.
    work.next = [&] {
      cpu.charge(CpuContext::softirq, sc_time(1, SC_US));
      cpu.then(
          [&] {
            cpu.start(started, *other, sc_time(300, SC_NS));
            cpu.charge(CpuContext::softirq, sc_time(100, SC_NS));
            cpu.then(
                [&] {
                  second_at = cpu.step_instant() - t0;
                  cpu.charge(CpuContext::softirq, sc_time(500, SC_NS));
                  cpu.then(
                      [&] {
                        third_at = cpu.step_instant() - t0;
                        third_ran_at = sc_core::sc_time_stamp() - t0;
                      },
                      true);
                },
                true);
          },
          true);
    };
    cpu.start(work, *lane);
    sc_core::wait(sc_time(3, SC_US));
    CHECK(started_at == sc_time(1300, SC_NS));
    CHECK(second_at == sc_time(1100, SC_NS));
    CHECK(third_at == sc_time(1600, SC_NS));
    CHECK(third_ran_at == sc_time(1600, SC_NS));  // at its instant, not ahead
    const CpuCore::Counters& after = cpu.core_counters();
    CHECK(after.steps_ahead - before.steps_ahead == 2);
    CHECK(after.ahead_declined - before.ahead_declined == 1);
  });
}

TEST_CASE("a write issued ahead comes first once it arrives: the core's next moment after its arrival waits for its instant") {
  sys().run([] {
    HostCpu& cpu = sys().cpu;
    std::unique_ptr<CpuCore> lane = cpu.make_lane("write_first");
    sc_core::wait(sc_time(10, SC_US));
    const sc_time t0 = sc_core::sc_time_stamp();
    const CpuCore::Counters before = cpu.core_counters();
    const sc_time latency = sys().link.config().latency;  // 200 ns: the write arrives no sooner
    CpuWork work;
    sc_time second_ran_at;
    work.ctx = CpuContext::softirq;
    // A quiet step at 1 us posts a write (it leaves at 1.01 us and arrives a latency later at the
    // soonest), then charges a latency and more: its next quiet step, after the arrival, waits for
    // its instant. The core takes the link's word for when the write can wake anything, without
    // asking SystemC: shown to fail (run ahead past the arrival, then refused) without it.
    work.next = [&] {
      cpu.charge(CpuContext::softirq, sc_time(1, SC_US));
      cpu.then(
          [&] {
            cpu.mmio_write32(Driver::offset_of(reg::msix_data, 5), 5, CpuContext::softirq);
            cpu.charge(CpuContext::softirq, latency + sc_time(100, SC_NS));
            cpu.then([&] { second_ran_at = sc_core::sc_time_stamp() - t0; }, true);
          },
          true);
    };
    cpu.start(work, *lane);
    sc_core::wait(sc_time(3, SC_US));
    CHECK(second_ran_at == sc_time(1010, SC_NS) + latency + sc_time(100, SC_NS));  // at its instant
    const CpuCore::Counters& after = cpu.core_counters();
    CHECK(after.steps_ahead - before.steps_ahead == 1);
    CHECK(after.writes_ahead - before.writes_ahead == 1);
    CHECK(after.ahead_declined - before.ahead_declined == 1);
  });
}

TEST_CASE("a step's quietness holds only while the core runs on: once others have run, the step waits for its instant") {
  sys().run([] {
    HostCpu& cpu = sys().cpu;
    std::unique_ptr<CpuCore> lane = cpu.make_lane("stale_test");
    sc_core::wait(sc_time(10, SC_US));
    const sc_time t0 = sc_core::sc_time_stamp();
    const uint64_t ahead0 = cpu.core_counters().steps_ahead;
    bool watched = false;  // the quiet step notifies once someone watches: then it is not quiet
    sc_core::sc_event told;
    sc_time ran_at;
    CpuWork work;
    work.ctx = CpuContext::softirq;
    work.next = [&] {
      cpu.charge(CpuContext::softirq, sc_time(890, SC_NS));
      cpu.mmio_write32(Driver::offset_of(reg::msix_data, 5), 5, CpuContext::softirq);  // leaves 900 ns in
      cpu.charge(CpuContext::softirq, sc_time(100, SC_NS));
      cpu.then(
          [&] {
            ran_at = sc_core::sc_time_stamp() - t0;
            if (watched) told.notify(sc_core::SC_ZERO_TIME);
          },
          !watched);
    };
    // Due 100 ns in: the quiet step cannot run ahead at the start; by the write's moment (900 ns,
    // the write arriving after the step's instant) it is no longer quiet. Run ahead then (fails
    // when the mark outlives the activation), it would notify before its instant and be refused.
    sc_core::sc_spawn([&, t0] {
      sc_core::wait(t0 + sc_time(100, SC_NS) - sc_core::sc_time_stamp());
      watched = true;
    });
    cpu.start(work, *lane);
    sc_core::wait(sc_time(2, SC_US));
    CHECK(ran_at == sc_time(1, SC_US));
    CHECK(cpu.core_counters().steps_ahead == ahead0);
  });
}

TEST_CASE("no work runs ahead past the end of a run: what the caller reads next is as of the run's end") {
  HostCpu& cpu = sys().cpu;
  std::unique_ptr<CpuCore> lane;
  CpuWork work;
  sc_core::sc_event never;
  bool second = false;
  // The body waits on an event never notified (nothing pending), cut off by a limit of 500 ns:
  // the quiet step's instant, 1 us in, is past the run's end (shown to fail without the horizon).
  CHECK_THROWS_WITH(sys().run(
                        [&] {
                          lane = cpu.make_lane("horizon_test");
                          work.ctx = CpuContext::softirq;
                          work.next = [&] {
                            cpu.charge(CpuContext::softirq, sc_time(1, SC_US));
                            cpu.then([&] { second = true; }, true);
                          };
                          cpu.start(work, *lane);
                          sc_core::wait(never);
                        },
                        sc_time(500, SC_NS)),
                    Catch::Contains("simulated time limit reached"));
  CHECK_FALSE(second);
  sys().run([&] { sc_core::wait(sc_time(2, SC_US)); });
  CHECK(second);
}

// Last: the refusal ends the simulation.
TEST_CASE("a step marked quiet that notifies an event is refused, naming the contract") {
  HostCpu& cpu = sys().cpu;
  std::unique_ptr<CpuCore> lane;
  CpuWork work;
  sc_core::sc_event told;
  std::string error;
  try {
    sys().run([&] {
      lane = cpu.make_lane("contract_test");
      work.ctx = CpuContext::softirq;
      work.next = [&] {
        cpu.charge(CpuContext::softirq, sc_time(1, SC_US));
        cpu.then([&] { told.notify(sc_core::SC_ZERO_TIME); }, true);  // not quiet: it notifies
      };
      cpu.start(work, *lane);
      sc_core::wait(sc_time(5, SC_US));
    });
  } catch (const std::exception& e) {
    error = e.what();
  }
  INFO(error);
  CHECK(error.find("run ahead of its instant as quiet notified an event or started work before it") != std::string::npos);
}
