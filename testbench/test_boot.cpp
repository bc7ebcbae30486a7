#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

TEST_CASE("the driver boots the HCA: reset, init segment, QUERY_CAP, INIT, EQs, MSI-X") {
  sys().run([] {
    boot();
    CHECK(sys().driver.caps().log_max_cq == 16);
    CHECK(sys().driver.caps().log_max_cq_sz == 22);
    CHECK(sys().driver.caps().num_msix == kNumMsixVectors);
    CHECK((sys().driver.read_register(reg::health) & kHealthInitialized) != 0);
    CHECK(sys().hca.eq.exists(sys().driver.async_eqn()));
    CHECK(sys().hca.eq.context(sys().driver.eqn_for_vector(0)).armed);
    CommandResult r = sys().driver.teardown();
    CHECK(r.ok());
    CHECK((sys().driver.read_register(reg::health) & kHealthInitialized) == 0);
  });
}

TEST_CASE("event-driven: no HCA block runs on idle cycles") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16, CqModeration{4, 8, PeriodMode::cqe});
    verbs::req_notify_cq(*cq, kNotifyNext);
    sys().hca.inject(recv_record(cq->cqn, 1), soon());
    wait_us(50);  // the CQE, its period timer and the event are long done
    const uint64_t writer = sys().hca.cq.activations();
    const uint64_t cycle0 = sys().cycle();
    wait_us(1000);  // 500,000 idle cycles
    CHECK(sys().cycle() - cycle0 == 500000);
    CHECK(sys().hca.cq.activations() == writer);
    // One CQE costs a handful of activations, not one per cycle.
    // The pipelined writer is clocked on each cycle the CQE is inside it and on no other: it
    // enters the replay buffer (k+1), is selected, read, acted on (k+4) and leaves the skid buffer
    // (k+5). The CQ is disarmed, so no timer runs after it.
    std::vector<uint64_t> acted;
    const size_t watch = sys().hca.cq.on_acted.add([&](uint64_t c) { acted.push_back(c); });
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 2), k);
    wait_us(50);
    sys().hca.cq.on_acted.remove(watch);  // `acted` ends with this body
    CHECK(sys().hca.cq.activations() - writer == 5);
    CHECK(acted == std::vector<uint64_t>{k + 1, k + 2, k + 3, k + 4, k + 5});
  });
}

TEST_CASE("event-driven: unwatched, the pipelined writer wakes only where a lone CQE acts and leaves, on the same cycles") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);  // disarmed: no event, no timer
    wait_us(5);
    std::vector<uint64_t> cqe_pushed;
    const size_t tap = sys().hca.dma.s_write->on_push.add([&](const DmaWrite& w, uint64_t c) {
      if (w.source == DmaSource::cqe) cqe_pushed.push_back(c);
    });
    const uint64_t writer = sys().hca.cq.activations();
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 1), k);
    wait_us(5);
    // It hands the CQE on (k+5), and wakes there only. The record is alone and the writer idle,
    // so the take (k+1), the select, the context read (k+2, k+3) and the act on the CQ's context
    // (k+4: only the skid buffer sees it) run when it wakes. Watched (the case above), it is
    // clocked on all five.
    CHECK(sys().hca.cq.activations() - writer == 1);
    CHECK(cqe_pushed == std::vector<uint64_t>{k + 5});
    CHECK(sys().hca.cq.stats().cqes == 1);
    Wc wc[1];
    REQUIRE(verbs::poll_cq(*cq, 1, wc) == 1);
    CHECK(wc[0].timestamp == k + 4);  // the cycle it acted on, not the one it ran on
    sys().hca.dma.s_write->on_push.remove(tap);  // `cqe_pushed` ends with this body
  });
}

