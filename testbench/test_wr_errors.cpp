// Error paths of the work-request path between two HCAs: every S19 completion syndrome, S20
// immediate errors, S22 RNR, S14 CQ overflow putting QPs in error, flushes, and recovery from
// packet loss and corruption on the link.
#include "testbench/test_support.h"

#include <cerrno>
#include <map>

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) { cfg.hosts = 2; }
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

namespace {

QpState device_state(Qp& qp) {
  QpAttr a;
  REQUIRE(verbs::query_qp(qp, a) == 0);
  return a.cur_state;
}

// Cycles of every packet host `h` sends with opcode `op`.
struct SentLog {
  std::vector<uint64_t> cycles;
  void attach(uint32_t host, IbOp op) {
    sys().node(host).hca.transport.on_packet_sent.add([this, op](const IbPacket& p, uint64_t c) {
      if (p.op == op) cycles.push_back(c);
    });
  }
};

}  // namespace

TEST_CASE("[S19] local length: a receive buffer too small fails the RECV (local length) and the SEND (remote invalid request)") {
  sys().run([] {
    auto [a, b] = rc_pair();
    fb::post_recv(*b.qp, RecvWr{0xB0, {b.buf.sge(0, 100)}});
    fb::post_recv(*b.qp, RecvWr{0xB1, {b.buf.sge(0, 4096)}});
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 200)));
    fb::post_send(*a.qp, send_wr(0xA1, a.buf.sge(0, 10)));
    auto r = poll_n(*b.rcq, 2);
    auto s = poll_n(*a.scq, 2);
    REQUIRE(r.size() == 2);
    REQUIRE(s.size() == 2);
    CHECK(r[0].wr_id == 0xB0);
    CHECK(r[0].status == syndrome::kLocalLength);
    CHECK(r[1].wr_id == 0xB1);
    CHECK(r[1].status == syndrome::kWrFlush);  // the responder QP is in error: the rest flushes
    CHECK(s[0].wr_id == 0xA0);
    CHECK(s[0].status == syndrome::kRemoteInvalidRequest);
    CHECK(s[0].qpn == a.qp->qpn);
    CHECK(s[1].wr_id == 0xA1);
    CHECK(s[1].status == syndrome::kWrFlush);
    CHECK(device_state(*a.qp) == QpState::err);
    CHECK(device_state(*b.qp) == QpState::err);
  });
}

TEST_CASE("[S19] local QP operation: a WQE the device cannot execute fails with local QP operation error") {
  sys().run([] {
    auto [a, b] = rc_pair();
    // A driver bug the library would never let through: opcode 0x3F, written straight to the ring.
    uint8_t w[sqwqe::kSize] = {};
    put_field(w, sqwqe::wr_id, 0xBAD);
    put_field(w, sqwqe::opcode, 0x3F);
    put_field(w, sqwqe::signaled, 1);
    put_field(w, sqwqe::wqe_index, 0);
    a.dev->memory().write(a.qp->sq_base, w, sqwqe::kSize);
    a.qp->sq_pi = 1;
    uint64_t db = with_bits(with_bits(0, wqdb::qpn, a.qp->qpn), wqdb::pi, 1);
    a.dev->cpu().mmio_write64(Driver::offset_of(reg::sq_db), db);
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wr_id == 0xBAD);
    CHECK(s[0].status == syndrome::kLocalQpOp);
    CHECK(sys().node(0).hca.transport.stats().packets_sent == 0);  // nothing went on the wire
    CHECK(device_state(*a.qp) == QpState::err);
  });
}

TEST_CASE("[S19] local QP operation: a send WQE whose ring read fails completes in error with nothing of an earlier WQE's") {
  sys().run([] {
    auto [a, b] = rc_pair();
    fb::post_recv(*b.qp, RecvWr{1, {b.buf.sge(0, 64)}});
    fb::post_send(*a.qp, send_wr(0xA1, a.buf.sge(0, 64)));
    auto first = poll_n(*a.scq, 1);
    REQUIRE(first.size() == 1);
    CHECK(first[0].status == 0);
    // The ring's page goes away; the next WQE's read fails (an address error). What the device
    // read before (wr_id 0xA1) must not show through: the WQE decodes as zeros, in error.
    const uint64_t ring_bytes = uint64_t(sqwqe::kSize) * a.qp->sq_depth;
    sys().node(0).memory.unmap(a.qp->sq_base, ring_bytes);
    a.qp->sq_pi = 2;
    const uint64_t db = with_bits(with_bits(0, wqdb::qpn, a.qp->qpn), wqdb::pi, 2);
    a.dev->cpu().mmio_write64(Driver::offset_of(reg::sq_db), db);
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].status == syndrome::kLocalQpOp);
    CHECK(s[0].wr_id == 0);
    CHECK(s[0].byte_len == 0);
    CHECK(device_state(*a.qp) == QpState::err);
  });
}

