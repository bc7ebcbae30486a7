#include "serve/device_server.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "firmware-shim/driver.h"
#include "firmware-shim/qp_verbs.h"
#include "model/common/log.h"
#include "model/regs/tables.h"
#include "serve/client_memory.h"
#include "serve/completion_ledger.h"
#include "serve/run_state.h"
#include "explorer/timeline.h"
#include "sim/system.h"
#include "verbs/protocol.h"
#include "verbs/unix_socket.h"

#include <infiniband/verbs.h>

namespace vhca {
namespace {

// SIGINT / SIGTERM write a byte to this pipe, which the serving loop polls with the sockets, so
// that a signal between two polls is not missed (the self-pipe way).
int g_stop_pipe[2] = {-1, -1};
void on_signal(int) {
  const char b = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_stop_pipe[1], &b, 1);
}

// What the kernel side knows of one device once it has booted: answers to the queries.
struct Device {
  wire::DeviceInfo info{};
  wire::PortInfo port{};
  wire::Gid gid{};
};

// IB speed code of the port (ibv_port_attr.active_speed) for the link's data rate per 4X port.
uint32_t speed_code(double gbit_per_s) {
  if (gbit_per_s >= 400) return 128;  // NDR
  if (gbit_per_s >= 200) return 64;   // HDR
  if (gbit_per_s >= 100) return 32;   // EDR
  if (gbit_per_s >= 56) return 16;    // FDR
  return 4;                           // QDR
}

Device describe(Node& node, uint32_t index, const SystemConfig& cfg) {
  Device d;
  wire::DeviceInfo& i = d.info;
  std::snprintf(i.name, sizeof i.name, "vhca%u", index);
  const uint32_t version = uint32_t(node.hca.bar0.regs.value(reg::version));
  std::snprintf(i.fw_ver, sizeof i.fw_ver, "%u.%u", version >> 16, version & 0xFFFF);
  i.node_guid = i.sys_image_guid = 0x5648434100000000ull | (index + 1);  // "VHCA" and the node
  i.max_mr_size = uint64_t(1) << 40;
  i.page_size_cap = HostMemory::kPageSize;
  i.vendor_id = 0;  // no IEEE OUI: a model, not a vendor's part
  i.vendor_part_id = 1;
  i.hw_ver = version;
  const DeviceCaps& caps = node.driver.caps();
  const QpTables& t = node.hca.qp_tables;
  i.max_qp = uint32_t(t.qps.size());
  i.max_qp_wr = 4096;
  i.max_sge = sqwqe::kMaxSge;
  i.max_cq = 1u << caps.log_max_cq;
  i.max_cqe = (1u << caps.log_max_cq_sz) - 1;
  i.max_mr = uint32_t(t.mrs.size());
  i.max_pd = uint32_t(t.pds.size());
  i.max_qp_rd_atom = i.max_qp_init_rd_atom = 16;
  i.max_res_rd_atom = i.max_qp * 16;
  i.phys_port_cnt = 1;
  i.num_comp_vectors = node.driver.num_comp_vectors();
  i.core_clock_khz = caps.core_clock_khz;
  i.max_cq_count = caps.max_mod_count;
  i.max_cq_period_us = caps.max_mod_period;
  wire::PortInfo& p = d.port;
  p.state = 4;  // ACTIVE: the link is up once both HCAs booted
  p.max_mtu = p.active_mtu = 5;  // 4096
  p.lid = uint32_t(node.hca.bar0.regs.value(reg::port_lid));
  p.link_layer = 1;  // InfiniBand
  p.max_msg_sz = 0x80000000u;
  p.gid_tbl_len = p.pkey_tbl_len = 1;
  p.active_width = 2;  // 4X
  p.active_speed = speed_code(cfg.ib.gbit_per_s);
  p.phys_state = 5;  // LinkUp
  p.max_vl_num = 1;  // VL0
  // GID 0: the link-local subnet prefix fe80::/64 and the port GUID (the node GUID), big-endian.
  d.gid.raw[0] = 0xfe;
  d.gid.raw[1] = 0x80;
  for (int b = 0; b < 8; ++b) d.gid.raw[8 + b] = uint8_t(i.node_guid >> (56 - 8 * b));
  return d;
}

// Whether `path` may be taken: nothing there, or a socket no server answers on (left by a server
// that was killed). A file that is not a socket, or a live server's socket, is refused.
bool path_free(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return true;
  if (!S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "vhca-sim serve: %s exists and is not a socket: not replaced\n", path.c_str());
    return false;
  }
  if (const int probe = wire::connect_unix(path); probe >= 0) {
    ::close(probe);
    std::fprintf(stderr, "vhca-sim serve: a server is already listening on %s\n", path.c_str());
    return false;
  }
  ::unlink(path.c_str());  // stale
  return true;
}

// The listening socket; kBadPath when the path is bad input (too long, not free), -1 when the
// system refused.
constexpr int kBadPath = -2;
int listen_on(const std::string& path, ino_t& inode) {
  sockaddr_un addr;
  if (!wire::unix_address(path, addr)) {
    std::fprintf(stderr, "vhca-sim serve: socket path '%s' is longer than %zu bytes\n", path.c_str(),
                 sizeof addr.sun_path - 1);
    return kBadPath;
  }
  if (!path_free(path)) return kBadPath;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    std::fprintf(stderr, "vhca-sim serve: cannot listen on %s: %s\n", path.c_str(), std::strerror(errno));
    ::close(fd);
    return -1;
  }
  struct stat st;
  inode = ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  return fd;
}

// Removes the socket on exit if it is still ours (not one another server put there since).
void remove_socket(const std::string& path, ino_t inode) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == inode) ::unlink(path.c_str());
}

// A request as it arrived: its header, its body, and a file descriptor passed with it (SCM_RIGHTS).
struct Request {
  wire::Header h;
  std::vector<uint8_t> body;
};

struct MrEntry {
  Mr* mr;
  std::unique_ptr<ProcessRegion> memory;
  uint64_t base;  // where the buffer lies in simulated host memory
};

struct CqEntry {
  Cq* cq;
  std::unique_ptr<SharedRegion> memory;
  uint64_t base;
  uint32_t log_size, dbr_offset;
  uint32_t channel;     // wire::kNoChannel or a channel of the same connection
  uint32_t events = 0;  // completion events reported through the channel
  uint32_t landed = 0;  // CQEs the ledger has seen land (its own index, whatever the program polled)
};

struct SrqEntry {
  Srq* srq;
  std::unique_ptr<SharedRegion> memory;
  uint64_t base;
};

struct QpEntry {
  Qp* qp;
  std::unique_ptr<SharedRegion> memory;
  uint64_t base;
  uint32_t sq_offset, dbr_offset;
  uint16_t sq_pi = 0;  // the send producer index of its last doorbell
};

struct Channel {
  int fd;                 // the program's end is its ibv_comp_channel's fd
  uint32_t written = 0;   // events written to it
  std::unique_ptr<sc_core::sc_event> wrote = std::make_unique<sc_core::sc_event>();
};

