// S14 overflow and the consumer-index refresh read.
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S14] a CQE that finds the CQ full is not written, the CQ enters error, a CQ-error event arrives") {
  sys().run([] {
    boot();
    std::vector<AsyncEvent> events;
    sys().driver.async_handler = [&](const AsyncEvent& e) { events.push_back(e); };
    Cq* cq = make_cq(4);
    for (int i = 0; i < 5; ++i) sys().hca.inject(recv_record(cq->cqn, 100 + i), soon() + i);
    wait_us(5);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == eqe::kCqError);
    CHECK(events[0].cqn == cq->cqn);
    CHECK(events[0].syndrome == eqe::kCqOverrun);
    CHECK(events[0].cq == cq);
    CHECK(cq->in_error);
    CHECK(sys().hca.cq.stats().ci_refreshes == 1);  // it checked the doorbell record first
    CHECK(sys().hca.cq.stats().overflows == 1);
    CqInfo info;
    REQUIRE(verbs::query_cq(*cq, info) == 0);
    CHECK(info.state == uint32_t(CqState::error));
    auto w = drain(*cq);  // the four unconsumed entries are intact
    REQUIRE(w.size() == 4);
    for (int i = 0; i < 4; ++i) CHECK(w[size_t(i)].wr_id == uint64_t(100 + i));
    // Later completions for the CQ in error are dropped and counted, never written.
    const uint64_t dropped = sys().hca.cq.stats().dropped;
    sys().hca.inject(recv_record(cq->cqn, 200), soon());
    wait_us(2);
    CHECK(drain(*cq).empty());
    CHECK(sys().hca.cq.stats().dropped == dropped + 1);
  });
}

TEST_CASE("[S14] when the cached index says full the device reads the doorbell record, on a documented cycle") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(4);
    for (int i = 0; i < 4; ++i) sys().hca.inject(recv_record(cq->cqn, i), soon() + i);
    wait_us(2);
    REQUIRE(drain(*cq).size() == 4);  // consumer index 4 is now in the doorbell record
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 4), k);
    wait_us(3);
    auto w = drain(*cq);
    REQUIRE(w.size() == 1);
    // Acted on k+4 (the pipelined writer: test_support.h), which requests the refresh; the request
    // leaves the writer's skid buffer on k+5 and the read is issued on k+6; request 24 B (762 ps)
    // + 200 ns, 120 ns at memory, completion 24 B (762 ps) + 200 ns = 521.524 ns -> ready on
    // cycle k+6+261, visible to the writer on k+268, acted on (the CQE written) 2 cycles later.
    CHECK(w[0].timestamp == k + 270);
    CHECK(sys().hca.cq.stats().ci_refreshes == 1);
    CHECK(sys().hca.cq.stats().overflows == 0);
  });
}

TEST_CASE("[S14] overrun-ignore CQs skip the check (the driver asked for it)") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(2, {}, 0, cmd::kCqFlagOverrunIgnore);
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, i), soon() + i);
    wait_us(2);
    CHECK(sys().hca.cq.stats().overflows == 0);
    CHECK(sys().hca.cq.stats().ci_refreshes == 0);
    CHECK(sys().hca.cq.context(cq->cqn).pi == 3);
  });
}
