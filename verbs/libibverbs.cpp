// A drop-in libibverbs.so.1 whose devices are vhca's simulated HCAs: programs built against
// Debian's libibverbs (ibv_devices, ibv_devinfo, ...) run unmodified with this library first on
// LD_LIBRARY_PATH. It plays the userspace provider's part; the device server (`vhca-sim serve`)
// plays the kernel's, over the protocol of verbs/protocol.h, on the socket VHCA_SOCKET names
// (default /tmp/vhca.sock).
//
// This first stage: device discovery and the device, port and GID queries, exported under the
// symbol versions Debian's binaries import (verbs/libibverbs.map). Contexts are not "extended"
// (abi_compat is not __VERBS_ABI_IS_EXTENDED), so verbs.h's inline extended calls take their
// legacy paths (ibv_query_device_ex -> ibv_query_device, ibv_query_port -> the exported one).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "verbs/client.h"
#include "verbs/protocol.h"
#include "verbs/unix_socket.h"

// verbs.h turns these into macros or inlines; the library defines the exported functions.
#undef ibv_query_port
#undef ibv_get_device_list
#undef ibv_free_device_list

namespace vhca::client {

int call(int fd, wire::Op op, const void* body, uint32_t len, std::vector<uint8_t>& out, int* passed, int pass) {
  wire::Header h{wire::kMagic, wire::kVersion, uint16_t(op), len, int32_t(::gettid())};
  if (passed) *passed = -1;
  const bool header_sent = pass >= 0 ? wire::send_with_fd(fd, &h, sizeof h, pass) : wire::send_all(fd, &h, sizeof h);
  if (!header_sent || (len && !wire::send_all(fd, body, len))) return EIO;
  wire::Header r;
  constexpr uint32_t kMaxReply = 1 << 20;  // no reply is near this: a larger one is not the server's
  std::vector<int> fds;
  uint8_t* at = reinterpret_cast<uint8_t*>(&r);
  for (size_t got = 0; got < sizeof r;) {  // the header, and any descriptor that came with it
    const ssize_t n = wire::recv_some_with_fds(fd, at + got, sizeof r - got, fds);
    if (n <= 0) return EIO;
    got += size_t(n);
  }
  if (passed && !fds.empty()) *passed = fds.front();
  for (size_t i = passed ? 1 : 0; i < fds.size(); ++i) ::close(fds[i]);
  if (r.magic != wire::kMagic || r.op != uint16_t(op) || r.length > kMaxReply) return EIO;
  out.resize(r.length);
  if (r.length && !wire::recv_all(fd, out.data(), r.length)) return EIO;
  return r.status;
}

int context_call(ibv_context* c, wire::Op op, const void* body, uint32_t len, std::vector<uint8_t>& out, int* passed,
                 int pass) {
  pthread_mutex_lock(&c->mutex);
  const int rc = call(context_of(c)->fd, op, body, len, out, passed, pass);
  pthread_mutex_unlock(&c->mutex);
  return rc;
}

int context_call(ibv_context* c, wire::Op op, const void* body, uint32_t len) {
  std::vector<uint8_t> reply;
  int rc = context_call(c, op, body, len, reply);
  if (rc == 0 && !reply.empty()) rc = EIO;
  return rc;
}

int context_post(ibv_context* c, wire::Op op, const void* body, uint32_t len) {
  wire::Header h{wire::kMagic, wire::kVersion, uint16_t(op), len, int32_t(::gettid())};
  pthread_mutex_lock(&c->mutex);
  const int fd = context_of(c)->fd;
  const bool ok = wire::send_all(fd, &h, sizeof h) && (len == 0 || wire::send_all(fd, body, len));
  pthread_mutex_unlock(&c->mutex);
  return ok ? 0 : EIO;
}

}  // namespace vhca::client

