// The command plane of the work-request path: PDs, MRs, QPs and their state machine; S4, S15, S25.
#include "testbench/test_support.h"

#include <cerrno>

#include "firmware-shim/qp_verbs.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

namespace {
Pd* make_pd() {
  Pd* pd = nullptr;
  REQUIRE(verbs::alloc_pd(sys().driver, &pd) == 0);
  return pd;
}
Qp* make_qp(Pd& pd, Cq* scq, Cq* rcq, QpType type = QpType::rc, uint32_t depth = 8) {
  Qp* qp = nullptr;
  int rc = verbs::create_qp(pd, QpInitAttr{type, scq, rcq, depth, depth}, &qp);
  INFO(sys().driver.last_error());
  REQUIRE(rc == 0);
  return qp;
}
}  // namespace

TEST_CASE("[S4] destroying a CQ is refused while any SQ or RQ is associated with it") {
  sys().run([] {
    boot();
    Pd* pd = make_pd();
    Cq* scq = make_cq(64);
    Cq* rcq = make_cq(64);
    Qp* qp = make_qp(*pd, scq, rcq);
    CHECK(verbs::destroy_cq(scq) == -EBUSY);
    CHECK(sys().driver.last_error() == "destroy_cq: RESOURCE_BUSY: DESTROY_CQ in[0] cqn: object in use");
    CHECK(verbs::destroy_cq(rcq) == -EBUSY);
    REQUIRE(verbs::destroy_qp(qp) == 0);
    CHECK(verbs::destroy_cq(scq) == 0);
    CHECK(verbs::destroy_cq(rcq) == 0);
  });
}

TEST_CASE("[S25] QP0 and QP1 may share a CQ only with each other") {
  sys().run([] {
    boot();
    Pd* pd = make_pd();
    Cq* special = make_cq(64);
    Cq* normal = make_cq(64);
    Qp* gsi = make_qp(*pd, special, special, QpType::gsi);
    Qp* smi = make_qp(*pd, special, special, QpType::smi);
    CHECK(gsi->qpn == 1);
    CHECK(smi->qpn == 0);
    Qp* rc = nullptr;
    CHECK(verbs::create_qp(*pd, QpInitAttr{QpType::rc, special, normal, 8, 8}, &rc) == -EINVAL);
    CHECK(sys().driver.last_error() == "create_qp: BAD_PARAM: CREATE_QP in[2] send_cqn: object in use");
    Qp* ud = make_qp(*pd, normal, normal, QpType::ud);
    CHECK(ud->qpn >= 2);
    REQUIRE(verbs::destroy_qp(gsi) == 0);
    Qp* gsi2 = nullptr;
    CHECK(verbs::create_qp(*pd, QpInitAttr{QpType::gsi, normal, special, 8, 8}, &gsi2) == -EINVAL);
    CHECK(sys().driver.last_error() == "create_qp: BAD_PARAM: CREATE_QP in[2] send_cqn: object in use");
    Qp* again = nullptr;
    CHECK(verbs::create_qp(*pd, QpInitAttr{QpType::smi, special, special, 8, 8}, &again) == -EBUSY);  // one QP0
  });
}

TEST_CASE("[S15] the library warns when a CQ is smaller than the work queues that complete into it") {
  sys().run([] {
    boot();
    Pd* pd = make_pd();
    Cq* big = make_cq(256);
    Cq* small = make_cq(16);
    make_qp(*pd, big, big, QpType::rc, 64);  // 64 + 64 <= 256: fine
    CHECK(sys().driver.warnings().empty());
    make_qp(*pd, small, big, QpType::rc, 32);  // 32 > 16
    REQUIRE(sys().driver.warnings().size() == 1);
    CHECK(sys().driver.warnings()[0].find("CQ " + std::to_string(small->cqn) + " has 16 entries") != std::string::npos);
  });
}

