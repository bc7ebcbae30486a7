// Work requests end to end between two HCAs on one IB link: RC SEND / WRITE / READ / atomics,
// UD SEND with GRH, CQE contents and timing (S16-S18), ping-pong and streaming.
#include "testbench/test_support.h"

#include <map>

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) { cfg.hosts = 2; }
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S16][S18] RC SEND: the bytes arrive, RECV and SEND CQEs carry their fields, the SEND completes after its ACK") {
  sys().run([] {
    auto [a, b] = rc_pair();
    std::vector<std::pair<uint32_t, uint64_t>> acks;  // (psn, cycle) at host 0's HCA
    sys().node(0).hca.transport.on_ack_received.add([&](uint32_t, uint32_t psn, uint64_t c) { acks.push_back({psn, c}); });
    fb::fill(*a.dev, a.buf.addr, 1000, 1);
    fb::post_recv(*b.qp, RecvWr{0xB0, {b.buf.sge(0, 4096)}});
    SendWr w = send_wr(0xA0, a.buf.sge(0, 1000), sqwqe::kSendImm, kSendSignaled | kSendSolicited);
    w.imm = 0x12345678;
    fb::post_send(*a.qp, w);
    auto rwc = poll_n(*b.rcq, 1);
    auto swc = poll_n(*a.scq, 1);
    REQUIRE(rwc.size() == 1);
    REQUIRE(swc.size() == 1);
    CHECK(fb::read(*b.dev, b.buf.addr, 1000) == fb::read(*a.dev, a.buf.addr, 1000));
    CHECK(rwc[0].status == 0);
    CHECK(rwc[0].wr_id == 0xB0);
    CHECK(rwc[0].opcode == cqe::kRespSendImm);
    CHECK(rwc[0].byte_len == 1000);
    CHECK(rwc[0].imm_present);
    CHECK(rwc[0].imm == 0x12345678);
    CHECK(rwc[0].se);
    CHECK(rwc[0].qpn == b.qp->qpn);
    CHECK(swc[0].status == 0);
    CHECK(swc[0].wr_id == 0xA0);
    CHECK(swc[0].opcode == cqe::kReq);
    CHECK(swc[0].send_opcode == sqwqe::kSendImm);
    CHECK(swc[0].byte_len == 1000);
    CHECK(swc[0].qpn == a.qp->qpn);
    // S18: the requester's CQE is written no earlier than the ACK that covers it arrived.
    REQUIRE(acks.size() == 1);
    CHECK(acks[0].first == 0x100);
    CHECK(swc[0].timestamp >= acks[0].second);
    // ...and the receiver's CQE before the sender's (the ACK follows the placed data).
    CHECK(rwc[0].timestamp < swc[0].timestamp);
  });
}

TEST_CASE("[S18] RDMA WRITE makes no responder CQE, WRITE with immediate consumes a receive WQE") {
  sys().run([] {
    auto [a, b] = rc_pair();
    fb::fill(*a.dev, a.buf.addr, 10000, 2);
    SendWr w = remote_wr(1, a.buf.sge(0, 10000), sqwqe::kRdmaWrite, b.buf, 64);
    fb::post_send(*a.qp, w);
    auto swc = poll_n(*a.scq, 1);
    REQUIRE(swc.size() == 1);
    CHECK(swc[0].status == 0);
    CHECK(swc[0].send_opcode == sqwqe::kRdmaWrite);
    CHECK(fb::read(*b.dev, b.buf.addr + 64, 10000) == fb::read(*a.dev, a.buf.addr, 10000));
    CHECK(verbs::peek_cq(*b.rcq, 16) == 0);
    // With immediate: a receive WQE is consumed and its CQE says so.
    fb::post_recv(*b.qp, RecvWr{0xB1, {b.buf.sge(0, 16)}});
    SendWr wi = remote_wr(2, a.buf.sge(0, 300), sqwqe::kRdmaWriteImm, b.buf, 20000);
    wi.imm = 77;
    fb::post_send(*a.qp, wi);
    auto rwc = poll_n(*b.rcq, 1);
    REQUIRE(rwc.size() == 1);
    CHECK(rwc[0].wr_id == 0xB1);
    CHECK(rwc[0].opcode == cqe::kRespWriteImm);
    CHECK(rwc[0].byte_len == 300);
    CHECK(rwc[0].imm == 77);
    CHECK(fb::read(*b.dev, b.buf.addr + 20000, 300) == fb::read(*a.dev, a.buf.addr, 300));
    CHECK(poll_n(*a.scq, 1).size() == 1);
  });
}