namespace {

namespace wire = vhca::wire;
namespace client = vhca::client;
using client::call;
using client::context_call;

std::string socket_path() {
  const char* env = std::getenv("VHCA_SOCKET");
  return env && *env ? env : wire::kDefaultSocket;
}

// One connection to the server; -1 (errno set) if there is none.
int connect_server() { return wire::connect_unix(socket_path()); }

template <typename T>
int call_for(int fd, wire::Op op, const void* body, uint32_t len, T& out) {
  std::vector<uint8_t> reply;
  const int rc = call(fd, op, body, len, reply);
  if (rc) return rc;
  if (reply.size() != sizeof(T)) return EIO;
  std::memcpy(&out, reply.data(), sizeof(T));
  return 0;
}

// The library's objects, each with the verbs.h struct first (programs see only that).
// A device is held by the list that made it and by each context opened on it, as the real
// library counts its references: the last to let go frees it.
struct Device {
  ibv_device dev;
  uint32_t index;
  uint64_t guid;
  std::atomic<int> refs{1};
};

void release(ibv_device* device) {
  auto* d = reinterpret_cast<Device*>(device);
  if (d->refs.fetch_sub(1) == 1) delete d;
}

uint32_t device_index(ibv_context* c) { return client::context_of(c)->index; }

}  // namespace

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  if (num_devices) *num_devices = 0;
  std::vector<wire::DeviceInfo> infos;
  if (const int fd = connect_server(); fd >= 0) {  // no server: no devices, as without HCAs
    std::vector<uint8_t> reply;
    if (call(fd, wire::Op::list_devices, nullptr, 0, reply) == 0 && reply.size() % sizeof(wire::DeviceInfo) == 0) {
      infos.resize(reply.size() / sizeof(wire::DeviceInfo));
      std::memcpy(infos.data(), reply.data(), reply.size());
    }
    ::close(fd);
  }
  auto** list = static_cast<ibv_device**>(std::calloc(infos.size() + 1, sizeof(ibv_device*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < infos.size(); ++i) {
    auto* d = new (std::nothrow) Device{};
    if (!d) break;
    d->index = uint32_t(i);
    d->guid = infos[i].node_guid;
    d->dev.node_type = IBV_NODE_CA;
    d->dev.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(d->dev.name, sizeof d->dev.name, "%s", infos[i].name);
    std::snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs%zu", i);
    std::snprintf(d->dev.dev_path, sizeof d->dev.dev_path, "/sys/class/infiniband_verbs/uverbs%zu", i);
    std::snprintf(d->dev.ibdev_path, sizeof d->dev.ibdev_path, "/sys/class/infiniband/%s", infos[i].name);
    list[i] = &d->dev;
    if (num_devices) ++*num_devices;
  }
  return list;
}

// The devices stay valid for contexts opened on them; the array goes.
void ibv_free_device_list(ibv_device** list) {
  if (!list) return;
  for (ibv_device** d = list; *d; ++d) release(*d);
  std::free(list);
}

const char* ibv_get_device_name(ibv_device* device) { return device ? device->name : nullptr; }

int ibv_get_device_index(ibv_device* device) { return int(reinterpret_cast<Device*>(device)->index); }

__be64 ibv_get_device_guid(ibv_device* device) {
  const uint64_t g = reinterpret_cast<Device*>(device)->guid;
  return __be64(__builtin_bswap64(g));
}

ibv_context* ibv_open_device(ibv_device* device) {
  const int fd = connect_server();
  if (fd < 0) return nullptr;
  wire::Hello hello{wire::kVersion, 0};
  if (call_for(fd, wire::Op::hello, &hello, sizeof hello, hello) != 0) {
    ::close(fd);
    errno = EIO;
    return nullptr;
  }
  auto* c = new (std::nothrow) client::Context{};
  if (!c) {
    ::close(fd);
    errno = ENOMEM;
    return nullptr;
  }
  c->fd = fd;
  c->index = reinterpret_cast<Device*>(device)->index;
  ++reinterpret_cast<Device*>(device)->refs;
  c->ctx.device = device;
  c->ctx.cmd_fd = fd;
  c->ctx.async_fd = -1;
  c->ctx.num_comp_vectors = 1;
  pthread_mutex_init(&c->ctx.mutex, nullptr);
  pthread_mutex_init(&c->objects_lock, nullptr);
  c->ctx.abi_compat = nullptr;  // not extended: inline extended verbs take their legacy paths
  client::install_data_path(&c->ctx);
  wire::DeviceInfo info;
  const wire::DeviceRef ref{c->index};
  std::vector<uint8_t> none;
  if (const int rc = call(fd, wire::Op::open_device, &ref, sizeof ref, none)) {  // this connection is the context
    ::close(fd);
    pthread_mutex_destroy(&c->ctx.mutex);
    pthread_mutex_destroy(&c->objects_lock);
    release(device);
    delete c;
    errno = rc;
    return nullptr;
  }
  if (call_for(fd, wire::Op::query_device, &ref, sizeof ref, info) == 0) c->ctx.num_comp_vectors = int(info.num_comp_vectors);
  // The async event channel: a real descriptor programs may poll() (ibv_get_async_event reads it).
  std::vector<uint8_t> reply;
  c->ctx.async_fd = client::open_event_socket(&c->ctx, wire::Op::open_async, reply);
  if (c->ctx.async_fd < 0) {
    const int err = errno;
    ibv_close_device(&c->ctx);
    errno = err;
    return nullptr;
  }
  return &c->ctx;
}

int ibv_close_device(ibv_context* context) {
  client::Context* c = client::context_of(context);
  ::close(c->fd);
  if (context->async_fd >= 0) ::close(context->async_fd);
  pthread_mutex_destroy(&c->ctx.mutex);
  pthread_mutex_destroy(&c->objects_lock);
  release(context->device);
  delete c;
  return 0;
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  wire::DeviceInfo i;
  const wire::DeviceRef ref{device_index(context)};
  if (const int rc = context_call(context, wire::Op::query_device, &ref, sizeof ref, i)) return rc;
  std::memset(attr, 0, sizeof *attr);
  std::snprintf(attr->fw_ver, sizeof attr->fw_ver, "%s", i.fw_ver);
  attr->node_guid = __be64(__builtin_bswap64(i.node_guid));
  attr->sys_image_guid = __be64(__builtin_bswap64(i.sys_image_guid));
  attr->max_mr_size = i.max_mr_size;
  attr->page_size_cap = i.page_size_cap;
  attr->vendor_id = i.vendor_id;
  attr->vendor_part_id = i.vendor_part_id;
  attr->hw_ver = i.hw_ver;
  attr->max_qp = int(i.max_qp);
  attr->max_qp_wr = int(i.max_qp_wr);
  attr->max_sge = attr->max_sge_rd = int(i.max_sge);
  attr->max_cq = int(i.max_cq);
  attr->max_cqe = int(i.max_cqe);
  attr->max_mr = int(i.max_mr);
  attr->max_pd = int(i.max_pd);
  attr->max_qp_rd_atom = int(i.max_qp_rd_atom);
  attr->max_qp_init_rd_atom = int(i.max_qp_init_rd_atom);
  attr->max_res_rd_atom = int(i.max_res_rd_atom);
  attr->atomic_cap = IBV_ATOMIC_HCA;
  attr->max_pkeys = 1;
  attr->phys_port_cnt = uint8_t(i.phys_port_cnt);
  return 0;
}

// The exported form takes the compat struct: ibv_port_attr up to and including `flags` (newer
// fields follow it; the inline caller has zeroed them).
int ibv_query_port(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* out) {
  wire::PortInfo p;
  const wire::PortRef ref{device_index(context), port_num};
  if (const int rc = context_call(context, wire::Op::query_port, &ref, sizeof ref, p)) return rc;
  ibv_port_attr a{};
  a.state = ibv_port_state(p.state);
  a.max_mtu = ibv_mtu(p.max_mtu);
  a.active_mtu = ibv_mtu(p.active_mtu);
  a.gid_tbl_len = int(p.gid_tbl_len);
  a.port_cap_flags = p.port_cap_flags;
  a.max_msg_sz = p.max_msg_sz;
  a.pkey_tbl_len = uint16_t(p.pkey_tbl_len);
  a.lid = uint16_t(p.lid);
  a.sm_lid = uint16_t(p.sm_lid);
  a.lmc = uint8_t(p.lmc);
  a.max_vl_num = uint8_t(p.max_vl_num);
  a.active_width = uint8_t(p.active_width);
  a.active_speed = uint8_t(p.active_speed);
  a.phys_state = uint8_t(p.phys_state);
  a.link_layer = uint8_t(p.link_layer);
  std::memcpy(out, &a, offsetof(ibv_port_attr, flags) + sizeof a.flags);
  return 0;
}

// Protection domains: made by the server's driver (ALLOC_PD), owned by this context's
// connection (the server frees what a closed connection left).
ibv_pd* ibv_alloc_pd(ibv_context* context) {
  wire::Handle h;
  if (const int rc = context_call(context, wire::Op::alloc_pd, nullptr, 0, h)) {
    errno = rc;
    return nullptr;
  }
  auto* pd = new (std::nothrow) ibv_pd{context, h.handle};
  if (!pd) errno = ENOMEM;
  return pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  const wire::Handle h{pd->handle};
  if (const int rc = context_call(pd->context, wire::Op::dealloc_pd, &h, sizeof h)) return rc;
  delete pd;
  return 0;
}

// Like rdma-core: 0, or -1 with errno set.
int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, union ibv_gid* gid) {
  int rc = EINVAL;
  wire::Gid g;
  if (index >= 0) {
    const wire::GidRef ref{device_index(context), port_num, uint32_t(index)};
    rc = context_call(context, wire::Op::query_gid, &ref, sizeof ref, g);
  }
  if (rc) {
    errno = rc;
    return -1;
  }
  std::memcpy(gid->raw, g.raw, sizeof g.raw);
  return 0;
}

