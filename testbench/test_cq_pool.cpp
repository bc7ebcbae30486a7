// S23: the kernel-style CQ abstraction.
#include "testbench/test_support.h"

#include "firmware-shim/cq_pool.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

namespace {
// N requests, each with its own done callback that records the order it ran in.
struct Requests {
  std::vector<CqeDone> dones;
  std::vector<int> order;
  std::vector<sc_core::sc_time> when;
  Requests(CqPool& pool, int n) : dones(size_t(n)) {
    for (int i = 0; i < n; ++i) {
      dones[size_t(i)].done = [this, i](IbCq&, const Wc& wc) {
        CHECK(wc.status == 0);
        order.push_back(i);
        when.push_back(sc_core::sc_time_stamp());
      };
      pool.track(dones[size_t(i)]);
    }
  }
  uint64_t wr_id(int i) { return CqPool::wr_id_of(dones[size_t(i)]); }
};

void check_in_order(const Requests& r, int n) {
  REQUIRE(r.order.size() == size_t(n));
  for (int i = 0; i < n; ++i) CHECK(r.order[size_t(i)] == i);
}
}  // namespace

TEST_CASE("[S23] every poll context dispatches per-WR done callbacks, in order, each exactly once") {
  sys().run([] {
    boot();
    CqPool pool(sys().driver);
    for (PollContext ctx : {PollContext::softirq, PollContext::thread, PollContext::workqueue}) {
      INFO(poll_context_name(ctx));
      IbCq* cq = pool.alloc_cq(64, 0, ctx);
      REQUIRE(cq != nullptr);
      Requests req(pool, 40);
      const CpuContext charged = ctx == PollContext::softirq  ? CpuContext::softirq
                                 : ctx == PollContext::thread ? CpuContext::thread
                                                              : CpuContext::workqueue;
      const sc_core::sc_time busy_before = sys().cpu.busy(charged);
      wait_us(1);
      for (int i = 0; i < 40; ++i) sys().hca.inject(recv_record(cq->cq->cqn, req.wr_id(i)), soon() + uint64_t(i) * 7);
      wait_us(30);
      check_in_order(req, 40);
      CHECK(sys().cpu.busy(charged) > busy_before);  // the work ran in that context
      CHECK(cq->turns >= 3);                         // 40 CQEs at budget 16: at least three turns
      CHECK(verbs::peek_cq(*cq->cq, 64) == 0);
      REQUIRE(pool.free_cq(cq) == 0);
    }
  });
}

TEST_CASE("[S23] streaming with re-arm and missed-event reporting strands no completion") {
  sys().run([] {
    boot();
    CqPool pool(sys().driver);
    IbCq* cq = pool.alloc_cq(32, 0, PollContext::softirq);
    Requests req(pool, 300);
    wait_us(1);
    const uint64_t k = soon();
    for (int i = 0; i < 300; ++i) sys().hca.inject(recv_record(cq->cq->cqn, req.wr_id(i)), k + uint64_t(i) * 150);
    wait_us(120);
    check_in_order(req, 300);
    CHECK(verbs::peek_cq(*cq->cq, 32) == 0);
    CHECK(cq->rearms > 1);
    CHECK(sys().hca.cq.stats().overflows == 0);
  });
}

TEST_CASE("[S23] fairness: a flooded CQ cannot starve another CQ on the same vector") {
  sys().run([] {
    boot();
    CqPool pool(sys().driver);
    IbCq* flood = pool.alloc_cq(512, 0, PollContext::softirq);
    IbCq* quiet = pool.alloc_cq(16, 0, PollContext::softirq);
    Requests f(pool, 400);
    Requests q(pool, 1);
    wait_us(1);
    const uint64_t k = soon();
    for (int i = 0; i < 400; ++i) sys().hca.inject(recv_record(flood->cq->cqn, f.wr_id(i)), k + uint64_t(i));
    sys().hca.inject(recv_record(quiet->cq->cqn, q.wr_id(0)), k + 450);
    wait_us(100);
    check_in_order(f, 400);
    REQUIRE(q.order.size() == 1);
    // The quiet CQ is served within one round of budgets, long before the flood is drained.
    const size_t flood_done_before_quiet =
        size_t(std::count_if(f.when.begin(), f.when.end(), [&](sc_core::sc_time t) { return t < q.when[0]; }));
    CHECK(flood_done_before_quiet < 100);
    CHECK(q.when[0] < f.when.back());
  });
}

