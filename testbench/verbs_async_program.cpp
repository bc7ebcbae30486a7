// A verbs program (verbs.h only, linked against the drop-in library) that overruns a CQ and reads
// the async events the device raises: IBV_EVENT_CQ_ERR naming its CQ, then IBV_EVENT_QP_FATAL
// naming the QP that used it (its CQ overflowed, model/transport), both from the context's
// async_fd; then shows that another context cannot free its objects. Run by
// verbs_async_events.sh against `vhca-sim serve`; exit 0 if every check holds.
//
// The two sides: an RC QP on vhca0 whose send CQ holds 2 CQEs, connected to one on vhca1 with
// room for everything; 8 signaled SENDs, none polled, overflow the sender's CQ.
#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <infiniband/verbs.h>

namespace {
int failures = 0;
void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  if (!ok) ++failures;
}

struct Side {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  char buf[4096] = {};
  uint16_t lid = 0;
};

ibv_context* open_named(const char* name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* ctx = nullptr;
  for (int i = 0; list && i < n; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), name) == 0) ctx = ibv_open_device(list[i]);
  if (list) ibv_free_device_list(list);
  return ctx;
}

bool make_side(Side& s, const char* name, int cqe) {
  s.ctx = open_named(name);
  if (!s.ctx) return false;
  s.pd = ibv_alloc_pd(s.ctx);
  s.cq = s.pd ? ibv_create_cq(s.ctx, cqe, nullptr, nullptr, 0) : nullptr;
  s.mr = s.cq ? ibv_reg_mr(s.pd, s.buf, sizeof s.buf, IBV_ACCESS_LOCAL_WRITE) : nullptr;
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = s.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  s.qp = s.mr ? ibv_create_qp(s.pd, &init) : nullptr;
  ibv_port_attr port{};
  if (!s.qp || ibv_query_port(s.ctx, 1, &port)) return false;
  s.lid = port.lid;
  return true;
}

// A program frees what it made before closing its context (the library's objects are its memory).
bool free_side(Side& s) {
  bool ok = !s.qp || ibv_destroy_qp(s.qp) == 0;
  ok = (!s.mr || ibv_dereg_mr(s.mr) == 0) && ok;
  ok = (!s.cq || ibv_destroy_cq(s.cq) == 0) && ok;
  ok = (!s.pd || ibv_dealloc_pd(s.pd) == 0) && ok;
  return (!s.ctx || ibv_close_device(s.ctx) == 0) && ok;
}

bool connect(Side& s, const Side& peer) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = 0;
  if (ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return false;
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = peer.qp->qp_num;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = peer.lid;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return false;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                     IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}
}  // namespace

