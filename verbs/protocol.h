// The protocol between the verbs library (verbs/libibverbs.cpp, a drop-in libibverbs.so.1) and
// the device server (`vhca-sim serve`, serve/device_server.*): the server plays the kernel's part
// (uverbs), the library the userspace provider's. Frames over a Unix stream socket: a Header,
// then `length` bytes of body. Every request gets one reply with the same op; a reply's status is
// 0 or a positive errno. All fields are little-endian and fixed-width (both ends are built from
// this header on one machine). docs/verbs-protocol.md describes each op; bump kVersion when a
// body changes.
#pragma once
#include <cstdint>

namespace vhca::wire {

constexpr uint32_t kMagic = 0x41434856;  // "VHCA"
constexpr uint16_t kVersion = 6;
// The socket the library uses when VHCA_SOCKET is not set.
constexpr const char* kDefaultSocket = "/tmp/vhca.sock";

enum class Op : uint16_t {
  hello = 1,         // body: Hello; reply: Hello (the server's version and device count)
  list_devices = 2,  // body: none; reply: DeviceInfo x count
  query_device = 3,  // body: DeviceRef; reply: DeviceInfo
  query_port = 4,    // body: PortRef; reply: PortInfo
  query_gid = 5,     // body: GidRef; reply: Gid
  // A connection that opened a device (a context) owns the objects it makes on it; they are
  // destroyed when the connection closes, as the kernel does when a process exits.
  open_device = 6,   // body: DeviceRef; reply: none
  alloc_pd = 7,      // body: none; reply: Handle
  dealloc_pd = 8,    // body: Handle; reply: none
  // Version 3: memory regions, CQs, QPs, completion channels and the data path.
  reg_mr = 9,                // body: RegMr; reply: MrKeys
  dereg_mr = 10,             // body: Handle (the lkey); reply: none
  create_comp_channel = 11,  // body: none, with a socket's fd (SCM_RIGHTS); reply: Handle
  destroy_comp_channel = 12, // body: Handle; reply: none
  create_cq = 13,            // body: CreateCq; reply: CqCreated, with the CQ memory's fd
  destroy_cq = 14,           // body: Handle (the CQN); reply: Count (completion events reported)
  create_qp = 15,            // body: CreateQp; reply: QpCreated, with the QP memory's fd
  modify_qp = 16,            // body: ModifyQp; reply: none
  query_qp = 17,             // body: Handle (the QPN); reply: QpState
  destroy_qp = 18,           // body: Handle; reply: none
  // Posted: no reply (an MMIO write). A doorbell for an object that is not the connection's is
  // dropped and counted (the server's report), as a device ignores another process's UAR.
  doorbell = 19,             // body: Doorbell
  // The calling thread found its CQs empty: the reply comes at the instant a CQE is written to one
  // of the connection's CQs, or after the poll interval (1 us, doubling while nothing is written,
  // up to 64 us). Simulated time runs only while no client thread runs its own code.
  await = 20,                // body: Await; reply: none
  await_event = 21,          // body: AwaitEvent; reply: none
  // Version 4: the context's async event channel (ibv_context.async_fd).
  open_async = 22,           // body: none, with a socket's fd (SCM_RIGHTS); reply: none
  // Version 6: shared receive queues.
  create_srq = 23,           // body: CreateSrq; reply: SrqCreated, with the SRQ memory's fd
  modify_srq = 24,           // body: ModifySrq; reply: none
  query_srq = 25,            // body: Handle (the SRQN); reply: SrqState
  destroy_srq = 26,          // body: Handle; reply: none
  last = destroy_srq,        // (not an op) the highest this version knows: above it, EOPNOTSUPP
};

// Objects a client made are named by their number on the device: PDN, lkey, CQN, QPN.
struct RegMr {
  uint32_t pd;
  uint32_t access;  // IBV_ACCESS_* bits (the server maps them)
  uint64_t addr;    // the program's virtual address of the buffer
  uint64_t length;
  uint64_t iova;    // the address work requests name it by (ibv_reg_mr: addr; ibv_reg_mr_iova2: the program's)
};

struct MrKeys {
  uint32_t lkey, rkey;
};

struct CreateCq {
  uint32_t cqe;          // at least this many entries
  uint32_t comp_vector;
  uint32_t channel;      // a completion channel's handle, or kNoChannel
};
constexpr uint32_t kNoChannel = ~0u;

// The CQ's memory, shared with the server (a memfd, passed with the reply): 2^log_size CQEs at
// offset 0, the doorbell record at dbr_offset.
struct CqCreated {
  uint32_t cqn, log_size, dbr_offset, map_length;
};

struct CreateQp {
  uint32_t pd, type;     // type: IBV_QPT_*
  uint32_t send_cq, recv_cq;
  uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
  uint32_t sq_sig_all;
  uint32_t srq;          // an SRQ's number (its receives come from it), or kNoSrq
};
constexpr uint32_t kNoSrq = ~0u;

struct CreateSrq {
  uint32_t pd, max_wr, max_sge, limit;  // limit: 0, or arm the SRQ-limit event at it
};

// The SRQ's memory (a memfd, passed with the reply): the ring of receive WQEs at offset 0, the
// doorbell record (rq_pi: the producer counter) at dbr_offset.
struct SrqCreated {
  uint32_t srqn, depth, dbr_offset, map_length, max_sge;
};

struct ModifySrq {
  uint32_t srqn, mask, limit;  // mask: IBV_SRQ_* (only IBV_SRQ_LIMIT is served: arm the event)
};

struct SrqState {
  uint32_t max_wr, max_sge, limit;
};

// The QP's memory (a memfd, passed with the reply): the SQ ring, the RQ ring, the doorbell record.
struct QpCreated {
  uint32_t qpn, sq_depth, rq_depth, sq_offset, rq_offset, dbr_offset, map_length;
  uint32_t max_send_sge, max_recv_sge, max_inline_data;
};

// ibv_modify_qp's attributes as the program gave them, with its IBV_QP_* mask.
struct ModifyQp {
  uint32_t qpn, mask;
  uint32_t cur_state, state;  // IBV_QPS_*
  uint32_t pkey_index, qkey, access, dest_qpn, rq_psn, sq_psn, path_mtu, min_rnr_timer, timeout, retry_cnt,
      rnr_retry, max_rd_atomic, max_dest_rd_atomic, port_num, dlid;
};

struct QpState {
  uint32_t state;  // IBV_QPS_*
  uint32_t dest_qpn, sq_psn, rq_psn, path_mtu, access, qkey;
};

struct Count {
  uint32_t count;
};

enum class DoorbellKind : uint32_t { send = 0, recv = 1, cq_arm = 2 };
struct Doorbell {
  uint32_t kind;     // DoorbellKind
  uint32_t wrs;      // work requests built for it (CPU cost: post_wr_cost each)
  uint64_t value;    // the 64-bit doorbell (formats.md: WQ and arm doorbells)
};

struct Await {
  uint32_t cqes;     // CQEs the thread polled since its last await (CPU cost: cqe_cost each)
};

// ibv_get_cq_event found no event on the channel: the reply comes once the server has written
// more than `seen` events to it (the library counts what it read).
struct AwaitEvent {
  uint32_t channel, seen;
};

// One async event, as the server writes it to the context's async channel.
struct AsyncRecord {
  uint32_t event_type;  // enum ibv_event_type
  uint32_t object;      // the CQN (CQ events), QPN (QP events) or port number (port events)
};

struct Header {
  uint32_t magic;
  uint16_t version;
  uint16_t op;
  uint32_t length;  // of the body that follows
  int32_t status;   // replies: 0 or an errno; requests: the calling thread's id (gettid), for the time rule
};

struct Hello {
  uint32_t version;
  uint32_t devices;
};

struct DeviceRef {
  uint32_t device;  // index in the list: vhca<device>
};

struct DeviceInfo {
  char name[64];             // "vhca0"
  char fw_ver[64];
  uint64_t node_guid;        // host order
  uint64_t sys_image_guid;
  uint64_t max_mr_size;
  uint64_t page_size_cap;
  uint32_t vendor_id, vendor_part_id, hw_ver;
  uint32_t max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_mr, max_pd;
  uint32_t max_qp_rd_atom, max_qp_init_rd_atom, max_res_rd_atom;
  uint32_t phys_port_cnt, num_comp_vectors, core_clock_khz;
  uint32_t max_cq_count, max_cq_period_us;
};

struct PortRef {
  uint32_t device, port;
};

struct PortInfo {
  uint32_t state, max_mtu, active_mtu, lid, sm_lid, lmc, link_layer, max_msg_sz, port_cap_flags;
  uint32_t gid_tbl_len, pkey_tbl_len, active_width, active_speed, phys_state, max_vl_num;
};

struct GidRef {
  uint32_t device, port, index;
};

struct Gid {
  uint8_t raw[16];  // network order: subnet prefix, then the port GUID
};

struct Handle {
  uint32_t handle;  // the object's number on its device (a PD's PDN)
};

}  // namespace vhca::wire