TEST_CASE("[S18] RDMA READ completes once the response data is placed, atomics return the old value") {
  sys().run([] {
    auto [a, b] = rc_pair();
    fb::fill(*b.dev, b.buf.addr, 40000, 3);
    SendWr r = remote_wr(10, a.buf.sge(4096, 40000), sqwqe::kRdmaRead, b.buf);
    fb::post_send(*a.qp, r);
    // A WRITE right behind the READ: its ACK must not overtake the READ's responses (the
    // requester would take the READ for lost and ask again).
    SendWr w = remote_wr(13, a.buf.sge(0, 64), sqwqe::kRdmaWrite, b.buf, 0x10000);
    fb::post_send(*a.qp, w);
    auto wc = poll_n(*a.scq, 2);
    REQUIRE(wc.size() == 2);
    CHECK(wc[0].status == 0);
    CHECK(wc[0].send_opcode == sqwqe::kRdmaRead);
    CHECK(wc[0].byte_len == 40000);
    CHECK(wc[1].wr_id == 13);
    CHECK(sys().node(0).hca.transport.stats().retransmits == 0);
    CHECK(fb::read(*a.dev, a.buf.addr + 4096, 40000) == fb::read(*b.dev, b.buf.addr, 40000));
    CHECK(verbs::peek_cq(*b.rcq, 16) == 0);  // no responder CQE
    // The requester's outbox placed the READ's data and is never asked for ACK marks: it keeps
    // marks only for writes still in the DMA queue, not one per write ever handed on.
    const Outbox& box = sys().node(0).hca.transport.requester.outbox();
    INFO("marks " << box.issue_marks_held() << " of " << box.writes_handed() << " writes handed on");
    CHECK(box.writes_handed() >= 10);
    CHECK(box.issue_marks_held() <= 2);
    // Fetch-and-add, then compare-and-swap on a 64-bit little-endian counter.
    const uint64_t counter_off = 0x8000, counter = b.buf.addr + counter_off;
    uint64_t v = 40;
    b.dev->memory().write(counter, &v, 8);
    SendWr fa = remote_wr(11, a.buf.sge(0, 8), sqwqe::kAtomicFa, b.buf, counter_off);
    fa.compare_add = 2;
    fb::post_send(*a.qp, fa);
    SendWr cs = remote_wr(12, a.buf.sge(8, 8), sqwqe::kAtomicCs, b.buf, counter_off);
    cs.compare_add = 42;
    cs.swap = 1000;
    fb::post_send(*a.qp, cs);
    auto awc = poll_n(*a.scq, 2);
    REQUIRE(awc.size() == 2);
    CHECK(awc[0].wr_id == 11);
    CHECK(awc[1].wr_id == 12);
    uint64_t old_fa = 0, old_cs = 0, now = 0;
    a.dev->memory().read(a.buf.addr, &old_fa, 8);
    a.dev->memory().read(a.buf.addr + 8, &old_cs, 8);
    b.dev->memory().read(counter, &now, 8);
    CHECK(old_fa == 40);
    CHECK(old_cs == 42);
    CHECK(now == 1000);
  });
}

// A registered region whose addresses are the program's (vhca-sim serve: a verbs program's virtual
// addresses), translated by the device to the host memory that holds it (REG_MR access bit31 and
// in[6..7], docs/commands.md). The IOVA range is left unmapped in host memory, so any access that
// skipped the translation would be an address error and a failed WC.
TEST_CASE("an MR with a translation: SEND, RDMA WRITE, READ and atomics name it by its IOVA and reach the host pages behind it") {
  sys().run([] {
    auto [a, b] = rc_pair(4096);
    const uint64_t iova = 0x7F00'0000'0000ull, len = 64 * 1024;
    auto translated = [&](Side& s, uint64_t& pa) {
      pa = s.dev->memory().allocate(len);
      Mr* mr = nullptr;
      REQUIRE(verbs::reg_mr(*s.pd, iova, len, fb::kAllAccess, &mr, &pa) == 0);
      REQUIRE_FALSE(s.dev->memory().mapped(iova, 1));
      return fb::Buffer{iova, len, mr};
    };
    uint64_t pa_a = 0, pa_b = 0;
    const fb::Buffer va = translated(a, pa_a), vb = translated(b, pa_b);
    fb::fill(*a.dev, pa_a, 8192, 7);
    // SEND: gathered from a's pages, scattered into b's through the receive WQE's IOVA.
    fb::post_recv(*b.qp, RecvWr{1, {vb.sge(100, 4000)}});
    fb::post_send(*a.qp, send_wr(2, va.sge(0, 3000)));
    auto rwc = poll_n(*b.rcq, 1);
    REQUIRE(rwc.size() == 1);
    CHECK(rwc[0].status == 0);
    CHECK(rwc[0].byte_len == 3000);
    CHECK(fb::read(*b.dev, pa_b + 100, 3000) == fb::read(*a.dev, pa_a, 3000));
    // RDMA WRITE to b's IOVA + 8 KiB, then READ it back into a's IOVA + 32 KiB.
    fb::post_send(*a.qp, remote_wr(3, va.sge(0, 8192), sqwqe::kRdmaWrite, vb, 8192));
    fb::post_send(*a.qp, remote_wr(4, va.sge(32768, 8192), sqwqe::kRdmaRead, vb, 8192));
    // Fetch-and-add on a counter at b's IOVA + 60 KiB.
    uint64_t v = 5;
    b.dev->memory().write(pa_b + 61440, &v, 8);
    SendWr fa = remote_wr(5, va.sge(61440, 8), sqwqe::kAtomicFa, vb, 61440);
    fa.compare_add = 3;
    fb::post_send(*a.qp, fa);
    auto swc = poll_n(*a.scq, 4);
    REQUIRE(swc.size() == 4);
    for (const Wc& w : swc) CHECK(w.status == 0);
    CHECK(fb::read(*b.dev, pa_b + 8192, 8192) == fb::read(*a.dev, pa_a, 8192));
    CHECK(fb::read(*a.dev, pa_a + 32768, 8192) == fb::read(*a.dev, pa_a, 8192));
    uint64_t old = 0, now = 0;
    a.dev->memory().read(pa_a + 61440, &old, 8);
    b.dev->memory().read(pa_b + 61440, &now, 8);
    CHECK(old == 5);
    CHECK(now == 8);
    // The translation is checked like the region: a pa range that wraps is refused, naming in[7];
    // pa without the translation bit is a reserved field set.
    Mr* bad = nullptr;
    const uint64_t wraps = ~uint64_t(0) - 10;
    CHECK(verbs::reg_mr(*a.pd, iova, len, fb::kAllAccess, &bad, &wraps) == -EINVAL);
    CHECK(a.dev->last_error() == "reg_mr: BAD_PARAM: REG_MR in[7] pa_lo: out of range");
    CHECK(a.dev->exec(cmd::kRegMr, {a.pd->pdn, 0, 0x1000, 0, 4096, kAccessLocalWrite, 0, 0x2000}).status == cmd::kBadParam);
  });
}

