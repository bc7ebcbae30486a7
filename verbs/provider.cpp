// The userspace provider's part of the drop-in libibverbs: memory regions, CQs, QPs, address
// handles and completion channels, made by the server's driver (the kernel side), and the data
// path, which never goes through a command: WQEs written into the QP's rings, doorbell records
// updated, doorbells rung (posted MMIO writes), CQEs polled from the CQ's buffer and CQs armed with
// the arm word. Rings, CQ buffers and doorbell records are memory the server shares with the
// program (a memfd mapped on both sides, and mapped into the simulated host memory); every
// layout comes from the one format table (firmware-shim/queue_format.h, model/regs/tables.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "firmware-shim/queue_format.h"
#include "verbs/client.h"
#include "verbs/unix_socket.h"

namespace vhca::client {

struct Cq {
  ibv_cq cq;
  uint8_t* mem = nullptr;
  uint32_t map_length = 0;
  uint32_t log_size = 0, dbr_offset = 0;
  uint32_t ci = 0;             // consumer index (24 bits)
  uint8_t arm_sn = 0;          // advanced with each event taken (ibv_get_cq_event)
  uint32_t polled = 0;         // CQEs polled and not yet reported (their CPU cost)
  pthread_mutex_t lock;
};

struct Srq {
  ibv_srq srq;
  uint8_t* mem = nullptr;
  wire::SrqCreated layout{};
  uint16_t pi = 0, ci = 0;  // posted; consumed (from the receive CQEs polled)
  pthread_mutex_t lock;
};

struct Qp {
  ibv_qp qp;
  uint8_t* mem = nullptr;
  wire::QpCreated layout{};
  ibv_qp_init_attr init{};
  uint16_t sq_pi = 0, sq_ci = 0, rq_pi = 0, rq_ci = 0;
  Srq* srq = nullptr;  // its receives come from this SRQ
  pthread_mutex_t lock;
};

struct Ah {
  ibv_ah ah;
  uint16_t dlid;
  uint8_t sl;
  bool grh;
};

struct Channel {
  ibv_comp_channel ch;
  uint32_t handle;
  uint32_t taken = 0;  // events read from it
};

namespace {

template <typename T>
T* object_of(void* verbs_struct) {
  return reinterpret_cast<T*>(verbs_struct);
}

int set_errno(int err) {
  errno = err;
  return err;
}

template <typename T>
T* fail_null(int err) {
  errno = err;
  return nullptr;
}

uint8_t* map_shared(int fd, uint32_t length) {
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

// The device's completion syndromes as verbs statuses.
ibv_wc_status wc_status(uint8_t syndrome) {
  switch (syndrome) {
    case 0: return IBV_WC_SUCCESS;
    case syndrome::kLocalLength: return IBV_WC_LOC_LEN_ERR;
    case syndrome::kLocalQpOp: return IBV_WC_LOC_QP_OP_ERR;
    case syndrome::kLocalProtection: return IBV_WC_LOC_PROT_ERR;
    case syndrome::kWrFlush: return IBV_WC_WR_FLUSH_ERR;
    case syndrome::kBadResponse: return IBV_WC_BAD_RESP_ERR;
    case syndrome::kLocalAccess: return IBV_WC_LOC_ACCESS_ERR;
    case syndrome::kRemoteInvalidRequest: return IBV_WC_REM_INV_REQ_ERR;
    case syndrome::kRemoteAccess: return IBV_WC_REM_ACCESS_ERR;
    case syndrome::kRemoteOp: return IBV_WC_REM_OP_ERR;
    case syndrome::kRetryExceeded: return IBV_WC_RETRY_EXC_ERR;
    case syndrome::kRnrRetryExceeded: return IBV_WC_RNR_RETRY_EXC_ERR;
    default: return IBV_WC_GENERAL_ERR;
  }
}

ibv_wc_opcode wc_opcode(const Wc& w) {
  if (queue_format::is_send_completion(w)) {
    switch (w.send_opcode) {
      case sqwqe::kRdmaWrite:
      case sqwqe::kRdmaWriteImm: return IBV_WC_RDMA_WRITE;
      case sqwqe::kRdmaRead: return IBV_WC_RDMA_READ;
      case sqwqe::kAtomicCs: return IBV_WC_COMP_SWAP;
      case sqwqe::kAtomicFa: return IBV_WC_FETCH_ADD;
      default: return IBV_WC_SEND;
    }
  }
  return w.opcode == cqe::kRespWriteImm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
}

Qp* find_qp(Context* c, uint32_t qpn) {
  pthread_mutex_lock(&c->objects_lock);
  auto it = c->qps.find(qpn);
  Qp* qp = it == c->qps.end() ? nullptr : it->second;
  pthread_mutex_unlock(&c->objects_lock);
  return qp;
}

// The ring slots a completion frees (and a failed one's QP state), as the driver does.
void account(Context* c, const Wc& w) {
  Qp* qp = find_qp(c, w.qpn);
  if (!qp) return;
  pthread_mutex_lock(&qp->lock);
  const bool send = queue_format::is_send_completion(w);
  if (send)
    qp->sq_ci = uint16_t(w.wqe_counter + 1);  // this WQE and every unsignaled one before it
  else if (!qp->srq)
    ++qp->rq_ci;
  if (w.status && (qp->qp.qp_type == IBV_QPT_RC || (qp->qp.qp_type == IBV_QPT_UC && !send))) qp->qp.state = IBV_QPS_ERR;
  pthread_mutex_unlock(&qp->lock);
  if (!send && qp->srq) {  // an SRQ's WQEs are consumed in order, whichever QP took them
    pthread_mutex_lock(&qp->srq->lock);
    qp->srq->ci = uint16_t(w.wqe_counter + 1);
    pthread_mutex_unlock(&qp->srq->lock);
  }
}

void to_wc(const Wc& w, ibv_wc& wc) {
  std::memset(&wc, 0, sizeof wc);
  wc.wr_id = w.wr_id;
  wc.status = wc_status(w.status);
  wc.opcode = wc_opcode(w);
  wc.vendor_err = w.vendor_err;
  wc.qp_num = w.qpn;
  if (w.status) return;  // on error only wr_id, status and the QP are defined
  wc.byte_len = w.byte_len;
  wc.imm_data = w.imm;  // carried as the program wrote it (network order)
  wc.wc_flags = (w.imm_present ? IBV_WC_WITH_IMM : 0) | (w.grh ? IBV_WC_GRH : 0);
  wc.src_qp = w.src_qp;
  wc.pkey_index = w.pkey_index;
  wc.slid = w.slid;
  wc.sl = w.sl;
}

// An empty poll: the server lets simulated time run until something the program can see changes.
void await_change(Cq* cq) {
  const wire::Await a{cq->polled};
  cq->polled = 0;
  context_call(cq->cq.context, wire::Op::await, &a, sizeof a);
}

int poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = object_of<Cq>(ibcq);
  Context* c = context_of(ibcq->context);
  pthread_mutex_lock(&cq->lock);
  int got = 0;
  const uint32_t mask = (1u << cq->log_size) - 1;
  while (got < n) {
    const uint8_t* e = cq->mem + uint64_t(cq->ci & mask) * cqe::kSize;
    if (!queue_format::cqe_valid(e, cq->ci, uint8_t(cq->log_size))) break;
    std::atomic_thread_fence(std::memory_order_acquire);  // the entry's body after its owner byte
    const Wc w = queue_format::parse_cqe(e);
    account(c, w);
    to_wc(w, wc[got++]);
    cq->ci = (cq->ci + 1) & 0xFFFFFF;
  }
  if (got) {
    cq->polled += uint32_t(got);
    std::atomic_thread_fence(std::memory_order_release);
    put_field(cq->mem + cq->dbr_offset, dbr::consumer_index, cq->ci);
  } else {
    await_change(cq);
  }
  pthread_mutex_unlock(&cq->lock);
  return got;
}

// Arms with the index of the first entry not yet written: CQEs already there raise no event (S9).
int req_notify_cq(ibv_cq* ibcq, int solicited_only) {
  Cq* cq = object_of<Cq>(ibcq);
  pthread_mutex_lock(&cq->lock);
  const uint32_t size = 1u << cq->log_size;
  uint32_t present = 0;
  while (present < size) {
    const uint32_t index = (cq->ci + present) & 0xFFFFFF;
    if (!queue_format::cqe_valid(cq->mem + uint64_t(index & (size - 1)) * cqe::kSize, index, uint8_t(cq->log_size)))
      break;
    ++present;
  }
  const uint32_t seen = (cq->ci + present) & 0xFFFFFF;
  const uint32_t cmd = solicited_only ? 1 : 0;
  queue_format::put_arm_word(cq->mem + cq->dbr_offset, seen, cmd, cq->arm_sn);
  std::atomic_thread_fence(std::memory_order_release);
  const wire::Doorbell d{uint32_t(wire::DoorbellKind::cq_arm), 0, queue_format::arm_doorbell(cq->cq.handle, seen, cmd, cq->arm_sn)};
  pthread_mutex_unlock(&cq->lock);
  return context_post(ibcq->context, wire::Op::doorbell, &d, sizeof d);
}

bool send_opcode(ibv_wr_opcode op, uint8_t& out) {
  switch (op) {
    case IBV_WR_RDMA_WRITE: out = sqwqe::kRdmaWrite; return true;
    case IBV_WR_RDMA_WRITE_WITH_IMM: out = sqwqe::kRdmaWriteImm; return true;
    case IBV_WR_SEND: out = sqwqe::kSend; return true;
    case IBV_WR_SEND_WITH_IMM: out = sqwqe::kSendImm; return true;
    case IBV_WR_RDMA_READ: out = sqwqe::kRdmaRead; return true;
    case IBV_WR_ATOMIC_CMP_AND_SWP: out = sqwqe::kAtomicCs; return true;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: out = sqwqe::kAtomicFa; return true;
    default: return false;
  }
}

std::vector<Sge> sges_of(const ibv_sge* list, int n) {
  std::vector<Sge> out;
  for (int i = 0; i < n; ++i) out.push_back(Sge{list[i].addr, list[i].length, list[i].lkey});
  return out;
}

// One ibv_send_wr as the device's work request; false: the verbs would refuse it (EINVAL).
bool to_send_wr(const Qp& qp, const ibv_send_wr& in, SendWr& wr, uint8_t* gathered) {
  if (!send_opcode(in.opcode, wr.opcode) || in.num_sge < 0) return false;
  wr.wr_id = in.wr_id;
  auto flag = [&](unsigned verbs_flag, SendFlags ours) { return (in.send_flags & verbs_flag) ? uint32_t(ours) : 0u; };
  wr.flags = flag(IBV_SEND_SIGNALED, kSendSignaled) | flag(IBV_SEND_SOLICITED, kSendSolicited) |
             flag(IBV_SEND_FENCE, kSendFence) | flag(IBV_SEND_INLINE, kSendInline);
  wr.sg_list = sges_of(in.sg_list, in.num_sge);
  wr.imm = in.imm_data;
  if (qp.qp.qp_type == IBV_QPT_UD) {
    const Ah* ah = reinterpret_cast<const Ah*>(in.wr.ud.ah);
    if (!ah) return false;
    wr.remote_qpn = in.wr.ud.remote_qpn;
    wr.remote_qkey = in.wr.ud.remote_qkey;
    wr.dlid = ah->dlid;
    wr.sl = ah->sl;
    wr.grh = ah->grh;
  } else if (wr.opcode == sqwqe::kAtomicCs || wr.opcode == sqwqe::kAtomicFa) {
    wr.remote_addr = in.wr.atomic.remote_addr;
    wr.rkey = in.wr.atomic.rkey;
    wr.compare_add = in.wr.atomic.compare_add;
    wr.swap = in.wr.atomic.swap;
  } else {
    wr.remote_addr = in.wr.rdma.remote_addr;
    wr.rkey = in.wr.rdma.rkey;
  }
  if (!queue_format::send_wr_problem(qp.qp.qp_type == IBV_QPT_UD ? QpType::ud : QpType::rc, wr).empty()) return false;
  if (wr.flags & kSendInline) {  // the CPU copies the data into the WQE, from the program's own memory
    uint32_t off = 0;
    for (const Sge& s : wr.sg_list) {
      std::memcpy(gathered + off, reinterpret_cast<const void*>(s.addr), s.length);
      off += s.length;
    }
  }
  return true;
}

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = object_of<Qp>(ibqp);
  pthread_mutex_lock(&qp->lock);
  int rc = 0;
  uint32_t posted = 0;
  if (ibqp->state == IBV_QPS_RESET || ibqp->state == IBV_QPS_INIT || ibqp->state == IBV_QPS_RTR) rc = EINVAL;
  for (; wr && !rc; wr = wr->next) {
    SendWr w;
    uint8_t gathered[sqwqe::kMaxInline];
    if (!to_send_wr(*qp, *wr, w, gathered)) {
      rc = EINVAL;
      break;
    }
    if (uint16_t(qp->sq_pi - qp->sq_ci) >= qp->layout.sq_depth) {
      rc = ENOMEM;
      break;
    }
    uint8_t* slot = qp->mem + qp->layout.sq_offset + uint64_t(qp->sq_pi & (qp->layout.sq_depth - 1)) * sqwqe::kSize;
    queue_format::encode_send_wqe(slot, w, ibqp->qp_num, qp->init.sq_sig_all || (w.flags & kSendSignaled), qp->sq_pi,
                                  gathered);
    ++qp->sq_pi;
    ++posted;
  }
  if (rc && bad) *bad = wr;
  const uint16_t pi = qp->sq_pi;
  if (posted) {
    // The record first, then the doorbell: the device must never see a counter ahead of the WQEs.
    std::atomic_thread_fence(std::memory_order_release);
    put_field(qp->mem + qp->layout.dbr_offset, qpdbr::sq_pi, pi);
  }
  pthread_mutex_unlock(&qp->lock);
  if (posted) {
    const wire::Doorbell d{uint32_t(wire::DoorbellKind::send), posted, queue_format::wq_doorbell(ibqp->qp_num, pi)};
    if (context_post(ibqp->context, wire::Op::doorbell, &d, sizeof d) && !rc) rc = EIO;
  }
  return rc;
}

// Receive WQEs into a ring (a QP's RQ or an SRQ) at *pi, then the producer counter into the
// doorbell record: the device reads the record when a message needs a WQE. Returns 0 or the
// errno of the first WR refused (*wr is left at it); `posted` counts those written.
int write_receives(ibv_recv_wr*& wr, uint8_t* ring, uint32_t depth, uint16_t& pi, uint16_t ci, uint8_t* dbr,
                   uint32_t& posted) {
  int rc = 0;
  for (; wr; wr = wr->next) {
    if (wr->num_sge < 0 || uint32_t(wr->num_sge) > rqwqe::kMaxSge) {
      rc = EINVAL;
      break;
    }
    if (uint16_t(pi - ci) >= depth) {
      rc = ENOMEM;
      break;
    }
    const RecvWr w{wr->wr_id, sges_of(wr->sg_list, wr->num_sge)};
    queue_format::encode_recv_wqe(ring + uint64_t(pi & (depth - 1)) * rqwqe::kSize, w, pi);
    ++pi;
    ++posted;
  }
  if (posted) {
    std::atomic_thread_fence(std::memory_order_release);
    put_field(dbr, qpdbr::rq_pi, pi);
  }
  return rc;
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* srq = object_of<Srq>(ibsrq);
  pthread_mutex_lock(&srq->lock);
  uint32_t posted = 0;
  const int rc = write_receives(wr, srq->mem, srq->layout.depth, srq->pi, srq->ci, srq->mem + srq->layout.dbr_offset, posted);
  pthread_mutex_unlock(&srq->lock);
  if (rc && bad) *bad = wr;
  return rc;
}

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = object_of<Qp>(ibqp);
  if (qp->srq) {  // IB: a QP on an SRQ has no receive queue of its own
    if (bad) *bad = wr;
    return EINVAL;
  }
  pthread_mutex_lock(&qp->lock);
  uint32_t posted = 0;
  int rc = ibqp->state == IBV_QPS_RESET ? EINVAL : 0;
  if (!rc)
    rc = write_receives(wr, qp->mem + qp->layout.rq_offset, qp->layout.rq_depth, qp->rq_pi, qp->rq_ci,
                        qp->mem + qp->layout.dbr_offset, posted);
  if (rc && bad) *bad = wr;
  const uint16_t pi = qp->rq_pi;
  const bool in_error = ibqp->state == IBV_QPS_ERR;
  pthread_mutex_unlock(&qp->lock);
  // The device reads the record when a message needs a receive WQE; a QP in error learns of new
  // ones only through the doorbell (to flush them), as the driver does.
  if (posted && in_error) {
    const wire::Doorbell d{uint32_t(wire::DoorbellKind::recv), posted, queue_format::wq_doorbell(ibqp->qp_num, pi)};
    context_post(ibqp->context, wire::Op::doorbell, &d, sizeof d);
  }
  return rc;
}

}  // namespace