int main() {
  Side a, b;
  if (!make_side(a, "vhca0", 2) || !make_side(b, "vhca1", 64) || !connect(a, b) || !connect(b, a)) {
    std::printf("FAIL: set-up: %s\n", std::strerror(errno));
    return 1;
  }
  // Nothing has happened yet: a non-blocking async_fd says EAGAIN.
  const int flags = fcntl(a.ctx->async_fd, F_GETFL);
  fcntl(a.ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
  ibv_async_event ev{};
  errno = 0;
  check(ibv_get_async_event(a.ctx, &ev) == -1 && errno == EAGAIN, "no event yet: EAGAIN on a non-blocking async_fd");
  fcntl(a.ctx->async_fd, F_SETFL, flags);

  for (int i = 0; i < 8; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(b.buf) + uint64_t(i) * 16, 16, b.mr->lkey};
    ibv_recv_wr r{};
    r.wr_id = uint64_t(i);
    r.sg_list = &sge;
    r.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(b.qp, &r, &bad)) check(false, "post_recv");
  }
  for (int i = 0; i < 8; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(a.buf), 16, a.mr->lkey};
    ibv_send_wr w{};
    w.wr_id = uint64_t(100 + i);
    w.sg_list = &sge;
    w.num_sge = 1;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(a.qp, &w, &bad)) check(false, "post_send");
  }
  // The async_fd is a real descriptor: poll() says when an event is there (blocked in poll(), the
  // program lets simulated time run).
  pollfd p{a.ctx->async_fd, POLLIN, 0};
  check(poll(&p, 1, 10000) == 1 && (p.revents & POLLIN), "poll() on async_fd wakes for the event");
  check(ibv_get_async_event(a.ctx, &ev) == 0 && ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == a.cq,
        "IBV_EVENT_CQ_ERR naming the CQ that overflowed");
  ibv_ack_async_event(&ev);
  check(a.cq->async_events_completed == 1, "the ack is counted on the CQ");
  check(ibv_get_async_event(a.ctx, &ev) == 0 && ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == a.qp,
        "IBV_EVENT_QP_FATAL naming the QP whose CQ overflowed");
  ibv_ack_async_event(&ev);
  check(a.qp->events_completed == 1, "the ack is counted on the QP");
  // The other context saw nothing: events go to the owner of the object only.
  fcntl(b.ctx->async_fd, F_SETFL, fcntl(b.ctx->async_fd, F_GETFL) | O_NONBLOCK);
  errno = 0;
  check(ibv_get_async_event(b.ctx, &ev) == -1 && errno == EAGAIN, "the peer's context has no event");
  // An SRQ holding 2 WQEs, armed at 4: the SRQ-limit event at once, naming it, and it is disarmed.
  ibv_srq_init_attr sattr{};
  sattr.attr.max_wr = 8;
  sattr.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(b.pd, &sattr);
  check(srq != nullptr && sattr.attr.max_wr == 8, "an SRQ of 8 WQEs");
  if (srq) {
    for (int i = 0; i < 2; ++i) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(b.buf) + 2048, 64, b.mr->lkey};
      ibv_recv_wr r{};
      r.wr_id = uint64_t(200 + i);
      r.sg_list = &sge;
      r.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      check(ibv_post_srq_recv(srq, &r, &bad) == 0, "post_srq_recv");
    }
    ibv_srq_attr arm{};
    arm.srq_limit = 4;
    check(ibv_modify_srq(srq, &arm, IBV_SRQ_LIMIT) == 0, "arm the SRQ at 4");
    arm.max_wr = 16;
    check(ibv_modify_srq(srq, &arm, IBV_SRQ_MAX_WR) == EINVAL, "resizing an SRQ is refused");
    fcntl(b.ctx->async_fd, F_SETFL, fcntl(b.ctx->async_fd, F_GETFL) & ~O_NONBLOCK);
    check(ibv_get_async_event(b.ctx, &ev) == 0 && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq,
          "IBV_EVENT_SRQ_LIMIT_REACHED naming the SRQ");
    ibv_ack_async_event(&ev);
    ibv_srq_attr now{};
    check(ibv_query_srq(srq, &now) == 0 && now.srq_limit == 0 && now.max_wr == 8, "the event disarmed it");
    check(ibv_destroy_srq(srq) == 0, "destroy the SRQ");
  }
  // Objects belong to their connection: another context of the same process on the same device
  // (its own connection to the server) can neither free nor destroy them, whatever handle it names.
  ibv_context* other = open_named("vhca0");
  check(other != nullptr, "a second context on vhca0");
  if (other) {
    ibv_mr mr = *a.mr;
    mr.context = other;
    check(ibv_dereg_mr(&mr) == EINVAL, "another context cannot deregister the MR (EINVAL)");
    ibv_cq cq = *a.cq;
    cq.context = other;
    check(ibv_destroy_cq(&cq) == EINVAL, "nor destroy the CQ");
    ibv_qp qp = *a.qp;
    qp.context = other;
    check(ibv_destroy_qp(&qp) == EINVAL, "nor destroy the QP");
    ibv_pd pd = *a.pd;
    pd.context = other;
    check(ibv_dealloc_pd(&pd) == EINVAL, "nor free the PD");
    // Nor use its memory: a send from a QP of its own naming the first context's lkey (its buffer
    // is mapped in this very process) fails on the device with a local protection error.
    ibv_pd* opd = ibv_alloc_pd(other);
    ibv_cq* ocq = opd ? ibv_create_cq(other, 16, nullptr, nullptr, 0) : nullptr;
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = ocq;
    init.qp_type = IBV_QPT_UD;
    init.cap.max_send_wr = init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    ibv_qp* oqp = ocq ? ibv_create_qp(opd, &init) : nullptr;
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_INIT;
    qa.port_num = 1;
    qa.qkey = 0x11111111;
    bool up = oqp && ibv_modify_qp(oqp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0;
    qa = {};
    qa.qp_state = IBV_QPS_RTR;
    up = up && ibv_modify_qp(oqp, &qa, IBV_QP_STATE) == 0;
    qa.qp_state = IBV_QPS_RTS;
    up = up && ibv_modify_qp(oqp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
    ibv_ah_attr ah_attr{};
    ah_attr.dlid = b.lid;
    ah_attr.port_num = 1;
    ibv_ah* ah = up ? ibv_create_ah(opd, &ah_attr) : nullptr;
    check(ah != nullptr, "a UD QP and an address handle in the second context");
    if (ah) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(a.buf), 16, a.mr->lkey};  // the first context's key
      ibv_send_wr w{};
      w.wr_id = 77;
      w.sg_list = &sge;
      w.num_sge = 1;
      w.opcode = IBV_WR_SEND;
      w.send_flags = IBV_SEND_SIGNALED;
      w.wr.ud.ah = ah;
      w.wr.ud.remote_qpn = b.qp->qp_num;
      w.wr.ud.remote_qkey = 0x11111111;
      ibv_send_wr* bad = nullptr;
      check(ibv_post_send(oqp, &w, &bad) == 0, "the send is posted (the library cannot know the key)");
      ibv_wc wc{};
      int n = 0;
      for (int tries = 0; tries < 100000 && n == 0; ++tries) n = ibv_poll_cq(ocq, 1, &wc);
      check(n == 1 && wc.wr_id == 77 && wc.status == IBV_WC_LOC_PROT_ERR,
            "the device refuses another context's lkey: IBV_WC_LOC_PROT_ERR");
      ibv_destroy_ah(ah);
    }
    if (oqp) ibv_destroy_qp(oqp);
    if (ocq) ibv_destroy_cq(ocq);
    if (opd) ibv_dealloc_pd(opd);
    ibv_close_device(other);
  }
  check(free_side(b) && free_side(a), "every object destroyed, both contexts closed");
  return failures ? 1 : 0;
}