// One client connection. Once it opened a device it is a context: its requests are served in
// order by its own SystemC thread (the agent), in simulated time, and what it made is destroyed
// when it goes, as the kernel does for a process.
struct Session {
  int fd;
  pid_t pid = 0;
  std::vector<uint8_t> in;
  std::deque<int> passed_fds;  // descriptors that came with its requests, in order
  int device = -1;
  std::map<uint32_t, Pd*> pds;
  std::map<uint32_t, MrEntry> mrs;
  std::map<uint32_t, CqEntry> cqs;
  std::map<uint32_t, QpEntry> qps;
  std::map<uint32_t, SrqEntry> srqs;
  std::map<uint32_t, Channel> channels;
  uint32_t next_channel = 1;
  int async_fd = -1;  // the program's async event channel (ibv_context.async_fd's other end)
  // The agent.
  std::deque<Request> queue;
  sc_core::sc_event work;
  bool gone = false;      // the connection closed or broke the protocol
  bool finished = false;  // the agent released what the client left and ended
  uint32_t awaiting = 0;  // requests a client thread is blocked on (queued or being served)
  sc_core::sc_event cqe_written;     // a write into one of its CQs' buffers
  sc_core::sc_event mr_written;      // a DMA write into one of its MRs
  sc_core::sc_time quiet_wait;       // the next empty await's interval (await_change)
  // The time rule: the thread the last reply woke, and its voluntary switches before the reply.
  pid_t woken_tid = 0;
  long woken_switches = -1;
  // The last wall-clock instant it had a reason to run: a request came from it, a reply or an event
  // woke it, or the device wrote into memory it can see (the spin rule, off_cpu).
  std::chrono::steady_clock::time_point last_wake = std::chrono::steady_clock::now();
  // Its report.
  uint64_t doorbells = 0, refused_doorbells = 0, awaits = 0, events = 0, commands = 0, async_events = 0;
  ClientLedger ledger;
};
using SessionPtr = std::shared_ptr<Session>;

// What the server serves: the booted devices, their drivers, and the sessions.
struct Served {
  System& sys;
  ServeOptions opts;
  std::vector<Device> devs;
  std::vector<SessionPtr> sessions;
  sc_core::sc_event client_resumes;  // a reply or an event woke a client thread
  CompletionLedger ledger;
  std::vector<std::string> reports;  // JSON of the clients that left, in order
  Timeline timeline;                 // --timeline: one process per device, tracks per client and QP
  std::deque<sc_core::sc_event> device_opened;  // per device: a program opened its async channel
  std::deque<sc_core::sc_event> device_posted;  // per device: a program rang a doorbell
  std::vector<uint64_t> device_doorbells;       // per device: doorbells rung
};

// The timeline track of a client's QP (or of the client itself, for its waits).
std::string track_of(const Session& s, uint32_t qpn) { return fmt::format("pid {} QP {:#x}", int(s.pid), qpn); }
std::string track_of(const Session& s) { return fmt::format("pid {} waits", int(s.pid)); }

sc_core::sc_time us_ago(double us) { return sc_core::sc_time_stamp() - sc_core::sc_time(us, sc_core::SC_US); }

// Posted requests get no reply: the client goes on without waiting for them.
bool is_posted(wire::Op op) { return op == wire::Op::doorbell; }

bool send_reply(Session& s, const wire::Header& h, const void* body, uint32_t len, int pass_fd) {
  if (pass_fd >= 0) {
    std::vector<uint8_t> frame(sizeof h + len);
    std::memcpy(frame.data(), &h, sizeof h);
    if (len) std::memcpy(frame.data() + sizeof h, body, len);
    return wire::send_with_fd(s.fd, frame.data(), frame.size(), pass_fd);
  }
  return wire::send_all(s.fd, &h, sizeof h) && (len == 0 || wire::send_all(s.fd, body, len));
}

bool reply(Session& s, wire::Op op, int32_t status, const void* body, uint32_t len, int pass_fd = -1) {
  const wire::Header h{wire::kMagic, wire::kVersion, uint16_t(op), len, status};
  // The time rule: the waiting thread's voluntary switches as the reply goes (the thread is asleep
  // waiting for it, or about to find it without sleeping), so that only a sleep after this reply,
  // not the one it took waiting for it, counts as the thread being off the CPU.
  if (s.woken_tid > 0) s.woken_switches = run_state::voluntary_switches(s.pid, s.woken_tid);
  return send_reply(s, h, body, len, pass_fd);
}

template <typename T>
bool body_as(const std::vector<uint8_t>& body, T& out) {
  if (body.size() != sizeof(T)) return false;
  std::memcpy(&out, body.data(), sizeof(T));
  return true;
}

int errno_of(int rc, int otherwise) { return rc < 0 ? -rc : otherwise; }

uint64_t page_round(uint64_t n) { return (n + HostMemory::kPageSize - 1) / HostMemory::kPageSize * HostMemory::kPageSize; }

// Verbs access flags to the device's (REG_MR and MODIFY_QP bit positions differ from verbs.h's).
constexpr uint32_t kVerbsOptionalAccess = IBV_ACCESS_OPTIONAL_RANGE;
bool device_access(uint32_t verbs, bool for_mr, uint32_t& out) {
  out = 0;
  if (verbs & IBV_ACCESS_LOCAL_WRITE) out |= for_mr ? kAccessLocalWrite : 0;  // a QP has no local-write right
  if (verbs & IBV_ACCESS_REMOTE_WRITE) out |= kAccessRemoteWrite;
  if (verbs & IBV_ACCESS_REMOTE_READ) out |= kAccessRemoteRead;
  if (verbs & IBV_ACCESS_REMOTE_ATOMIC) out |= kAccessRemoteAtomic;
  const uint32_t known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                         IBV_ACCESS_REMOTE_ATOMIC | kVerbsOptionalAccess;
  return (verbs & ~known) == 0;
}

Node& node_of(Session& s, Served& sv) { return sv.sys.node(uint32_t(s.device)); }

