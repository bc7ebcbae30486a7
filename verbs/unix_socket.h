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

}  // namespace vhca::wire