TEST_CASE("[S19] local QP operation: a receive WQE whose ring read fails completes in error with nothing of an earlier WQE's") {
  sys().run([] {
    auto [a, b] = rc_pair();
    fb::post_recv(*b.qp, RecvWr{0xB1, {b.buf.sge(0, 64)}});
    fb::post_send(*a.qp, send_wr(0xA1, a.buf.sge(0, 64)));
    auto first = poll_n(*b.rcq, 1);
    REQUIRE(first.size() == 1);
    CHECK(first[0].wr_id == 0xB1);
    REQUIRE(poll_n(*a.scq, 1).size() == 1);
    // The receive ring's page goes away and the doorbell record says one more WQE is posted: the
    // device's read of it fails (an address error); the earlier WQE's wr_id must not show through.
    sys().node(1).memory.unmap(b.qp->rq_base, uint64_t(rqwqe::kSize) * b.qp->rq_depth);
    Driver& dev = *b.qp->pd->dev;
    uint8_t rec[qpdbr::kSize];
    dev.cpu().read(b.qp->dbr, rec, qpdbr::kSize);
    put_field(rec, qpdbr::rq_pi, 2);
    dev.cpu().write(b.qp->dbr, rec, qpdbr::kSize);
    b.qp->rq_pi = 2;
    fb::post_send(*a.qp, send_wr(0xA2, a.buf.sge(0, 64)));
    auto r = poll_n(*b.rcq, 1);
    REQUIRE(r.size() == 1);
    CHECK(r[0].status == syndrome::kLocalQpOp);
    CHECK(r[0].wr_id == 0);
    CHECK(r[0].byte_len == 0);
  });
}

TEST_CASE("[S19] local protection: an SGE outside its MR fails the SEND before anything is sent") {
  sys().run([] {
    auto [a, b] = rc_pair(1 << 16);
    fb::post_recv(*b.qp, RecvWr{1, {b.buf.sge(0, 4096)}});
    Sge bad = a.buf.sge((1 << 16) - 8, 64);  // runs past the end of the MR
    fb::post_send(*a.qp, send_wr(0xA0, bad));
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].status == syndrome::kLocalProtection);
    CHECK(sys().node(0).hca.transport.stats().packets_sent == 0);
    // A wrong lkey likewise.
    CHECK(verbs::peek_cq(*b.rcq, 4) == 0);
  });
}

TEST_CASE("[S19] remote access: an RDMA WRITE with a bad rkey and a READ of an MR without remote read") {
  sys().run([] {
    auto [a, b] = rc_pair();
    SendWr w = send_wr(0xA0, a.buf.sge(0, 64), sqwqe::kRdmaWrite);
    w.remote_addr = b.buf.addr;
    w.rkey = b.buf.mr->rkey ^ 0x1;  // stale variant byte
    fb::post_send(*a.qp, w);
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].status == syndrome::kRemoteAccess);
    CHECK(device_state(*a.qp) == QpState::err);
    CHECK(device_state(*b.qp) == QpState::rts);  // the responder reports, it does not break
  });
  sys().run([] {
    // A second pair on fresh QPs: READ of a local-write-only MR.
    Side a = make_side(0, 1 << 16), b = make_side(1, 1 << 16);
    fb::connect_rc(*a.qp, *b.qp);
    fb::Buffer no_read = fb::reg_buffer(*b.pd, 4096, kAccessLocalWrite | kAccessRemoteWrite);
    SendWr r = remote_wr(0xA1, a.buf.sge(0, 64), sqwqe::kRdmaRead, no_read);
    fb::post_send(*a.qp, r);
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].status == syndrome::kRemoteAccess);
  });
}