// Destroys an object whose memory the server shared (a QP, an SRQ): the server's command, then
// its entry in the context, its mapping and the object itself. Returns 0 or the errno.
template <typename T>
int destroy_mapped(ibv_context* c, wire::Op op, uint32_t number, std::map<uint32_t, T*> Context::*registry, T* obj) {
  const wire::Handle h{number};
  if (const int rc = context_call(c, op, &h, sizeof h)) return rc;
  Context* ctx = context_of(c);
  pthread_mutex_lock(&ctx->objects_lock);
  (ctx->*registry).erase(number);
  pthread_mutex_unlock(&ctx->objects_lock);
  ::munmap(obj->mem, obj->layout.map_length);
  pthread_mutex_destroy(&obj->lock);
  delete obj;
  return 0;
}

int open_event_socket(ibv_context* c, wire::Op op, std::vector<uint8_t>& reply) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return -1;
  // The server's end goes with the request; the program keeps the other.
  const int rc = context_call(c, op, nullptr, 0, reply, nullptr, ends[1]);
  ::close(ends[1]);
  if (rc) {
    ::close(ends[0]);
    errno = rc;
    return -1;
  }
  return ends[0];
}

void install_data_path(ibv_context* c) {
  c->ops.poll_cq = poll_cq;
  c->ops.req_notify_cq = req_notify_cq;
  c->ops.post_send = post_send;
  c->ops.post_recv = post_recv;
  c->ops.post_srq_recv = post_srq_recv;
}

}  // namespace vhca::client

