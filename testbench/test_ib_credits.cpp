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

// Host 0's data packets as they leave: each one's cycle and wire size.
struct SentPackets {
  std::vector<uint64_t> cycles;
  std::vector<uint32_t> sizes;
};

// Records host 0's data packets in `sent`, then posts `n` receives of 256 bytes on b and, 2 us
// later, `n` signaled 64-byte SENDs from a.
template <typename End>
void send_n(const End& a, const End& b, int n, SentPackets& sent) {
  sys().node(0).hca.transport.on_packet_sent.add([&sent](const IbPacket& p, uint64_t c) {
    if (p.op != IbOp::ack) sent.cycles.push_back(c), sent.sizes.push_back(p.wire_bytes());
  });
  for (int i = 0; i < n; ++i) fb::post_recv(*b.qp, RecvWr{uint64_t(i), {b.buf.sge(uint64_t(i) * 256, 256)}});
  wait_us(2);
  for (int i = 0; i < n; ++i) fb::post_send(*a.qp, send_wr(uint64_t(i), a.buf.sge(uint64_t(i) * 256, 64)));
}
}  // namespace

TEST_CASE("[S27] a full receive buffer holds the sender: the third packet leaves on the edge the first one's credit returns") {
  sys().run([] {
    auto [a, b] = rc_pair();
    SentPackets log;
    send_n(a, b, 4, log);
    const std::vector<uint64_t>& sent = log.cycles;
    const std::vector<uint32_t>& sizes = log.sizes;
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

// The receiver looks for its packets on the link (decisions.md 49): one that arrives while the port
// checks another waits on the wire, untaken, yet it is in the port's buffer as far as anything
// else is concerned. A link going down then hands it on before it drops what is still on the
// wire: it is received, not lost (without the hand-on it is dropped and the count shows it).
TEST_CASE("[S27] a packet that arrived while the port was busy is not lost when the link goes down before the port takes it") {
  sys().run([] {
    auto [a, b] = rc_pair();
    SentPackets log;
    send_n(a, b, 2, log);
    for (int i = 0; i < 1000 && log.cycles.size() < 2; ++i) wait_us(0.01);
    REQUIRE(log.cycles.size() == 2);
    const std::vector<uint64_t>& sent = log.cycles;
    const std::vector<uint32_t>& sizes = log.sizes;
    const SimClock& clock0 = sys().node(0).hca.clock;
    const SimClock& clock1 = sys().node(1).hca.clock;
    const sc_core::sc_time latency = sys().ib.config().latency;
    const sc_core::sc_time arrival1 = clock0.at(sent[0]) + sys().ib.wire_time(sizes[0]) + latency;
    const sc_core::sc_time arrival2 = clock0.at(sent[1]) + sys().ib.wire_time(sizes[1]) + latency;
    const uint64_t check1_ends = clock1.cycle_at_or_after(arrival1) + 1000;  // packet 1's check
    REQUIRE(arrival2 + sc_core::sc_time(10, sc_core::SC_NS) < clock1.at(check1_ends));
    sc_core::wait(arrival2 + sc_core::sc_time(10, sc_core::SC_NS) - sc_core::sc_time_stamp());
    const TransportStats& rx = sys().node(1).hca.transport.stats();
    CHECK(rx.arrivals_taken == 1);  // packet 2 has arrived and waits on the wire: the case met
    sys().ib.set_up(false);
    CHECK(sys().ib.stats(0).dropped == 0);  // packet 2 was handed on before the wire was cleared
    wait_us(10);
    sys().ib.set_up(true);
    auto rwc = poll_n(*b.rcq, 2);
    REQUIRE(rwc.size() == 2);
    for (const Wc& wc : rwc) CHECK(wc.status == 0);
    CHECK(rx.packets_received >= 2);
  });
}