TEST_CASE("[S19] responder resources: a READ beyond the peer's max_dest_rd_atomic is NAKed invalid request, the READ before it completes") {
  sys().run([] {
    for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
    Side a = make_side(0, 1 << 16), b = make_side(1, 1 << 16);
    fb::RcParams four, one;
    four.max_rd_atomic = 4;  // a keeps up to 4 READs in flight
    one.max_rd_atomic = 1;   // b answers one at a time (its max_dest_rd_atomic)
    fb::rc_to_rts(*a.qp, b.qp->qpn, four, 0x100, 0x200);
    fb::rc_to_rts(*b.qp, a.qp->qpn, one, 0x200, 0x100);
    b.dev->memory().write(b.buf.addr, "first READ", 10);
    // 4 KiB each: the second request arrives long before the first's response has left.
    for (uint32_t i = 0; i < 3; ++i)
      fb::post_send(*a.qp, remote_wr(0xA0 + i, a.buf.sge(4096 * i, 4096), sqwqe::kRdmaRead, b.buf, 4096 * i));
    auto s = poll_n(*a.scq, 3);
    REQUIRE(s.size() == 3);
    // The first READ is answered (its response leaves before the NAK: PSN order on the wire).
    CHECK(s[0].wr_id == 0xA0);
    CHECK(s[0].status == 0);
    char got[10];
    a.dev->memory().read(a.buf.addr, got, 10);
    CHECK(std::string(got, 10) == "first READ");
    // The second arrived while the first's response was owed: invalid request; the rest flush.
    CHECK(s[1].wr_id == 0xA1);
    CHECK(s[1].status == syndrome::kRemoteInvalidRequest);
    CHECK(s[2].wr_id == 0xA2);
    CHECK(s[2].status == syndrome::kWrFlush);
    CHECK(device_state(*a.qp) == QpState::err);
    CHECK(device_state(*b.qp) == QpState::rts);  // the responder refuses, it does not break
    CHECK(sys().node(1).hca.transport.stats().rd_atomic_refused == 1);
  });
  sys().run([] {
    // The check can pass only if b enforces it: with b's limit at 4, all three complete.
    Side a = make_side(0, 1 << 16), b = make_side(1, 1 << 16);
    fb::RcParams four;
    four.max_rd_atomic = 4;
    fb::connect_rc(*a.qp, *b.qp, four);
    const uint64_t refused = sys().node(1).hca.transport.stats().rd_atomic_refused;
    for (uint32_t i = 0; i < 3; ++i)
      fb::post_send(*a.qp, remote_wr(0xB0 + i, a.buf.sge(4096 * i, 4096), sqwqe::kRdmaRead, b.buf, 4096 * i));
    auto s = poll_n(*a.scq, 3);
    REQUIRE(s.size() == 3);
    for (const Wc& wc : s) CHECK(wc.status == 0);
    CHECK(sys().node(1).hca.transport.stats().rd_atomic_refused == refused);
  });
}

// The host took the memory under a registered MR away (unmapped it): the MR is valid, so the
// WQE passes the protection check, and the gather's DMA read fails on the PCIe side.
TEST_CASE("[S19] local access: a SEND whose registered buffer the host unmapped fails with 0x11, nothing sent") {
  sys().run([] {
    auto [a, b] = rc_pair(1 << 16);
    fb::post_recv(*b.qp, RecvWr{1, {b.buf.sge(0, 4096)}});
    sys().node(0).memory.unmap(a.buf.addr, a.buf.length);
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 64)));
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wr_id == 0xA0);
    CHECK(s[0].status == syndrome::kLocalAccess);
    CHECK(sys().node(0).hca.transport.stats().packets_sent == 0);
    CHECK(device_state(*a.qp) == QpState::err);
    CHECK(verbs::peek_cq(*b.rcq, 4) == 0);
  });
}

// The responder's memory under an MR it registered is gone: its DMA read of the READ's source
// fails, it answers with a remote operational NAK, and the requester completes the READ with 0x14.
TEST_CASE("[S19] remote operation: an RDMA READ of a peer MR whose memory the peer unmapped fails with 0x14") {
  sys().run([] {
    auto [a, b] = rc_pair(1 << 16);
    sys().node(1).memory.unmap(b.buf.addr, b.buf.length);
    fb::post_send(*a.qp, remote_wr(0xA1, a.buf.sge(0, 64), sqwqe::kRdmaRead, b.buf));
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wr_id == 0xA1);
    CHECK(s[0].status == syndrome::kRemoteOp);
    CHECK(device_state(*a.qp) == QpState::err);
  });
}