namespace client = vhca::client;
namespace wire = vhca::wire;
using client::context_call;

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

extern "C" {

// The buffer at addr, named by work requests as iova (ibv_reg_mr: its own address).
ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (!pd) return client::fail_null<ibv_mr>(EINVAL);
  const wire::RegMr r{pd->handle, access, reinterpret_cast<uint64_t>(addr), length, iova};
  wire::MrKeys keys;
  if (const int rc = context_call(pd->context, wire::Op::reg_mr, &r, sizeof r, keys)) return client::fail_null<ibv_mr>(rc);
  auto* mr = new (std::nothrow) ibv_mr{pd->context, pd, addr, length, keys.lkey, keys.lkey, keys.rkey};
  if (!mr) errno = ENOMEM;
  return mr;
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, unsigned(access));
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uint64_t>(addr), unsigned(access));
}

int ibv_dereg_mr(ibv_mr* mr) {
  if (!mr) return client::set_errno(EINVAL);
  const wire::Handle h{mr->lkey};
  if (const int rc = context_call(mr->context, wire::Op::dereg_mr, &h, sizeof h)) return client::set_errno(rc);
  delete mr;
  return 0;
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  if (!context) return client::fail_null<ibv_comp_channel>(EINVAL);
  std::vector<uint8_t> reply;
  const int fd = client::open_event_socket(context, wire::Op::create_comp_channel, reply);
  if (fd < 0) return nullptr;
  auto* ch = reply.size() == sizeof(wire::Handle) ? new (std::nothrow) client::Channel{} : nullptr;
  if (!ch) {
    ::close(fd);
    return client::fail_null<ibv_comp_channel>(reply.size() == sizeof(wire::Handle) ? ENOMEM : EIO);
  }
  std::memcpy(&ch->handle, reply.data(), sizeof ch->handle);
  ch->ch.context = context;
  ch->ch.fd = fd;
  ch->ch.refcnt = 0;
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (!channel) return client::set_errno(EINVAL);
  auto* ch = reinterpret_cast<client::Channel*>(channel);
  const wire::Handle h{ch->handle};
  if (const int rc = context_call(channel->context, wire::Op::destroy_comp_channel, &h, sizeof h)) return client::set_errno(rc);
  ::close(channel->fd);
  delete ch;
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  if (!context || cqe < 1 || comp_vector < 0) return client::fail_null<ibv_cq>(EINVAL);
  const wire::CreateCq r{uint32_t(cqe), uint32_t(comp_vector),
                         channel ? reinterpret_cast<client::Channel*>(channel)->handle : wire::kNoChannel};
  wire::CqCreated out;
  int fd = -1;
  if (const int rc = context_call(context, wire::Op::create_cq, &r, sizeof r, out, &fd)) return client::fail_null<ibv_cq>(rc);
  uint8_t* mem = fd >= 0 ? client::map_shared(fd, out.map_length) : nullptr;
  auto* cq = mem ? new (std::nothrow) client::Cq{} : nullptr;
  if (!cq) {
    if (mem) ::munmap(mem, out.map_length);
    const wire::Handle h{out.cqn};
    wire::Count ignored;
    context_call(context, wire::Op::destroy_cq, &h, sizeof h, ignored);
    return client::fail_null<ibv_cq>(ENOMEM);
  }
  cq->mem = mem;
  cq->map_length = out.map_length;
  cq->log_size = out.log_size;
  cq->dbr_offset = out.dbr_offset;
  pthread_mutex_init(&cq->lock, nullptr);
  cq->cq.context = context;
  cq->cq.channel = channel;
  cq->cq.cq_context = cq_context;
  cq->cq.handle = out.cqn;
  cq->cq.cqe = int((1u << out.log_size) - 1);
  pthread_mutex_init(&cq->cq.mutex, nullptr);
  pthread_cond_init(&cq->cq.cond, nullptr);
  if (channel) ++channel->refcnt;
  client::Context* c = client::context_of(context);
  pthread_mutex_lock(&c->objects_lock);
  c->cqs[out.cqn] = cq;
  pthread_mutex_unlock(&c->objects_lock);
  return &cq->cq;
}