TEST_CASE("[S23] direct context: no events, the caller polls with a budget") {
  sys().run([] {
    boot();
    CqPool pool(sys().driver);
    IbCq* cq = pool.alloc_cq(64, 0, PollContext::direct);
    Requests req(pool, 20);
    for (int i = 0; i < 20; ++i) sys().hca.inject(recv_record(cq->cq->cqn, req.wr_id(i)), soon() + uint64_t(i));
    wait_us(2);
    CHECK(cq->cq->events == 0);
    CHECK(pool.process_cq_direct(*cq, 8) == 8);
    CHECK(pool.process_cq_direct(*cq, 100) == 12);
    CHECK(pool.process_cq_direct(*cq, 100) == 0);
    check_in_order(req, 20);
  });
}

TEST_CASE("[S23] a completion whose wr_id names no registered callback is reported, not followed") {
  sys().run([] {
    boot();
    CqPool pool(sys().driver);
    IbCq* cq = pool.alloc_cq(16, 0, PollContext::direct);
    sys().hca.inject(recv_record(cq->cq->cqn, 0xDEADBEEF), soon());
    wait_us(2);
    CHECK(pool.process_cq_direct(*cq, 16) == 1);
    CHECK(pool.unknown_wr_ids() == 1);
  });
}

TEST_CASE("[S23] freeing an adaptive CQ while DIM applies a new profile waits for the MODIFY_CQ") {
  sys().run([] {
    boot();
    CqPool pool(sys().driver);
    IbCq* cq = pool.alloc_cq(1024, 0, PollContext::softirq, CqModeration{1, 1, PeriodMode::eqe}, true);
    REQUIRE(cq != nullptr);
    REQUIRE(cq->dim);
    // The worst moment: the application frees the CQ in the very delta cycle DIM decides, so
    // its DESTROY_CQ would reach the firmware before the worker's MODIFY_CQ.
    bool freed = false;
    int workers_after_free = -1, rc = -1;
    uint64_t errors = 0;
    bool decided = false;
    pool.on_dim_change.add([&](IbCq& c) {
      if (decided) return;
      decided = true;
      REQUIRE(&c == cq);
      errors = log::error_count();
      sc_core::sc_spawn([&] {
        rc = pool.free_cq(cq);
        workers_after_free = pool.dim_workers();
        freed = true;
      });
    });
    Requests req(pool, 70 + 200 * 4);
    wait_us(1);
    // First one completion per event, every 2 us; then four per event, every 4 us: twice the
    // completions per millisecond, so after its two 64-event windows DIM steps to the next
    // profile. Completions are injected as time goes and stop once the CQ is being freed.
    int next = 0;
    for (int i = 0; i < 70; ++i) {
      sys().hca.inject(recv_record(cq->cq->cqn, req.wr_id(next++)), soon());
      wait_us(2);
    }
    for (int i = 0; i < 200 && !decided; ++i) {
      for (int j = 0; j < 4; ++j) sys().hca.inject(recv_record(cq->cq->cqn, req.wr_id(next++)), soon() + uint64_t(j));
      wait_us(4);
    }
    REQUIRE(decided);  // DIM decided, and the free began in that delta
    wait_us(50);
    REQUIRE(freed);
    CHECK(rc == 0);
    CHECK(workers_after_free == 0);       // free_cq waited for the worker holding the CQ
    CHECK(log::error_count() == errors);  // the MODIFY_CQ reached a live CQ
  });
}
