#include "serve/device_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "firmware-shim/driver.h"
#include "firmware-shim/qp_verbs.h"
#include "model/regs/tables.h"
#include "sim/system.h"
#include "verbs/protocol.h"
#include "verbs/unix_socket.h"

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

// One client connection: bytes received and not yet a whole frame, and, once it opened a
// device, the objects it made there (released when it goes, as the kernel does for a process).
struct Client {
  int fd;
  std::vector<uint8_t> in;
  int device = -1;
  std::map<uint32_t, Pd*> pds;
};

// What the server serves: the booted devices, and their drivers for the commands.
struct Served {
  System& sys;
  std::vector<Device> devs;
};

bool reply(int fd, wire::Op op, int32_t status, const void* body, uint32_t len) {
  const wire::Header h{wire::kMagic, wire::kVersion, uint16_t(op), len, status};
  return wire::send_all(fd, &h, sizeof h) && (len == 0 || wire::send_all(fd, body, len));
}

template <typename T>
bool body_as(const std::vector<uint8_t>& body, T& out) {
  if (body.size() != sizeof(T)) return false;
  std::memcpy(&out, body.data(), sizeof(T));
  return true;
}

// Answers one request; false: drop the client (a frame that is not this protocol). Commands run
// the device's driver here, in simulated time (the serving loop is a SystemC thread).
bool serve_request(Client& c, const wire::Header& h, const std::vector<uint8_t>& body, Served& served) {
  if (h.magic != wire::kMagic || h.version != wire::kVersion) return false;
  const int fd = c.fd;
  const std::vector<Device>& devs = served.devs;
  const auto op = wire::Op(h.op);
  auto fail = [&](int err) { return reply(fd, op, err, nullptr, 0); };
  switch (op) {
    case wire::Op::hello: {
      const wire::Hello hello{wire::kVersion, uint32_t(devs.size())};
      return reply(fd, op, 0, &hello, sizeof hello);
    }
    case wire::Op::list_devices: {
      std::vector<wire::DeviceInfo> all;
      for (const Device& d : devs) all.push_back(d.info);
      return reply(fd, op, 0, all.data(), uint32_t(all.size() * sizeof(wire::DeviceInfo)));
    }
    case wire::Op::query_device: {
      wire::DeviceRef r;
      if (!body_as(body, r)) return fail(EINVAL);
      if (r.device >= devs.size()) return fail(ENODEV);
      return reply(fd, op, 0, &devs[r.device].info, sizeof(wire::DeviceInfo));
    }
    case wire::Op::query_port: {
      wire::PortRef r;
      if (!body_as(body, r)) return fail(EINVAL);
      if (r.device >= devs.size()) return fail(ENODEV);
      if (r.port != 1) return fail(EINVAL);
      return reply(fd, op, 0, &devs[r.device].port, sizeof(wire::PortInfo));
    }
    case wire::Op::query_gid: {
      wire::GidRef r;
      if (!body_as(body, r)) return fail(EINVAL);
      if (r.device >= devs.size()) return fail(ENODEV);
      if (r.port != 1 || r.index != 0) return fail(EINVAL);
      return reply(fd, op, 0, &devs[r.device].gid, sizeof(wire::Gid));
    }
    case wire::Op::open_device: {
      wire::DeviceRef r;
      if (!body_as(body, r)) return fail(EINVAL);
      if (r.device >= devs.size()) return fail(ENODEV);
      if (c.device >= 0) return fail(EBUSY);  // one device per connection (a context)
      c.device = int(r.device);
      return reply(fd, op, 0, nullptr, 0);
    }
    case wire::Op::alloc_pd: {
      if (c.device < 0) return fail(EBADF);
      Driver& drv = served.sys.node(uint32_t(c.device)).driver;
      Pd* pd = nullptr;
      if (const int rc = verbs::alloc_pd(drv, &pd)) return fail(-rc > 0 ? -rc : ENOMEM);
      c.pds[pd->pdn] = pd;
      const wire::Handle handle{pd->pdn};
      return reply(fd, op, 0, &handle, sizeof handle);
    }
    case wire::Op::dealloc_pd: {
      wire::Handle r;
      if (!body_as(body, r)) return fail(EINVAL);
      auto it = c.pds.find(r.handle);
      if (it == c.pds.end()) return fail(EINVAL);  // not this client's PD
      if (const int rc = verbs::dealloc_pd(it->second)) return fail(-rc > 0 ? -rc : EBUSY);
      c.pds.erase(it);
      return reply(fd, op, 0, nullptr, 0);
    }
  }
  return fail(EOPNOTSUPP);
}