// The objects of this connection that a request names.
template <typename Map>
auto* find(Map& m, uint32_t key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

int reg_mr(Session& s, Served& sv, const wire::RegMr& r, wire::MrKeys& keys) {
  Pd** pd = find(s.pds, r.pd);
  uint32_t access = 0;
  if (!pd || r.length == 0 || !device_access(r.access, true, access)) return EINVAL;
  auto memory = std::make_unique<ProcessRegion>(s.pid, r.addr, r.length);
  if (!memory->reachable()) return EFAULT;  // not the program's memory
  Node& n = node_of(s, sv);
  const uint64_t base = n.memory.attach(r.length, *memory);
  Mr* mr = nullptr;
  if (const int rc = verbs::reg_mr(**pd, r.iova, r.length, access, &mr, &base)) {
    n.memory.detach(base);
    return errno_of(rc, EINVAL);
  }
  n.memory.watch(base, r.length, s.mr_written);
  keys = {mr->lkey, mr->rkey};
  s.mrs.emplace(mr->lkey, MrEntry{mr, std::move(memory), base});
  return 0;
}

int dereg_mr(Session& s, Served& sv, uint32_t lkey) {
  MrEntry* e = find(s.mrs, lkey);
  if (!e) return EINVAL;
  if (const int rc = verbs::dereg_mr(e->mr)) return errno_of(rc, EINVAL);
  node_of(s, sv).memory.unwatch(e->base, s.mr_written);
  node_of(s, sv).memory.detach(e->base);
  s.mrs.erase(lkey);
  return 0;
}

// A completion event of a program's CQ: one record (the CQN) on its channel, if it has one.
void report_event(Session& s, CqEntry& e, Served& sv) {
  Channel* ch = find(s.channels, e.channel);
  if (!ch) return;
  const uint32_t cqn = e.cq->cqn;
  if (::send(ch->fd, &cqn, sizeof cqn, MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(sizeof cqn)) return;
  ++e.events;
  ++ch->written;
  ++s.events;
  if (sv.timeline.enabled()) sv.timeline.instant(s.device, track_of(s), "completion event");
  s.last_wake = std::chrono::steady_clock::now();
  ch->wrote->notify(sc_core::SC_ZERO_TIME);
  sv.client_resumes.notify(sc_core::SC_ZERO_TIME);
}

int create_cq(Session& s, Served& sv, const wire::CreateCq& r, wire::CqCreated& out, int& pass_fd) {
  if (r.channel != wire::kNoChannel && !find(s.channels, r.channel)) return EINVAL;
  Node& n = node_of(s, sv);
  Driver& drv = n.driver;
  if (r.cqe < 1 || r.cqe > sv.devs[size_t(s.device)].info.max_cqe || r.comp_vector >= drv.num_comp_vectors())
    return EINVAL;
  const uint8_t log_size = verbs::cq_log_size(int(r.cqe));
  const uint64_t bytes = uint64_t(cqe::kSize) << log_size;
  const uint64_t dbr_offset = page_round(bytes);
  auto memory = SharedRegion::create("vhca-cq", dbr_offset + HostMemory::kPageSize);
  if (!memory) return ENOMEM;
  queue_format::prefill_cqes(memory->data(), bytes);
  const uint64_t base = n.memory.attach(memory->size(), *memory);
  const UserCqMemory user{base, base + dbr_offset};
  Cq* cq = nullptr;
  if (const int rc = verbs::create_cq(drv, int(r.cqe), r.comp_vector, &cq, {}, 0, &user)) {
    n.memory.detach(base);
    return errno_of(rc, EINVAL);
  }
  n.memory.watch(base, bytes, s.cqe_written);
  out = {cq->cqn, log_size, uint32_t(dbr_offset), uint32_t(memory->size())};
  pass_fd = memory->fd();
  CqEntry& e = s.cqs.emplace(cq->cqn, CqEntry{cq, std::move(memory), base, log_size, uint32_t(dbr_offset), r.channel})
                   .first->second;
  Session* self = &s;
  verbs::set_comp_handler(*cq, [self, &e, &sv](Cq&) { report_event(*self, e, sv); });
  return 0;
}

int destroy_cq(Session& s, Served& sv, uint32_t cqn, wire::Count& events) {
  CqEntry* e = find(s.cqs, cqn);
  if (!e) return EINVAL;
  const uint32_t reported = e->events;
  if (const int rc = verbs::destroy_cq(e->cq)) return errno_of(rc, EBUSY);  // S4: a QP still uses it
  node_of(s, sv).memory.unwatch(e->base, s.cqe_written);
  node_of(s, sv).memory.detach(e->base);
  s.cqs.erase(cqn);
  events.count = reported;
  return 0;
}

int create_qp(Session& s, Served& sv, const wire::CreateQp& r, wire::QpCreated& out, int& pass_fd) {
  Pd** pd = find(s.pds, r.pd);
  CqEntry* scq = find(s.cqs, r.send_cq);
  CqEntry* rcq = find(s.cqs, r.recv_cq);
  SrqEntry* srq = r.srq == wire::kNoSrq ? nullptr : find(s.srqs, r.srq);
  if (!pd || !scq || !rcq || (r.srq != wire::kNoSrq && !srq)) return EINVAL;
  if (r.type != IBV_QPT_RC && r.type != IBV_QPT_UC && r.type != IBV_QPT_UD) return EINVAL;
  if (r.max_send_sge > sqwqe::kMaxSge || r.max_recv_sge > rqwqe::kMaxSge || r.max_inline_data > sqwqe::kMaxInline)
    return EINVAL;
  if (r.max_send_wr < 1 || r.max_send_wr > 32768 || (!srq && (r.max_recv_wr < 1 || r.max_recv_wr > 32768))) return EINVAL;
  const uint8_t log_sq = verbs::wq_log_size(r.max_send_wr), log_rq = srq ? 0 : verbs::wq_log_size(r.max_recv_wr);
  const uint64_t rq_offset = page_round(uint64_t(sqwqe::kSize) << log_sq);
  const uint64_t dbr_offset = rq_offset + (srq ? 0 : page_round(uint64_t(rqwqe::kSize) << log_rq));
  auto memory = SharedRegion::create("vhca-qp", dbr_offset + HostMemory::kPageSize);
  if (!memory) return ENOMEM;
  Node& n = node_of(s, sv);
  const uint64_t base = n.memory.attach(memory->size(), *memory);
  QpInitAttr attr;
  attr.type = r.type == IBV_QPT_RC ? QpType::rc : r.type == IBV_QPT_UC ? QpType::uc : QpType::ud;
  attr.send_cq = scq->cq;
  attr.recv_cq = rcq->cq;
  attr.max_send_wr = r.max_send_wr;
  attr.max_recv_wr = r.max_recv_wr;
  attr.sq_sig_all = r.sq_sig_all != 0;
  attr.user_sq = base;
  attr.user_rq = srq ? 0 : base + rq_offset;
  attr.user_dbr = base + dbr_offset;
  attr.srq = srq ? srq->srq : nullptr;
  Qp* qp = nullptr;
  if (const int rc = verbs::create_qp(**pd, attr, &qp)) {
    n.memory.detach(base);
    return errno_of(rc, EINVAL);
  }
  out = {qp->qpn, qp->sq_depth, qp->rq_depth, 0, uint32_t(rq_offset), uint32_t(dbr_offset), uint32_t(memory->size()),
         sqwqe::kMaxSge, rqwqe::kMaxSge, sqwqe::kMaxInline};
  pass_fd = memory->fd();
  s.qps.emplace(qp->qpn, QpEntry{qp, std::move(memory), base, 0, uint32_t(dbr_offset)});
  sv.ledger.qp_created(s.device, qp->qpn, is_connected(attr.type), &s.ledger, srq ? int(srq->srq->srqn) : -1);
  return 0;
}

// ibv_modify_qp's attributes, as far as the mask gives them, to MODIFY_QP's. The device refuses
// an attribute its transition does not take (IB: an invalid attribute mask is an error).
// The device whose port has `lid`, or -1.
int device_with_lid(const Served& sv, uint32_t lid) {
  for (size_t d = 0; d < sv.devs.size(); ++d)
    if (sv.devs[d].port.lid == lid) return int(d);
  return -1;
}

int modify_qp(Session& s, Served& sv, const wire::ModifyQp& r) {
  QpEntry* e = find(s.qps, r.qpn);
  if (!e) return EINVAL;
  QpAttr a;
  a.cur_state = (r.mask & IBV_QP_CUR_STATE) ? QpState(r.cur_state) : e->qp->state;
  a.new_state = (r.mask & IBV_QP_STATE) ? QpState(r.state) : a.cur_state;
  if (uint32_t(a.cur_state) > 6 || uint32_t(a.new_state) > 6) return EINVAL;
  if ((r.mask & IBV_QP_PORT) && r.port_num != 1) return EINVAL;
  if ((r.mask & IBV_QP_AV) && r.port_num > 1) return EINVAL;
  if (r.mask & IBV_QP_PKEY_INDEX) a.pkey_index = uint16_t(r.pkey_index);
  if (r.mask & IBV_QP_QKEY) a.qkey = r.qkey;
  if ((r.mask & IBV_QP_ACCESS_FLAGS) && !device_access(r.access, false, a.access)) return EINVAL;
  if (r.mask & IBV_QP_DEST_QPN) a.dest_qpn = r.dest_qpn;
  if ((r.mask & IBV_QP_AV) && is_connected(e->qp->type)) {
    if (r.dlid > 0xFFFF) return EINVAL;
    a.dlid = uint16_t(r.dlid);
  }
  if (r.mask & IBV_QP_RQ_PSN) a.rq_psn = r.rq_psn;
  if (r.mask & IBV_QP_SQ_PSN) a.sq_psn = r.sq_psn;
  if (r.mask & IBV_QP_PATH_MTU) a.path_mtu = uint8_t(r.path_mtu);
  if (r.mask & IBV_QP_MIN_RNR_TIMER) a.min_rnr_timer = uint8_t(r.min_rnr_timer);
  if (r.mask & IBV_QP_TIMEOUT) a.timeout = uint8_t(r.timeout);
  if (r.mask & IBV_QP_RETRY_CNT) a.retry_cnt = uint8_t(r.retry_cnt);
  if (r.mask & IBV_QP_RNR_RETRY) a.rnr_retry = uint8_t(r.rnr_retry);
  if (r.mask & IBV_QP_MAX_QP_RD_ATOMIC) a.max_rd_atomic = uint8_t(r.max_rd_atomic);
  if (r.mask & IBV_QP_MAX_DEST_RD_ATOMIC) a.max_dest_rd_atomic = uint8_t(r.max_dest_rd_atomic);
  if (const int rc = verbs::modify_qp(*e->qp, a)) return errno_of(rc, EINVAL);
  if ((r.mask & IBV_QP_DEST_QPN) && (r.mask & IBV_QP_AV))
    sv.ledger.qp_connected(s.device, r.qpn, device_with_lid(sv, r.dlid), r.dest_qpn);
  return 0;
}

int query_qp(Session& s, uint32_t qpn, wire::QpState& out) {
  QpEntry* e = find(s.qps, qpn);
  if (!e) return EINVAL;
  QpAttr a;
  if (const int rc = verbs::query_qp(*e->qp, a)) return errno_of(rc, EINVAL);
  out = {uint32_t(a.cur_state), a.dest_qpn, a.sq_psn, a.rq_psn, a.path_mtu, a.access, a.qkey};
  return 0;
}

// The ledger's view of a QP that goes: what it leaves outstanding (the receive producer index is
// in its doorbell record).
void forget_qp(Session& s, Served& sv, uint32_t qpn, QpEntry& e) {
  const auto rq_pi = uint16_t(get_field(e.memory->data() + e.dbr_offset, qpdbr::rq_pi));
  sv.ledger.qp_destroyed(s.device, qpn, rq_pi);
}

int destroy_qp(Session& s, Served& sv, uint32_t qpn) {
  QpEntry* e = find(s.qps, qpn);
  if (!e) return EINVAL;
  if (const int rc = verbs::destroy_qp(e->qp)) return errno_of(rc, EBUSY);
  forget_qp(s, sv, qpn, *e);
  node_of(s, sv).memory.detach(e->base);
  s.qps.erase(qpn);
  return 0;
}

double now_us() { return sc_core::sc_time_stamp().to_seconds() * 1e6; }

// The send WQEs a doorbell posts, from the QP's last doorbell up to `pi`, with their opcodes as
// the program wrote them into its ring.
void note_posts(Session& s, Served& sv, QpEntry& e, uint16_t pi) {
  std::vector<uint8_t> opcodes;
  const uint32_t depth = e.qp->sq_depth;
  for (uint16_t i = e.sq_pi; i != pi && opcodes.size() < depth; ++i) {
    const uint8_t* wqe = e.memory->data() + e.sq_offset + uint64_t(i & (depth - 1)) * sqwqe::kSize;
    opcodes.push_back(uint8_t(get_field(wqe, sqwqe::opcode)));
  }
  log::write(log::Cat::drv, "serve: pid {} QP {:#x} posts send WQEs {}..{}", int(s.pid), e.qp->qpn, e.sq_pi,
             uint16_t(pi - 1));
  sv.ledger.sends_posted(s.device, e.qp->qpn, e.sq_pi, opcodes, now_us());
  e.sq_pi = pi;
}

// The CQEs that landed on the client's CQs since the ledger last looked, at the instant they land
// (the write into the CQ's buffer wakes it), before the program could consume them and the device
// reuse their slots.
void note_landed(Session& s, Served& sv) {
  for (auto& [cqn, e] : s.cqs) {
    const uint8_t* mem = e.memory->data();
    for (;;) {
      const uint8_t* entry = mem + uint64_t(e.landed & ((1u << e.log_size) - 1)) * cqe::kSize;
      if (!queue_format::cqe_valid(entry, e.landed, uint8_t(e.log_size))) break;
      const Wc wc = queue_format::parse_cqe(entry);
      log::write(log::Cat::drv, "serve: pid {} CQ {} CQE of QP {:#x} WQE {} landed", int(s.pid), cqn, wc.qpn, wc.wqe_counter);
      const CompletionLedger::Landing l = sv.ledger.completed(s.device, wc, now_us());
      if (sv.timeline.enabled()) {
        if (l.completion_us >= 0) sv.timeline.span(s.device, track_of(s, wc.qpn), "send WQE: post to CQE", us_ago(l.completion_us));
        if (l.message_us >= 0) sv.timeline.span(s.device, track_of(s, wc.qpn), "message: peer's post to RECV CQE", us_ago(l.message_us));
        if (wc.status) sv.timeline.instant(s.device, track_of(s, wc.qpn), "error CQE");
      }
      e.landed = (e.landed + 1) & 0xFFFFFF;
    }
  }
}

int create_srq(Session& s, Served& sv, const wire::CreateSrq& r, wire::SrqCreated& out, int& pass_fd) {
  Pd** pd = find(s.pds, r.pd);
  if (!pd || r.max_wr < 1 || r.max_wr > 32768 || r.max_sge > rqwqe::kMaxSge) return EINVAL;
  const uint8_t log_size = verbs::wq_log_size(r.max_wr);
  if (r.limit >= (1u << log_size)) return EINVAL;
  const uint64_t dbr_offset = page_round(uint64_t(rqwqe::kSize) << log_size);
  auto memory = SharedRegion::create("vhca-srq", dbr_offset + HostMemory::kPageSize);
  if (!memory) return ENOMEM;
  Node& n = node_of(s, sv);
  const uint64_t base = n.memory.attach(memory->size(), *memory);
  SrqInitAttr attr;
  attr.max_wr = r.max_wr;
  attr.limit = uint16_t(r.limit);
  attr.user_ring = base;
  attr.user_dbr = base + dbr_offset;
  Srq* srq = nullptr;
  if (const int rc = verbs::create_srq(**pd, attr, &srq)) {
    n.memory.detach(base);
    return errno_of(rc, EINVAL);
  }
  out = {srq->srqn, srq->depth, uint32_t(dbr_offset), uint32_t(memory->size()), rqwqe::kMaxSge};
  pass_fd = memory->fd();
  s.srqs.emplace(srq->srqn, SrqEntry{srq, std::move(memory), base});
  return 0;
}

int modify_srq(Session& s, const wire::ModifySrq& r) {
  SrqEntry* e = find(s.srqs, r.srqn);
  if (!e) return EINVAL;
  if (r.mask & ~uint32_t(IBV_SRQ_LIMIT)) return EINVAL;  // resizing (IBV_SRQ_MAX_WR) is not served
  if (!(r.mask & IBV_SRQ_LIMIT)) return 0;
  if (r.limit >= e->srq->depth) return EINVAL;
  const int rc = verbs::arm_srq(*e->srq, uint16_t(r.limit));
  return rc ? errno_of(rc, EINVAL) : 0;
}

int query_srq(Session& s, uint32_t srqn, wire::SrqState& out) {
  SrqEntry* e = find(s.srqs, srqn);
  if (!e) return EINVAL;
  uint16_t limit = 0;
  if (const int rc = verbs::query_srq(*e->srq, limit)) return errno_of(rc, EINVAL);
  out = {e->srq->depth, rqwqe::kMaxSge, limit};
  return 0;
}

int destroy_srq(Session& s, Served& sv, uint32_t srqn) {
  SrqEntry* e = find(s.srqs, srqn);
  if (!e) return EINVAL;
  if (const int rc = verbs::destroy_srq(e->srq)) return errno_of(rc, EBUSY);  // a QP still takes from it
  sv.ledger.srq_destroyed(s.device, srqn);
  node_of(s, sv).memory.detach(e->base);
  s.srqs.erase(srqn);
  return 0;
}

// A doorbell the program rang: its CPU cost, then the MMIO write, at the simulated instant it
// comes in order with the program's other requests. One for an object that is not this
// connection's is dropped and counted (a device ignores another process's UAR page).
void ring(Session& s, Served& sv, const wire::Doorbell& d) {
  Driver& drv = node_of(s, sv).driver;
  HostCpu& cpu = drv.cpu();
  const auto kind = wire::DoorbellKind(d.kind);
  const uint32_t object = uint32_t(bits_of(d.value, kind == wire::DoorbellKind::cq_arm ? armdb::cqn : wqdb::qpn));
  const bool ours = kind == wire::DoorbellKind::cq_arm ? s.cqs.count(object) > 0
                    : kind == wire::DoorbellKind::send || kind == wire::DoorbellKind::recv ? s.qps.count(object) > 0
                                                                                             : false;
  if (!ours) {
    ++s.refused_doorbells;
    std::fprintf(stderr, "vhca-sim serve: pid %d: doorbell kind %u for object %#x that is not its own: dropped\n",
                 int(s.pid), d.kind, object);
    return;
  }
  ++s.doorbells;
  if (kind == wire::DoorbellKind::send) note_posts(s, sv, s.qps.at(object), uint16_t(bits_of(d.value, wqdb::pi)));
  if (d.wrs) cpu.charge(CpuContext::app, cpu.config().post_wr_cost * double(d.wrs));
  const char* reg = kind == wire::DoorbellKind::send ? reg::sq_db : kind == wire::DoorbellKind::recv ? reg::rq_db : reg::cq_arm_db;
  cpu.mmio_write64(Driver::offset_of(reg, drv.config().uar), d.value);
}

// Whether a CQE waits at the consumer index the program last wrote to one of its CQs' records.
bool cqe_waiting(Session& s) {
  for (auto& [cqn, e] : s.cqs) {
    uint8_t* mem = e.memory->data();
    const uint32_t ci = uint32_t(get_field(mem + e.dbr_offset, dbr::consumer_index));
    const uint8_t* entry = mem + uint64_t(ci & ((1u << e.log_size) - 1)) * cqe::kSize;
    if (queue_format::cqe_valid(entry, ci, uint8_t(e.log_size))) return true;
  }
  return false;
}

// The program's thread found its CQs empty: it costs the CQEs it polled since the last await and
// an empty poll; the reply comes when a CQE is written to any of its CQs (at once, to the cycle),
// or after the poll interval. The interval doubles while nothing is written, up to
// poll_interval_max, so that a program spinning through a long quiet stretch (a retransmission
// timeout) costs a few round trips, not one per microsecond; it costs no accuracy, since every
// CQE the program could find ends the wait when it is written.
void await_change(Session& s, Served& sv, const wire::Await& a) {
  HostCpu& cpu = node_of(s, sv).driver.cpu();
  ++s.awaits;
  cpu.charge(CpuContext::app, cpu.config().cqe_cost * double(a.cqes) + cpu.config().empty_poll_cost);
  if (s.quiet_wait == sc_core::SC_ZERO_TIME) s.quiet_wait = sv.opts.poll_interval;
  if (cqe_waiting(s)) {
    s.quiet_wait = sv.opts.poll_interval;
    return;
  }
  const sc_core::sc_time start = sc_core::sc_time_stamp();
  sc_core::wait(s.quiet_wait, s.cqe_written);
  const bool changed = sc_core::sc_time_stamp() - start < s.quiet_wait;
  if (sv.timeline.enabled()) sv.timeline.span(s.device, track_of(s), "polling an empty CQ", start);
  s.quiet_wait = changed ? sv.opts.poll_interval : std::min(s.quiet_wait * 2.0, sv.opts.poll_interval_max);
}

int await_event(Session& s, const wire::AwaitEvent& a) {
  Channel* ch = find(s.channels, a.channel);
  if (!ch) return EINVAL;
  while (ch->written <= a.seen && !s.gone) sc_core::wait(*ch->wrote);
  return 0;
}

// Answers one request; false: drop the client (a frame that is not this protocol).
bool serve_request(Session& s, const Request& req, Served& sv) {
  const wire::Header& h = req.h;
  const std::vector<uint8_t>& body = req.body;
  const std::vector<Device>& devs = sv.devs;
  const auto op = wire::Op(h.op);
  auto fail = [&](int err) { return reply(s, op, err, nullptr, 0); };
  auto answer = [&](int err, const auto& out) { return err ? fail(err) : reply(s, op, 0, &out, sizeof out); };
  if (h.op > uint16_t(wire::Op::last)) return fail(EOPNOTSUPP);  // before EBADF: the op itself is unknown
  const bool needs_device = h.op >= uint16_t(wire::Op::alloc_pd);
  if (needs_device && s.device < 0) return is_posted(op) ? true : fail(EBADF);
  switch (op) {
    case wire::Op::hello: {
      const wire::Hello hello{wire::kVersion, uint32_t(devs.size())};
      return reply(s, op, 0, &hello, sizeof hello);
    }
    case wire::Op::list_devices: {
      std::vector<wire::DeviceInfo> all;
      for (const Device& d : devs) all.push_back(d.info);
      return reply(s, op, 0, all.data(), uint32_t(all.size() * sizeof(wire::DeviceInfo)));
    }
    case wire::Op::query_device: {
      wire::DeviceRef r;
      if (!body_as(body, r)) return fail(EINVAL);
      if (r.device >= devs.size()) return fail(ENODEV);
      return reply(s, op, 0, &devs[r.device].info, sizeof(wire::DeviceInfo));
    }
    case wire::Op::query_port: {
      wire::PortRef r;
      if (!body_as(body, r)) return fail(EINVAL);
      if (r.device >= devs.size()) return fail(ENODEV);
      if (r.port != 1) return fail(EINVAL);
      return reply(s, op, 0, &devs[r.device].port, sizeof(wire::PortInfo));
    }
    case wire::Op::query_gid: {
      wire::GidRef r;
      if (!body_as(body, r)) return fail(EINVAL);
      if (r.device >= devs.size()) return fail(ENODEV);
      if (r.port != 1 || r.index != 0) return fail(EINVAL);
      return reply(s, op, 0, &devs[r.device].gid, sizeof(wire::Gid));
    }
    case wire::Op::open_device: {
      wire::DeviceRef r;
      if (!body_as(body, r)) return fail(EINVAL);
      if (r.device >= devs.size()) return fail(ENODEV);
      if (s.device >= 0) return fail(EBUSY);  // one device per connection (a context)
      s.device = int(r.device);
      return reply(s, op, 0, nullptr, 0);
    }
    case wire::Op::alloc_pd: {
      Pd* pd = nullptr;
      if (const int rc = verbs::alloc_pd(node_of(s, sv).driver, &pd)) return fail(errno_of(rc, ENOMEM));
      s.pds[pd->pdn] = pd;
      return answer(0, wire::Handle{pd->pdn});
    }
    case wire::Op::dealloc_pd: {
      wire::Handle r;
      if (!body_as(body, r)) return fail(EINVAL);
      Pd** pd = find(s.pds, r.handle);
      if (!pd) return fail(EINVAL);  // not this client's PD
      if (const int rc = verbs::dealloc_pd(*pd)) return fail(errno_of(rc, EBUSY));
      s.pds.erase(r.handle);
      return reply(s, op, 0, nullptr, 0);
    }
    case wire::Op::reg_mr: {
      wire::RegMr r;
      wire::MrKeys keys{};
      if (!body_as(body, r)) return fail(EINVAL);
      return answer(reg_mr(s, sv, r, keys), keys);
    }
    case wire::Op::dereg_mr: {
      wire::Handle r;
      if (!body_as(body, r)) return fail(EINVAL);
      return fail(dereg_mr(s, sv, r.handle));
    }
    case wire::Op::create_comp_channel: {
      if (s.passed_fds.empty()) return fail(EINVAL);
      const int fd = s.passed_fds.front();
      s.passed_fds.pop_front();
      const uint32_t id = s.next_channel++;
      s.channels.emplace(id, Channel{fd});
      return answer(0, wire::Handle{id});
    }
    case wire::Op::open_async: {
      if (s.passed_fds.empty()) return fail(EINVAL);
      if (s.async_fd >= 0) ::close(s.async_fd);
      s.async_fd = s.passed_fds.front();
      s.passed_fds.pop_front();
      if (s.device >= 0) sv.device_opened[size_t(s.device)].notify(sc_core::SC_ZERO_TIME);
      return reply(s, op, 0, nullptr, 0);
    }
    case wire::Op::destroy_comp_channel: {
      wire::Handle r;
      if (!body_as(body, r)) return fail(EINVAL);
      Channel* ch = find(s.channels, r.handle);
      if (!ch) return fail(EINVAL);
      for (const auto& [cqn, e] : s.cqs)
        if (e.channel == r.handle) return fail(EBUSY);
      ::close(ch->fd);
      s.channels.erase(r.handle);
      return reply(s, op, 0, nullptr, 0);
    }
    case wire::Op::create_cq: {
      wire::CreateCq r;
      wire::CqCreated out{};
      int pass_fd = -1;
      if (!body_as(body, r)) return fail(EINVAL);
      if (const int rc = create_cq(s, sv, r, out, pass_fd)) return fail(rc);
      return reply(s, op, 0, &out, sizeof out, pass_fd);
    }
    case wire::Op::destroy_cq: {
      wire::Handle r;
      wire::Count events{};
      if (!body_as(body, r)) return fail(EINVAL);
      return answer(destroy_cq(s, sv, r.handle, events), events);
    }
    case wire::Op::create_qp: {
      wire::CreateQp r;
      wire::QpCreated out{};
      int pass_fd = -1;
      if (!body_as(body, r)) return fail(EINVAL);
      if (const int rc = create_qp(s, sv, r, out, pass_fd)) return fail(rc);
      return reply(s, op, 0, &out, sizeof out, pass_fd);
    }
    case wire::Op::modify_qp: {
      wire::ModifyQp r;
      if (!body_as(body, r)) return fail(EINVAL);
      return fail(modify_qp(s, sv, r));
    }
    case wire::Op::query_qp: {
      wire::Handle r;
      wire::QpState out{};
      if (!body_as(body, r)) return fail(EINVAL);
      return answer(query_qp(s, r.handle, out), out);
    }
    case wire::Op::destroy_qp: {
      wire::Handle r;
      if (!body_as(body, r)) return fail(EINVAL);
      return fail(destroy_qp(s, sv, r.handle));
    }
    case wire::Op::create_srq: {
      wire::CreateSrq r;
      wire::SrqCreated out{};
      int pass_fd = -1;
      if (!body_as(body, r)) return fail(EINVAL);
      if (const int rc = create_srq(s, sv, r, out, pass_fd)) return fail(rc);
      return reply(s, op, 0, &out, sizeof out, pass_fd);
    }
    case wire::Op::modify_srq: {
      wire::ModifySrq r;
      if (!body_as(body, r)) return fail(EINVAL);
      return fail(modify_srq(s, r));
    }
    case wire::Op::query_srq: {
      wire::Handle r;
      wire::SrqState out{};
      if (!body_as(body, r)) return fail(EINVAL);
      return answer(query_srq(s, r.handle, out), out);
    }
    case wire::Op::destroy_srq: {
      wire::Handle r;
      if (!body_as(body, r)) return fail(EINVAL);
      return fail(destroy_srq(s, sv, r.handle));
    }
    case wire::Op::doorbell: {
      wire::Doorbell d;
      if (!body_as(body, d)) return false;  // posted: nothing to answer; a malformed one ends the client
      if (s.device >= 0) {
        ++sv.device_doorbells[size_t(s.device)];
        sv.device_posted[size_t(s.device)].notify(sc_core::SC_ZERO_TIME);
      }
      ring(s, sv, d);
      return true;
    }
    case wire::Op::await: {
      wire::Await a;
      if (!body_as(body, a)) return fail(EINVAL);
      await_change(s, sv, a);
      return reply(s, op, 0, nullptr, 0);
    }
    case wire::Op::await_event: {
      wire::AwaitEvent a;
      if (!body_as(body, a)) return fail(EINVAL);
      return fail(await_event(s, a));
    }
  }
  return fail(EOPNOTSUPP);
}

// What a client left open when it went (what the report says was released).
struct Left {
  size_t qps = 0, cqs = 0, mrs = 0, pds = 0;
  uint64_t absorbed = 0;  // bytes the device wrote into its MRs after it exited
};

// What a client left is destroyed, QPs first (they hold CQs and PDs), as the kernel does.
Left release(Session& s, Served& sv) {
  Left left{s.qps.size(), s.cqs.size(), s.mrs.size(), s.pds.size()};
  note_landed(s, sv);
  for (auto& [qpn, e] : s.qps) {
    verbs::destroy_qp(e.qp);
    forget_qp(s, sv, qpn, e);
    node_of(s, sv).memory.detach(e.base);
  }
  s.qps.clear();
  for (auto& [srqn, e] : s.srqs) {
    verbs::destroy_srq(e.srq);
    sv.ledger.srq_destroyed(s.device, srqn);
    node_of(s, sv).memory.detach(e.base);
  }
  s.srqs.clear();
  for (auto& [cqn, e] : s.cqs) {
    verbs::destroy_cq(e.cq);
    node_of(s, sv).memory.unwatch(e.base, s.cqe_written);
    node_of(s, sv).memory.detach(e.base);
  }
  s.cqs.clear();
  for (auto& [lkey, e] : s.mrs) {
    verbs::dereg_mr(e.mr);
    node_of(s, sv).memory.unwatch(e.base, s.mr_written);
    left.absorbed += e.memory->absorbed();
    node_of(s, sv).memory.detach(e.base);
  }
  s.mrs.clear();
  for (auto& [pdn, pd] : s.pds) verbs::dealloc_pd(pd);
  s.pds.clear();
  for (auto& [id, ch] : s.channels) ::close(ch.fd);
  s.channels.clear();
  for (int fd : s.passed_fds) ::close(fd);
  s.passed_fds.clear();
  if (s.async_fd >= 0) ::close(s.async_fd);
  s.async_fd = -1;
  return left;
}

// Adds the client to the JSON report and writes the file again, so that it is whole whenever a
// client has left.
void record_report(const Session& s, Served& sv) {
  if (s.device < 0 || sv.opts.json_path.empty()) return;
  sv.reports.push_back(client_json(int(s.pid), sv.devs[size_t(s.device)].info.name, now_us(), s.ledger));
  std::string out = "[\n";
  for (size_t i = 0; i < sv.reports.size(); ++i) out += (i ? ",\n  " : "  ") + sv.reports[i];
  out += "\n]\n";
  if (FILE* f = std::fopen(sv.opts.json_path.c_str(), "w")) {
    std::fwrite(out.data(), 1, out.size(), f);
    std::fclose(f);
  } else {
    std::fprintf(stderr, "vhca-sim serve: cannot write %s: %s\n", sv.opts.json_path.c_str(), std::strerror(errno));
  }
}

void print_report(const Session& s, const Left& left, const Served& sv) {
  if (sv.opts.quiet || s.device < 0) return;
  std::printf("vhca-sim serve: client pid %d on %s left at %.3f us: %llu doorbells (%llu refused), %llu awaits, "
              "%llu completion events, %llu async events; released %zu QPs, %zu CQs, %zu MRs, %zu PDs it left open%s\n",
              int(s.pid), sv.devs[size_t(s.device)].info.name, sc_core::sc_time_stamp().to_seconds() * 1e6,
              (unsigned long long)s.doorbells, (unsigned long long)s.refused_doorbells, (unsigned long long)s.awaits,
              (unsigned long long)s.events, (unsigned long long)s.async_events, left.qps, left.cqs, left.mrs, left.pds,
              left.absorbed ? fmt::format(" ({} bytes written into its MRs after it exited)", left.absorbed).c_str() : "");
  std::printf("vhca-sim serve: client pid %d: %s\n", int(s.pid), client_summary(s.ledger).c_str());
  std::fflush(stdout);
}

// The agent of one connection: its requests in order, in simulated time. Before a reply wakes the
// client's thread, the thread's voluntary switches are noted (the time rule, run_state.h).
void agent(SessionPtr s, Served& sv) {
  while (!s->gone) {
    if (s->queue.empty()) {
      sc_core::wait(s->work);
      continue;
    }
    Request req = std::move(s->queue.front());
    s->queue.pop_front();
    const bool posted = is_posted(wire::Op(req.h.op));
    if (!posted) {
      s->woken_tid = pid_t(req.h.status);
      s->woken_switches = -1;  // noted as the reply goes (reply())
    }
    const bool ok = serve_request(*s, req, sv);
    if (!posted) {
      --s->awaiting;
      s->last_wake = std::chrono::steady_clock::now();
      sv.client_resumes.notify(sc_core::SC_ZERO_TIME);
    }
    if (!ok) s->gone = true;
  }
  const Left left = release(*s, sv);
  print_report(*s, left, sv);
  record_report(*s, sv);
  s->cqe_written.notify(sc_core::SC_ZERO_TIME);  // its ledger watch ends
  s->finished = true;
  sv.client_resumes.notify(sc_core::SC_ZERO_TIME);
}

// A port change: the port's attributes follow (what ibv_query_port reads), and every context open
// on the device gets IBV_EVENT_PORT_ACTIVE or IBV_EVENT_PORT_ERR, as the kernel tells every
// context of a device.
void deliver_port_change(Served& sv, int device, const AsyncEvent& ev) {
  const bool active = ev.syndrome == eqe::kPortActive;
  wire::PortInfo& port = sv.devs[size_t(device)].port;
  port.state = active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  port.phys_state = active ? 5 : 2;  // LinkUp, or Polling (for a peer)
  const wire::AsyncRecord rec{uint32_t(active ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR), uint32_t(ev.data)};
  for (const SessionPtr& s : sv.sessions) {
    if (s->device != device || s->gone || s->async_fd < 0) continue;
    if (::send(s->async_fd, &rec, sizeof rec, MSG_NOSIGNAL | MSG_DONTWAIT) == ssize_t(sizeof rec)) ++s->async_events;
  }
  sv.client_resumes.notify(sc_core::SC_ZERO_TIME);
}

// A line on the server's output (not with --quiet).
void say(const Served& sv, const std::string& line) {
  if (sv.opts.quiet) return;
  std::printf("vhca-sim serve: %s\n", line.c_str());
  std::fflush(stdout);
}

// --port-down: the device's link goes down a while after a program first opens the device (or at
// its N-th doorbell), and perhaps comes back.
void run_port_down(Served& sv, ServeOptions::PortDown p) {
  IbLink& link = sv.sys.cable(p.device);
  auto lost = [&link] {
    uint64_t n = 0;
    for (uint32_t side = 0; side < link.sides(); ++side) n += link.stats(side).link_down;
    return n;
  };
  if (p.at_doorbell) {
    while (sv.device_doorbells[p.device] < p.at_doorbell) sc_core::wait(sv.device_posted[p.device]);
  } else {
    sc_core::wait(sv.device_opened[p.device]);
    sc_core::wait(sc_core::sc_time(p.at_us, sc_core::SC_US));
  }
  const uint64_t lost_before = lost();
  link.set_up(false);
  say(sv, fmt::format("vhca{}'s link down at {:.3f} us", p.device, sc_core::sc_time_stamp().to_seconds() * 1e6));
  if (p.for_us <= 0) return;
  sc_core::wait(sc_core::sc_time(p.for_us, sc_core::SC_US));
  link.set_up(true);
  say(sv, fmt::format("vhca{}'s link up at {:.3f} us: {} packets lost while it was down", p.device,
                      sc_core::sc_time_stamp().to_seconds() * 1e6, lost() - lost_before));
}

// An async event of device `device` for the client that owns its object: one record on the
// client's async channel (what ibv_get_async_event reads). Device-wide events (a DMA error, an EQ
// overrun) belong to no client: the driver handles them.
void deliver_async(Served& sv, int device, const AsyncEvent& ev) {
  if (ev.type == eqe::kPortChange) return deliver_port_change(sv, device, ev);
  wire::AsyncRecord rec{};
  bool cq_event = false;
  if (ev.type == eqe::kCqError) {
    rec = {IBV_EVENT_CQ_ERR, ev.cqn};
    cq_event = true;
  } else if (ev.type == eqe::kQpFatal) {
    rec = {IBV_EVENT_QP_FATAL, uint32_t(ev.data)};
  } else if (ev.type == eqe::kSqDrained) {
    rec = {IBV_EVENT_SQ_DRAINED, uint32_t(ev.data)};
  } else if (ev.type == eqe::kSrqLimit) {
    rec = {IBV_EVENT_SRQ_LIMIT_REACHED, uint32_t(ev.data)};
  } else {
    return;
  }
  for (const SessionPtr& s : sv.sessions) {
    if (s->device != device || s->gone || s->async_fd < 0) continue;
    const bool owns = cq_event ? s->cqs.count(rec.object) > 0
                      : ev.type == eqe::kSrqLimit ? s->srqs.count(rec.object) > 0
                                                  : s->qps.count(rec.object) > 0;
    if (!owns) continue;
    if (::send(s->async_fd, &rec, sizeof rec, MSG_NOSIGNAL | MSG_DONTWAIT) == ssize_t(sizeof rec)) ++s->async_events;
    sv.client_resumes.notify(sc_core::SC_ZERO_TIME);
    return;
  }
}

// The watch over a client's memory: woken by every write into its CQ buffers (the ledger notes the
// CQEs that landed) or its MRs, until it goes. A program that is not blocked in a verb can see the
// write at once (it may be spinning on it): it gets the CPU again, and simulated time holds (the
// spin rule, off_cpu).
void watch_landings(SessionPtr s, Served& sv) {
  while (!s->finished) {
    sc_core::wait(s->cqe_written | s->mr_written);
    if (s->gone) continue;
    note_landed(*s, sv);
    if (s->awaiting == 0) {
      s->last_wake = std::chrono::steady_clock::now();
      sv.client_resumes.notify(sc_core::SC_ZERO_TIME);
    }
  }
}

// Takes every whole frame out of the client's buffer into its agent's queue; false: drop the
// client (a frame that is not this protocol). A connection without a device is answered at once
// (discovery and queries take no simulated time).
bool take_frames(const SessionPtr& s, Served& sv) {
  constexpr uint32_t kMaxBody = 1 << 20;  // no request is near this: a larger one is not ours
  for (;;) {
    if (s->in.size() < sizeof(wire::Header)) return true;
    wire::Header h;
    std::memcpy(&h, s->in.data(), sizeof h);
    if (h.magic != wire::kMagic || h.version != wire::kVersion || h.length > kMaxBody) return false;
    if (s->in.size() < sizeof h + h.length) return true;
    Request req{h, std::vector<uint8_t>(s->in.begin() + sizeof h, s->in.begin() + long(sizeof h + h.length))};
    s->in.erase(s->in.begin(), s->in.begin() + long(sizeof h + h.length));
    if (!is_posted(wire::Op(h.op))) ++s->awaiting;
    s->last_wake = std::chrono::steady_clock::now();
    s->queue.push_back(std::move(req));
    s->work.notify(sc_core::SC_ZERO_TIME);
  }
}

// The time rule: simulated time may run only while no client thread runs its own code. A client
// is off the CPU while one of its threads waits on a request, or while the kernel says none of
// its threads runs and the thread the last reply woke has gone to sleep again since.
//
// The spin rule: a client that has run for spin_grace of wall time with nothing new to react to
// (no request from it, no reply, event or device write into its memory since) is taken to be
// spinning on memory the device will write (perftest's ib_write_lat polls its buffer's last byte)
// or computing on its own: it no longer holds simulated time. When the device writes into its
// memory it holds time again until its next request or another spin_grace.
bool off_cpu(const Session& s, const Served& sv) {
  if (s.gone || s.awaiting > 0) return true;
  if (s.pid <= 0) return true;
  if (std::chrono::steady_clock::now() - s.last_wake > sv.opts.spin_grace) return true;
  if (s.woken_tid > 0 && s.woken_switches >= 0 && run_state::voluntary_switches(s.pid, s.woken_tid) == s.woken_switches)
    return false;  // still on its way back from our reply
  return !run_state::any_thread_running(s.pid);
}

pid_t peer_pid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : 0;
}

constexpr timespec kNoWait{0, 0};

// Accepts and reads what the sockets have, waiting up to `timeout_us` (-1: until something comes)
// for the first of it; false once SIGINT or SIGTERM came.
bool take_input(int listener, Served& sv, long timeout_us) {
  std::vector<pollfd> fds{{g_stop_pipe[0], POLLIN, 0}, {listener, POLLIN, 0}};
  std::vector<SessionPtr> polled;
  for (const SessionPtr& s : sv.sessions)
    if (!s->gone) {
      fds.push_back({s->fd, POLLIN, 0});
      polled.push_back(s);
    }
  const timespec limit{timeout_us / 1000000, (timeout_us % 1000000) * 1000};
  if (::ppoll(fds.data(), fds.size(), timeout_us < 0 ? nullptr : &limit, nullptr) < 0) return errno == EINTR;
  if (fds[0].revents) return false;
  if (fds[1].revents & POLLIN) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      auto s = std::make_shared<Session>();
      s->fd = fd;
      s->pid = peer_pid(fd);
      sv.sessions.push_back(s);
      sc_core::sc_spawn([s, &sv] { agent(s, sv); }, sc_core::sc_gen_unique_name("client"));
      sc_core::sc_spawn([s, &sv] { watch_landings(s, sv); }, sc_core::sc_gen_unique_name("ledger"));
    }
  }
  for (size_t k = 0; k < polled.size(); ++k) {
    if (!fds[k + 2].revents) continue;
    Session& s = *polled[k];
    uint8_t buf[4096];
    const ssize_t n = wire::recv_some_with_fds(s.fd, buf, sizeof buf, s.passed_fds);
    bool alive;
    if (n == 0) {
      alive = false;  // the client closed its end (or exited)
    } else if (n < 0) {
      alive = errno == EAGAIN || errno == EINTR;
    } else {
      s.in.insert(s.in.end(), buf, buf + n);
      alive = take_frames(polled[k], sv);
    }
    if (!alive) {
      s.gone = true;
      s.work.notify(sc_core::SC_ZERO_TIME);  // its agent releases what it left
    }
  }
  return true;
}

