// The Unix-socket plumbing the device server, the drop-in library and their tests share: the
// address of a socket path, a connection to it, and moving a whole buffer through a socket.
// Header-only: the library is a shared object of its own and links nothing of vhca's.
#pragma once
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace vhca::wire {

// false (errno ENAMETOOLONG) if the path does not fit a socket address.
inline bool unix_address(const std::string& path, sockaddr_un& addr) {
  addr = sockaddr_un{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return false;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

// A connection to the socket at `path`; -1 with errno set if there is none.
inline int connect_unix(const std::string& path) {
  sockaddr_un addr;
  if (!unix_address(path, addr)) return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

// Sends or receives all `len` bytes; false if the peer closed or an error (other than an
// interrupted call) stopped it. Sending never raises SIGPIPE.
template <typename Byte, typename Io>
bool transfer_all(Byte* p, size_t len, Io io) {
  while (len) {
    const ssize_t n = io(p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n, len -= size_t(n);
  }
  return true;
}
inline bool send_all(int fd, const void* data, size_t len) {
  return transfer_all(static_cast<const uint8_t*>(data), len,
                      [fd](const uint8_t* p, size_t n) { return ::send(fd, p, n, MSG_NOSIGNAL); });
}
inline bool recv_all(int fd, void* data, size_t len) {
  return transfer_all(static_cast<uint8_t*>(data), len, [fd](uint8_t* p, size_t n) { return ::recv(fd, p, n, 0); });
}

// Sends `len` bytes (at least 1) with a file descriptor attached (SCM_RIGHTS) to the first byte.
inline bool send_with_fd(int fd, const void* data, size_t len, int passed) {
  iovec iov{const_cast<void*>(data), len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &passed, sizeof(int));
  ssize_t n;
  do n = ::sendmsg(fd, &msg, MSG_NOSIGNAL); while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  return size_t(n) == len || send_all(fd, static_cast<const uint8_t*>(data) + n, len - size_t(n));
}

// One recv() that also takes any file descriptors attached (appended to `fds`, close-on-exec).
template <typename FdList>
ssize_t recv_some_with_fds(int fd, void* data, size_t len, FdList& fds) {
  iovec iov{data, len};
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC); while (n < 0 && errno == EINTR);
  for (cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&msg) : nullptr; c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int passed;
      std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.push_back(passed);
    }
  }
  return n;
}

}  // namespace vhca::wire