// An act run late (above) is seen by a query on its own cycle: the writer runs what it owes first.
TEST_CASE("event-driven: a query on the cycle of a late-run act sees the act (settle_for_query)") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    wait_us(5);
    const uint64_t writer = sys().hca.cq.activations();
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 1), k);
    sys().wait_cycle(k + 3);
    CHECK(sys().hca.cq.stats().cqes == 0);  // not yet: it acts on k+4
    CHECK(sys().hca.cq.context(cq->cqn).pi == 0);
    sys().wait_cycle(k + 4);
    CHECK(sys().hca.cq.activations() == writer);  // it has not woken
    CHECK(sys().hca.cq.stats().cqes == 1);
    CHECK(sys().hca.cq.context(cq->cqn).pi == 1);
    sys().wait_cycle(k + 6);
    CHECK(sys().hca.cq.activations() - writer == 1);
    CHECK(sys().hca.cq.stats().cqes == 1);
  });
}

// A lone input into the idle writer is taken on the cycle it is ready although the writer first
// wakes two cycles later (input_wake). A producer looking at the stream meanwhile must not find
// the item it took: the stream has the writer settle its owed take first. s_ctl is two deep: two
// pushes on the cycle after the take fit only if the first item is gone.
TEST_CASE("event-driven: a lone input taken late by the idle writer is already out of a producer's way (settle)") {
  sys().run([] {
    boot();
    std::vector<Cq*> cqs{make_cq(16), make_cq(16), make_cq(16)};
    wait_us(5);
    CqeWriter& writer = sys().hca.cq;
    Stream<CqControl>& ctl = writer.s_ctl.stream();
    auto modify = [&](Cq* cq) {
      CqControl c{CqControl::Op::modify_moderation, cq->cqn, writer.context(cq->cqn).cfg};
      c.cfg.mod_count = 7;
      return c;
    };
    const uint64_t activations = writer.activations();
    const uint64_t p = sys().cycle();
    REQUIRE(ctl.can_push(p));
    ctl.push(modify(cqs[0]), p);  // ready on p+1, taken then; the writer wakes on p+3, where it acts
    sys().wait_cycle(p + 2);
    CHECK(writer.activations() == activations);  // asleep through the take
    REQUIRE(ctl.can_push(p + 2));
    ctl.push(modify(cqs[1]), p + 2);
    REQUIRE(ctl.can_push(p + 2));  // an eager writer popped the first on p+1: room for a second
    ctl.push(modify(cqs[2]), p + 2);
    CHECK(ctl.high_water() == 2);
    wait_us(1);
    for (Cq* cq : cqs) CHECK(writer.context(cq->cqn).cfg.mod_count == 7);
  });
}

// A completion that reaches a busy writer which wakes within three cycles anyway is taken on its
// cycle without a wake-up of its own (its act comes three cycles after the take at the earliest):
// the writer runs the take when it wakes. Results and cycles are those of the watched writer,
// which is clocked on every cycle something is inside it.
TEST_CASE("event-driven: a completion reaching the busy writer is taken without a wake-up of its own, on the same cycles as watched") {
  sys().run([] {
    boot();
    Cq* a = make_cq(16);  // disarmed: no event, no timer
    Cq* b = make_cq(16);
    wait_us(5);
    auto run = [&](bool watched) {
      std::vector<std::pair<uint64_t, uint32_t>> cqe_pushed;  // (cycle, id)
      const size_t tap = sys().hca.dma.s_write->on_push.add([&](const DmaWrite& w, uint64_t c) {
        if (w.source == DmaSource::cqe) cqe_pushed.emplace_back(c, w.id);
      });
      const size_t watch = watched ? sys().hca.cq.on_acted.add([](uint64_t) {}) : 0;
      const uint64_t writer = sys().hca.cq.activations();
      const uint64_t k = soon();
      sys().hca.inject(recv_record(a->cqn, 1), k);      // alone: the writer wakes on k+5, where it leaves
      sys().hca.inject(recv_record(b->cqn, 2), k + 3);  // ready on k+4: its act is on k+7 at the earliest
      wait_us(5);
      if (watched) sys().hca.cq.on_acted.remove(watch);
      sys().hca.dma.s_write->on_push.remove(tap);
      std::vector<uint64_t> cycles;
      for (auto& [c, id] : cqe_pushed) cycles.push_back(c - k);
      return std::make_pair(cycles, sys().hca.cq.activations() - writer);
    };
    const auto [lazy_cycles, lazy_activations] = run(false);
    const auto [watched_cycles, watched_activations] = run(true);
    CHECK(lazy_cycles == std::vector<uint64_t>{5, 8});  // A acts on k+4, B is taken on k+4 and acts on k+7
    CHECK(watched_cycles == lazy_cycles);
    CHECK(lazy_activations == 2);  // where the two CQEs leave; none for B's take on k+4
    CHECK(watched_activations == 8);  // k+1 .. k+8
    Wc wc[2];
    REQUIRE(verbs::poll_cq(*b, 2, wc) == 2);
    CHECK(wc[1].timestamp - wc[0].timestamp > 0);
  });
}