TEST_CASE("[S19] transport retry exceeded: with every packet lost, retry_cnt retransmissions a timeout apart, then the error") {
  sys().run([] {
    fb::RcParams p;
    p.timeout = 2;  // 4.096 us * 4 = 16.384 us
    p.retry_cnt = 3;
    auto [a, b] = rc_pair(1 << 16, p);
    sys().ib.set_faults(1, {});  // drop every packet
    SentLog sent;
    sent.attach(0, IbOp::send_only);
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 64)));
    fb::post_send(*a.qp, send_wr(0xA1, a.buf.sge(0, 64)));
    auto s = poll_n(*a.scq, 2, 1000);
    REQUIRE(s.size() == 2);
    CHECK(s[0].wr_id == 0xA0);
    CHECK(s[0].status == syndrome::kRetryExceeded);
    CHECK(s[1].status == syndrome::kWrFlush);
    // Both WQEs went out once, then in retry_cnt go-back-N rounds. The timer starts when the
    // oldest unacknowledged packet is sent and expires a timeout (8192 cycles at 500 MHz) later;
    // each round then re-reads the payload, so rounds are equally spaced, a timeout and a read apart.
    const uint64_t timeout = sys().hca.clock.cycles_from_ns(4096.0 * 4);
    REQUIRE(sent.cycles.size() == 2 * (1 + 3));
    const uint64_t round = sent.cycles[2] - sent.cycles[0];
    CHECK(round > timeout);
    CHECK(round < timeout + 500);  // the read takes ~1 us of PCIe round trip
    for (size_t r = 2; r < 4; ++r) CHECK(sent.cycles[2 * r] - sent.cycles[2 * r - 2] == round);
    CHECK(sys().node(0).hca.transport.stats().timeouts == 4);
    // The last expiry fails the WQE: its CQE is written a few cycles after it.
    const uint64_t expiry = sent.cycles[6] + timeout;
    CHECK(s[0].timestamp >= expiry);
    CHECK(s[0].timestamp <= expiry + 4);
  });
}

TEST_CASE("[S22] RNR: a SEND that finds no receive WQE is NAKed and retried, a WQE posted meanwhile takes it") {
  sys().run([] {
    fb::RcParams p;
    p.min_rnr_timer = 2;  // 20 us
    auto [a, b] = rc_pair(1 << 16, p);
    SentLog sent;
    sent.attach(0, IbOp::send_only);
    fb::fill(*a.dev, a.buf.addr, 128, 5);
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 128)));
    wait_us(30);
    CHECK(sys().node(1).hca.transport.stats().rnr_naks_sent >= 1);
    fb::post_recv(*b.qp, RecvWr{0xB0, {b.buf.sge(0, 4096)}});
    auto r = poll_n(*b.rcq, 1);
    auto s = poll_n(*a.scq, 1);
    REQUIRE(r.size() == 1);
    REQUIRE(s.size() == 1);
    CHECK(r[0].status == 0);
    CHECK(s[0].status == 0);
    CHECK(fb::read(*b.dev, b.buf.addr, 128) == fb::read(*a.dev, a.buf.addr, 128));
    // Retransmissions are at least the RNR timer apart.
    REQUIRE(sent.cycles.size() >= 2);
    for (size_t i = 1; i < sent.cycles.size(); ++i)
      CHECK(sent.cycles[i] - sent.cycles[i - 1] >= sys().hca.clock.cycles_from_ns(20000));
  });
}

TEST_CASE("[S22][S19] RNR retry exceeded: rnr_retry NAKed retries, then the SEND fails with RNR retry exceeded") {
  sys().run([] {
    fb::RcParams p;
    p.min_rnr_timer = 1;  // 10 us
    p.rnr_retry = 2;
    auto [a, b] = rc_pair(1 << 16, p);
    SentLog sent;
    sent.attach(0, IbOp::send_only);
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 64)));
    auto s = poll_n(*a.scq, 1, 500);
    REQUIRE(s.size() == 1);
    CHECK(s[0].status == syndrome::kRnrRetryExceeded);
    CHECK(sent.cycles.size() == 3);  // the first try and rnr_retry retries
    CHECK(sys().node(1).hca.transport.stats().rnr_naks_sent == 3);
    CHECK(device_state(*a.qp) == QpState::err);
  });
}

