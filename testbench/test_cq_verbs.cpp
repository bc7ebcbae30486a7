// The CQ verbs: S1 create, S2 query, S3 resize, S4 destroy, S6 poll, S13 peek, S16 CQE contents.
#include "testbench/test_support.h"

#include <cerrno>

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S1] create: at least the requested size, the actual size returned, unique CQNs, too large refused") {
  sys().run([] {
    boot();
    Cq* a = make_cq(100);
    Cq* b = make_cq(1);
    Cq* c = make_cq(4096);
    CHECK(a->cqe == 128);
    CHECK(b->cqe == 1);
    CHECK(c->cqe == 4096);
    CHECK(a->cqn != b->cqn);
    CHECK(b->cqn != c->cqn);
    CHECK(a->cqn != 0);
    Cq* big = nullptr;
    const int max = 1 << sys().driver.caps().log_max_cq_sz;
    CHECK(verbs::create_cq(sys().driver, max + 1, 0, &big) == -EINVAL);
    CHECK(big == nullptr);
    CHECK(sys().driver.last_error().find("above the device maximum") != std::string::npos);
    CHECK(verbs::create_cq(sys().driver, 0, 0, &big) == -EINVAL);
    CHECK(verbs::create_cq(sys().driver, 8, 99, &big) == -EINVAL);
    // The device refuses too: a log size above its maximum sent raw names the field.
    CommandResult r = sys().driver.exec(cmd::kCreateCq, {23, 0, 0x1000, 0, 0x2000, sys().driver.eqn_for_vector(0)});
    CHECK(r.status == cmd::kBadParam);
    CHECK(r.message() == "BAD_PARAM: CREATE_CQ in[0] log_size: out of range");
  });
}

TEST_CASE("[S2] query returns the actual size and the moderation settings") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(300, CqModeration{16, 12, PeriodMode::cqe});
    CqInfo info;
    REQUIRE(verbs::query_cq(*cq, info) == 0);
    CHECK(info.cqe == 512);
    CHECK(info.moderation.count == 16);
    CHECK(info.moderation.period_us == 12);
    CHECK(info.moderation.mode == PeriodMode::cqe);
  });
}

TEST_CASE("[S6] poll returns the oldest CQEs in order and consumes them, an empty CQ returns 0 without blocking") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    Wc wc[8];
    sc_core::sc_time t0 = sc_core::sc_time_stamp();
    CHECK(verbs::poll_cq(*cq, 8, wc) == 0);
    CHECK(sc_core::sc_time_stamp() - t0 == sys().cpu.config().empty_poll_cost);  // never blocks
    for (int i = 0; i < 5; ++i) sys().hca.inject(recv_record(cq->cqn, 100 + i), soon() + i);
    wait_us(2);
    REQUIRE(verbs::poll_cq(*cq, 2, wc) == 2);
    CHECK(wc[0].wr_id == 100);
    CHECK(wc[1].wr_id == 101);
    REQUIRE(verbs::poll_cq(*cq, 8, wc) == 3);
    CHECK(wc[0].wr_id == 102);
    CHECK(wc[2].wr_id == 104);
    CHECK(verbs::poll_cq(*cq, 8, wc) == 0);
  });
}

TEST_CASE("[S6] the owner bit makes entries valid across many wraps of a small CQ") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(4);
    uint64_t next = 0;
    for (int round = 0; round < 10; ++round) {
      for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, round * 3 + i), soon() + i);
      wait_us(1.5);
      for (const Wc& w : drain(*cq)) CHECK(w.wr_id == next++);
    }
    CHECK(next == 30);
    CHECK(sys().hca.cq.stats().owner_wraps >= 7);
  });
}

TEST_CASE("[S13] peek counts the available CQEs without consuming them") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    CHECK(verbs::peek_cq(*cq, 16) == 0);
    for (int i = 0; i < 6; ++i) sys().hca.inject(recv_record(cq->cqn, i), soon() + i);
    wait_us(2);
    CHECK(verbs::peek_cq(*cq, 16) == 6);
    CHECK(verbs::peek_cq(*cq, 4) == 4);
    CHECK(verbs::peek_cq(*cq, 16) == 6);  // nothing consumed
    CHECK(drain(*cq).size() == 6);
    CHECK(verbs::peek_cq(*cq, 16) == 0);
  });
}