namespace {
// Two UC QPs, one on each host, connected to each other (the RC pair's set-up with QP type UC).
std::pair<Side, Side> uc_pair() {
  for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
  Side a = make_side(0, 1 << 20, QpType::uc), b = make_side(1, 1 << 20, QpType::uc);
  fb::connect_rc(*a.qp, *b.qp);
  return {a, b};
}
}  // namespace

TEST_CASE("UC: a multi-packet SEND and RDMA WRITEs arrive, the sender completes each as its last packet leaves, no ACK or NAK is sent, READ and atomics are refused at post") {
  sys().run([] {
    auto [a, b] = uc_pair();
    std::vector<std::pair<IbOp, uint64_t>> sent;  // host 0's packets and the cycle each left
    sys().node(0).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) {
      CHECK(p.uc);
      CHECK_FALSE(p.ack_req);
      sent.push_back({p.op, c});
    });
    fb::fill(*a.dev, a.buf.addr, 10000, 4);
    fb::post_recv(*b.qp, RecvWr{0xB0, {b.buf.sge(0, 16384)}});
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 10000), sqwqe::kSendImm));
    auto rwc = poll_n(*b.rcq, 1);
    auto swc = poll_n(*a.scq, 1);
    REQUIRE(rwc.size() == 1);
    REQUIRE(swc.size() == 1);
    CHECK(rwc[0].status == 0);
    CHECK(rwc[0].opcode == cqe::kRespSendImm);
    CHECK(rwc[0].byte_len == 10000);
    CHECK(fb::read(*b.dev, b.buf.addr, 10000) == fb::read(*a.dev, a.buf.addr, 10000));
    CHECK(swc[0].status == 0);
    CHECK(swc[0].byte_len == 10000);
    // Three packets (MTU 4096); the SEND's CQE is written once the last has left, before the
    // receiver could have answered anything.
    REQUIRE(sent.size() == 3);
    CHECK(sent[0].first == IbOp::send_first);
    CHECK(sent[1].first == IbOp::send_middle);
    CHECK(sent[2].first == IbOp::send_last);
    CHECK(swc[0].timestamp > sent[2].second);
    CHECK(swc[0].timestamp < rwc[0].timestamp);
    // RDMA WRITE, and WRITE with immediate consuming a receive WQE.
    fb::post_send(*a.qp, remote_wr(0xA1, a.buf.sge(0, 6000), sqwqe::kRdmaWrite, b.buf, 0x10000));
    fb::post_recv(*b.qp, RecvWr{0xB1, {b.buf.sge(0, 16)}});
    SendWr wi = remote_wr(0xA2, a.buf.sge(0, 100), sqwqe::kRdmaWriteImm, b.buf, 0x20000);
    wi.imm = 5;
    fb::post_send(*a.qp, wi);
    REQUIRE(poll_n(*a.scq, 2).size() == 2);
    auto iwc = poll_n(*b.rcq, 1);
    REQUIRE(iwc.size() == 1);
    CHECK(iwc[0].opcode == cqe::kRespWriteImm);
    CHECK(iwc[0].imm == 5);
    CHECK(fb::read(*b.dev, b.buf.addr + 0x10000, 6000) == fb::read(*a.dev, a.buf.addr, 6000));
    CHECK(fb::read(*b.dev, b.buf.addr + 0x20000, 100) == fb::read(*a.dev, a.buf.addr, 100));
    const TransportStats& rs = sys().node(1).hca.transport.stats();
    CHECK(rs.acks_sent == 0);
    CHECK(rs.naks_sent == 0);
    CHECK(sys().node(0).hca.transport.stats().acks_received == 0);
    // Nothing comes back on UC: READ and atomics are refused when posted (S20).
    CHECK(verbs::post_send(*a.qp, {remote_wr(1, a.buf.sge(0, 8), sqwqe::kRdmaRead, b.buf)}) == -EINVAL);
    CHECK(verbs::post_send(*a.qp, {remote_wr(2, a.buf.sge(0, 8), sqwqe::kAtomicFa, b.buf)}) == -EINVAL);
  });
}

TEST_CASE("UC: a lost packet drops its message silently, the receive WQE takes the next message, and no packet is sent again") {
  sys().run([] {
    auto [a, b] = uc_pair();
    fb::post_recv(*b.qp, RecvWr{0xB0, {b.buf.sge(0, 16384)}});
    fb::fill(*a.dev, a.buf.addr, 12288, 9);
    // The middle packet of a three-packet SEND is lost on the wire (the second host 0 sends from now).
    sys().ib.set_faults(0, {LinkFault{LinkFault::Kind::drop, 0, 2}});
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 12288)));
    // The sender cannot know: its WQE completes successfully once the last packet leaves.
    auto swc = poll_n(*a.scq, 1);
    REQUIRE(swc.size() == 1);
    CHECK(swc[0].status == 0);
    wait_us(20);
    CHECK(verbs::peek_cq(*b.rcq, 4) == 0);  // no RECV CQE: the message was dropped
    const TransportStats& rs = sys().node(1).hca.transport.stats();
    CHECK(rs.uc_dropped == 2);  // the message in progress when the gap showed, then its last packet
    CHECK(rs.naks_sent == 0);
    CHECK(sys().node(0).hca.transport.stats().retransmits == 0);
    // The next message lands in the same receive WQE, whole.
    fb::post_send(*a.qp, send_wr(0xA1, a.buf.sge(0, 5000)));
    auto rwc = poll_n(*b.rcq, 1);
    REQUIRE(rwc.size() == 1);
    CHECK(rwc[0].wr_id == 0xB0);
    CHECK(rwc[0].status == 0);
    CHECK(rwc[0].byte_len == 5000);
    CHECK(fb::read(*b.dev, b.buf.addr, 5000) == fb::read(*a.dev, a.buf.addr, 5000));
    // A UC QP takes only UC packets: the transports do not mix (an RC packet is not for it).
    CHECK(a.qp->type == QpType::uc);
  });
}