// A client gone: what it made is destroyed.
void release(Client& c) {
  for (auto& [pdn, pd] : c.pds) verbs::dealloc_pd(pd);
  c.pds.clear();
}

// Takes every whole frame out of the client's buffer; false: drop the client.
bool serve_buffered(Client& c, Served& served) {
  constexpr uint32_t kMaxBody = 1 << 20;  // no request is near this: a larger one is not ours
  for (;;) {
    if (c.in.size() < sizeof(wire::Header)) return true;
    wire::Header h;
    std::memcpy(&h, c.in.data(), sizeof h);
    if (h.magic != wire::kMagic || h.length > kMaxBody) return false;
    if (c.in.size() < sizeof h + h.length) return true;
    std::vector<uint8_t> body(c.in.begin() + sizeof h, c.in.begin() + long(sizeof h + h.length));
    c.in.erase(c.in.begin(), c.in.begin() + long(sizeof h + h.length));
    if (!serve_request(c, h, body, served)) return false;
  }
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

int listen_on(const std::string& path, ino_t& inode) {
  sockaddr_un addr;
  if (!wire::unix_address(path, addr)) {
    std::fprintf(stderr, "vhca-sim serve: socket path '%s' is longer than %zu bytes\n", path.c_str(),
                 sizeof addr.sun_path - 1);
    return -1;
  }
  if (!path_free(path)) return -1;
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

void serve_loop(int listener, Served& served) {
  std::vector<Client> clients;
  constexpr size_t kFirstClient = 2;  // fds: the stop pipe, the listener, then the clients
  for (;;) {
    std::vector<pollfd> fds{{g_stop_pipe[0], POLLIN, 0}, {listener, POLLIN, 0}};
    for (const Client& c : clients) fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) break;  // SIGINT or SIGTERM
    if (fds[1].revents & POLLIN) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) clients.push_back(Client{fd, {}, -1, {}});
    }
    for (size_t k = kFirstClient; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Client& c = clients[k - kFirstClient];
      uint8_t buf[4096];
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      bool alive = true;
      if (n == 0) {
        alive = false;  // the client closed its end (or exited)
      } else if (n < 0) {
        alive = errno == EAGAIN || errno == EINTR;
      } else {
        c.in.insert(c.in.end(), buf, buf + n);
        alive = serve_buffered(c, served);
      }
      if (!alive) {
        ::close(c.fd);
        c.fd = -1;
        release(c);
      }
    }
    for (size_t k = clients.size(); k-- > 0;)
      if (clients[k].fd < 0) clients.erase(clients.begin() + long(k));
  }
  for (Client& c : clients) {
    ::close(c.fd);
    release(c);
  }
}

}  // namespace

int run_device_server(const ServeOptions& o) {
  std::string path = o.socket_path;
  if (path.empty()) path = std::getenv("VHCA_SOCKET") ? std::getenv("VHCA_SOCKET") : wire::kDefaultSocket;
  SystemConfig cfg;
  cfg.hosts = 2;
  cfg.wall_clock_watch = false;  // the loop waits for clients in poll(): wall time passes with no simulated time
  System sys(cfg);
  Served served{sys, {}};
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
        }
        ino_t inode = 0;
        const int listener = listen_on(path, inode);
        if (listener < 0 || ::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
          rc = 1;
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
        serve_loop(listener, served);
        ::close(listener);
        remove_socket(path, inode);
      },
      sc_core::sc_max_time() - sc_core::sc_time_stamp());
  return rc;
}

}  // namespace vhca
