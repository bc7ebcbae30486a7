// A verbs program's memory as the simulated host sees it (HostMemory::attach): the queues it
// shares with the server, and the buffers it registers.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "tlm/host_memory.h"

namespace vhca {

// Memory the server and a program both map: a memfd the server makes and passes to the program
// with the reply (CQ buffers, QP rings, doorbell records). The device's DMA and the program's
// loads and stores meet in the same pages, as in a real host's memory.
class SharedRegion : public ExternalMemory {
 public:
  // A zeroed region of `len` bytes (rounded up to pages); null if the system refuses one.
  static std::unique_ptr<SharedRegion> create(const char* name, uint64_t len);
  ~SharedRegion() override;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  bool read(uint64_t offset, void* dst, uint64_t len) override;
  bool write(uint64_t offset, const void* src, uint64_t len) override;
  uint8_t* data() { return base_; }
  uint64_t size() const { return len_; }
  int fd() const { return fd_; }

 private:
  SharedRegion(int fd, uint8_t* base, uint64_t len) : fd_(fd), base_(base), len_(len) {}
  int fd_;
  uint8_t* base_;
  uint64_t len_;
};

// A program's own buffer (a registered MR), reached through process_vm_readv / writev, as an
// HCA reaches pinned user pages. A program that unmapped the buffer makes the access fail, which
// the device sees as an address error. Once the program has exited, writes are absorbed (and
// counted), as a dead process's pinned pages take the HCA's writes until the kernel destroys its
// MRs (a message in flight when a client is killed lands there); reads fail, since its data is gone.
class ProcessRegion : public ExternalMemory {
 public:
  ProcessRegion(pid_t pid, uint64_t va, uint64_t len) : pid_(pid), va_(va), len_(len) {}
  bool read(uint64_t offset, void* dst, uint64_t len) override;
  bool write(uint64_t offset, const void* src, uint64_t len) override;
  // Whether both ends of the range can be read now (REG_MR's check that the pages exist).
  bool reachable();
  uint64_t absorbed() const { return absorbed_; }  // bytes written after the program exited

 private:
  pid_t pid_;
  uint64_t va_, len_;
  uint64_t absorbed_ = 0;
};

}  // namespace vhca
