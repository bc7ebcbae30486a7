// Receive WQE prefetch (TransportConfig::rq_prefetch, scenario key hca.rq_prefetch): receive WQEs
// are read when they are posted, so an arriving SEND finds its WQE cached and its RECV CQE follows
// the packet within a few dozen cycles, where an on-demand fetch would add a PCIe read round trip
// (about 262 cycles with the default link: test_tlm).
#include "testbench/test_support.h"

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.hosts = 2;
  cfg.hca.transport.rq_prefetch = true;
  cfg.driver.rq_doorbell_mmio = true;  // the device learns of posted receives from the doorbell
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

TEST_CASE("receive WQEs are fetched when posted: a SEND needs no read to land, its RECV CQE follows the packet closely") {
  sys().run([] {
    auto [a, b] = rc_pair();
    const TransportStats& rx = sys().node(1).hca.transport.stats();
    for (int i = 0; i < 3; ++i) fb::post_recv(*b.qp, RecvWr{uint64_t(i), {b.buf.sge(uint64_t(i) * 256, 256)}});
    wait_us(3);
    const uint64_t fetched_ahead = rx.rq_fetches;
    CHECK(fetched_ahead >= 1);  // from the doorbells (the first, then the rest when it completes), before any message
    uint64_t sent = 0;
    uint32_t bytes = 0;
    sys().node(0).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) {
      if (p.op != IbOp::ack && !sent) sent = c, bytes = p.wire_bytes();
    });
    fb::post_send(*a.qp, send_wr(7, a.buf.sge(0, 64)));
    auto rwc = poll_n(*b.rcq, 1);
    REQUIRE(rwc.size() == 1);
    CHECK(rwc[0].status == 0);
    CHECK(rwc[0].wr_id == 0);
    CHECK(rx.rq_fetches == fetched_ahead);  // the SEND took a cached WQE: no read on its path
    const SimClock& c1 = sys().node(1).hca.clock;
    const uint64_t arrives = c1.cycle_at_or_after(sys().node(0).hca.clock.at(sent) + sys().ib.wire_time(bytes) +
                                                  sys().ib.config().latency);
    INFO("packet at host 1 on cycle " << arrives << ", RECV CQE on " << rwc[0].timestamp);
    CHECK(rwc[0].timestamp > arrives);
    CHECK(rwc[0].timestamp < arrives + 100);
    // Using WQEs refills the cache: post more, consume them all, every SEND still finds one.
    for (int i = 3; i < 12; ++i) fb::post_recv(*b.qp, RecvWr{uint64_t(i), {b.buf.sge(uint64_t(i % 8) * 256, 256)}});
    for (int i = 0; i < 11; ++i) fb::post_send(*a.qp, send_wr(uint64_t(10 + i), a.buf.sge(0, 64)));
    auto more = poll_n(*b.rcq, 11);
    REQUIRE(more.size() == 11);
    for (size_t i = 0; i < more.size(); ++i) CHECK(more[i].wr_id == i + 1);
    CHECK(sys().node(1).hca.transport.stats().rnr_naks_sent == 0);
  });
}
