// BlueFlame (UAR_SQ_BF, DriverConfig::blueflame): a post_send of one inline WR writes its whole
// WQE through the doorbell page, and the device takes it from the doorbell without reading the
// ring; a WQE that is not the QP's next one is not taken, and the ring is read as for UAR_SQ_DB.
#include "testbench/test_support.h"

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.hosts = 2;
  cfg.driver.blueflame = true;
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

namespace {
// The first request packet host 0 sends after now, and the doorbell it came from (cycles).
struct FirstPacket {
  uint64_t doorbell = 0, sent = 0;
  bool had_wqe = false;
  void watch() {
    TransportEngine& t = sys().node(0).hca.transport;
    t.on_doorbell.add([this](const WqDoorbell& db, uint64_t c) {
      if (!doorbell) doorbell = c, had_wqe = db.has_wqe;
    });
    t.on_packet_sent.add([this](const IbPacket& p, uint64_t c) {
      if (p.op != IbOp::ack && !sent) sent = c;
    });
  }
};
}  // namespace

TEST_CASE("a single inline SEND goes through BlueFlame: no WQE read, the packet leaves a fixed number of cycles after the doorbell") {
  sys().run([] {
    auto [a, b] = rc_pair();
    const TransportStats& tx = sys().node(0).hca.transport.stats();
    fb::post_recv(*b.qp, RecvWr{1, {b.buf.sge(0, 256)}});
    fb::fill(*a.dev, a.buf.addr, 48, 5);
    FirstPacket first;
    first.watch();
    const uint64_t fetches = tx.wqe_fetches;
    fb::post_send(*a.qp, send_wr(7, a.buf.sge(0, 48), sqwqe::kSend, kSendSignaled | kSendInline));
    auto wc = poll_n(*b.rcq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == 0);
    CHECK(wc[0].byte_len == 48);
    CHECK(fb::read(*b.dev, b.buf.addr, 48) == fb::read(*a.dev, a.buf.addr, 48));
    auto swc = poll_n(*a.scq, 1);
    REQUIRE(swc.size() == 1);
    CHECK(swc[0].wr_id == 7);
    CHECK(first.had_wqe);
    CHECK(tx.bf_wqes == 1);
    CHECK(tx.bf_fallbacks == 0);
    CHECK(tx.wqe_fetches == fetches);  // the WQE came with the doorbell
    // Taken on cycle d and delivered to the requester on d; the transmit arbiter builds the packet
    // on the same edge with no payload read (inline) and sends it tx_packet_cycles (4) later:
    // d + 4 (docs/transport.md). The fetch path would add a PCIe read round trip (~262 cycles).
    INFO("doorbell on cycle " << first.doorbell << ", packet on " << first.sent);
    CHECK(first.sent == first.doorbell + sys().node(0).hca.config().transport.tx_packet_cycles);
  });
}

TEST_CASE("a zero-byte inline SEND gathers nothing: its SGE's address is never read, even one no memory is at") {
  sys().run([] {
    auto [a, b] = rc_pair();
    fb::post_recv(*b.qp, RecvWr{1, {b.buf.sge(0, 256)}});
    // Address 0 is mapped to nothing: the host's copy of zero bytes from it must not touch memory
    // (shown to fail when HostCpu::read asks DMI for the address of a zero-length read).
    REQUIRE(verbs::post_send(*a.qp, {send_wr(8, Sge{0, 0, a.buf.mr->lkey}, sqwqe::kSend, kSendSignaled | kSendInline)}) == 0);
    auto wc = poll_n(*b.rcq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == 0);
    CHECK(wc[0].byte_len == 0);
    auto swc = poll_n(*a.scq, 1);
    REQUIRE(swc.size() == 1);
    CHECK(swc[0].wr_id == 8);
    CHECK(swc[0].status == 0);
  });
}

TEST_CASE("without inline data, or with two WRs in one post, the doorbell is the 8-byte UAR_SQ_DB and the ring is read") {
  sys().run([] {
    auto [a, b] = rc_pair();
    const TransportStats& tx = sys().node(0).hca.transport.stats();
    for (int i = 0; i < 3; ++i) fb::post_recv(*b.qp, RecvWr{uint64_t(i), {b.buf.sge(uint64_t(i) * 256, 256)}});
    const uint64_t fetches = tx.wqe_fetches;
    fb::post_send(*a.qp, send_wr(1, a.buf.sge(0, 48)));  // not inline
    REQUIRE(poll_n(*a.scq, 1).size() == 1);
    CHECK(tx.wqe_fetches == fetches + 1);
    REQUIRE(verbs::post_send(*a.qp, {send_wr(2, a.buf.sge(0, 8), sqwqe::kSend, kSendSignaled | kSendInline),
                                     send_wr(3, a.buf.sge(0, 8), sqwqe::kSend, kSendSignaled | kSendInline)}) == 0);
    REQUIRE(poll_n(*a.scq, 2).size() == 2);
    CHECK(tx.wqe_fetches == fetches + 2);
    CHECK(tx.bf_wqes == 0);
    CHECK(tx.bf_fallbacks == 0);
    CHECK(poll_n(*b.rcq, 3).size() == 3);
  });
}

TEST_CASE("a BlueFlame WQE that is not the QP's next one is not taken: the ring is read and order is kept") {
  sys().run([] {
    auto [a, b] = rc_pair();
    const TransportStats& tx = sys().node(0).hca.transport.stats();
    for (int i = 0; i < 2; ++i) fb::post_recv(*b.qp, RecvWr{uint64_t(i), {b.buf.sge(uint64_t(i) * 256, 256)}});
    // WQE 0 by the 8-byte doorbell; WQE 1 through BlueFlame while WQE 0's read is in flight.
    fb::post_send(*a.qp, send_wr(10, a.buf.sge(0, 48)));
    fb::post_send(*a.qp, send_wr(11, a.buf.sge(0, 16), sqwqe::kSend, kSendSignaled | kSendInline));
    auto swc = poll_n(*a.scq, 2);
    REQUIRE(swc.size() == 2);
    CHECK(swc[0].wr_id == 10);
    CHECK(swc[1].wr_id == 11);
    CHECK(tx.bf_wqes == 0);
    CHECK(tx.bf_fallbacks == 1);
    auto rwc = poll_n(*b.rcq, 2);
    REQUIRE(rwc.size() == 2);
    CHECK(rwc[0].byte_len == 48);
    CHECK(rwc[1].byte_len == 16);
  });
}

TEST_CASE("UAR_SQ_BF takes only a whole WQE: an 8-byte write is refused and counted") {
  sys().run([] {
    for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
    HostCpu& cpu = sys().node(0).cpu;
    const uint64_t bad = sys().node(0).hca.bar0.regs.error_count();
    cpu.mmio_write64(Driver::offset_of(reg::sq_bf, 0), 1);  // posted: the error is the device's to count
    wait_us(1);
    CHECK(sys().node(0).hca.bar0.regs.error_count() == bad + 1);
    CHECK(sys().node(0).hca.transport.stats().doorbells == 0);
  });
}
