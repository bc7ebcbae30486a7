// An ACK acknowledges executed requests (IBA: the responder acknowledges a request once it has
// carried it out): the responder's ACK for an RDMA WRITE leaves only after the payload writes of
// the packets it covers have been issued to the host's PCIe link. With upstream data credits for
// one 4 KiB write at a time, a 16 KiB WRITE's four payload writes are issued one credit loop
// apart, long after the ACK's coalescing timer (64 cycles) has expired: the ACK is held at the
// port until the last of them is issued.
#include "testbench/test_support.h"

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.hosts = 2;
  cfg.link.up_posted_data = 256;  // 4 KiB of posted data in flight per HCA
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

TEST_CASE("an RDMA WRITE's ACK leaves only once its payload writes have been issued to PCIe, and its data is in memory when the requester sees the completion") {
  sys().run([] {
    auto [a, b] = rc_pair();
    Hca& responder = sys().node(1).hca;
    fb::fill(*a.dev, a.buf.addr, 16384, 3);
    uint64_t ack_cycle = 0, writes_at_ack = 0;
    responder.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) {
      if (p.op == IbOp::ack && !ack_cycle) ack_cycle = c, writes_at_ack = responder.dma.writes_issued();
    });
    const uint64_t writes_before = responder.dma.writes_issued();
    const uint64_t holds = responder.transport.stats().ack_placement_holds;
    fb::post_send(*a.qp, remote_wr(1, a.buf.sge(0, 16384), sqwqe::kRdmaWrite, b.buf));
    auto wc = poll_n(*a.scq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == 0);
    INFO("ACK on cycle " << ack_cycle << " with " << writes_at_ack - writes_before << " payload writes issued");
    CHECK(responder.transport.stats().ack_placement_holds == holds + 1);
    CHECK(writes_at_ack - writes_before >= 4);  // the four 4 KiB payload writes
    CHECK(fb::read(*b.dev, b.buf.addr, 16384) == fb::read(*a.dev, a.buf.addr, 16384));
  });
}