TEST_CASE("SRQ: two RC QPs take receive WQEs from one shared queue in the order their messages arrive, an armed limit raises one event, a QP in error leaves the SRQ's WQEs to the other") {
  sys().run([] {
    for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
    Side a1 = make_side(0, 1 << 16), a2 = make_side(0, 1 << 16);
    Driver& dev = sys().node(1).driver;
    std::vector<AsyncEvent> events;
    dev.async_handler = [&](const AsyncEvent& e) { events.push_back(e); };
    Pd* pd = fb::alloc_pd(dev);
    Cq* cq = fb::create_cq(dev, 64);
    Srq* srq = nullptr;
    REQUIRE(verbs::create_srq(*pd, SrqInitAttr{8, 3}, &srq) == 0);  // 8 WQEs, armed at 3
    auto on_srq = [&] {
      Qp* qp = nullptr;
      QpInitAttr attr{QpType::rc, cq, cq, 16, 1};
      attr.srq = srq;
      REQUIRE(verbs::create_qp(*pd, attr, &qp) == 0);
      return qp;
    };
    Qp* b1 = on_srq();
    Qp* b2 = on_srq();
    fb::connect_rc(*a1.qp, *b1);
    fb::connect_rc(*a2.qp, *b2);
    const fb::Buffer buf = fb::reg_buffer(*pd, 1 << 16);
    for (uint32_t i = 0; i < 5; ++i) REQUIRE(verbs::post_srq_recv(*srq, {RecvWr{0x100 + i, {buf.sge(i * 4096, 4096)}}}) == 0);
    fb::fill(*a1.dev, a1.buf.addr, 3000, 1);
    fb::fill(*a2.dev, a2.buf.addr, 3000, 2);
    // Messages from a1, a2, a1: each takes the SRQ's next WQE, whichever QP it arrives on.
    fb::post_send(*a1.qp, send_wr(1, a1.buf.sge(0, 1000)));
    REQUIRE(poll_n(*cq, 1).size() == 1);
    fb::post_send(*a2.qp, send_wr(2, a2.buf.sge(0, 2000)));
    REQUIRE(poll_n(*cq, 1).size() == 1);
    CHECK(events.empty());  // 3 WQEs left: not below the limit
    fb::post_send(*a1.qp, send_wr(3, a1.buf.sge(0, 3000)));
    auto third = poll_n(*cq, 1);
    REQUIRE(third.size() == 1);
    CHECK(third[0].qpn == b1->qpn);
    CHECK(third[0].wr_id == 0x102);
    CHECK(third[0].wqe_counter == 2);
    CHECK(third[0].byte_len == 3000);
    CHECK(fb::read(dev, buf.addr + 2 * 4096, 3000) == fb::read(*a1.dev, a1.buf.addr, 3000));
    CHECK(fb::read(dev, buf.addr + 1 * 4096, 2000) == fb::read(*a2.dev, a2.buf.addr, 2000));
    // 2 WQEs left, below 3: one SRQ-limit event naming the SRQ, and the SRQ is disarmed.
    wait_us(5);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == eqe::kSrqLimit);
    CHECK(events[0].data == srq->srqn);
    uint16_t limit = 9;
    REQUIRE(verbs::query_srq(*srq, limit) == 0);
    CHECK(limit == 0);
    // b2 goes to ERR: it holds no WQE of the SRQ, so nothing of the SRQ is flushed; b1 still
    // receives into the SRQ's next WQE.
    REQUIRE(verbs::modify_qp(*b2, rts_to_error()) == 0);
    wait_us(5);
    CHECK(verbs::peek_cq(*cq, 8) == 0);
    fb::post_send(*a1.qp, send_wr(4, a1.buf.sge(0, 100)));
    auto fourth = poll_n(*cq, 1);
    REQUIRE(fourth.size() == 1);
    CHECK(fourth[0].status == 0);
    CHECK(fourth[0].qpn == b1->qpn);
    CHECK(fourth[0].wqe_counter == 3);
    // An SRQ in use cannot go; bad limits are refused.
    CHECK(verbs::destroy_srq(srq) == -EBUSY);
    CHECK(verbs::arm_srq(*srq, 8) == -EINVAL);  // not below the depth
    REQUIRE(verbs::arm_srq(*srq, 2) == 0);      // 1 WQE left: fires at once
    wait_us(5);
    CHECK(events.size() == 2);
  });
}