// A burst of records, one a cycle, into one CQ: the writer acts every second cycle (each record
// waits a cycle behind the one before, the hazard stall) and wakes where each CQE leaves. Where
// an arbiter's turn pushes a record on an edge where the writer's wake-up is due but has not run
// (SystemC runs the arbiter first), that act sees the record: it needs no wake-up of its own
// (input_wake). Nor does the second record, reaching the idle writer that put off the first's
// take and wakes within three cycles anyway. Here 33 wake-ups: the 32 CQEs' and a timer-wheel
// tick's walk; 34 when the second record's take woke it, 35 with a wake-up for such a push too. Results and cycles are those of the watched writer, clocked on every busy cycle.
TEST_CASE("event-driven: a burst's records wake the writer only where its CQEs leave, on the same cycles as watched") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(1024);  // disarmed: no event, no timer
    wait_us(5);
    auto run = [&](bool watched) {
      std::vector<uint64_t> cqe_pushed;
      const size_t tap = sys().hca.dma.s_write->on_push.add([&](const DmaWrite& w, uint64_t c) {
        if (w.source == DmaSource::cqe) cqe_pushed.push_back(c);
      });
      const size_t watch = watched ? sys().hca.cq.on_acted.add([](uint64_t) {}) : 0;
      const uint64_t writer = sys().hca.cq.activations();
      const uint64_t k = soon();
      for (uint64_t i = 0; i < 32; ++i) sys().hca.inject(recv_record(cq->cqn, uint32_t(i)), k + i);
      wait_us(5);
      if (watched) sys().hca.cq.on_acted.remove(watch);
      sys().hca.dma.s_write->on_push.remove(tap);
      for (uint64_t& c : cqe_pushed) c -= k;
      return std::make_pair(cqe_pushed, sys().hca.cq.activations() - writer);
    };
    const auto [lazy_cycles, lazy_activations] = run(false);
    const auto [watched_cycles, watched_activations] = run(true);
    std::vector<uint64_t> expected;
    for (uint64_t i = 0; i < 32; ++i) expected.push_back(5 + 2 * i);  // acts on k+4+2i, leaves the cycle after
    CHECK(lazy_cycles == expected);
    CHECK(watched_cycles == lazy_cycles);
    CHECK(lazy_activations == 33);
    CHECK(watched_activations == 67);  // k+1 .. k+67
    CHECK(sys().hca.cq.stats().cqes == 64);
  });
}