TEST_CASE("[S19] bad response: an ACK turned into an atomic ACK on the wire fails the SEND with bad response") {
  sys().run([] {
    auto [a, b] = rc_pair();
    fb::post_recv(*b.qp, RecvWr{0xB0, {b.buf.sge(0, 4096)}});
    sys().ib.set_faults(0, {LinkFault{LinkFault::Kind::rewrite_opcode, 1, 1, IbOp::atomic_ack}});
    fb::post_send(*a.qp, send_wr(0xA0, a.buf.sge(0, 64)));
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].status == syndrome::kBadResponse);
    CHECK(device_state(*a.qp) == QpState::err);
  });
}

TEST_CASE("[S19] WR flush: every outstanding WQE of a QP moved to ERR completes with flush status, in order") {
  sys().run([] {
    auto [a, b] = rc_pair();
    for (uint64_t i = 0; i < 5; ++i) fb::post_recv(*a.qp, RecvWr{0xC0 + i, {a.buf.sge(0, 64)}});
    REQUIRE(verbs::modify_qp(*a.qp, rts_to_error()) == 0);
    for (uint64_t i = 0; i < 3; ++i) fb::post_send(*a.qp, send_wr(0xA0 + i, a.buf.sge(0, 64)));
    fb::post_recv(*a.qp, RecvWr{0xC5, {a.buf.sge(0, 64)}});  // posted in ERR: flushed too
    auto r = poll_n(*a.rcq, 6);
    auto s = poll_n(*a.scq, 3);
    REQUIRE(r.size() == 6);
    REQUIRE(s.size() == 3);
    for (uint64_t i = 0; i < 6; ++i) {
      CHECK(r[i].wr_id == 0xC0 + i);
      CHECK(r[i].status == syndrome::kWrFlush);
      CHECK(r[i].qpn == a.qp->qpn);
    }
    for (uint64_t i = 0; i < 3; ++i) {
      CHECK(s[i].wr_id == 0xA0 + i);
      CHECK(s[i].status == syndrome::kWrFlush);
    }
    wait_us(20);
    CHECK(verbs::peek_cq(*a.rcq, 16) == 0);
    CHECK(verbs::peek_cq(*a.scq, 16) == 0);
  });
}

TEST_CASE("[S20] immediate errors: requests the QP cannot carry out are refused at post time, nothing reaches the device") {
  sys().run([] {
    for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
    Side ud = make_side(0, 1 << 16, QpType::ud, 4);
    Side rc = make_side(0, 1 << 16, QpType::rc, 4);
    Driver& dev = *ud.dev;
    // Not yet ready to send.
    CHECK(verbs::post_send(*rc.qp, {send_wr(1, rc.buf.sge(0, 8))}) == -EINVAL);
    CHECK(dev.last_error().find("is in RESET") != std::string::npos);
    CHECK(verbs::post_recv(*rc.qp, {RecvWr{1, {rc.buf.sge(0, 8)}}}) == -EINVAL);
    fb::ud_to_rts(*ud.qp, 7);
    SendWr w = send_wr(2, ud.buf.sge(0, 8), sqwqe::kRdmaWrite);
    CHECK(verbs::post_send(*ud.qp, {w}) == -EINVAL);  // RDMA WRITE on UD
    CHECK(dev.last_error().find("not allowed on a UD QP") != std::string::npos);
    w.opcode = sqwqe::kRdmaRead;
    CHECK(verbs::post_send(*ud.qp, {w}) == -EINVAL);
    SendWr many = send_wr(3, ud.buf.sge(0, 8));
    many.sg_list.assign(5, ud.buf.sge(0, 8));
    CHECK(verbs::post_send(*ud.qp, {many}) == -EINVAL);
    SendWr inl = send_wr(4, ud.buf.sge(0, 65), sqwqe::kSend, kSendInline);
    CHECK(verbs::post_send(*ud.qp, {inl}) == -EINVAL);
    fb::connect_rc(*rc.qp, *make_side(1, 4096).qp);
    SendWr at = send_wr(5, rc.buf.sge(0, 8), sqwqe::kAtomicFa);
    at.remote_addr = 0x1004;  // not 8-byte aligned
    CHECK(verbs::post_send(*rc.qp, {at}) == -EINVAL);
    at.remote_addr = 0x1000;
    at.sg_list = {rc.buf.sge(0, 4)};
    CHECK(verbs::post_send(*rc.qp, {at}) == -EINVAL);
    // A full receive queue: the fifth of four is refused with -ENOMEM, the first four go in.
    std::vector<RecvWr> five(5, RecvWr{9, {rc.buf.sge(0, 8)}});
    size_t bad = 0;
    CHECK(verbs::post_recv(*rc.qp, five, &bad) == -ENOMEM);
    CHECK(bad == 4);
    // Nothing refused reached the device: no SQ doorbell was rung, no WQE written to the rings.
    CHECK(sys().node(0).hca.transport.stats().doorbells == 0);
    uint8_t ring[sqwqe::kSize] = {};
    dev.memory().read(ud.qp->sq_base, ring, sqwqe::kSize);
    CHECK(std::all_of(ring, ring + sqwqe::kSize, [](uint8_t b) { return b == 0; }));
  });
}