TEST_CASE("[S16][S18] UD SEND with GRH: the receive CQE names the source QP, LID and SL, the send completes once transmitted") {
  sys().run([] {
    for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
    Side a = make_side(0, 1 << 16, QpType::ud), b = make_side(1, 1 << 16, QpType::ud);
    fb::ud_to_rts(*a.qp, 0x1111);
    fb::ud_to_rts(*b.qp, 0x2222);
    uint64_t sent_cycle = 0;
    sys().node(0).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) { sent_cycle = c; });
    fb::fill(*a.dev, a.buf.addr, 512, 4);
    fb::post_recv(*b.qp, RecvWr{0xB2, {b.buf.sge(0, 2048)}});
    SendWr w = send_wr(0xA2, a.buf.sge(0, 512));
    w.remote_qpn = b.qp->qpn;
    w.remote_qkey = 0x2222;
    w.dlid = 2;
    w.sl = 3;
    w.grh = true;
    fb::post_send(*a.qp, w);
    auto swc = poll_n(*a.scq, 1);
    auto rwc = poll_n(*b.rcq, 1);
    REQUIRE(swc.size() == 1);
    REQUIRE(rwc.size() == 1);
    CHECK(swc[0].status == 0);
    // Once transmitted: before the packet can even have reached the peer.
    CHECK(swc[0].timestamp >= sent_cycle);
    CHECK(swc[0].timestamp < rwc[0].timestamp);
    CHECK(rwc[0].status == 0);
    CHECK(rwc[0].src_qp == a.qp->qpn);
    CHECK(rwc[0].slid == 1);
    CHECK(rwc[0].sl == 3);
    CHECK(rwc[0].grh);
    CHECK(rwc[0].byte_len == 512 + 40);
    CHECK(fb::read(*b.dev, b.buf.addr + 40, 512) == fb::read(*a.dev, a.buf.addr, 512));
    // A wrong Q_Key is dropped silently (and counted); nothing completes at the receiver.
    fb::post_recv(*b.qp, RecvWr{0xB3, {b.buf.sge(0, 2048)}});
    w.remote_qkey = 0x3333;
    w.wr_id = 0xA3;
    fb::post_send(*a.qp, w);
    REQUIRE(poll_n(*a.scq, 1).size() == 1);
    wait_us(10);
    CHECK(verbs::peek_cq(*b.rcq, 16) == 0);
    CHECK(sys().node(1).hca.transport.stats().qkey_violations == 1);
  });
}

TEST_CASE("ping-pong: 200 round trips of RC SEND, every byte and every CQE accounted for") {
  sys().run([] {
    auto [a, b] = rc_pair();
    constexpr int kRounds = 200;
    constexpr uint32_t kLen = 256;
    for (int i = 0; i < kRounds; ++i) {
      fb::fill(*a.dev, a.buf.addr, kLen, uint32_t(i));
      fb::post_recv(*b.qp, RecvWr{uint64_t(i), {b.buf.sge(0, kLen)}});
      fb::post_recv(*a.qp, RecvWr{uint64_t(i), {a.buf.sge(8192, kLen)}});
      fb::post_send(*a.qp, send_wr(uint64_t(i), a.buf.sge(0, kLen)));
      auto got = poll_n(*b.rcq, 1);
      REQUIRE(got.size() == 1);
      REQUIRE(got[0].wr_id == uint64_t(i));
      REQUIRE(fb::read(*b.dev, b.buf.addr, kLen) == fb::read(*a.dev, a.buf.addr, kLen));
      // Pong: b echoes what it received.
      fb::post_send(*b.qp, send_wr(uint64_t(i), b.buf.sge(0, kLen)));
      auto back = poll_n(*a.rcq, 1);
      REQUIRE(back.size() == 1);
      REQUIRE(fb::read(*a.dev, a.buf.addr + 8192, kLen) == fb::read(*a.dev, a.buf.addr, kLen));
      REQUIRE(poll_n(*a.scq, 1).size() == 1);
      REQUIRE(poll_n(*b.scq, 1).size() == 1);
    }
    CHECK(verbs::peek_cq(*a.scq, 16) == 0);
    CHECK(verbs::peek_cq(*b.scq, 16) == 0);
  });
}

