#include "serve/client_memory.h"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vhca {

std::unique_ptr<SharedRegion> SharedRegion::create(const char* name, uint64_t len) {
  len = (len + HostMemory::kPageSize - 1) / HostMemory::kPageSize * HostMemory::kPageSize;
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  if (::ftruncate(fd, off_t(len)) != 0) {
    ::close(fd);
    return nullptr;
  }
  void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<SharedRegion>(new SharedRegion(fd, static_cast<uint8_t*>(base), len));
}

SharedRegion::~SharedRegion() {
  ::munmap(base_, len_);
  ::close(fd_);
}

namespace {
bool in_range(uint64_t offset, uint64_t len, uint64_t size) { return offset <= size && len <= size - offset; }
}  // namespace

bool SharedRegion::read(uint64_t offset, void* dst, uint64_t len) {
  if (!in_range(offset, len, len_)) return false;
  std::memcpy(dst, base_ + offset, len);
  return true;
}

bool SharedRegion::write(uint64_t offset, const void* src, uint64_t len) {
  if (!in_range(offset, len, len_)) return false;
  std::memcpy(base_ + offset, src, len);
  return true;
}

bool ProcessRegion::read(uint64_t offset, void* dst, uint64_t len) {
  if (!in_range(offset, len, len_)) return false;
  if (len == 0) return true;
  iovec local{dst, len}, remote{reinterpret_cast<void*>(va_ + offset), len};
  return ::process_vm_readv(pid_, &local, 1, &remote, 1, 0) == ssize_t(len);
}

bool ProcessRegion::write(uint64_t offset, const void* src, uint64_t len) {
  if (!in_range(offset, len, len_)) return false;
  if (len == 0) return true;
  iovec local{const_cast<void*>(src), len}, remote{reinterpret_cast<void*>(va_ + offset), len};
  if (::process_vm_writev(pid_, &local, 1, &remote, 1, 0) == ssize_t(len)) return true;
  if (errno != ESRCH) return false;
  absorbed_ += len;  // the program has exited: its pinned pages take the write until its MR goes
  return true;
}

bool ProcessRegion::reachable() {
  uint8_t b;
  return len_ > 0 && read(0, &b, 1) && read(len_ - 1, &b, 1);
}

}  // namespace vhca
