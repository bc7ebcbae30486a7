// S12 event moderation, with exact cycles (500 MHz: 1 us = 500 cycles). The CQ writer is the
// pipelined one (test_support.h): a record injected on cycle k is acted on, its CQE stamped, on
// k + kCompletionActs; an event decided by an action on cycle c has its EQE stamped on
// c + kEventStamped; a period ends on the writer's first microsecond tick at or after its exact
// end (period_end_action).
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S12] count 4: the event fires on the cycle the 4th CQE is written, not before") {
  sys().run([] {
    EventLog ev;
    Cq* cq = boot_armed_cq(ev, 64, CqModeration{4, 0, PeriodMode::eqe});
    const uint64_t k = soon();
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, i), k + 100 * i);
    wait_us(3);
    CHECK(ev.count() == 0);  // three CQEs: below the count
    const uint64_t k4 = soon();
    sys().hca.inject(recv_record(cq->cqn, 3), k4);
    wait_us(5);
    REQUIRE(ev.count() == 1);
    auto wcs = drain(*cq);
    REQUIRE(wcs.size() == 4);
    CHECK(wcs[3].timestamp == k4 + kCompletionActs);
    CHECK(ev.eqe_cycles[0] == k4 + kCompletionActs + kEventStamped);  // decided by the 4th CQE's action
    CHECK(sys().hca.cq.stats().events_by_count == 1);
  });
}

TEST_CASE("[S12] EQE period mode: the timer restarts at each event, the next event fires exactly one period later") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(64, CqModeration{0, 10, PeriodMode::eqe});  // 10 us = 5000 cycles
    EventLog ev;
    ev.attach();
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(12);  // long after the CQ was created: the period has elapsed
    const uint64_t k1 = soon();
    sys().hca.inject(recv_record(cq->cqn, 1), k1);
    wait_us(2);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == k1 + kCompletionActs + kEventStamped);  // period already elapsed: fires at once, the period restarts
    drain(*cq);
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(0.2);
    sys().hca.inject(recv_record(cq->cqn, 2), soon());
    wait_us(3);
    CHECK(ev.count() == 1);  // the CQE waits for the period
    wait_us(10);
    REQUIRE(ev.count() == 2);
    CHECK(ev.eqe_cycles[1] == period_end_action(k1 + kCompletionActs, 10) + kEventStamped);  // one period after the last event
    CHECK(sys().hca.cq.stats().events_by_period >= 1);
  });
}

TEST_CASE("[S12] CQE period mode: the timer restarts at each CQE, the event fires one period after the last") {
  sys().run([] {
    EventLog ev;
    Cq* cq = boot_armed_cq(ev, 64, CqModeration{0, 2, PeriodMode::cqe});
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 1), k);
    sys().hca.inject(recv_record(cq->cqn, 2), k + 300);  // restarts the timer
    wait_us(5);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == period_end_action(k + 300 + kCompletionActs, 2) + kEventStamped);
    CHECK(drain(*cq).size() == 2);
    // A single CQE: one period after it.
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    const uint64_t k2 = soon();
    sys().hca.inject(recv_record(cq->cqn, 3), k2);
    wait_us(5);  // the period, up to 1 us to its tick, and the interrupt's delivery
    REQUIRE(ev.count() == 2);
    CHECK(ev.eqe_cycles[1] == period_end_action(k2 + kCompletionActs, 2) + kEventStamped);
  });
}

TEST_CASE("[S12] count and period together: whichever comes first fires") {
  sys().run([] {
    EventLog ev;
    Cq* cq = boot_armed_cq(ev, 64, CqModeration{3, 2, PeriodMode::cqe});
    const uint64_t k = soon();
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, i), k + 10 * i);
    wait_us(5);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == k + 20 + kCompletionActs + kEventStamped);  // by count, on the 3rd
    drain(*cq);
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    const uint64_t k2 = soon();
    sys().hca.inject(recv_record(cq->cqn, 5), k2);
    wait_us(5);
    REQUIRE(ev.count() == 2);
    CHECK(ev.eqe_cycles[1] == period_end_action(k2 + kCompletionActs, 2) + kEventStamped);  // by period
  });
}

