// Completion notification: S5, S7-S11, with exact cycles. Timing (docs/timing.md, the pipelined
// CQ writer): a record injected on cycle k is acted on, and its CQE stamped, on cycle
// k + kCompletionActs (4) and, if it fires, its EQE is stamped kEventStamped (2) cycles later.
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S5][S7] NEXT: the next CQE raises one event, on the cycle after its CQE, and calls the handler with the CQ") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    Cq* handled = nullptr;
    int calls = 0;
    verbs::set_comp_handler(*cq, [&](Cq& c) {
      handled = &c;
      ++calls;
    });
    EventLog ev;
    ev.attach();
    REQUIRE(verbs::req_notify_cq(*cq, kNotifyNext) == 0);
    wait_us(1);
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 1), k);
    wait_us(5);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == k + kCompletionActs + kEventStamped);
    CHECK(calls == 1);
    CHECK(handled == cq);
    auto wcs = drain(*cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].timestamp == k + kCompletionActs);
    // Not re-armed: a further CQE raises nothing (S10, second half).
    sys().hca.inject(recv_record(cq->cqn, 2), soon());
    wait_us(5);
    CHECK(ev.count() == 1);
    CHECK(drain(*cq).size() == 1);
  });
}

TEST_CASE("[S8] SOLICITED: only a solicited receive or an error CQE raises the event") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    EventLog ev;
    ev.attach();
    REQUIRE(verbs::req_notify_cq(*cq, kNotifySolicited) == 0);
    wait_us(1);
    sys().hca.inject(recv_record(cq->cqn, 1, false), soon());  // receive without SE
    sys().hca.inject(send_record(cq->cqn, 2), soon(11));       // successful send
    wait_us(5);
    CHECK(ev.count() == 0);
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 3, true), k);  // receive with SE
    wait_us(5);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == k + kCompletionActs + kEventStamped);
    drain(*cq);
    // An unsuccessful completion also counts as solicited.
    REQUIRE(verbs::req_notify_cq(*cq, kNotifySolicited) == 0);
    wait_us(1);
    const uint64_t k2 = soon();
    sys().hca.inject(error_record(cq->cqn, 4, syndrome::kRemoteAccess), k2);
    wait_us(5);
    REQUIRE(ev.count() == 2);
    CHECK(ev.eqe_cycles[1] == k2 + kCompletionActs + kEventStamped);
  });
}

TEST_CASE("[S9] CQEs present before the request do not raise an event, report-missed-events says so") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    EventLog ev;
    ev.attach();
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, 10 + i), soon() + i);
    wait_us(2);
    CHECK(verbs::peek_cq(*cq, 16) == 3);
    CHECK(verbs::req_notify_cq(*cq, kNotifyNext | kReportMissedEvents) == 1);
    wait_us(5);
    CHECK(ev.count() == 0);  // the three existing CQEs raised nothing
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 13), k);  // the next one does
    wait_us(5);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == k + kCompletionActs + kEventStamped);
    CHECK(drain(*cq).size() == 4);
    CHECK(verbs::req_notify_cq(*cq, kNotifyNext | kReportMissedEvents) == 0);  // empty: nothing missed
  });
}

TEST_CASE("[S9] an arm whose consumer index is behind the producer fires at once: no lost wake-up") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    EventLog ev;
    ev.attach();
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, i), soon() + i);
    wait_us(2);
    const uint64_t m = sys().cycle() + 1;
    sys().wait_cycle(m);
    // Arm carrying consumer index 0 while the producer index is 3. The 8-byte doorbell is issued
    // 10 ns after cycle m (CPU cost), serialized in 1016 ps, lands 200 ns later (inside cycle
    // m+105), reaches the writer on m+106, which acts on it on m+108 and fires: EQE on m+110.
    arm_raw(*cq, 0, 0);
    wait_us(5);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == m + 110);
  });
}

TEST_CASE("[S10] arm-once: requests while one is pending have no further effect, one event, then re-arm") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    EventLog ev;
    ev.attach();
    verbs::req_notify_cq(*cq, kNotifyNext);
    verbs::req_notify_cq(*cq, kNotifyNext);
    verbs::req_notify_cq(*cq, kNotifySolicited);
    wait_us(1);
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, i), soon() + i);
    wait_us(5);
    CHECK(ev.count() == 1);
    CHECK(sys().hca.cq.stats().arms_ignored_pending == 2);
    drain(*cq);
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    sys().hca.inject(recv_record(cq->cqn, 9), soon());
    wait_us(5);
    CHECK(ev.count() == 2);
  });
}

TEST_CASE("[S10] an arm with a stale sequence number (from before the last event) is ignored") {
  sys().run([] {
    EventLog ev;
    Cq* cq = boot_armed_cq(ev, 16);
    sys().hca.inject(recv_record(cq->cqn, 1), soon());
    wait_us(5);
    REQUIRE(ev.count() == 1);
    drain(*cq);
    cq->arm_sn = (cq->arm_sn + 3) & 3;  // pretend the driver missed the event: old sn
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    sys().hca.inject(recv_record(cq->cqn, 2), soon());
    wait_us(5);
    CHECK(ev.count() == 1);
    CHECK(sys().hca.cq.stats().arms_stale == 1);
    CHECK((sys().driver.read_register(reg::last_bad_doorbell) >> 24) == dberr::kStaleArmSn);
  });
}

TEST_CASE("[S11] NEXT takes precedence over SOLICITED when both are requested") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    EventLog ev;
    ev.attach();
    verbs::req_notify_cq(*cq, kNotifySolicited);
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    const uint64_t k = soon();
    sys().hca.inject(send_record(cq->cqn, 1), k);  // not solicited, but NEXT covers it
    wait_us(5);
    REQUIRE(ev.count() == 1);
    CHECK(ev.eqe_cycles[0] == k + kCompletionActs + kEventStamped);
    CHECK(sys().hca.cq.stats().arms_upgraded == 1);
  });
}