// Completions held for a consumer-index refresh, nothing else in flight: the writer sleeps through
// the read's round trip, and when the answer wakes it, it runs the round trip's cycles in its
// catch-up, where they only move the timer wheel on (it passes them at once; that saving is the
// bench's to measure). Results and cycles are those of the watched writer, which is clocked on
// every one of them. Two shapes: 8 records in a row (the replay buffer full through the wait) and
// 2 with a third arriving in the middle of the wait (taken while the others are held). A CQE-mode
// period timer runs through the wait (one microsecond ticks, 500 cycles; the round trip about
// 270), which starts at five points 100 cycles apart against the ticks (they count from the
// device's reset, an unknown offset here): a tick begins within it in some, and with a 1 us period
// (it ends on the next tick) the timer expires within it. The event's cycle shows the wheel's
// time: passed cycles that did not move the wheel on lose the event (shown to fail so).
TEST_CASE("event-driven: the cycles completions wait for a consumer-index refresh pass at once, on the same cycles as watched") {
  sys().run([] {
    boot();
    auto run = [&](bool watched, uint16_t period_us, uint64_t offset, const std::vector<uint64_t>& arrivals) {
      Cq* cq = make_cq(16, CqModeration{100, period_us, PeriodMode::cqe});  // the count never reached
      wait_us(5);
      // 15 CQEs consumed (the host's consumer index moves, the writer's copy not), then one more
      // on the armed CQ: it starts the period, and the ring looks full to the writer.
      uint64_t k = soon();
      for (uint32_t i = 0; i + 1 < cq->cqe; ++i) sys().hca.inject(recv_record(cq->cqn, i), k + i);
      wait_us(5);
      Wc wc[64];
      REQUIRE(verbs::poll_cq(*cq, 64, wc) == int(cq->cqe) - 1);
      verbs::req_notify_cq(*cq, kNotifyNext);
      wait_us(1);
      sys().wait_cycle((sys().cycle() / 500 + 1) * 500 + offset);
      sys().hca.inject(recv_record(cq->cqn, 99), soon(1));
      sys().wait_cycle(sys().cycle() + 10);  // its CQE out (5 cycles)
      std::vector<uint64_t> cqe_pushed, eqe_pushed;
      const size_t tap = sys().hca.dma.s_write->on_push.add([&](const DmaWrite& w, uint64_t c) {
        if (w.source == DmaSource::cqe) cqe_pushed.push_back(c);
        if (w.source == DmaSource::eqe) eqe_pushed.push_back(c);
      });
      const size_t watch = watched ? sys().hca.cq.on_acted.add([](uint64_t) {}) : 0;
      const uint64_t writer = sys().hca.cq.activations(), refreshes = sys().hca.cq.stats().ci_refreshes;
      k = soon(20);
      for (size_t i = 0; i < arrivals.size(); ++i) sys().hca.inject(recv_record(cq->cqn, 100 + i), k + arrivals[i]);
      wait_us(5);
      if (watched) sys().hca.cq.on_acted.remove(watch);
      sys().hca.dma.s_write->on_push.remove(tap);
      CHECK(sys().hca.cq.stats().ci_refreshes - refreshes == 1);
      std::vector<uint64_t> cycles;  // the CQEs', then the EQE's
      for (uint64_t c : cqe_pushed) cycles.push_back(c - k);
      for (uint64_t c : eqe_pushed) cycles.push_back(c - k);
      return std::make_pair(cycles, sys().hca.cq.activations() - writer);
    };
    const std::vector<std::vector<uint64_t>> shapes{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 150}};
    for (const std::vector<uint64_t>& arrivals : shapes)
      for (uint16_t period_us : {1, 2})
        for (uint64_t offset : {0, 100, 200, 300, 400}) {
          INFO(arrivals.size() << " records; a " << period_us << " us period; start " << offset);
          const auto [lazy_cycles, lazy_activations] = run(false, period_us, offset, arrivals);
          const auto [watched_cycles, watched_activations] = run(true, period_us, offset, arrivals);
          CHECK(lazy_cycles.size() == arrivals.size() + 1);  // the CQEs and the period's event
          CHECK(watched_cycles == lazy_cycles);
          CHECK(lazy_cycles.front() > 100);  // after the round trip
          // Watched, it wakes on each cycle of the round trip (hundreds); unwatched it sleeps.
          CHECK(watched_activations > lazy_activations + 100);
        }
  });
}