TEST_CASE("[S12][S2] moderation changes at run time and query reports it") {
  sys().run([] {
    EventLog ev;
    Cq* cq = boot_armed_cq(ev, 64, CqModeration{8, 0, PeriodMode::eqe});
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, i), soon() + i);
    wait_us(3);
    CHECK(ev.count() == 0);
    REQUIRE(verbs::modify_cq(*cq, CqModeration{2, 0, PeriodMode::eqe}) == 0);
    wait_us(3);
    CHECK(ev.count() == 1);  // 3 pending >= new count 2: fires when the change is applied
    CqInfo info;
    REQUIRE(verbs::query_cq(*cq, info) == 0);
    CHECK(info.moderation.count == 2);
    CHECK(info.moderation.period_us == 0);
    CHECK(info.cqe == 64);
    drain(*cq);
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 7), k);
    sys().hca.inject(recv_record(cq->cqn, 8), k + 5);
    wait_us(3);
    REQUIRE(ev.count() == 2);
    CHECK(ev.eqe_cycles[1] == k + 5 + kCompletionActs + kEventStamped);
  });
}

TEST_CASE("[S12] no moderation (count 0, period 0): every armed CQE fires at once") {
  sys().run([] {
    EventLog ev;
    Cq* cq = boot_armed_cq(ev, 16);
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 1), k);
    wait_us(3);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == k + kCompletionActs + kEventStamped);
    CHECK(sys().hca.cq.stats().events_immediate == 1);
  });
}

// S26: moderation gates the event owed at an arm. An arm written on edge m acts on m+108 (see
// [S9] in test_notify.cpp); an event decided there has its EQE on m+110.
TEST_CASE("[S26] EQE mode: an arm that finds CQEs owed before the period ends raises the event at the period's end") {
  sys().run([] {
    EventLog ev;
    const OwedArm o = arm_with_two_owed(ev);
    wait_us(3);
    CHECK(ev.count() == 1);  // owed since m+108, but the period has not ended
    wait_us(10);
    REQUIRE(ev.count() == 2);
    const uint64_t period_end = period_end_action(o.k1 + kCompletionActs, 10);
    CHECK(o.m + 108 < period_end);
    CHECK(ev.eqe_cycles[1] == period_end + kEventStamped);  // one period after the last event
    const CqeWriterStats& s = sys().hca.cq.stats();
    CHECK(s.arms_owed == 1);
    CHECK(s.events_at_arm == 0);
    CHECK(s.events_by_period == 2);
  });
}

TEST_CASE("[S26] the CQEs owed at an arm reach the count: the event fires on the arm's cycle") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(64, CqModeration{3, 10, PeriodMode::eqe});
    EventLog ev;
    ev.attach();
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(12);
    sys().hca.inject(recv_record(cq->cqn, 1), soon());
    wait_us(2);
    REQUIRE(ev.count() == 1);
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, 2 + i), soon() + i);
    wait_us(1);
    const uint64_t m = next_edge();
    arm_raw(*cq, 1, 0);  // three CQEs newer than index 1: the count of 3 is reached
    wait_us(2);
    REQUIRE(ev.count() == 2);
    CHECK(ev.eqe_cycles[1] == m + 110);
    CHECK(sys().hca.cq.stats().events_by_count == 1);
    CHECK(sys().hca.cq.stats().arms_owed == 1);
  });
}

TEST_CASE("[S26] CQE mode: every CQE restarts the period, armed or not: an arm with CQEs owed fires one period after the last") {
  sys().run([] {
    EventLog ev;
    Cq* cq = boot_armed_cq(ev, 64, CqModeration{0, 2, PeriodMode::cqe});  // 2 us = 1000 cycles
    const uint64_t k1 = soon();
    sys().hca.inject(recv_record(cq->cqn, 1), k1);
    wait_us(5);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == period_end_action(k1 + kCompletionActs, 2) + kEventStamped);
    const uint64_t k2 = soon();
    sys().hca.inject(recv_record(cq->cqn, 2), k2);
    sys().hca.inject(recv_record(cq->cqn, 3), k2 + 300);  // disarmed: still restarts the period
    wait_us(1);
    const uint64_t m = next_edge();
    arm_raw(*cq, 1, 0);
    wait_us(5);
    REQUIRE(ev.count() == 2);
    const uint64_t period_end = period_end_action(k2 + 300 + kCompletionActs, 2);
    CHECK(m + 108 < period_end);
    CHECK(ev.eqe_cycles[1] == period_end + kEventStamped);
  });
}

TEST_CASE("[S26] an arm whose period has already passed, count not reached: the owed event fires on the arm's cycle") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(64, CqModeration{8, 2, PeriodMode::eqe});
    EventLog ev;
    ev.attach();
    sys().hca.inject(recv_record(cq->cqn, 1), soon());  // disarmed, never notified
    wait_us(5);  // beyond the period since creation
    const uint64_t m = next_edge();
    arm_raw(*cq, 0, 0);
    wait_us(2);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == m + 110);
    CHECK(sys().hca.cq.stats().events_by_period == 1);
  });
}