// Waits, as rdma-core does, until every event the server reported for the CQ has been acked.
int ibv_destroy_cq(ibv_cq* ibcq) {
  if (!ibcq) return client::set_errno(EINVAL);
  auto* cq = reinterpret_cast<client::Cq*>(ibcq);
  const wire::Handle h{ibcq->handle};
  wire::Count reported{};
  if (const int rc = context_call(ibcq->context, wire::Op::destroy_cq, &h, sizeof h, reported)) return client::set_errno(rc);
  client::Context* c = client::context_of(ibcq->context);
  pthread_mutex_lock(&c->objects_lock);
  c->cqs.erase(ibcq->handle);
  pthread_mutex_unlock(&c->objects_lock);
  pthread_mutex_lock(&ibcq->mutex);
  while (ibcq->comp_events_completed != reported.count) pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
  pthread_mutex_unlock(&ibcq->mutex);
  if (ibcq->channel) --ibcq->channel->refcnt;
  ::munmap(cq->mem, cq->map_length);
  pthread_mutex_destroy(&cq->lock);
  delete cq;
  return 0;
}

// The next completion event on the channel: a record (the CQN) the server wrote to it. A
// blocking channel waits in the server (the time rule); a non-blocking one says EAGAIN.
int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq_out, void** cq_context) {
  if (!channel || !cq_out || !cq_context) {
    errno = EINVAL;
    return -1;
  }
  auto* ch = reinterpret_cast<client::Channel*>(channel);
  uint32_t cqn = 0;
  for (;;) {
    const ssize_t n = ::recv(channel->fd, &cqn, sizeof cqn, MSG_DONTWAIT | MSG_WAITALL);
    if (n == ssize_t(sizeof cqn)) break;
    if (n > 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || n == 0) {
      errno = n == 0 ? EIO : errno;
      return -1;
    }
    if (::fcntl(channel->fd, F_GETFL) & O_NONBLOCK) return -1;  // errno EAGAIN, as the real library's read()
    const wire::AwaitEvent a{ch->handle, ch->taken};
    if (const int rc = context_call(channel->context, wire::Op::await_event, &a, sizeof a)) {
      errno = rc;
      return -1;
    }
  }
  ++ch->taken;
  client::Context* c = client::context_of(channel->context);
  pthread_mutex_lock(&c->objects_lock);
  auto it = c->cqs.find(cqn);
  client::Cq* cq = it == c->cqs.end() ? nullptr : it->second;
  pthread_mutex_unlock(&c->objects_lock);
  if (!cq) {
    errno = EIO;
    return -1;
  }
  cq->arm_sn = (cq->arm_sn + 1) & 3;  // the device expects the next arm with the next sequence number
  *cq_out = &cq->cq;
  *cq_context = cq->cq.cq_context;
  return 0;
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (!cq) return;
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

// The next async event: a record the server wrote to the context's async channel, naming the CQ
// or QP by its number. A blocking read waits outside the library (the time rule sees the thread
// asleep and lets simulated time run); a non-blocking channel says EAGAIN, as the real library.
int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  if (!context || !event) {
    errno = EINVAL;
    return -1;
  }
  wire::AsyncRecord rec{};
  for (size_t got = 0; got < sizeof rec;) {
    const ssize_t n = ::read(context->async_fd, reinterpret_cast<uint8_t*>(&rec) + got, sizeof rec - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;  // EAGAIN on a non-blocking channel
    if (n == 0) {
      errno = EIO;  // the server went away
      return -1;
    }
    got += size_t(n);
  }
  std::memset(event, 0, sizeof *event);
  event->event_type = ibv_event_type(rec.event_type);
  client::Context* c = client::context_of(context);
  pthread_mutex_lock(&c->objects_lock);
  if (rec.event_type == IBV_EVENT_CQ_ERR) {
    auto it = c->cqs.find(rec.object);
    event->element.cq = it == c->cqs.end() ? nullptr : &it->second->cq;
  } else if (rec.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
    auto it = c->srqs.find(rec.object);
    event->element.srq = it == c->srqs.end() ? nullptr : &it->second->srq;
  } else if (rec.event_type == IBV_EVENT_PORT_ACTIVE || rec.event_type == IBV_EVENT_PORT_ERR) {
    event->element.port_num = int(rec.object);
  } else {
    auto it = c->qps.find(rec.object);
    event->element.qp = it == c->qps.end() ? nullptr : &it->second->qp;
  }
  pthread_mutex_unlock(&c->objects_lock);
  return 0;
}

// Counted on the object, as rdma-core does (its destroy waits for them; here destroy does not).
void ibv_ack_async_event(ibv_async_event* event) {
  if (!event) return;
  if (event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED && event->element.srq) {
    ibv_srq* srq = event->element.srq;
    pthread_mutex_lock(&srq->mutex);
    ++srq->events_completed;
    pthread_cond_signal(&srq->cond);
    pthread_mutex_unlock(&srq->mutex);
  } else if (event->event_type == IBV_EVENT_CQ_ERR && event->element.cq) {
    ibv_cq* cq = event->element.cq;
    pthread_mutex_lock(&cq->mutex);
    ++cq->async_events_completed;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
  } else if (event->event_type != IBV_EVENT_PORT_ACTIVE && event->event_type != IBV_EVENT_PORT_ERR &&
             event->event_type != IBV_EVENT_SRQ_LIMIT_REACHED && event->element.qp) {
    ibv_qp* qp = event->element.qp;
    pthread_mutex_lock(&qp->mutex);
    ++qp->events_completed;
    pthread_cond_signal(&qp->cond);
    pthread_mutex_unlock(&qp->mutex);
  }
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!pd || !attr) return client::fail_null<ibv_srq>(EINVAL);
  const wire::CreateSrq r{pd->handle, attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  wire::SrqCreated out;
  int fd = -1;
  if (const int rc = context_call(pd->context, wire::Op::create_srq, &r, sizeof r, out, &fd))
    return client::fail_null<ibv_srq>(rc);
  uint8_t* mem = fd >= 0 ? client::map_shared(fd, out.map_length) : nullptr;
  auto* srq = mem ? new (std::nothrow) client::Srq{} : nullptr;
  if (!srq) {
    if (mem) ::munmap(mem, out.map_length);
    const wire::Handle h{out.srqn};
    context_call(pd->context, wire::Op::destroy_srq, &h, sizeof h);
    return client::fail_null<ibv_srq>(ENOMEM);
  }
  srq->mem = mem;
  srq->layout = out;
  attr->attr.max_wr = out.depth;
  attr->attr.max_sge = out.max_sge;
  pthread_mutex_init(&srq->lock, nullptr);
  srq->srq.context = pd->context;
  srq->srq.srq_context = attr->srq_context;
  srq->srq.pd = pd;
  srq->srq.handle = out.srqn;
  srq->srq.events_completed = 0;
  pthread_mutex_init(&srq->srq.mutex, nullptr);
  pthread_cond_init(&srq->srq.cond, nullptr);
  client::Context* c = client::context_of(pd->context);
  pthread_mutex_lock(&c->objects_lock);
  c->srqs[out.srqn] = srq;
  pthread_mutex_unlock(&c->objects_lock);
  return &srq->srq;
}

// Only the limit can change (arming the SRQ-limit event); resizing is refused with EINVAL.
int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (!srq || !attr) return EINVAL;
  const wire::ModifySrq r{srq->handle, uint32_t(mask), attr->srq_limit};
  return context_call(srq->context, wire::Op::modify_srq, &r, sizeof r);
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  if (!srq || !attr) return EINVAL;
  const wire::Handle h{srq->handle};
  wire::SrqState st;
  if (const int rc = context_call(srq->context, wire::Op::query_srq, &h, sizeof h, st)) return rc;
  attr->max_wr = st.max_wr;
  attr->max_sge = st.max_sge;
  attr->srq_limit = st.limit;
  return 0;
}

