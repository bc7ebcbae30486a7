// More than two HCAs: four hosts, each HCA cabled to a port of one IB switch that routes by the
// destination LID (node i's HCA has LID i + 1). The switch is cut-through and lossless (S27): a
// packet reaches the HCA its QP's remote LID names, on the cycle a point-to-point link of the same
// total latency would deliver it; two senders to one HCA take turns on its cable; a full HCA holds
// the switch, which holds the senders, and nothing is dropped; a LID no port has is dropped and
// counted, and RC's retries turn it into an error completion.
#include "testbench/test_support.h"

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.hosts = 4;
  cfg.ib_switch.buffer_packets = 2;
  // Every port buffers two packets and checks each in 1,000 cycles (2 us): a receiver slower than
  // the wire, so that senders fill it.
  cfg.hca.transport.rx_fifo_depth = 2;
  cfg.hca.transport.rx_packet_cycles = 1000;
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

namespace {
uint16_t lid_of(uint32_t host) { return uint16_t(host + 1); }

void boot_all() {
  static bool booted = false;
  if (booted) return;
  for (uint32_t h = 0; h < sys().hosts(); ++h) {
    CommandResult r = sys().node(h).driver.boot();
    INFO(r.message());
    REQUIRE(r.ok());
  }
  booted = true;
}

// An RC pair between two hosts, connected through the switch by their LIDs.
std::pair<Side, Side> pair_between(uint32_t ha, uint32_t hb, const fb::RcParams& p = {}, uint16_t lid_b = 0) {
  boot_all();
  Side a = make_side(ha, 1 << 16), b = make_side(hb, 1 << 16);
  fb::connect_rc(*a.qp, *b.qp, p, lid_of(ha), lid_b ? lid_b : lid_of(hb));
  return {a, b};
}

// Records the packets a host's HCA sends (cycle, wire bytes) while in scope.
class SentBy {
 public:
  explicit SentBy(uint32_t host) : host_(host) {
    id_ = sys().node(host).hca.transport.on_packet_sent.add([this](const IbPacket& p, uint64_t c) { sent.push_back({c, p.wire_bytes()}); });
  }
  ~SentBy() { sys().node(host_).hca.transport.on_packet_sent.remove(id_); }
  SentBy(const SentBy&) = delete;
  SentBy& operator=(const SentBy&) = delete;
  std::vector<std::pair<uint64_t, uint32_t>> sent;