TEST_CASE("QP state machine: RESET -> INIT -> RTR -> RTS with the attributes of each transition, illegal ones refused") {
  sys().run([] {
    boot();
    Pd* pd = make_pd();
    Cq* cq = make_cq(64);
    Qp* qp = make_qp(*pd, cq, cq);
    QpAttr a;
    a.cur_state = QpState::reset;
    a.new_state = QpState::rts;
    CHECK(verbs::modify_qp(*qp, a) == -EINVAL);
    CHECK(sys().driver.last_error() == "modify_qp: BAD_RES_STATE: MODIFY_QP in[2] new_state: wrong state");
    a.new_state = QpState::init;
    a.dest_qpn = 5;  // not an attribute of RESET -> INIT
    CHECK(verbs::modify_qp(*qp, a) == -EINVAL);
    CHECK(sys().driver.last_error() ==
          "modify_qp: BAD_PARAM: MODIFY_QP in[6] dest_qpn: reserved bits or unused field not zero");
    a = QpAttr{};
    a.new_state = QpState::init;
    a.pkey_index = 3;
    a.access = kAccessRemoteWrite | kAccessRemoteRead;
    REQUIRE(verbs::modify_qp(*qp, a) == 0);
    a = QpAttr{};
    a.cur_state = QpState::init;
    a.new_state = QpState::rtr;
    a.dest_qpn = 0x1234;
    a.rq_psn = 100;
    a.path_mtu = 6;  // 8192: out of range
    CHECK(verbs::modify_qp(*qp, a) == -EINVAL);
    CHECK(sys().driver.last_error() == "modify_qp: BAD_PARAM: MODIFY_QP in[8] path_mtu: out of range");
    a.path_mtu = 5;
    a.max_dest_rd_atomic = 4;
    REQUIRE(verbs::modify_qp(*qp, a) == 0);
    a = QpAttr{};
    a.cur_state = QpState::rtr;
    a.new_state = QpState::rts;
    a.sq_psn = 200;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    REQUIRE(verbs::modify_qp(*qp, a) == 0);
    QpAttr q;
    REQUIRE(verbs::query_qp(*qp, q) == 0);
    CHECK(q.cur_state == QpState::rts);
    CHECK(q.dest_qpn == 0x1234);
    CHECK(q.rq_psn == 100);
    CHECK(q.sq_psn == 200);
    CHECK(q.path_mtu == 5);
    CHECK(q.access == (kAccessRemoteWrite | kAccessRemoteRead));
    // The caller's idea of the current state must be right.
    a = QpAttr{};
    a.cur_state = QpState::init;
    a.new_state = QpState::err;
    CHECK(verbs::modify_qp(*qp, a) == -EINVAL);
    CHECK(sys().driver.last_error() == "modify_qp: BAD_RES_STATE: MODIFY_QP in[1] cur_state: wrong state");
    a.cur_state = QpState::rts;
    REQUIRE(verbs::modify_qp(*qp, a) == 0);  // any state -> ERR
    a.cur_state = QpState::err;
    a.new_state = QpState::rts;
    CHECK(verbs::modify_qp(*qp, a) == -EINVAL);  // ERR -> RTS is not a transition
    a.new_state = QpState::reset;
    REQUIRE(verbs::modify_qp(*qp, a) == 0);  // -> RESET clears the attributes
    REQUIRE(verbs::query_qp(*qp, q) == 0);
    CHECK(q.cur_state == QpState::reset);
    CHECK(q.dest_qpn == 0);
  });
}