TEST_CASE("[S17] streaming: 4 QPs share CQs, every byte arrives, every WQE gets one CQE, in per-WQ order") {
  sys().run([] {
    for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
    Driver& da = sys().node(0).driver;
    Driver& db = sys().node(1).driver;
    Pd* pa = fb::alloc_pd(da);
    Pd* pb = fb::alloc_pd(db);
    Cq* scq = fb::create_cq(da, 1024);
    Cq* rcq_a = fb::create_cq(da, 1024);
    Cq* scq_b = fb::create_cq(db, 1024);
    Cq* rcq = fb::create_cq(db, 1024);
    constexpr int kQps = 4, kMsgs = 60;
    constexpr uint32_t kLen = 6000;  // two packets each at 4 KiB MTU
    fb::Buffer src = fb::reg_buffer(*pa, uint64_t(kQps) * kMsgs * kLen);
    fb::Buffer dst = fb::reg_buffer(*pb, uint64_t(kQps) * kMsgs * kLen);
    std::vector<Qp*> qa, qb;
    for (int q = 0; q < kQps; ++q) {
      qa.push_back(fb::create_qp(*pa, scq, rcq_a, QpType::rc, 128));
      qb.push_back(fb::create_qp(*pb, scq_b, rcq, QpType::rc, 128));
      fb::connect_rc(*qa[q], *qb[q]);
    }
    fb::fill(da, src.addr, uint32_t(src.length), 9);
    std::map<uint32_t, std::vector<std::pair<uint32_t, uint64_t>>> acks;  // per QPN: (PSN, cycle)
    sys().node(0).hca.transport.on_ack_received.add([&](uint32_t qpn, uint32_t psn, uint64_t c) {
      acks[qpn].push_back({psn, c});
    });
    // Even messages are SENDs into posted receives, odd ones RDMA WRITEs to the same place.
    for (int q = 0; q < kQps; ++q)
      for (int m = 0; m < kMsgs; m += 2) {
        const uint64_t off = (uint64_t(q) * kMsgs + m) * kLen;
        fb::post_recv(*qb[q], RecvWr{uint64_t(q) << 32 | m, {dst.sge(off, kLen)}});
      }
    for (int m = 0; m < kMsgs; ++m)
      for (int q = 0; q < kQps; ++q) {
        const uint64_t off = (uint64_t(q) * kMsgs + m) * kLen;
        SendWr w = remote_wr(uint64_t(q) << 32 | m, src.sge(off, kLen), m % 2 ? sqwqe::kRdmaWrite : sqwqe::kSend, dst, off);
        fb::post_send(*qa[q], w);
      }
    auto sends = poll_n(*scq, kQps * kMsgs, 20000);
    auto recvs = poll_n(*rcq, kQps * kMsgs / 2, 20000);
    REQUIRE(sends.size() == size_t(kQps * kMsgs));
    REQUIRE(recvs.size() == size_t(kQps * kMsgs / 2));
    std::map<uint32_t, int> next_send, next_recv;
    for (const Wc& w : sends) {
      CHECK(w.status == 0);
      const int m = int(w.wr_id & 0xFFFFFFFF);
      CHECK(m == next_send[w.qpn]);  // S17: per-WQ posting order
      next_send[w.qpn] = m + 1;
    }
    for (const Wc& w : recvs) {
      CHECK(w.status == 0);
      CHECK(w.byte_len == kLen);
      const int m = int(w.wr_id & 0xFFFFFFFF);
      CHECK(m == next_recv[w.qpn]);
      next_recv[w.qpn] = m + 2;
    }
    CHECK(fb::read(db, dst.addr, uint32_t(dst.length)) == fb::read(da, src.addr, uint32_t(src.length)));
    // S18: each SEND / WRITE CQE is written no earlier than the first ACK covering its last PSN
    // arrived. Message m of a QP has PSNs 0x100 + 2m and 0x100 + 2m + 1.
    for (const Wc& w : sends) {
      const uint32_t last_psn = 0x100 + 2 * uint32_t(w.wr_id & 0xFFFFFFFF) + 1;
      uint64_t ack_cycle = UINT64_MAX;
      for (auto [psn, c] : acks[w.qpn])
        if (psn_diff(psn, last_psn) >= 0) {
          ack_cycle = c;
          break;
        }
      CHECK(ack_cycle <= w.timestamp);
    }
    // ACKs are coalesced: fewer than one per message.
    const TransportStats& tb = sys().node(1).hca.transport.stats();
    CHECK(tb.acks_sent < uint64_t(kQps * kMsgs));
    // WQE fetch: bursts of up to fetch_burst WQEs.
    const TransportStats& ta = sys().node(0).hca.transport.stats();
    CHECK(ta.wqes_fetched == uint64_t(kQps * kMsgs));
    CHECK(ta.wqe_fetches < ta.wqes_fetched);
    wait_us(100);
    CHECK(verbs::peek_cq(*scq, 16) == 0);  // nothing more: exactly one CQE per WQE
    CHECK(verbs::peek_cq(*rcq, 16) == 0);
  });
}

namespace {
// Path timing from docs/timing.md and transport.md, at the defaults (500 MHz, Gen4 x16 PCIe,
// 100 Gb/s IB with 400 ns latency), composed from the links' serialization times.
constexpr uint64_t kPeriodPs = 2000;
uint64_t edge_at_or_after(uint64_t ps) { return (ps + kPeriodPs - 1) / kPeriodPs; }
uint64_t ps(const sc_core::sc_time& t) { return uint64_t(t.value()); }
// A device DMA read of `len` bytes issued on an edge: the request TLP, the link latency, the host's
// read access, the completion TLPs (256-byte chunks), the latency back; usable from the next edge.
uint64_t read_cycles(uint32_t len) {
  const PcieLinkConfig& c = sys().node(0).link.config();
  uint64_t t = ps(sys().node(0).link.wire_time(c.request_overhead)) + ps(c.latency) + ps(c.read_access) + ps(c.latency);
  for (uint32_t left = len; left > 0; left -= std::min(left, c.completion_size))
    t += ps(sys().node(0).link.wire_time(std::min(left, c.completion_size) + c.completion_overhead));
  return edge_at_or_after(t);
}
}  // namespace