 private:
  uint32_t host_;
  size_t id_ = 0;
};

sc_core::sc_time cable_latency() { return (sys().cfg.ib.latency - sys().cfg.ib_switch.latency) / 2; }

struct Seen {
  sc_core::sc_time at;
  uint32_t bytes = 0;
  IbOp op = IbOp::ack;
};

// Times packets start out of switch ports, and arrive whole at the HCAs (side 1 of each cable
// sends towards its HCA).
struct Watch {
  std::vector<std::vector<Seen>> forwarded, arrived;
  Watch() : forwarded(sys().hosts()), arrived(sys().hosts()) {
    forward_id_ = sys().ib_switch()->on_forward.add([this](uint32_t out, const IbPacket& p) {
      forwarded[out].push_back({sc_core::sc_time_stamp(), p.wire_bytes(), p.op});
    });
    for (uint32_t h = 0; h < sys().hosts(); ++h)
      arrival_ids_.push_back(sys().cable(h).on_arrival.add([this, h](uint32_t side, const IbPacket& p) {
        if (side == 1) arrived[h].push_back({sc_core::sc_time_stamp(), p.wire_bytes(), p.op});
      }));
  }
  ~Watch() {
    sys().ib_switch()->on_forward.remove(forward_id_);
    for (uint32_t h = 0; h < sys().hosts(); ++h) sys().cable(h).on_arrival.remove(arrival_ids_[h]);
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  size_t forward_id_ = 0;
  std::vector<size_t> arrival_ids_;
};

// One signaled SEND of `len` bytes from host `from` to host `to` over a new RC pair, completed at
// both ends: when its packet left `from` and its time on the wire.
struct OneSend {
  sc_core::sc_time left, wire;
};
OneSend send_one(uint32_t from, uint32_t to, uint32_t len) {
  auto [a, b] = pair_between(from, to);
  fb::post_recv(*b.qp, RecvWr{1, {b.buf.sge(0, len)}});
  wait_us(2);
  SentBy out(from);
  fb::post_send(*a.qp, send_wr(7, a.buf.sge(0, len)));
  REQUIRE(poll_n(*b.rcq, 1).size() == 1);
  auto swc = poll_n(*a.scq, 1);
  REQUIRE(swc.size() == 1);
  CHECK(swc[0].status == 0);
  REQUIRE(out.sent.size() == 1);
  return {sys().node(from).hca.clock.at(out.sent[0].first), sys().cable(from).wire_time(out.sent[0].second)};
}
}  // namespace

TEST_CASE("[S27] through the switch a SEND reaches the HCA its QP's remote LID names, when a link of the same latency would deliver it") {
  sys().run([] {
    Watch w;
    const OneSend one = send_one(0, 2, 64);
    // Cut-through: the header is switched 300 ns after it came in, and the 64-byte packet is
    // shorter on the wire than that; the far cable adds its 50 ns after the wire time.
    REQUIRE(w.forwarded[2].size() == 1);
    CHECK(w.forwarded[2][0].at == one.left + cable_latency() + sys().cfg.ib_switch.latency);
    REQUIRE(w.arrived[2].size() == 1);
    CHECK(w.arrived[2][0].at == one.left + one.wire + sys().cfg.ib.latency);
    // The ACK went back out of port 0; hosts 1 and 3 saw nothing.
    REQUIRE(w.forwarded[0].size() == 1);
    CHECK(w.forwarded[0][0].op == IbOp::ack);
    CHECK(w.forwarded[1].empty());
    CHECK(w.forwarded[3].empty());
    CHECK(sys().ib_switch()->stats(0).unroutable == 0);
  });
}

TEST_CASE("[S27] a packet longer on the wire than the switch's latency leaves the switch when it has arrived whole") {
  sys().run([] {
    Watch w;
    const OneSend one = send_one(1, 3, 4096);
    const sc_core::sc_time left = one.left, wire = one.wire;
    REQUIRE(wire > sys().cfg.ib_switch.latency);  // ~332 ns at 100 Gb/s
    REQUIRE(w.forwarded[3].size() == 1);
    CHECK(w.forwarded[3][0].at == left + wire + cable_latency());
    REQUIRE(w.arrived[3].size() == 1);
    CHECK(w.arrived[3][0].at == left + wire + cable_latency() + wire + cable_latency());
  });
}

TEST_CASE("[S27] two senders to one HCA take turns on its cable, in the order their packets reached the switch") {
  sys().run([] {
    auto [a0, b0] = pair_between(0, 2);
    auto [a1, b1] = pair_between(1, 2);
    fb::post_recv(*b0.qp, RecvWr{1, {b0.buf.sge(0, 4096)}});
    fb::post_recv(*b1.qp, RecvWr{2, {b1.buf.sge(0, 4096)}});
    wait_us(2);
    Watch w;
    fb::post_send(*a0.qp, send_wr(1, a0.buf.sge(0, 4096)));
    fb::post_send(*a1.qp, send_wr(2, a1.buf.sge(0, 4096)));
    REQUIRE(poll_n(*b0.rcq, 1).size() == 1);
    REQUIRE(poll_n(*b1.rcq, 1).size() == 1);
    REQUIRE(w.forwarded[2].size() == 2);
    REQUIRE(w.arrived[2].size() == 2);
    const Seen& f0 = w.forwarded[2][0];
    const Seen& f1 = w.forwarded[2][1];
    // Host 1 posted after host 0, so its packet came second. Both were handed to host 2's cable
    // less than a wire time apart: the second starts on the wire when the first has left it.
    REQUIRE(f1.at < f0.at + sys().cable(2).wire_time(f0.bytes));
    const sc_core::sc_time wire0 = sys().cable(2).wire_time(f0.bytes), wire1 = sys().cable(2).wire_time(f1.bytes);
    CHECK(w.arrived[2][0].at == f0.at + wire0 + cable_latency());
    CHECK(w.arrived[2][1].at == f0.at + wire0 + wire1 + cable_latency());
  });
}

TEST_CASE("[S27] a full HCA holds the switch, and the switch's full inputs hold the senders: nothing is dropped") {
  sys().run([] {
    // Host 3's port checks a packet in 1,000 cycles and buffers two: sixteen SENDs from two
    // hosts back up into the switch (two packets per input) and then into both senders.
    auto [a0, b0] = pair_between(0, 3);
    auto [a1, b1] = pair_between(1, 3);
    for (int i = 0; i < 8; ++i) {
      fb::post_recv(*b0.qp, RecvWr{uint64_t(i), {b0.buf.sge(uint64_t(i) * 256, 256)}});
      fb::post_recv(*b1.qp, RecvWr{uint64_t(i), {b1.buf.sge(uint64_t(i) * 256, 256)}});
    }
    wait_us(2);
    const uint64_t stalls0 = sys().ib_switch()->stats(3).credit_stalls;
    const uint64_t refusals0 = sys().cable(0).credit_stats(0).refusals + sys().cable(1).credit_stats(0).refusals;
    for (int i = 0; i < 8; ++i) {
      fb::post_send(*a0.qp, send_wr(uint64_t(i), a0.buf.sge(0, 64)));
      fb::post_send(*a1.qp, send_wr(uint64_t(i), a1.buf.sge(0, 64)));
    }
    CHECK(poll_n(*b0.rcq, 8, 500).size() == 8);
    CHECK(poll_n(*b1.rcq, 8, 500).size() == 8);
    for (Side* s : {&a0, &a1}) {
      auto swc = poll_n(*s->scq, 8, 500);
      REQUIRE(swc.size() == 8);
      for (const Wc& wc : swc) CHECK(wc.status == 0);
    }
    CHECK(sys().ib_switch()->stats(3).credit_stalls > stalls0);
    CHECK(sys().cable(0).credit_stats(0).refusals + sys().cable(1).credit_stats(0).refusals > refusals0);
    CHECK(sys().ib_switch()->stats(3).max_queued >= 2);
    for (uint32_t h = 0; h < 4; ++h) {
      CHECK(sys().cable(h).stats(0).dropped + sys().cable(h).stats(1).dropped == 0);
      CHECK(sys().cable(h).credit_stats(0).overdrafts + sys().cable(h).credit_stats(1).overdrafts == 0);
      CHECK(sys().node(h).hca.transport.stats().rx_fifo_drops == 0);
      CHECK(sys().node(h).hca.transport.stats().retransmits == 0);
    }
  });
}

TEST_CASE("[S19] a packet for a LID no switch port has is dropped and counted, and RC's retries end in an error completion") {
  sys().run([] {
    fb::RcParams p;
    p.timeout = 2;  // 16.384 us
    p.retry_cnt = 2;
    auto [a, b] = pair_between(2, 0, p, /*lid_b=*/9);
    const uint64_t before = sys().ib_switch()->stats(2).unroutable;
    fb::post_send(*a.qp, send_wr(0xBAD, a.buf.sge(0, 64)));
    auto s = poll_n(*a.scq, 1, 1000);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wr_id == 0xBAD);
    CHECK(s[0].status == syndrome::kRetryExceeded);
    CHECK(sys().ib_switch()->stats(2).unroutable - before == 1 + 2);  // the first try and two retries
    CHECK(poll_n(*b.rcq, 1, 1).empty());
  });
}