TEST_CASE("UC QP: RC's connection attributes without the ACK-related ones, remote write access only, SQE -> RTS after a send error") {
  sys().run([] {
    boot();
    Pd* pd = make_pd();
    Cq* cq = make_cq(64);
    Qp* qp = make_qp(*pd, cq, cq, QpType::uc);
    QpAttr a;
    a.new_state = QpState::init;
    a.access = kAccessRemoteWrite | kAccessRemoteRead;  // UC cannot be read from
    CHECK(verbs::modify_qp(*qp, a) == -EINVAL);
    CHECK(sys().driver.last_error() == "modify_qp: BAD_PARAM: MODIFY_QP in[5] access: out of range");
    a.access = kAccessRemoteWrite;
    REQUIRE(verbs::modify_qp(*qp, a) == 0);
    a = QpAttr{};
    a.cur_state = QpState::init;
    a.new_state = QpState::rtr;
    a.dest_qpn = 0x77;
    a.path_mtu = 3;
    a.min_rnr_timer = 12;  // no RNR on UC
    CHECK(verbs::modify_qp(*qp, a) == -EINVAL);
    CHECK(sys().driver.last_error() ==
          "modify_qp: BAD_PARAM: MODIFY_QP in[9] min_rnr_timer: reserved bits or unused field not zero");
    a.min_rnr_timer = 0;
    REQUIRE(verbs::modify_qp(*qp, a) == 0);
    a = QpAttr{};
    a.cur_state = QpState::rtr;
    a.new_state = QpState::rts;
    a.sq_psn = 9;
    a.timeout = 14;  // no ACK, so no ACK timeout
    CHECK(verbs::modify_qp(*qp, a) == -EINVAL);
    a.timeout = 0;
    REQUIRE(verbs::modify_qp(*qp, a) == 0);
    CHECK(qp_transition_allowed(QpType::uc, QpState::sqe, QpState::rts));  // as a datagram QP's send queue
    QpAttr q;
    REQUIRE(verbs::query_qp(*qp, q) == 0);
    CHECK(q.dest_qpn == 0x77);
    CHECK(q.path_mtu == 3);
  });
}

TEST_CASE("transition table: every (from, to) pair matches the IB QP state machine") {
  const QpState all[] = {QpState::reset, QpState::init, QpState::rtr, QpState::rts, QpState::sqd, QpState::sqe, QpState::err};
  int allowed_rc = 0, allowed_ud = 0;
  for (QpState from : all)
    for (QpState to : all) {
      allowed_rc += qp_transition_allowed(QpType::rc, from, to);
      allowed_ud += qp_transition_allowed(QpType::ud, from, to);
    }
  // Every state -> RESET and -> ERR (14), RESET->INIT, INIT->INIT, INIT->RTR, RTR->RTS, RTS->RTS,
  // RTS->SQD, SQD->SQD, SQD->RTS (8), and SQE->RTS for UD only.
  CHECK(allowed_rc == 22);
  CHECK(allowed_ud == 23);
  CHECK_FALSE(qp_transition_allowed(QpType::rc, QpState::reset, QpState::rtr));
  CHECK(qp_transition_allowed(QpType::ud, QpState::sqe, QpState::rts));
  CHECK_FALSE(qp_transition_allowed(QpType::rc, QpState::sqe, QpState::rts));
}

TEST_CASE("MRs: access rules, bounds, keys, a PD in use cannot be freed") {
  sys().run([] {
    boot();
    Pd* pd = make_pd();
    Mr* mr = nullptr;
    const uint64_t buf = sys().memory.allocate(8192);
    CHECK(verbs::reg_mr(*pd, buf, 8192, kAccessRemoteWrite, &mr) == -EINVAL);  // remote write needs local write
    CHECK(sys().driver.last_error() == "reg_mr: BAD_PARAM: REG_MR in[5] access: out of range");
    CHECK(verbs::reg_mr(*pd, buf, 0, kAccessLocalWrite, &mr) == -EINVAL);
    CHECK(verbs::reg_mr(*pd, ~uint64_t(0) - 10, 100, kAccessLocalWrite, &mr) == -EINVAL);  // wraps
    CHECK(verbs::reg_mr(*pd, buf, 8192, 1u << 4, &mr) == -EINVAL);
    REQUIRE(verbs::reg_mr(*pd, buf, 8192, kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteAtomic, &mr) == 0);
    CHECK(mr->lkey == mr->rkey);
    CHECK(verbs::dealloc_pd(pd) == -EBUSY);
    Mr stale = *mr;
    stale.lkey ^= 0x1;  // same index, another key
    CHECK(sys().driver.exec(cmd::kDeregMr, {stale.lkey}).status == cmd::kBadResource);
    REQUIRE(verbs::dereg_mr(mr) == 0);
    CHECK(verbs::dealloc_pd(pd) == 0);
  });
}