TEST_CASE("[S16] CQE contents: every field of a UD/GSI receive, a requester CQE, and an error CQE") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    CompletionRecord ud = recv_record(cq->cqn, 0x1122334455667788ull, true);
    ud.opcode = cqe::kRespSendImm;
    ud.byte_cnt = 4096;
    ud.imm_present = true;
    ud.imm = 0xCAFEF00D;
    ud.qpn = 1;  // GSI
    ud.src_qpn = 0xABCDE;
    ud.slid = 0x1234;
    ud.sl = 7;
    ud.grh = true;
    ud.pkey_index = 3;
    ud.wqe_counter = 77;
    CompletionRecord snd = send_record(cq->cqn, 42);
    snd.send_opcode = 0x08;  // RDMA WRITE
    CompletionRecord err = error_record(cq->cqn, 43, syndrome::kRetryExceeded);
    err.vendor_syndrome = 0x81;
    err.byte_cnt = 999;  // undefined on error: must not leak into the CQE
    const uint64_t k = soon();
    sys().hca.inject(ud, k);
    sys().hca.inject(snd, k + 1);
    sys().hca.inject(err, k + 2);
    wait_us(2);
    auto w = drain(*cq);
    REQUIRE(w.size() == 3);
    CHECK(w[0].wr_id == 0x1122334455667788ull);
    CHECK(w[0].status == 0);
    CHECK(w[0].opcode == cqe::kRespSendImm);
    CHECK(w[0].byte_len == 4096);
    CHECK(w[0].imm_present);
    CHECK(w[0].imm == 0xCAFEF00D);
    CHECK(w[0].qpn == 1);
    CHECK(w[0].src_qp == 0xABCDE);
    CHECK(w[0].slid == 0x1234);
    CHECK(w[0].sl == 7);
    CHECK(w[0].grh);
    CHECK(w[0].pkey_index == 3);
    CHECK(w[0].se);
    CHECK(w[0].wqe_counter == 77);
    CHECK(w[0].timestamp == k + kCompletionActs);
    CHECK(w[1].opcode == cqe::kReq);
    CHECK(w[1].send_opcode == 0x08);
    CHECK(w[1].byte_len == 128);
    CHECK(w[1].wr_id == 42);
    CHECK(w[2].opcode == cqe::kReqErr);
    CHECK(w[2].status == syndrome::kRetryExceeded);
    CHECK(w[2].vendor_err == 0x81);
    CHECK(w[2].wr_id == 43);
    CHECK(w[2].qpn == 0x12);
    CHECK(w[2].byte_len == 0);
    // The raw bytes: big-endian wr_id at 0, op_own last with opcode in the high nibble.
    uint8_t raw[64];
    sys().cpu.read(cq->buf, raw, 64);
    CHECK(raw[0] == 0x11);
    CHECK(raw[7] == 0x88);
    CHECK((raw[63] >> 4) == cqe::kRespSendImm);
    CHECK((raw[63] & 1) == 0);  // first pass: owner 0
  });
}

TEST_CASE("[S3] resize under traffic: at least the new size, no CQE lost, duplicated or reordered") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    const int total = 300;
    const uint64_t k = soon();
    for (int i = 0; i < total; ++i) sys().hca.inject(recv_record(cq->cqn, uint64_t(i)), k + 200 * uint64_t(i));
    std::vector<uint64_t> seen;
    int resizes = 0;
    // 300 CQEs arrive over 120 us: 400 polls of 1 us are plenty; a broken model fails, not hangs.
    for (int polls = 0; polls < 400 && seen.size() < size_t(total); ++polls) {
      for (const Wc& w : drain(*cq)) seen.push_back(w.wr_id);
      if (seen.size() > 50 && resizes == 0) {
        REQUIRE(verbs::resize_cq(*cq, 200) == 256);
        ++resizes;
      } else if (seen.size() > 150 && resizes == 1) {
        REQUIRE(verbs::resize_cq(*cq, 20) == 32);
        ++resizes;
      }
      wait_us(1);
    }
    CHECK(resizes == 2);
    REQUIRE(seen.size() == size_t(total));
    for (int i = 0; i < total; ++i) CHECK(seen[size_t(i)] == uint64_t(i));
    CHECK(sys().hca.cq.stats().overflows == 0);
    CqInfo info;
    verbs::query_cq(*cq, info);
    CHECK(info.cqe == 32);
  });
}

TEST_CASE("[S3] resize below the outstanding CQEs is refused and the CQ keeps working") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    for (int i = 0; i < 10; ++i) sys().hca.inject(recv_record(cq->cqn, i), soon() + i);
    wait_us(2);
    CHECK(verbs::resize_cq(*cq, 8) == -EINVAL);
    CHECK(sys().driver.last_error().find("smaller than the CQEs outstanding") != std::string::npos);
    CHECK(cq->cqe == 16);
    sys().hca.inject(recv_record(cq->cqn, 10), soon());
    wait_us(2);
    auto w = drain(*cq);
    REQUIRE(w.size() == 11);
    for (size_t i = 0; i < w.size(); ++i) CHECK(w[i].wr_id == i);
    CHECK((sys().driver.caps().flags & kCapResize) != 0);  // the capability bit the driver checks
  });
}

TEST_CASE("[S4] destroy: a destroyed CQ is gone, destroying an unknown CQ is refused") {
  // S4's refusal while a WQ is associated needs QPs: tested with the work-request path.
  sys().run([] {
    boot();
    const size_t owned = sys().driver.objects_owned();
    Cq* cq = make_cq(16);
    const uint32_t cqn = cq->cqn;
    // The library owns what it hands out until the destroy verb (what a program leaves goes with
    // the driver): a failed create leaves nothing behind.
    CHECK(sys().driver.objects_owned() == owned + 1);
    Cq* refused = nullptr;
    CHECK(verbs::create_cq(sys().driver, 8, 99, &refused) == -EINVAL);  // refused by the library
    CHECK(verbs::create_cq(sys().driver, 8, 0, &refused, {}, 1u << 31) != 0);  // refused by the device
    CHECK(refused == nullptr);
    CHECK(sys().driver.objects_owned() == owned + 1);
    REQUIRE(verbs::destroy_cq(cq) == 0);
    CHECK(sys().driver.objects_owned() == owned);
    CHECK_FALSE(sys().hca.cq.cq_exists(cqn));
    CommandResult r = sys().driver.exec(cmd::kDestroyCq, {cqn});
    CHECK(r.status == cmd::kBadResource);
    CHECK(r.message() == "BAD_RESOURCE: DESTROY_CQ in[0] cqn: no such object");
    Cq* again = make_cq(16);
    CHECK(again->cqn == cqn);  // the number is reused
  });
}