TEST_CASE("[S18] RC SEND path, exact cycles: doorbell, WQE read, payload read, packet, receive WQE reads, RECV CQE, coalesced ACK, SEND CQE") {
  sys().run([] {
    auto [a, b] = rc_pair();
    fb::post_recv(*b.qp, RecvWr{0xB0, {b.buf.sge(0, 4096)}});
    wait_us(5);
    const TransportConfig& tc = sys().node(0).hca.transport.config();
    uint64_t doorbell = 0, sent = 0, ack_sent = 0, ack_in = 0;
    uint32_t send_bytes = 0, ack_bytes = 0;
    sys().node(0).hca.transport.on_doorbell.add([&](const WqDoorbell&, uint64_t c) { doorbell = c; });
    sys().node(0).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) {
      sent = c;
      send_bytes = p.wire_bytes();
    });
    sys().node(1).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) {
      ack_sent = c;
      ack_bytes = p.wire_bytes();
    });
    sys().node(0).hca.transport.on_ack_received.add([&](uint32_t, uint32_t, uint64_t c) { ack_in = c; });
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 64)));
    const uint64_t doorbell_issued = ps(sc_core::sc_time_stamp());  // the doorbell is post_send's last act
    auto rwc = poll_n(*b.rcq, 1);
    auto swc = poll_n(*a.scq, 1);
    REQUIRE(rwc.size() == 1);
    REQUIRE(swc.size() == 1);
    const PcieLink& pcie = sys().node(0).link;
    // The 8-byte doorbell lands at the BAR one serialization and one latency after it was issued;
    // it enters the FIFO on that cycle and the doorbell unit takes it on the next.
    const uint64_t d = (doorbell_issued + ps(pcie.wire_time(8 + pcie.config().request_overhead)) +
                        ps(pcie.config().latency)) / kPeriodPs + 1;
    CHECK(doorbell == d);
    // The WQE fetch reads the 128-byte WQE; the transmit arbiter reads the 64-byte payload,
    // builds the packet (tx_packet_cycles) and puts it on the idle wire on that edge.
    const uint64_t p = d + read_cycles(sqwqe::kSize) + read_cycles(64) + tc.tx_packet_cycles;
    CHECK(sent == p);
    // The packet crosses the IB link (serialization + latency); the receiver takes it on the
    // next edge, checks it (rx_packet_cycles), reads the RQ doorbell record (4 bytes) and the one
    // receive WQE (64 bytes), queues the data write and hands over the completion on cycle r: the
    // CQ writer acts on it, stamping the RECV CQE, kCompletionActs cycles later (test_support.h).
    const uint64_t arrives = ps(sys().node(0).hca.clock.at(p)) + ps(sys().ib.wire_time(send_bytes)) +
                             ps(sys().ib.config().latency);
    const uint64_t r = edge_at_or_after(arrives) + tc.rx_packet_cycles + read_cycles(4) + read_cycles(rqwqe::kSize);
    CHECK(rwc[0].timestamp == r + kCompletionActs);
    // One ACK-requesting message: the ACK waits ack_delay_cycles for company, then is built
    // (tx_packet_cycles) and sent; it crosses back, is checked, and hands over the SEND completion.
    CHECK(ack_sent == r + tc.ack_delay_cycles + tc.tx_packet_cycles);
    const uint64_t ack_arrives = ps(sys().node(1).hca.clock.at(ack_sent)) + ps(sys().ib.wire_time(ack_bytes)) +
                                 ps(sys().ib.config().latency);
    CHECK(ack_in == edge_at_or_after(ack_arrives) + tc.rx_packet_cycles);
    CHECK(swc[0].timestamp == ack_in + kCompletionActs);
  });
}

namespace {
// Cycles on the receiving side from a packet leaving `from` on cycle `sent`: IB serialization and
// latency, the next edge, then the receive check.
uint64_t received_at(uint32_t from, uint64_t sent, uint32_t wire_bytes) {
  const uint64_t arrives = ps(sys().node(from).hca.clock.at(sent)) + ps(sys().ib.wire_time(wire_bytes)) +
                           ps(sys().ib.config().latency);
  return edge_at_or_after(arrives) + sys().node(from).hca.transport.config().rx_packet_cycles;
}
}  // namespace

TEST_CASE("[S18] RC WRITE and READ paths, exact cycles: request, responder, ACK or response, CQE") {
  sys().run([] {
    auto [a, b] = rc_pair();
    wait_us(5);
    const TransportConfig& tc = sys().node(0).hca.transport.config();
    struct Seen {
      uint64_t cycle = 0;
      uint32_t bytes = 0;
    };
    std::vector<Seen> out0, out1;
    uint64_t doorbell = 0, ack_in = 0;
    sys().node(0).hca.transport.on_doorbell.add([&](const WqDoorbell&, uint64_t c) { doorbell = c; });
    sys().node(0).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) { out0.push_back({c, p.wire_bytes()}); });
    sys().node(1).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) { out1.push_back({c, p.wire_bytes()}); });
    sys().node(0).hca.transport.on_ack_received.add([&](uint32_t, uint32_t, uint64_t c) { ack_in = c; });

    // WRITE: the same request side as a SEND; the responder places the data (no receive WQE, no
    // CQE) and owes a coalesced ACK.
    fb::post_send(*a.qp, remote_wr(1, a.buf.sge(0, 64), sqwqe::kRdmaWrite, b.buf, 0));
    auto wwc = poll_n(*a.scq, 1);
    REQUIRE(wwc.size() == 1);
    REQUIRE(out0.size() == 1);
    REQUIRE(out1.size() == 1);
    CHECK(out0[0].cycle == doorbell + read_cycles(sqwqe::kSize) + read_cycles(64) + tc.tx_packet_cycles);
    const uint64_t placed = received_at(0, out0[0].cycle, out0[0].bytes);
    CHECK(out1[0].cycle == placed + tc.ack_delay_cycles + tc.tx_packet_cycles);
    CHECK(ack_in == received_at(1, out1[0].cycle, out1[0].bytes));
    CHECK(wwc[0].timestamp == ack_in + kCompletionActs);

    // READ: the request carries no payload (no read before it); the responder reads the data
    // (fenced behind its earlier writes) and sends the response, which the requester places and
    // completes.
    wait_us(5);
    out0.clear();
    out1.clear();
    fb::post_send(*a.qp, remote_wr(2, a.buf.sge(4096, 64), sqwqe::kRdmaRead, b.buf, 0));
    auto rwc = poll_n(*a.scq, 1);
    REQUIRE(rwc.size() == 1);
    REQUIRE(out0.size() == 1);
    REQUIRE(out1.size() == 1);
    CHECK(out0[0].cycle == doorbell + read_cycles(sqwqe::kSize) + tc.tx_packet_cycles);
    const uint64_t asked = received_at(0, out0[0].cycle, out0[0].bytes);
    CHECK(out1[0].cycle == asked + read_cycles(64) + tc.tx_packet_cycles);
    CHECK(rwc[0].timestamp == received_at(1, out1[0].cycle, out1[0].bytes) + kCompletionActs);
  });
}

