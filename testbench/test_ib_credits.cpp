// S27: the IB link is lossless. Host 1's port buffers only two packets and takes 1,000 cycles to
// check each, so host 0's sender must stop when the buffer is full and go on, on the exact edge
// its credit comes back, with nothing dropped.
#include "testbench/test_support.h"

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.hosts = 2;
  cfg.hca.transport.rx_fifo_depth = 2;
  cfg.hca.transport.rx_packet_cycles = 1000;
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

namespace {
uint64_t ps(const sc_core::sc_time& t) { return t.value(); }
}  // namespace

TEST_CASE("[S27] a full receive buffer holds the sender: the third packet leaves on the edge the first one's credit returns") {
  sys().run([] {
    auto [a, b] = rc_pair();
    std::vector<uint64_t> sent;  // cycles host 0's data packets left
    std::vector<uint32_t> sizes;
    sys().node(0).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) {
      if (p.op != IbOp::ack) sent.push_back(c), sizes.push_back(p.wire_bytes());
    });
    for (int i = 0; i < 4; ++i) fb::post_recv(*b.qp, RecvWr{uint64_t(i), {b.buf.sge(uint64_t(i) * 256, 256)}});
    wait_us(2);
    for (int i = 0; i < 4; ++i) fb::post_send(*a.qp, send_wr(uint64_t(i), a.buf.sge(uint64_t(i) * 256, 64)));
    auto rwc = poll_n(*b.rcq, 4);
    auto swc = poll_n(*a.scq, 4);
    REQUIRE(rwc.size() == 4);
    REQUIRE(swc.size() == 4);
    for (const Wc& wc : swc) CHECK(wc.status == 0);
    REQUIRE(sent.size() == 4);
    const SimClock& clock0 = sys().node(0).hca.clock;
    const SimClock& clock1 = sys().node(1).hca.clock;
    const sc_core::sc_time latency = sys().ib.config().latency;
    // Packet 1 reaches host 1's port after its wire time and the latency; the port, idle, takes it
    // out of its buffer on the next edge; the credit travels back one latency.
    const sc_core::sc_time arrival1 = clock0.at(sent[0]) + sys().ib.wire_time(sizes[0]) + latency;
    const uint64_t taken1 = clock1.cycle_at_or_after(arrival1);
    const sc_core::sc_time credit_back = clock1.at(taken1) + latency;
    CHECK(sent[2] == clock0.cycle_at_or_after(credit_back));
    // Packet 4 waits for packet 2's credit, which returns only once host 1 has checked packet 1
    // (1,000 cycles) and taken packet 2 out of its buffer.
    CHECK(ps(clock0.at(sent[3])) >= ps(clock1.at(taken1 + 1000)) + ps(latency));
    const IbLink::CreditStats cs = sys().ib.credit_stats(0);
    CHECK(cs.advertised == 2);
    CHECK(cs.max_in_use == 2);
    CHECK(cs.refusals > 0);
    CHECK(cs.overdrafts == 0);
    CHECK(sys().node(0).hca.transport.stats().tx_credit_stalls > 0);
    CHECK(sys().node(1).hca.transport.stats().rx_fifo_drops == 0);
    CHECK(sys().node(0).hca.transport.stats().retransmits == 0);
  });
}

TEST_CASE("[S27] what the credits prevent: a port that advertises more than its buffer holds drops packets") {
  sys().run([] {
    auto [a, b] = rc_pair();
    for (int i = 0; i < 8; ++i) fb::post_recv(*b.qp, RecvWr{uint64_t(i), {b.buf.sge(uint64_t(i) * 256, 256)}});
    wait_us(2);
    // The link's flow control, told the far port has a buffer of 100 packets: the sender sends
    // without stopping and host 1's two-packet FIFO overflows.
    sys().ib.rx_flow(1)->advertise(100);
    for (int i = 0; i < 8; ++i) fb::post_send(*a.qp, send_wr(uint64_t(i), a.buf.sge(uint64_t(i) * 256, 64)));
    wait_us(200);
    CHECK(sys().node(1).hca.transport.stats().rx_fifo_drops > 0);
    CHECK(sys().node(0).hca.transport.stats().tx_credit_stalls == 0);
  });
}
