// S28 for a flush whose WQEs outnumber the outbox: the descriptor caches and the fetch bursts are
// deeper here than the requester's and responder's outboxes, so a flush finds more WQEs at once
// than an outbox holds. They must be handed on while there is room (the rest wait in the flush),
// never pushed past the outbox's bound.
#include "testbench/test_support.h"

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.hosts = 2;
  cfg.hca.cq.input_depth = 2;               // a flush's CQEs back up from the CQ writer...
  cfg.hca.arbiter.transport_depth = 2;      // ...through the completion arbiter...
  cfg.hca.transport.outbox_depth = 6;       // ...into the outboxes (one packet's data pieces and its CQE)
  cfg.hca.transport.prefetch_depth = 32;    // SQ WQEs ahead of the send cursor; RQ WQEs cached
  cfg.hca.transport.fetch_burst = 16;       // WQEs a fetch read brings: more than the outbox holds
  cfg.hca.transport.rq_prefetch = true;     // receive WQEs cached as they are posted
  cfg.hca.transport.max_inflight_psns = 4;  // a requester with no answer stops after 4 packets
  cfg.driver.rq_doorbell_mmio = true;       // the device learns of posted receives from the doorbell
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

namespace {
void check_flushed_in_order(const std::vector<Wc>& r, uint64_t first_wr_id, size_t n) {
  REQUIRE(r.size() == n);
  for (size_t i = 0; i < n; ++i) {
    CHECK(r[i].wr_id == first_wr_id + i);
    CHECK(r[i].status == syndrome::kWrFlush);
  }
}
}  // namespace

TEST_CASE("[S28] a receive queue with 32 WQEs cached flushes through a 6-deep outbox: handed on while there is room, every CQE once, in order") {
  sys().run([] {
    auto [a, b] = rc_pair();
    constexpr uint64_t kWqes = 40;
    for (uint64_t i = 0; i < kWqes; ++i) fb::post_recv(*a.qp, RecvWr{0x100 + i, {a.buf.sge(0, 64)}});
    wait_us(10);
    REQUIRE(sys().node(0).hca.transport.rq.cached(a.qp->qpn) == 32);  // the cache is full; 8 are still in the ring
    Outbox& box = sys().node(0).hca.transport.responder.outbox();
    REQUIRE(verbs::modify_qp(*a.qp, rts_to_error()) == 0);
    check_flushed_in_order(poll_n(*a.rcq, kWqes), 0x100, kWqes);
    CHECK(box.overflows() == 0);
    CHECK(box.s_items.high_water() <= 6);
    CHECK(box.holds() > 0);  // it was full, and the flush waited for it
    wait_us(20);
    CHECK(verbs::peek_cq(*a.rcq, 16) == 0);  // nothing twice
  });
}

TEST_CASE("[S28] send WQEs never fetched flush in bursts of 16 through a 6-deep outbox: every CQE once, in order") {
  sys().run([] {
    auto [a, b] = rc_pair();
    // The responder's QP answers nothing in ERR: the requester stops after its window of 4.
    REQUIRE(verbs::modify_qp(*b.qp, rts_to_error()) == 0);
    constexpr uint64_t kWqes = 60;
    for (uint64_t i = 0; i < kWqes; ++i)
      fb::post_send(*a.qp, remote_wr(0x200 + i, a.buf.sge(0, 64), sqwqe::kRdmaWrite, b.buf, 0));
    wait_us(20);
    const TransportStats& ta = sys().node(0).hca.transport.stats();
    REQUIRE(ta.wqes_fetched < kWqes);  // some are still in the ring: they flush from it
    REQUIRE(ta.wqes_fetched + 16 < kWqes);  // and more than one burst's worth
    Outbox& box = sys().node(0).hca.transport.requester.outbox();
    REQUIRE(verbs::modify_qp(*a.qp, rts_to_error()) == 0);
    check_flushed_in_order(poll_n(*a.scq, kWqes), 0x200, kWqes);
    CHECK(box.overflows() == 0);
    CHECK(box.s_items.high_water() <= 6);
    wait_us(20);
    CHECK(verbs::peek_cq(*a.scq, 16) == 0);  // nothing twice
  });
}