TEST_CASE("[S14][S21] CQ overflow moves the CQ's QPs to error with a QP fatal event, the CQ error event arrives too") {
  sys().run([] {
    for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
    Driver& db = sys().node(1).driver;
    std::vector<AsyncEvent> events;
    db.async_handler = [&](const AsyncEvent& e) { events.push_back(e); };
    Side a = make_side(0, 1 << 16);
    Side b;
    b.dev = &db;
    b.pd = fb::alloc_pd(db);
    b.scq = fb::create_cq(db, 64);
    b.rcq = fb::create_cq(db, 4);  // too small: S15 warns
    b.qp = fb::create_qp(*b.pd, b.scq, b.rcq, QpType::rc, 8);
    b.buf = fb::reg_buffer(*b.pd, 1 << 16);
    CHECK(!db.warnings().empty());
    fb::connect_rc(*a.qp, *b.qp);
    for (uint64_t i = 0; i < 8; ++i) fb::post_recv(*b.qp, RecvWr{i, {b.buf.sge(i * 64, 64)}});
    for (uint64_t i = 0; i < 8; ++i) fb::post_send(*a.qp, send_wr(i, a.buf.sge(0, 64)));
    wait_us(100);
    REQUIRE(events.size() >= 2);
    CHECK(events[0].type == eqe::kCqError);
    CHECK(events[0].syndrome == eqe::kCqOverrun);
    CHECK(events[0].cqn == b.rcq->cqn);
    CHECK(events[1].type == eqe::kQpFatal);
    CHECK(events[1].syndrome == eqe::kQpCqOverrun);
    CHECK(events[1].data == b.qp->qpn);
    CHECK(device_state(*b.qp) == QpState::err);
    // The CQ was never written over: its 4 entries are the first 4 receives.
    auto r = drain(*b.rcq);
    REQUIRE(r.size() == 4);
    for (uint64_t i = 0; i < 4; ++i) CHECK(r[i].wr_id == i);
  });
}

TEST_CASE("link loss and corruption: go-back-N recovers every message, in order, byte for byte") {
  sys().run([] {
    fb::RcParams p;
    p.timeout = 3;  // 32.8 us
    auto [a, b] = rc_pair(1 << 22, p);
    // 3% of the packets in each direction are lost (data and ACKs alike), and the 3rd is corrupted.
    sys().ib.set_faults(0, {LinkFault{LinkFault::Kind::corrupt, 0, 3}});
    sys().ib.set_loss(0.03, 42);
    constexpr int kMsgs = 40;
    constexpr uint32_t kLen = 10000;  // three packets
    fb::fill(*a.dev, a.buf.addr, kMsgs * kLen, 11);
    for (int m = 0; m < kMsgs; m += 2) fb::post_recv(*b.qp, RecvWr{uint64_t(m), {b.buf.sge(uint64_t(m) * kLen, kLen)}});
    for (int m = 0; m < kMsgs; ++m) {
      SendWr w = remote_wr(uint64_t(m), a.buf.sge(uint64_t(m) * kLen, kLen), m % 2 ? sqwqe::kRdmaWrite : sqwqe::kSend, b.buf, uint64_t(m) * kLen);
      fb::post_send(*a.qp, w);
    }
    auto s = poll_n(*a.scq, kMsgs, 20000);
    auto r = poll_n(*b.rcq, kMsgs / 2, 1000);
    REQUIRE(s.size() == size_t(kMsgs));
    REQUIRE(r.size() == size_t(kMsgs / 2));
    for (int m = 0; m < kMsgs; ++m) {
      CHECK(s[m].wr_id == uint64_t(m));
      CHECK(s[m].status == 0);
    }
    for (int m = 0; m < kMsgs / 2; ++m) CHECK(r[m].wr_id == uint64_t(2 * m));
    CHECK(fb::read(*b.dev, b.buf.addr, kMsgs * kLen) == fb::read(*a.dev, a.buf.addr, kMsgs * kLen));
    const TransportStats& ta = sys().node(0).hca.transport.stats();
    const TransportStats& tb = sys().node(1).hca.transport.stats();
    CHECK(ta.retransmits > 0);
    CHECK(tb.corrupt_dropped == 1);
    CHECK(tb.duplicates + tb.naks_sent > 0);
    CHECK(sys().ib.stats(0).dropped + sys().ib.stats(1).dropped > 0);
  });
}