// IBVERBS_PRIVATE_34 (driver.h): the GID's type; every vhca GID is an IB GID (type 0). 0, or -1
// with errno set.
int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index, int* type) {
  union ibv_gid gid;
  if (ibv_query_gid(context, port_num, int(index), &gid) != 0) return -1;
  *type = 0;
  return 0;
}

// The GID entry behind verbs.h's ibv_query_gid_ex: an InfiniBand GID, no net device. Returns 0 or
// an errno value, as the real library.
int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry,
                      uint32_t flags, size_t entry_size) {
  if (!context || !entry || flags || entry_size < sizeof *entry) return EINVAL;
  union ibv_gid gid;
  if (ibv_query_gid(context, uint8_t(port_num), int(gid_index), &gid) != 0) return errno;
  std::memset(entry, 0, sizeof *entry);
  entry->gid = gid;
  entry->gid_index = gid_index;
  entry->port_num = port_num;
  entry->gid_type = IBV_GID_TYPE_IB;
  entry->ndev_ifindex = 0;
  return 0;
}

// Reads a sysfs attribute, as the real library does: vhca's devices have none (no kernel
// device), so for them it finds nothing.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  const std::string path = std::string(dir) + "/" + file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = ::read(fd, buf, size);
  ::close(fd);
  if (n <= 0) return -1;
  if (size_t(n) == size) --size;
  size_t len = size_t(n) < size ? size_t(n) : size;
  if (len > 0 && buf[len - 1] == '\n') --len;
  buf[len] = '\0';
  return int(len);
}

}  // extern "C"
