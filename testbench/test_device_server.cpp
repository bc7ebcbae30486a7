// The device server (vhca-sim serve) against bad clients: a frame with the wrong magic, an
// oversized body or a client that stops mid-frame never stops it serving the others; bad
// requests get their errno; SIGTERM ends it cleanly. The server runs as a child process, as
// verbs programs see it.
#include "testbench/test_support.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "verbs/protocol.h"
#include "verbs/unix_socket.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}  // namespace vhca::test
using namespace vhca;
namespace wire = vhca::wire;

namespace {

struct Server {
  std::string dir, path;
  pid_t pid = -1;
  Server() {
    char tmpl[] = "/tmp/vhca-serve-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/s.sock";
    pid = fork();
    if (pid == 0) {
      execl(VHCA_SIM_PATH, VHCA_SIM_PATH, "serve", "--socket", path.c_str(), "--quiet", (char*)nullptr);
      _exit(127);
    }
    for (int i = 0; i < 300 && access(path.c_str(), F_OK) != 0; ++i) usleep(100000);
  }
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
  int stop() {  // SIGTERM; the exit status
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

int connect_to(const std::string& path) {
  const int fd = wire::connect_unix(path);
  REQUIRE(fd >= 0);
  timeval tv{5, 0};  // a server that never answers fails the test instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Header and body in one send (a server that drops the client on its header cannot make the
// body's send fail half-way).
void send_frame(int fd, uint16_t op, const void* body, uint32_t len, uint32_t magic = wire::kMagic) {
  const wire::Header h{magic, wire::kVersion, op, len, 0};
  std::vector<uint8_t> frame(sizeof h + len);
  std::memcpy(frame.data(), &h, sizeof h);
  if (len) std::memcpy(frame.data() + sizeof h, body, len);
  REQUIRE(send(fd, frame.data(), frame.size(), MSG_NOSIGNAL) == ssize_t(frame.size()));
}

// The reply's status and body; status -1 if the connection was closed.
int receive(int fd, std::vector<uint8_t>& body) {
  wire::Header h;
  if (!wire::recv_all(fd, &h, sizeof h)) return -1;
  body.resize(h.length);
  if (h.length && !wire::recv_all(fd, body.data(), h.length)) return -1;
  return h.status;
}

}  // namespace

TEST_CASE("the device server answers bad requests with an errno, drops clients that break the protocol, and keeps serving the others") {
  Server s;
  REQUIRE(access(s.path.c_str(), F_OK) == 0);
  std::vector<uint8_t> body;

  const int good = connect_to(s.path);
  const wire::Hello hello{wire::kVersion, 0};
  send_frame(good, uint16_t(wire::Op::hello), &hello, sizeof hello);
  REQUIRE(receive(good, body) == 0);
  wire::Hello h;
  std::memcpy(&h, body.data(), sizeof h);
  CHECK(h.version == wire::kVersion);
  CHECK(h.devices == 2);

  // A client that stops half-way through a header: the others are still served.
  const int stalled = connect_to(s.path);
  REQUIRE(send(stalled, "VHC", 3, MSG_NOSIGNAL) == 3);

  const wire::DeviceRef bad_dev{9};
  send_frame(good, uint16_t(wire::Op::query_device), &bad_dev, sizeof bad_dev);
  CHECK(receive(good, body) == ENODEV);
  const wire::PortRef bad_port{0, 2};
  send_frame(good, uint16_t(wire::Op::query_port), &bad_port, sizeof bad_port);
  CHECK(receive(good, body) == EINVAL);
  const uint8_t short_body[2] = {0, 0};
  send_frame(good, uint16_t(wire::Op::query_gid), short_body, sizeof short_body);
  CHECK(receive(good, body) == EINVAL);
  send_frame(good, 77, nullptr, 0);
  CHECK(receive(good, body) == EOPNOTSUPP);
  const wire::PortRef port{1, 1};
  send_frame(good, uint16_t(wire::Op::query_port), &port, sizeof port);
  REQUIRE(receive(good, body) == 0);
  wire::PortInfo p;
  std::memcpy(&p, body.data(), sizeof p);
  CHECK(p.lid == 2);
  CHECK(p.state == 4);

  // Wrong magic, and a body of 64 MiB announced: the server drops those clients only.
  const int liar = connect_to(s.path);
  send_frame(liar, uint16_t(wire::Op::hello), &hello, sizeof hello, 0xDEADBEEF);
  CHECK(receive(liar, body) == -1);
  const int hog = connect_to(s.path);
  const wire::Header huge{wire::kMagic, wire::kVersion, uint16_t(wire::Op::hello), 64u << 20, 0};
  REQUIRE(send(hog, &huge, sizeof huge, MSG_NOSIGNAL) == ssize_t(sizeof huge));
  CHECK(receive(hog, body) == -1);

  send_frame(good, uint16_t(wire::Op::list_devices), nullptr, 0);
  REQUIRE(receive(good, body) == 0);
  CHECK(body.size() == 2 * sizeof(wire::DeviceInfo));

  close(good);
  close(stalled);
  close(liar);
  close(hog);
  CHECK(s.stop() == 0);
  CHECK(access(s.path.c_str(), F_OK) != 0);  // the socket is gone
}

namespace {
// Runs `vhca-sim serve --socket path` to its end; its exit status.
int serve_once(const std::string& path) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl(VHCA_SIM_PATH, VHCA_SIM_PATH, "serve", "--socket", path.c_str(), "--quiet", (char*)nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST_CASE("the device server takes only a free socket path: a live server's socket and a file that is not a socket are refused and kept") {
  Server s;
  REQUIRE(access(s.path.c_str(), F_OK) == 0);
  CHECK(serve_once(s.path) == 2);  // a server is already listening there: bad input
  const int c = connect_to(s.path);  // and it still is
  const wire::Hello hello{wire::kVersion, 0};
  send_frame(c, uint16_t(wire::Op::hello), &hello, sizeof hello);
  std::vector<uint8_t> body;
  CHECK(receive(c, body) == 0);
  close(c);
  const std::string file = s.dir + "/results.json";
  FILE* f = fopen(file.c_str(), "w");
  REQUIRE(f);
  fputs("{}", f);
  fclose(f);
  CHECK(serve_once(file) == 2);
  CHECK(access(file.c_str(), F_OK) == 0);  // not replaced
  unlink(file.c_str());
  CHECK(s.stop() == 0);
}

TEST_CASE("protection domains: a connection opens one device, its PDs are made by the driver's ALLOC_PD, only it may free them, and they go when it closes") {
  Server s;
  REQUIRE(access(s.path.c_str(), F_OK) == 0);
  std::vector<uint8_t> body;
  const int a = connect_to(s.path);
  send_frame(a, uint16_t(wire::Op::alloc_pd), nullptr, 0);
  CHECK(receive(a, body) == EBADF);  // no device opened on this connection yet
  const wire::DeviceRef dev0{0}, dev9{9};
  send_frame(a, uint16_t(wire::Op::open_device), &dev9, sizeof dev9);
  CHECK(receive(a, body) == ENODEV);
  send_frame(a, uint16_t(wire::Op::open_device), &dev0, sizeof dev0);
  REQUIRE(receive(a, body) == 0);
  send_frame(a, uint16_t(wire::Op::open_device), &dev0, sizeof dev0);
  CHECK(receive(a, body) == EBUSY);  // one device per connection
  wire::Handle pd1{}, pd2{};
  send_frame(a, uint16_t(wire::Op::alloc_pd), nullptr, 0);
  REQUIRE(receive(a, body) == 0);
  REQUIRE(body.size() == sizeof pd1);
  std::memcpy(&pd1, body.data(), sizeof pd1);
  send_frame(a, uint16_t(wire::Op::alloc_pd), nullptr, 0);
  REQUIRE(receive(a, body) == 0);
  std::memcpy(&pd2, body.data(), sizeof pd2);
  CHECK(pd1.handle != pd2.handle);
  // Another connection may not free them.
  const int b = connect_to(s.path);
  send_frame(b, uint16_t(wire::Op::open_device), &dev0, sizeof dev0);
  REQUIRE(receive(b, body) == 0);
  send_frame(b, uint16_t(wire::Op::dealloc_pd), &pd1, sizeof pd1);
  CHECK(receive(b, body) == EINVAL);
  send_frame(a, uint16_t(wire::Op::dealloc_pd), &pd1, sizeof pd1);
  CHECK(receive(a, body) == 0);
  send_frame(a, uint16_t(wire::Op::dealloc_pd), &pd1, sizeof pd1);
  CHECK(receive(a, body) == EINVAL);  // already freed
  // A closes with pd2 still allocated: the server frees it, so B's next PD may take its number.
  close(a);
  wire::Handle again{};
  for (int tries = 0; tries < 50 && again.handle != pd2.handle; ++tries) {
    send_frame(b, uint16_t(wire::Op::alloc_pd), nullptr, 0);
    REQUIRE(receive(b, body) == 0);
    std::memcpy(&again, body.data(), sizeof again);
  }
  CHECK(again.handle == pd2.handle);
  close(b);
  CHECK(s.stop() == 0);
}

// A hostile or broken client on an open device: every object request with a body of the wrong
// size, then one naming objects that do not exist (or are another connection's), gets an errno
// and nothing else happens; descriptors that should come with a request but do not are refused;
// a doorbell naming a foreign object is dropped (no reply: it is posted). The server goes on
// serving, and this connection's own PD still works.
TEST_CASE("the device server refuses every object request with a wrong body or a foreign handle, and keeps serving") {
  Server s;
  std::vector<uint8_t> body;
  const int owner = connect_to(s.path);
  const wire::DeviceRef dev{0};
  send_frame(owner, uint16_t(wire::Op::open_device), &dev, sizeof dev);
  REQUIRE(receive(owner, body) == 0);
  send_frame(owner, uint16_t(wire::Op::alloc_pd), nullptr, 0);
  REQUIRE(receive(owner, body) == 0);
  wire::Handle pd;
  std::memcpy(&pd, body.data(), sizeof pd);

  const int c = connect_to(s.path);
  send_frame(c, uint16_t(wire::Op::open_device), &dev, sizeof dev);
  REQUIRE(receive(c, body) == 0);
  const uint16_t first = uint16_t(wire::Op::reg_mr), last = uint16_t(wire::Op::last);
  int answered = 0;
  for (uint16_t op = first; op <= last; ++op) {
    if (op == uint16_t(wire::Op::doorbell)) continue;  // posted: no reply
    // A body of 3 bytes is no request's: EINVAL (ops without a body ignore it and fail on what
    // they miss: a descriptor, or find nothing to wait for).
    const uint8_t junk[3] = {0xFF, 0xFF, 0xFF};
    send_frame(c, op, junk, sizeof junk);
    const int st = receive(c, body);
    INFO("op " << op);
    CHECK(st > 0);
    ++answered;
  }
  CHECK(answered == last - first);
  // Well-formed requests naming the owner's PD, or objects nobody made.
  const wire::RegMr mr{pd.handle, 1, reinterpret_cast<uint64_t>(&body), 64, reinterpret_cast<uint64_t>(&body)};
  send_frame(c, uint16_t(wire::Op::reg_mr), &mr, sizeof mr);
  CHECK(receive(c, body) == EINVAL);
  const wire::CreateCq cq{4, 0, 77};  // a channel it does not have
  send_frame(c, uint16_t(wire::Op::create_cq), &cq, sizeof cq);
  CHECK(receive(c, body) == EINVAL);
  for (wire::Op op : {wire::Op::dereg_mr, wire::Op::destroy_cq, wire::Op::destroy_qp, wire::Op::query_qp,
                      wire::Op::destroy_srq, wire::Op::query_srq, wire::Op::destroy_comp_channel, wire::Op::dealloc_pd}) {
    const wire::Handle h{op == wire::Op::dealloc_pd ? pd.handle : 0x123456};
    send_frame(c, uint16_t(op), &h, sizeof h);
    INFO("op " << uint16_t(op));
    CHECK(receive(c, body) == EINVAL);
  }
  // A doorbell for a QP that is not its own: dropped, and the connection still answers.
  const wire::Doorbell db{uint32_t(wire::DoorbellKind::send), 1, 0x2};
  send_frame(c, uint16_t(wire::Op::doorbell), &db, sizeof db);
  send_frame(c, uint16_t(wire::Op::alloc_pd), nullptr, 0);
  CHECK(receive(c, body) == 0);
  // The owner's PD is untouched.
  send_frame(owner, uint16_t(wire::Op::dealloc_pd), &pd, sizeof pd);
  CHECK(receive(owner, body) == 0);
  close(c);
  close(owner);
  CHECK(s.stop() == 0);
}