// Whether a client has sent something not yet read (a poll that does not wait).
bool input_waiting(const Served& sv) {
  std::vector<pollfd> fds;
  for (const SessionPtr& s : sv.sessions)
    if (!s->gone) fds.push_back({s->fd, POLLIN, 0});
  return !fds.empty() && ::ppoll(fds.data(), fds.size(), &kNoWait, nullptr) > 0;
}

// Closes the connections whose agents have ended.
void reap(Served& sv) {
  for (size_t k = sv.sessions.size(); k-- > 0;) {
    if (!sv.sessions[k]->finished) continue;
    ::close(sv.sessions[k]->fd);
    sv.sessions.erase(sv.sessions.begin() + long(k));
  }
}

// The serving loop, a SystemC thread that holds simulated time: while a client thread runs its
// own code it blocks in poll() (no simulated time passes); when every client is off the CPU it
// lets the simulation run to its next activity, or until a reply wakes a client.
void serve_loop(int listener, Served& sv) {
  for (;;) {
    if (!take_input(listener, sv, 0)) break;
    reap(sv);
    bool all_off = true;
    for (const SessionPtr& s : sv.sessions) all_off = all_off && off_cpu(*s, sv);
    // A client seen asleep may have sent its request after the read above (it sleeps in recv()
    // once the send is done): read it before letting time run, or it would be served late.
    if (all_off && input_waiting(sv)) continue;
    if (all_off && sc_core::sc_pending_activity()) {
      sc_core::wait(sc_core::sc_time_to_pending_activity(), sv.client_resumes);
      continue;
    }
    // Frozen: wait for a request, re-reading the clients' states every 100 us while one runs.
    if (!take_input(listener, sv, all_off ? -1 : 100)) break;
  }
  for (const SessionPtr& s : sv.sessions) {
    s->gone = true;
    s->work.notify(sc_core::SC_ZERO_TIME);
  }
  // Let the agents release what their clients left (commands in simulated time).
  while (!sv.sessions.empty()) {
    sc_core::wait(sc_core::SC_ZERO_TIME);
    if (sc_core::sc_pending_activity()) sc_core::wait(sc_core::sc_time_to_pending_activity(), sv.client_resumes);
    reap(sv);
  }
}