int ibv_destroy_srq(ibv_srq* ibsrq) {
  if (!ibsrq) return EINVAL;
  return client::destroy_mapped(ibsrq->context, wire::Op::destroy_srq, ibsrq->handle, &client::Context::srqs,
                                reinterpret_cast<client::Srq*>(ibsrq));
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (!pd || !attr) return client::fail_null<ibv_qp>(EINVAL);
  if (!attr->send_cq || !attr->recv_cq) return client::fail_null<ibv_qp>(EINVAL);
  const wire::CreateQp r{pd->handle, uint32_t(attr->qp_type), attr->send_cq->handle, attr->recv_cq->handle,
                         attr->cap.max_send_wr, attr->cap.max_recv_wr, attr->cap.max_send_sge, attr->cap.max_recv_sge,
                         attr->cap.max_inline_data, uint32_t(attr->sq_sig_all),
                         attr->srq ? attr->srq->handle : wire::kNoSrq};
  wire::QpCreated out;
  int fd = -1;
  if (const int rc = context_call(pd->context, wire::Op::create_qp, &r, sizeof r, out, &fd)) return client::fail_null<ibv_qp>(rc);
  uint8_t* mem = fd >= 0 ? client::map_shared(fd, out.map_length) : nullptr;
  auto* qp = mem ? new (std::nothrow) client::Qp{} : nullptr;
  if (!qp) {
    if (mem) ::munmap(mem, out.map_length);
    const wire::Handle h{out.qpn};
    context_call(pd->context, wire::Op::destroy_qp, &h, sizeof h);
    return client::fail_null<ibv_qp>(ENOMEM);
  }
  qp->mem = mem;
  qp->layout = out;
  qp->srq = attr->srq ? reinterpret_cast<client::Srq*>(attr->srq) : nullptr;
  attr->cap.max_send_wr = out.sq_depth;
  attr->cap.max_recv_wr = out.rq_depth;
  attr->cap.max_send_sge = out.max_send_sge;
  attr->cap.max_recv_sge = out.max_recv_sge;
  attr->cap.max_inline_data = out.max_inline_data;
  qp->init = *attr;
  pthread_mutex_init(&qp->lock, nullptr);
  ibv_qp& q = qp->qp;
  q.context = pd->context;
  q.qp_context = attr->qp_context;
  q.pd = pd;
  q.send_cq = attr->send_cq;
  q.recv_cq = attr->recv_cq;
  q.handle = out.qpn;
  q.qp_num = out.qpn;
  q.state = IBV_QPS_RESET;
  q.qp_type = attr->qp_type;
  pthread_mutex_init(&q.mutex, nullptr);
  pthread_cond_init(&q.cond, nullptr);
  client::Context* c = client::context_of(pd->context);
  pthread_mutex_lock(&c->objects_lock);
  c->qps[out.qpn] = qp;
  pthread_mutex_unlock(&c->objects_lock);
  return &qp->qp;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* a, int mask) {
  if (!qp || !a) return EINVAL;
  const wire::ModifyQp r{qp->qp_num, uint32_t(mask), uint32_t(a->cur_qp_state), uint32_t(a->qp_state), a->pkey_index,
                         a->qkey, uint32_t(a->qp_access_flags), a->dest_qp_num, a->rq_psn, a->sq_psn,
                         uint32_t(a->path_mtu), a->min_rnr_timer, a->timeout, a->retry_cnt, a->rnr_retry,
                         a->max_rd_atomic, a->max_dest_rd_atomic,
                         (mask & IBV_QP_AV) ? a->ah_attr.port_num : a->port_num, a->ah_attr.dlid};
  if (const int rc = context_call(qp->context, wire::Op::modify_qp, &r, sizeof r)) return rc;
  if (mask & IBV_QP_STATE) {
    pthread_mutex_lock(&reinterpret_cast<client::Qp*>(qp)->lock);
    qp->state = a->qp_state;
    pthread_mutex_unlock(&reinterpret_cast<client::Qp*>(qp)->lock);
  }
  return 0;
}