// A burst of injections into a completion input with room is pushed ahead of its turns, each
// stamped with its own turn's cycle (hca.early_injection): the arbiter acts once for the burst,
// not once a record. A transport record put before one of those turns takes back those whose
// turns have not run, and the round robin is the turn's: put between the edges of k+2 and k+3,
// it meets the injection due on k+3 at that turn and goes first (the transport's turn), the rest
// follow. Taking nothing back, it would come after the burst. Put on an edge after its first delta
// cycle, where that edge's turn has run, it comes after the record pushed ahead for the edge, as
// after the turn. An injection given for a cycle before some pushed ahead takes those back.
TEST_CASE("event-driven: a burst of injections goes ahead of its turns, and a transport record put before one of them takes back the rest") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(64, {}, 0, cmd::kCqFlagOverrunIgnore);  // no event
    wait_us(5);
    CompletionArbiter& arb = sys().hca.arbiter;
    auto burst = [&](uint64_t first_wr, uint64_t n) {
      const uint64_t k = soon();
      for (uint64_t i = 0; i < n; ++i) sys().hca.inject(recv_record(cq->cqn, first_wr + i), k + i);
      return k;
    };
    burst(0, 16);  // one CQ takes a record every two cycles: s_cpl fills, and marks 7
    wait_us(2);
    REQUIRE(sys().hca.cq.s_cpl.stream().high_water() == 7);
    const uint64_t activations0 = arb.activations(), early0 = arb.passed_on_early();
    burst(16, 6);
    wait_us(2);
    CHECK(arb.passed_on_early() - early0 == 5);  // all but the first, pushed on its turn
    CHECK(arb.activations() - activations0 == 1);
    // Put on the edge of k3+3 after its first delta cycle, where the turn for k3+3 has run: the
    // record pushed ahead for k3+3 stays and the transport's comes after it, alone at a second
    // turn (the round robin does not move: the transport goes first at the put below).
    const uint64_t k3 = burst(40, 8);  // wr_ids 40 .. 47 due on k3 .. k3+7
    sys().wait_cycle(k3 + 3);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    REQUIRE(sc_core::sc_delta_count_at_current_time() > 0);
    REQUIRE(arb.try_put(recv_record(cq->cqn, 101)));
    wait_us(2);
    const uint64_t back0 = arb.taken_back();
    const uint64_t k = burst(22, 8);  // wr_ids 22 .. 29 due on k .. k+7
    sys().wait_cycle(k + 2);
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_NS));  // between the edges of k+2 and k+3
    REQUIRE(arb.try_put(recv_record(cq->cqn, 100)));
    CHECK(arb.taken_back() - back0 == 4);  // k+3 .. k+6: the pushes ahead stopped below s_cpl's mark
    wait_us(2);
    // An injection given for k2+3 once those due on k2+1 .. were pushed ahead: it goes after the
    // one given before it for k2+3 and before those of later cycles, as the turns would order them.
    const uint64_t k2 = burst(30, 8);  // wr_ids 30 .. 37 due on k2 .. k2+7
    sys().wait_cycle(k2);
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_NS));
    const uint64_t back1 = arb.taken_back();
    sys().hca.inject(recv_record(cq->cqn, 200), k2 + 3);
    CHECK(arb.taken_back() > back1);
    wait_us(2);
    Wc wc[64];
    REQUIRE(verbs::poll_cq(*cq, 64, wc) == 49);
    const std::vector<uint64_t> expected{40, 41, 42, 43, 101, 44, 45, 46, 47, 22, 23, 24, 100,
                                         25, 26, 27, 28, 29, 30, 31, 32, 33, 200, 34, 35, 36, 37};
    std::vector<uint64_t> last;
    for (size_t i = 49 - expected.size(); i < 49; ++i) last.push_back(wc[i].wr_id);
    CHECK(last == expected);
  });
}

