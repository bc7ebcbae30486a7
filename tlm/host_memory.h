// Host memory: sparse and page-granular over 64-bit addresses. Pages exist only once mapped
// (allocate/map); an access that touches an unmapped page gets TLM_ADDRESS_ERROR_RESPONSE,
// never a crash. DMI is granted page by page for the host CPU (driver) side. A mapped page gets
// its storage when first written (or handed out by DMI); until then it reads as zeros, so that
// mapping large buffers costs a range, not a zeroed allocation per page.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>
#include <unordered_map>

#include "tlm/pending_writes.h"

namespace vhca {

// Memory the simulated host reaches outside its own pages: a verbs program's buffers (reached with
// process_vm_readv/writev) or memory the server shares with it (a memfd both map). Offsets are
// from the start of the range it backs; false: the bytes could not be reached (the program is
// gone, or unmapped them), which the device sees as an address error, as for unmapped memory.
class ExternalMemory {
 public:
  virtual ~ExternalMemory() = default;
  virtual bool read(uint64_t offset, void* dst, uint64_t len) = 0;
  virtual bool write(uint64_t offset, const void* src, uint64_t len) = 0;
};

struct HostMemoryConfig {
  uint64_t alloc_base = 0x1'0000'0000ull;  // where allocate() starts handing out memory
};

class HostMemory : public sc_core::sc_module {
 public:
  static constexpr uint64_t kPageSize = 4096;
  tlm_utils::simple_target_socket<HostMemory> socket{"socket"};
  // Where device writes that land quietly wait (the PCIe link; tlm/pending_writes.h): asked
  // before every access through this class, told before a watch or an unmap changes a range.
  PendingWritesPort pending_writes{"pending_writes"};

  HostMemory(const sc_core::sc_module_name& name, const HostMemoryConfig& cfg = {});

  // Maps zero-filled pages for [addr, addr+len) and returns addr; allocate picks the address.
  // Notifies `written` (in the next delta) whenever a write through the socket (a device DMA,
  // not the CPU's direct accesses) touches [addr, addr + len): a driver waits for the device's
  // reply instead of polling.
  void watch(uint64_t addr, uint64_t len, sc_core::sc_event& written);
  // The same, but calls `on_write` as the write lands (from the writer's process; it must not
  // wait): a waiter that knows when it would look can be woken then, not now.
  void watch(uint64_t addr, uint64_t len, std::function<void()> on_write);
  uint64_t allocate(uint64_t len, uint64_t align = kPageSize);
  void map(uint64_t addr, uint64_t len);
  void unmap(uint64_t addr, uint64_t len);
  bool mapped(uint64_t addr, uint64_t len) const;
  // Would a device write to [addr, addr + len) land unnoticed: mapped pages of this memory's own
  // (not a program's), no watch on them? Such a write may be applied when someone looks.
  bool lands_quietly(uint64_t addr, uint64_t len) const;
  // Gives `len` bytes of address space whose contents live in `backing` (held by the caller until
  // detach): an access must lie wholly inside one such range. Returns the range's address.
  uint64_t attach(uint64_t len, ExternalMemory& backing);
  void detach(uint64_t addr);
  // Forgets the watch of [addr, ...) on `written` (its range or its event is about to go).
  void unwatch(uint64_t addr, const sc_core::sc_event& written);
  uint64_t pages_mapped() const;
  uint64_t pages_backed() const { return pages_.size(); }  // mapped pages written so far

  // Zero-time access used by transport; false if any byte is unmapped (nothing is copied then).
  bool read(uint64_t addr, void* dst, uint64_t len) const;
  bool write(uint64_t addr, const void* src, uint64_t len);

 private:
  using Page = std::array<uint8_t, kPageSize>;
  void tell_no_longer_quiet(uint64_t addr, uint64_t len);
  void b_transport(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& tx, tlm::tlm_dmi& dmi);
  unsigned transport_dbg(tlm::tlm_generic_payload& tx);
  bool execute(tlm::tlm_generic_payload& tx);
  struct Watch {
    uint64_t addr, len;
    const sc_core::sc_event* written;  // the event notified, or null: on_write is called
    std::function<void()> on_write;
  };
  std::vector<Watch> watches_;
  struct External {
    uint64_t len;
    ExternalMemory* backing;
  };
  // The external range holding [addr, addr+len), or null; *straddles: it touches one only in part.
  const std::pair<const uint64_t, External>* external_at(uint64_t addr, uint64_t len, bool* straddles) const;
  std::map<uint64_t, External> externals_;  // start -> range, disjoint
  Page* page_of(uint64_t addr) const;    // the page's storage, or null (unwritten: zeros)
  Page& backed_page(uint64_t addr);      // the page's storage, made on first use (mapped pages only)

  HostMemoryConfig cfg_;
  uint64_t next_alloc_;
  std::map<uint64_t, uint64_t> ranges_;  // mapped pages: first page -> one past the last, disjoint
  // The range mapped() last found (mapping more keeps it mapped; unmapping forgets it): device
  // writes come in runs into one ring.
  mutable std::pair<uint64_t, uint64_t> hit_{1, 0};
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;  // storage of the pages written
};

}  // namespace vhca