// With more than two devices: what the switch carried (every packet it could not route is a
// program's wrong LID).
void print_switch_report(System& sys) {
  const IbSwitch* sw = sys.ib_switch();
  if (!sw) return;
  IbSwitch::Stats total;
  for (uint32_t p = 0; p < sw->ports(); ++p) {
    total.forwarded += sw->stats(p).forwarded;
    total.unroutable += sw->stats(p).unroutable;
    total.credit_stalls += sw->stats(p).credit_stalls;
  }
  std::printf("vhca-sim serve: switch: %llu packets forwarded, %llu unroutable, %llu held for credits\n",
              (unsigned long long)total.forwarded, (unsigned long long)total.unroutable,
              (unsigned long long)total.credit_stalls);
  std::fflush(stdout);
}

}  // namespace

int run_device_server(const ServeOptions& o) {
  std::string path = o.socket_path;
  if (path.empty()) path = std::getenv("VHCA_SOCKET") ? std::getenv("VHCA_SOCKET") : wire::kDefaultSocket;
  SystemConfig cfg;
  cfg.hosts = o.devices;
  cfg.wall_clock_watch = false;  // the loop waits for clients in poll(): wall time passes with no simulated time
  System sys(cfg);
  Served served{sys, o, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  int rc = 0;
  // The serving loop is a SystemC thread: between requests it waits for clients, and a command
  // runs the device's driver in simulated time (the clients' time rule: docs/verbs-programs.md).
  sys.run(
      [&] {
        for (uint32_t h = 0; h < sys.hosts(); ++h) {
          const CommandResult r = sys.node(h).driver.boot();
          if (!r.ok()) {
            std::fprintf(stderr, "vhca-sim serve: boot failed: vhca%u: %s\n", h, r.message().c_str());
            rc = 1;
            return;
          }
          served.devs.push_back(describe(sys.node(h), h, sys.cfg));
          served.device_opened.emplace_back();
          served.device_posted.emplace_back();
          served.device_doorbells.push_back(0);
          sys.node(h).driver.async_handler = [&served, h](const AsyncEvent& ev) { deliver_async(served, int(h), ev); };
        }
        ino_t inode = 0;
        const int listener = listen_on(path, inode);
        if (listener < 0 || ::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
          rc = listener == kBadPath ? 2 : 1;  // a path refused is bad input (README: exit codes)
          return;
        }
        struct sigaction sa{};
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, nullptr);
        sigaction(SIGTERM, &sa, nullptr);
        if (!o.quiet) {
          std::printf("vhca-sim serve: %zu devices (", served.devs.size());
          for (size_t i = 0; i < served.devs.size(); ++i)
            std::printf("%s%s LID %u", i ? ", " : "", served.devs[i].info.name, served.devs[i].port.lid);
          std::printf(") on %s\n", path.c_str());
          std::fflush(stdout);
        }
        if (!o.timeline_path.empty()) served.timeline.enable();
        for (const ServeOptions::PortDown& p : o.port_downs)
          sc_core::sc_spawn([&served, p] { run_port_down(served, p); }, sc_core::sc_gen_unique_name("port_down"));
        serve_loop(listener, served);
        ::close(listener);
        remove_socket(path, inode);
        if (!o.quiet) print_switch_report(sys);
        if (!o.timeline_path.empty() && !served.timeline.write(o.timeline_path, int(served.devs.size()))) {
          std::fprintf(stderr, "vhca-sim serve: cannot write %s\n", o.timeline_path.c_str());
          rc = 1;
        }
      },
      sc_core::sc_max_time() - sc_core::sc_time_stamp());
  return rc;
}

}  // namespace vhca
