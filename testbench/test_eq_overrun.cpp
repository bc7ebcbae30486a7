// A tiny completion EQ (4 entries) that overruns: the device drops the events it cannot write and
// raises an EQ-overrun async event; the driver re-synchronizes the affected CQs so none is left
// silent.
#include "testbench/test_support.h"

#include "firmware-shim/cq_pool.h"

namespace vhca::test {
void configure(SystemConfig& cfg) { cfg.driver.eq_log_size = 2; }
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S21] an EQ overrun is reported and no CQ on that EQ loses its notifications") {
  sys().run([] {
    boot();
    std::vector<AsyncEvent> async;
    sys().driver.async_handler = [&](const AsyncEvent& e) { async.push_back(e); };
    std::vector<Cq*> cqs;
    std::vector<int> delivered(6, 0);
    for (int i = 0; i < 6; ++i) {
      cqs.push_back(make_cq(16));
      verbs::set_comp_handler(*cqs.back(), [&delivered, i](Cq& cq) {
        delivered[size_t(i)] += int(drain(cq).size());
        verbs::req_notify_cq(cq, kNotifyNext);
      });
      verbs::req_notify_cq(*cqs.back(), kNotifyNext);
    }
    wait_us(1);
    const uint64_t k = soon();
    for (int i = 0; i < 6; ++i) sys().hca.inject(recv_record(cqs[size_t(i)]->cqn, uint64_t(i)), k + uint64_t(i));
    wait_us(60);
    REQUIRE(!async.empty());
    CHECK(async[0].type == eqe::kEqOverrun);
    CHECK(sys().hca.eq.context(sys().driver.eqn_for_vector(0)).overruns == 2);  // 6 events, 4 slots
    CHECK(sys().driver.eq_overruns_recovered() >= 1);
    for (int i = 0; i < 6; ++i) CHECK(delivered[size_t(i)] == 1);
    // Every CQ is armed again with the right sequence number: a second round arrives everywhere.
    for (int i = 0; i < 6; ++i) sys().hca.inject(recv_record(cqs[size_t(i)]->cqn, 10 + uint64_t(i)), soon() + uint64_t(200 * i));
    wait_us(60);
    for (int i = 0; i < 6; ++i) CHECK(delivered[size_t(i)] == 2);
  });
}

TEST_CASE("[S23] freeing a CQ whose poll is pending is safe") {
  sys().run([] {
    boot();
    CqPool pool(sys().driver);
    IbCq* cq = pool.alloc_cq(16, 0, PollContext::workqueue);  // 2 us from event to poll
    CqeDone done;
    int calls = 0;
    done.done = [&](IbCq&, const Wc&) { ++calls; };
    pool.track(done);
    wait_us(1);
    sys().hca.inject(recv_record(cq->cq->cqn, CqPool::wr_id_of(done)), soon());
    wait_us(2.0);  // the event has been handled, the work item is queued, the worker has not run
    REQUIRE(cq->queued);
    CHECK(pool.free_cq(cq) == 0);
    wait_us(10);
    CHECK(calls == 0);  // freed before it was polled: nothing dispatched, nothing crashed
  });
}