// A producer looking at s_cpl while a busy writer owes takes from it finds them done (settle): the
// stream's high-water mark is that of an eager writer.
TEST_CASE("event-driven: takes a busy writer owes from s_cpl are settled before a producer looks") {
  sys().run([] {
    boot();
    Cq* a = make_cq(16);
    Cq* b = make_cq(16);
    wait_us(5);
    Stream<CompletionRecord>& cpl = sys().hca.cq.s_cpl.stream();
    const size_t high0 = cpl.high_water();
    REQUIRE(high0 <= 1);
    const uint64_t k = soon();
    const uint64_t writer = sys().hca.cq.activations();
    sys().hca.inject(recv_record(a->cqn, 1), k);      // alone: taken on k+1; the writer wakes on k+5
    sys().hca.inject(recv_record(b->cqn, 2), k + 2);  // taken on k+3 without a wake-up
    sys().hca.inject(recv_record(b->cqn, 3), k + 4);  // pushed on k+4, the writer asleep
    sys().wait_cycle(k + 4);
    CHECK(sys().hca.cq.activations() == writer);
    wait_us(5);
    CHECK(cpl.high_water() == 1);  // two would mean the take owed on k+3 was still in the way
    CHECK(sys().hca.cq.stats().cqes >= 3);
  });
}

// Issue 14, item 2: a run ends with a clear message when its time limit comes before the body
// finishes, also when the next event lies beyond the limit (this looped for ever).
TEST_CASE("System::run stops at its time limit with a message, even when the next event lies beyond it") {
  CHECK_THROWS_WITH(sys().run([] { sc_core::wait(sc_core::sc_time(10, sc_core::SC_MS)); },
                              sc_core::sc_time(1, sc_core::SC_MS)),
                    Catch::Contains("simulated time limit"));
}

// Issue 14, item 2: a delta-cycle livelock (a process that notifies itself with no delay, so
// simulated time never moves) ends with a message naming the instant, instead of hanging.
TEST_CASE("System::run stops when simulated time stops advancing (a delta-cycle livelock), naming the instant") {
  CHECK_THROWS_WITH(sys().run([] {
    auto* ev = new sc_core::sc_event("livelock");  // lives as long as the simulation
    {  // the options go before this thread blocks for ever (its stack is never unwound)
      sc_core::sc_spawn_options o;
      o.spawn_method();
      o.set_sensitivity(ev);
      o.dont_initialize();
      sc_core::sc_spawn([ev] { ev->notify(sc_core::SC_ZERO_TIME); }, "spinner", &o);
    }
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_US));
    ev->notify(sc_core::SC_ZERO_TIME);
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_MS));
  }),
                    Catch::Contains("simulated time stopped advancing at 1 us"));
}

// A wall-clock guard: a run that would take long stops after the configured wall time.
TEST_CASE("System::run stops at its wall-clock limit with the simulated time reached") {
  sys().cfg.wall_limit_s = 1;
  CHECK_THROWS_WITH(sys().run([] {
    // A method woken every nanosecond of a ten-second run: far more than a second of wall time.
    auto* ev = new sc_core::sc_event("tick");
    {
      sc_core::sc_spawn_options o;
      o.spawn_method();
      o.set_sensitivity(ev);
      o.dont_initialize();
      sc_core::sc_spawn([ev] { ev->notify(sc_core::sc_time(1, sc_core::SC_NS)); }, "ticker", &o);
    }
    ev->notify(sc_core::SC_ZERO_TIME);
    sc_core::wait(sc_core::sc_time(10, sc_core::SC_SEC));
  }, sc_core::sc_time(20, sc_core::SC_SEC)),
                    Catch::Contains("wall-clock limit of 1"));
  sys().cfg.wall_limit_s = 0;
}