TEST_CASE("[S19] UD send queue error: a datagram above the MTU fails with local length, the QP enters SQE, its RQ still receives, SQE -> RTS resumes") {
  sys().run([] {
    for (uint32_t h = 0; h < 2; ++h) REQUIRE(sys().node(h).driver.boot().ok());
    Side a = make_side(0, 1 << 16, QpType::ud), b = make_side(1, 1 << 16, QpType::ud);
    fb::ud_to_rts(*a.qp, 0x11);
    fb::ud_to_rts(*b.qp, 0x22);
    SendWr big = send_wr(0xA0, a.buf.sge(0, 5000));  // the UD MTU is 4096
    big.remote_qpn = b.qp->qpn;
    big.remote_qkey = 0x22;
    fb::post_send(*a.qp, big);
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].status == syndrome::kLocalLength);
    CHECK(device_state(*a.qp) == QpState::sqe);
    // The receive side of the same QP still works.
    fb::post_recv(*a.qp, RecvWr{0xC0, {a.buf.sge(8192, 1024)}});
    SendWr back = send_wr(0xB0, b.buf.sge(0, 100));
    back.remote_qpn = a.qp->qpn;
    back.remote_qkey = 0x11;
    fb::post_send(*b.qp, back);
    auto r = poll_n(*a.rcq, 1);
    REQUIRE(r.size() == 1);
    CHECK(r[0].status == 0);
    // SQE -> RTS: sending works again.
    QpAttr attr;
    attr.cur_state = QpState::sqe;
    attr.new_state = QpState::rts;
    REQUIRE(verbs::modify_qp(*a.qp, attr) == 0);
    fb::post_recv(*b.qp, RecvWr{0xC1, {b.buf.sge(8192, 1024)}});
    SendWr ok = send_wr(0xA1, a.buf.sge(0, 64));
    ok.remote_qpn = b.qp->qpn;
    ok.remote_qkey = 0x22;
    fb::post_send(*a.qp, ok);
    auto s2 = poll_n(*a.scq, 1);
    REQUIRE(s2.size() == 1);
    CHECK(s2[0].status == 0);
    CHECK(poll_n(*b.rcq, 1).size() == 1);
  });
}

TEST_CASE("[S21] SQD: started WQEs finish, new ones wait, the SQ drained event arrives once, SQD -> RTS resumes") {
  sys().run([] {
    auto [a, b] = rc_pair();
    std::vector<AsyncEvent> events;
    a.dev->async_handler = [&](const AsyncEvent& e) { events.push_back(e); };
    SendWr w = remote_wr(0xA0, a.buf.sge(0, 64 * 1024), sqwqe::kRdmaWrite, b.buf);
    fb::post_send(*a.qp, w);
    wait_us(1.5);  // the WRITE is on the wire
    QpAttr attr;
    attr.cur_state = QpState::rts;
    attr.new_state = QpState::sqd;
    REQUIRE(verbs::modify_qp(*a.qp, attr) == 0);
    w.wr_id = 0xA1;
    fb::post_send(*a.qp, w);
    auto s = poll_n(*a.scq, 1);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wr_id == 0xA0);
    wait_us(50);
    CHECK(verbs::peek_cq(*a.scq, 4) == 0);  // the second WRITE waits in SQD
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == eqe::kSqDrained);
    CHECK(events[0].data == a.qp->qpn);
    attr.cur_state = QpState::sqd;
    attr.new_state = QpState::rts;
    REQUIRE(verbs::modify_qp(*a.qp, attr) == 0);
    auto s2 = poll_n(*a.scq, 1);
    REQUIRE(s2.size() == 1);
    CHECK(s2[0].wr_id == 0xA1);
    CHECK(events.size() == 1);
  });
}
