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
  CHECK(serve_once(s.path) == 1);  // a server is already listening there
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
  CHECK(serve_once(file) == 1);
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