int ibv_query_qp(ibv_qp* ibqp, ibv_qp_attr* a, int, ibv_qp_init_attr* init) {
  if (!ibqp || !a) return EINVAL;
  auto* qp = reinterpret_cast<client::Qp*>(ibqp);
  const wire::Handle h{ibqp->qp_num};
  wire::QpState st;
  if (const int rc = context_call(ibqp->context, wire::Op::query_qp, &h, sizeof h, st)) return rc;
  std::memset(a, 0, sizeof *a);
  a->qp_state = a->cur_qp_state = ibv_qp_state(st.state);
  a->dest_qp_num = st.dest_qpn;
  a->sq_psn = st.sq_psn;
  a->rq_psn = st.rq_psn;
  a->path_mtu = ibv_mtu(st.path_mtu);
  a->qkey = st.qkey;
  a->qp_access_flags = ((st.access & vhca::kAccessRemoteWrite) ? IBV_ACCESS_REMOTE_WRITE : 0) |
                       ((st.access & vhca::kAccessRemoteRead) ? IBV_ACCESS_REMOTE_READ : 0) |
                       ((st.access & vhca::kAccessRemoteAtomic) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
  a->cap = qp->init.cap;
  a->port_num = 1;
  if (init) *init = qp->init;
  return 0;
}

int ibv_destroy_qp(ibv_qp* ibqp) {
  if (!ibqp) return EINVAL;
  return client::destroy_mapped(ibqp->context, wire::Op::destroy_qp, ibqp->qp_num, &client::Context::qps,
                                reinterpret_cast<client::Qp*>(ibqp));
}

// An address handle holds the UD destination the WQE carries; InfiniBand's LID routing needs
// nothing from the device to make one.
ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!pd || !attr) return client::fail_null<ibv_ah>(EINVAL);
  if (attr->port_num != 1) return client::fail_null<ibv_ah>(EINVAL);
  auto* ah = new (std::nothrow) client::Ah{{pd->context, pd, 0}, attr->dlid, attr->sl, attr->is_global != 0};
  if (!ah) errno = ENOMEM;
  return ah ? &ah->ah : nullptr;
}

int ibv_destroy_ah(ibv_ah* ah) {
  if (!ah) return EINVAL;
  delete reinterpret_cast<client::Ah*>(ah);
  return 0;
}

}  // extern "C"
