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
constexpr uint16_t kVersion = 2;
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
};

struct Header {
  uint32_t magic;
  uint16_t version;
  uint16_t op;
  uint32_t length;  // of the body that follows
  int32_t status;   // replies: 0 or an errno; requests: 0
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