TEST_CASE("[S22] RNR path, exact cycles: no receive WQE, RNR NAK at once, the retry one RNR timer later") {
  sys().run([] {
    auto [a, b] = rc_pair();  // min_rnr_timer 1: 10 us
    wait_us(5);
    const TransportConfig& tc = sys().node(0).hca.transport.config();
    struct Seen {
      uint64_t cycle = 0;
      uint32_t bytes = 0;
      IbOp op;
      AckKind kind;
    };
    std::vector<Seen> out0, out1;
    sys().node(0).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) { out0.push_back({c, p.wire_bytes(), p.op, p.ack_kind}); });
    sys().node(1).hca.transport.on_packet_sent.add([&](const IbPacket& p, uint64_t c) { out1.push_back({c, p.wire_bytes(), p.op, p.ack_kind}); });
    fb::post_send(*a.qp, send_wr(0xA1, a.buf.sge(0, 64)));
    wait_us(5);
    // The responder finds no receive WQE: it reads the RQ doorbell record (4 bytes), finds
    // nothing new, and NAKs (RNR) at once: NAKs do not wait for coalescing.
    REQUIRE(out0.size() == 1);
    REQUIRE(out1.size() == 1);
    CHECK(out1[0].kind == AckKind::rnr_nak);
    const uint64_t checked = received_at(0, out0[0].cycle, out0[0].bytes);
    CHECK(out1[0].cycle == checked + read_cycles(4) + tc.tx_packet_cycles);
    // The requester waits the RNR timer from the NAK (10 us = 5000 cycles), then sends again:
    // the go-back rebuilds the packet, so its payload is read again.
    fb::post_recv(*b.qp, RecvWr{0xB1, {b.buf.sge(0, 4096)}});
    auto swc = poll_n(*a.scq, 1);
    REQUIRE(swc.size() == 1);
    REQUIRE(out0.size() == 2);
    const uint64_t nak_in = received_at(1, out1[0].cycle, out1[0].bytes);
    CHECK(out0[1].cycle == nak_in + 5000 + read_cycles(64) + tc.tx_packet_cycles);
    CHECK(sys().node(0).hca.transport.stats().rnr_retries == 1);
  });
}

TEST_CASE("[S19] retransmit path, exact cycles: a lost request is sent again one local ACK timeout after it left") {
  sys().run([] {
    fb::RcParams params;
    params.timeout = 8;  // 4.096 us x 2^8 = 1048.576 us
    auto [a, b] = rc_pair(1 << 20, params);
    fb::post_recv(*b.qp, RecvWr{0xB2, {b.buf.sge(0, 4096)}});
    wait_us(5);
    const TransportConfig& tc = sys().node(0).hca.transport.config();
    std::vector<uint64_t> sent;
    sys().node(0).hca.transport.on_packet_sent.add([&](const IbPacket&, uint64_t c) { sent.push_back(c); });
    const uint64_t lost = sys().ib.stats(0).packets + 1;  // host 0's next packet is dropped on the wire
    sys().ib.set_faults(0, {LinkFault{LinkFault::Kind::drop, 0, lost}});
    fb::post_send(*a.qp, send_wr(0xA2, a.buf.sge(0, 64)));
    auto swc = poll_n(*a.scq, 1, 3000);
    REQUIRE(swc.size() == 1);
    CHECK(swc[0].status == 0);
    REQUIRE(sent.size() == 2);
    // The timer starts when the packet leaves and expires 4.096 us x 2^8 later (rounded to whole
    // cycles); the go-back rebuilds the packet, reading its payload again.
    const uint64_t timeout = sys().node(0).hca.clock.cycles_from_ns(4096.0 * 256);
    CHECK(sent[1] == sent[0] + timeout + read_cycles(64) + tc.tx_packet_cycles);
    CHECK(sys().node(0).hca.transport.stats().timeouts == 1);
  });
}

TEST_CASE("the transport is eight blocks in the hierarchy, each a module, and none runs a thread: the HCA's one thread is the firmware's") {
  sys().run([] {
    std::vector<std::string> blocks;
    for (sc_core::sc_object* child : sys().node(0).hca.transport.get_child_objects())
      if (dynamic_cast<sc_core::sc_module*>(child)) blocks.push_back(child->basename());
    CHECK(blocks == std::vector<std::string>{"timers", "rq", "requester", "responder", "fetch", "doorbells", "tx", "rx"});
    // Every process under the HCA, by kind.
    std::vector<std::string> threads;
    size_t methods = 0;
    std::function<void(sc_core::sc_object*)> walk = [&](sc_core::sc_object* o) {
      if (std::string(o->kind()) == "sc_thread_process") threads.push_back(o->name());
      if (std::string(o->kind()) == "sc_method_process") ++methods;
      for (sc_core::sc_object* c : o->get_child_objects()) walk(c);
    };
    walk(&sys().node(0).hca);
    const std::string hca = sys().node(0).hca.name();
    REQUIRE(threads.size() == 1);
    CHECK(threads[0].rfind(hca + ".cmd.", 0) == 0);
    CHECK(methods > 10);
  });
}
