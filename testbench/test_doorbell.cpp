// One HCA with its port looped back: the doorbell unit (a finite FIFO whose backpressure holds
// MMIO writes in the PCIe link), bad doorbells, loopback RC traffic and GSI (QP1) receives.
// The doorbell unit here is slowed to 200 cycles a doorbell with a 2-deep FIFO, so that a burst
// of doorbells fills it.
#include "testbench/test_support.h"

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.hosts = 1;
  cfg.hca.transport.doorbell_fifo_depth = 2;
  cfg.hca.transport.doorbell_cycles = 200;
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

namespace {
constexpr uint32_t kDoorbellCycles = 200;

// Two RC QPs on the one HCA, connected to each other through the loopback.
std::pair<Side, Side> loopback_pair(uint64_t len = 1 << 20) {
  Side a = make_side(0, len), b = make_side(0, len);
  fb::connect_rc(*a.qp, *b.qp);
  return {a, b};
}
}  // namespace

TEST_CASE("doorbell FIFO backpressure: a full FIFO holds the MMIO writes in the link, none is lost, each is taken in turn") {
  sys().run([] {
    boot();
    std::vector<std::pair<Side, Side>> pairs;
    for (int i = 0; i < 3; ++i) pairs.push_back(loopback_pair(1 << 16));
    std::vector<std::pair<uint32_t, uint64_t>> taken;  // (QPN, cycle)
    sys().hca.transport.on_doorbell.add([&](const WqDoorbell& d, uint64_t c) { taken.push_back({d.qpn, c}); });
    std::vector<uint32_t> posted;
    for (auto& [a, b] : pairs)
      for (Side* s : {&a, &b}) {
        fb::post_recv(*(s == &a ? b : a).qp, RecvWr{1, {(s == &a ? b : a).buf.sge(0, 64)}});
        fb::post_send(*s->qp, send_wr(s->qp->qpn, s->buf.sge(0, 64)));
        posted.push_back(s->qp->qpn);
      }
    // An MMIO read may not pass the held doorbell writes: it reaches the device only after the
    // last of them entered the FIFO, which needed the one three from the end to leave it.
    uint32_t version = 0;
    REQUIRE(sys().cpu.mmio_read32(Driver::offset_of(reg::version), version));
    const uint64_t read_done = sys().cycle();
    CHECK(version == kDeviceVersion);
    wait_us(5);
    REQUIRE(taken.size() == posted.size());
    CHECK(read_done > taken[taken.size() - 3].second);
    for (size_t i = 0; i < taken.size(); ++i) CHECK(taken[i].first == posted[i]);  // FIFO order, none lost
    // Back to back once the FIFO filled: exactly one doorbell every kDoorbellCycles.
    for (size_t i = 2; i < taken.size(); ++i) CHECK(taken[i].second - taken[i - 1].second == kDoorbellCycles);
    CHECK(sys().link.down_stalls() > 0);
    for (auto& [a, b] : pairs) {
      CHECK(poll_n(*a.scq, 1).size() == 1);
      CHECK(poll_n(*b.scq, 1).size() == 1);
    }
  });
}

TEST_CASE("bad SQ doorbells are counted with their reason: unknown QP, QP in RESET, producer counter past the ring") {
  sys().run([] {
    boot();
    Side a = make_side(0, 4096, QpType::rc, 8);
    auto ring = [&](uint32_t qpn, uint16_t pi) {
      sys().cpu.mmio_write64(Driver::offset_of(reg::sq_db), with_bits(with_bits(0, wqdb::qpn, qpn), wqdb::pi, pi));
      wait_us(2);
    };
    ring(0x777, 1);
    CHECK(sys().driver.read_register(reg::bad_doorbells) == 1);
    CHECK(sys().driver.read_register(reg::last_bad_doorbell) == (1u << 24 | 0x777));
    ring(a.qp->qpn, 1);
    CHECK(sys().driver.read_register(reg::last_bad_doorbell) == (6u << 24 | a.qp->qpn));
    fb::connect_rc(*a.qp, *make_side(0, 4096).qp);
    ring(a.qp->qpn, 9);  // 9 WQEs in an 8-deep ring
    CHECK(sys().driver.read_register(reg::bad_doorbells) == 3);
    CHECK(sys().driver.read_register(reg::last_bad_doorbell) == (3u << 24 | a.qp->qpn));
  });
}

TEST_CASE("loopback: an RC pair on one HCA moves SEND, WRITE and READ data through its own port") {
  sys().run([] {
    boot();
    auto [a, b] = loopback_pair();
    fb::fill(*a.dev, a.buf.addr, 20000, 21);
    fb::post_recv(*b.qp, RecvWr{7, {b.buf.sge(0, 20000)}});
    fb::post_send(*a.qp, send_wr(1, a.buf.sge(0, 20000)));
    SendWr w = remote_wr(2, a.buf.sge(0, 5000), sqwqe::kRdmaWrite, b.buf, 100000);
    fb::post_send(*a.qp, w);
    SendWr r = remote_wr(3, a.buf.sge(200000, 5000), sqwqe::kRdmaRead, b.buf, 100000);
    fb::post_send(*a.qp, r);
    auto s = poll_n(*a.scq, 3);
    REQUIRE(s.size() == 3);
    for (int i = 0; i < 3; ++i) CHECK(s[i].status == 0);
    REQUIRE(poll_n(*b.rcq, 1).size() == 1);
    CHECK(fb::read(*b.dev, b.buf.addr, 20000) == fb::read(*a.dev, a.buf.addr, 20000));
    // The READ follows the WRITE on the same QP, so it returns what the WRITE put there.
    CHECK(fb::read(*a.dev, a.buf.addr + 200000, 5000) == fb::read(*a.dev, a.buf.addr, 5000));
    CHECK(sys().ib.stats(0).packets > 0);
  });
}

TEST_CASE("[S16][S25] GSI QP1: a MAD-style UD SEND to QP1 reports the P_Key index in the receive CQE") {
  sys().run([] {
    boot();
    Pd* pd = fb::alloc_pd(sys().driver);
    Cq* cq = fb::create_cq(sys().driver, 64);
    Qp* gsi = fb::create_qp(*pd, cq, cq, QpType::gsi, 8);
    REQUIRE(gsi->qpn == 1);
    fb::Buffer buf = fb::reg_buffer(*pd, 8192);
    QpAttr a;
    a.cur_state = QpState::reset;
    a.new_state = QpState::init;
    a.pkey_index = 3;
    a.qkey = 0x80010000;
    REQUIRE(verbs::modify_qp(*gsi, a) == 0);
    a = QpAttr{};
    a.cur_state = QpState::init;
    a.new_state = QpState::rtr;
    REQUIRE(verbs::modify_qp(*gsi, a) == 0);
    a.cur_state = QpState::rtr;
    a.new_state = QpState::rts;
    REQUIRE(verbs::modify_qp(*gsi, a) == 0);
    fb::post_recv(*gsi, RecvWr{0x11, {buf.sge(4096, 2048)}});
    SendWr w = send_wr(0x10, buf.sge(0, 256));
    w.remote_qpn = 1;
    w.remote_qkey = 0x80010000;
    w.dlid = 1;
    fb::post_send(*gsi, w);
    auto wc = poll_n(*cq, 2);
    REQUIRE(wc.size() == 2);
    const Wc& recv = wc[0].opcode == cqe::kRespSend ? wc[0] : wc[1];
    CHECK(recv.wr_id == 0x11);
    CHECK(recv.pkey_index == 3);
    CHECK(recv.src_qp == 1);
    CHECK(recv.byte_len == 256);
    CHECK(!recv.grh);
  });
}
