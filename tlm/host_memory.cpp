#include "tlm/host_memory.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "tlm/annotated_delay.h"

namespace vhca {

HostMemory::HostMemory(const sc_core::sc_module_name& name, const HostMemoryConfig& cfg)
    : sc_module(name), cfg_(cfg), next_alloc_(cfg.alloc_base) {
  socket.register_b_transport(this, &HostMemory::b_transport);
  socket.register_get_direct_mem_ptr(this, &HostMemory::get_direct_mem_ptr);
  socket.register_transport_dbg(this, &HostMemory::transport_dbg);
}

uint64_t HostMemory::allocate(uint64_t len, uint64_t align) {
  if (align < 64) align = 64;
  uint64_t addr = (next_alloc_ + align - 1) / align * align;
  // Each allocation owns whole pages, so that unmapping one never unmaps a neighbour.
  next_alloc_ = (addr + std::max<uint64_t>(len, 1) + kPageSize - 1) / kPageSize * kPageSize;
  map(addr, len);
  return addr;
}

namespace {
// The pages [first, last] that [addr, addr + len) touches (a zero length touches addr's page).
std::pair<uint64_t, uint64_t> page_span(uint64_t addr, uint64_t len) {
  return {addr / HostMemory::kPageSize, (addr + std::max<uint64_t>(len, 1) - 1) / HostMemory::kPageSize};
}
}  // namespace

void HostMemory::map(uint64_t addr, uint64_t len) {
  auto [first, last] = page_span(addr, len);
  uint64_t end = last + 1;
  // Merge with every range it touches or adjoins. One that starts at or below it keeps its node and
  // grows (allocations come in address order: each new one adjoins the last, no node is made).
  auto it = ranges_.upper_bound(first);
  if (it != ranges_.begin() && std::prev(it)->second >= first)
    --it;
  else
    it = ranges_.emplace_hint(it, first, end);
  for (auto next = std::next(it); next != ranges_.end() && next->first <= end; next = ranges_.erase(next))
    end = std::max(end, next->second);
  it->second = std::max(it->second, end);
}

void HostMemory::unmap(uint64_t addr, uint64_t len) {
  const auto [first, last] = page_span(addr, len);
  const uint64_t end = last + 1;
  // Whole pages go: writes in flight anywhere into them now fail at their arrival.
  tell_no_longer_quiet(first * kPageSize, (end - first) * kPageSize);
  hit_ = {1, 0};
  auto it = ranges_.upper_bound(first);
  if (it != ranges_.begin()) --it;
  while (it != ranges_.end() && it->first < end) {
    const uint64_t r_first = it->first, r_end = it->second;
    if (r_end <= first) {
      ++it;
      continue;
    }
    it = ranges_.erase(it);
    if (r_first < first) ranges_[r_first] = first;
    if (r_end > end) ranges_[end] = r_end;
  }
  for (uint64_t p = first; p < end; ++p) pages_.erase(p);  // unmapped pages read as zeros when mapped again
  // A DMI pointer into a page that is gone would be a dangling pointer: revoke it.
  socket->invalidate_direct_mem_ptr(addr, addr + std::max<uint64_t>(len, 1) - 1);
}

uint64_t HostMemory::pages_mapped() const {
  uint64_t n = 0;
  for (const auto& [first, end] : ranges_) n += end - first;
  return n;
}

HostMemory::Page* HostMemory::page_of(uint64_t addr) const {
  auto it = pages_.find(addr / kPageSize);
  return it == pages_.end() ? nullptr : it->second.get();
}

HostMemory::Page& HostMemory::backed_page(uint64_t addr) {
  auto [it, fresh] = pages_.try_emplace(addr / kPageSize);
  if (fresh) {  // zeroed once, by memset (a value-initialized array is zeroed by a loop of stores)
    it->second.reset(new Page);
    std::memset(it->second->data(), 0, kPageSize);
  }
  return *it->second;
}

bool HostMemory::mapped(uint64_t addr, uint64_t len) const {
  if (len == 0) return true;
  if (addr + len - 1 < addr) return false;  // wraps past 2^64
  const auto [first, last] = page_span(addr, len);
  if (first >= hit_.first && last < hit_.second) return true;
  auto it = ranges_.upper_bound(first);
  if (it == ranges_.begin()) return false;
  --it;
  if (!(it->first <= first && last < it->second)) return false;  // ranges are merged: one holds the whole span
  hit_ = *it;
  return true;
}

uint64_t HostMemory::attach(uint64_t len, ExternalMemory& backing) {
  const uint64_t addr = (next_alloc_ + kPageSize - 1) / kPageSize * kPageSize;
  next_alloc_ = addr + (std::max<uint64_t>(len, 1) + kPageSize - 1) / kPageSize * kPageSize;
  tell_no_longer_quiet(addr, len);  // a program's memory: a write into it is never quiet
  externals_[addr] = External{len, &backing};
  return addr;
}

void HostMemory::detach(uint64_t addr) { externals_.erase(addr); }

void HostMemory::tell_no_longer_quiet(uint64_t addr, uint64_t len) {
  pending_writes.no_longer_quiet(addr, len);
}

bool HostMemory::lands_quietly(uint64_t addr, uint64_t len) const {
  for (const Watch& w : watches_)
    if (ranges_overlap(addr, len, w.addr, w.len)) return false;
  bool straddles = false;
  return !external_at(addr, len, &straddles) && !straddles && mapped(addr, len);
}

void HostMemory::watch(uint64_t addr, uint64_t len, sc_core::sc_event& written) {
  tell_no_longer_quiet(addr, len);
  watches_.push_back({addr, len, &written, [&written] { written.notify(sc_core::SC_ZERO_TIME); }});
}

void HostMemory::watch(uint64_t addr, uint64_t len, std::function<void()> on_write) {
  tell_no_longer_quiet(addr, len);
  watches_.push_back({addr, len, nullptr, std::move(on_write)});
}

void HostMemory::unwatch(uint64_t addr, const sc_core::sc_event& written) {
  watches_.erase(std::remove_if(watches_.begin(), watches_.end(),
                                [&](const Watch& w) { return w.addr == addr && w.written == &written; }),
                 watches_.end());
}

const std::pair<const uint64_t, HostMemory::External>* HostMemory::external_at(uint64_t addr, uint64_t len,
                                                                             bool* straddles) const {
  *straddles = false;
  if (externals_.empty()) return nullptr;
  const uint64_t last = addr + std::max<uint64_t>(len, 1) - 1;
  auto it = externals_.upper_bound(last);
  if (it == externals_.begin()) return nullptr;
  --it;
  const uint64_t end = it->first + it->second.len;  // one past the range
  if (end <= addr) return nullptr;
  if (addr < it->first || last >= end || last < addr) {
    *straddles = true;
    return nullptr;
  }
  return &*it;
}

bool HostMemory::read(uint64_t addr, void* dst, uint64_t len) const {
  pending_writes.land_due();
  bool straddles = false;
  if (const auto* ext = external_at(addr, len, &straddles)) return ext->second.backing->read(addr - ext->first, dst, len);
  if (straddles || !mapped(addr, len)) return false;
  auto* out = static_cast<uint8_t*>(dst);
  while (len) {
    uint64_t off = addr % kPageSize, n = std::min(len, kPageSize - off);
    if (const Page* page = page_of(addr))
      std::memcpy(out, page->data() + off, n);
    else
      std::memset(out, 0, n);
    out += n, addr += n, len -= n;
  }
  return true;
}

bool HostMemory::write(uint64_t addr, const void* src, uint64_t len) {
  pending_writes.land_due();
  bool straddles = false;
  if (const auto* ext = external_at(addr, len, &straddles)) return ext->second.backing->write(addr - ext->first, src, len);
  if (straddles || !mapped(addr, len)) return false;
  auto* in = static_cast<const uint8_t*>(src);
  while (len) {
    uint64_t off = addr % kPageSize, n = std::min(len, kPageSize - off);
    std::memcpy(backed_page(addr).data() + off, in, n);
    in += n, addr += n, len -= n;
  }
  return true;
}

bool HostMemory::execute(tlm::tlm_generic_payload& tx) {
  if (tx.get_byte_enable_ptr()) {
    tx.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return false;
  }
  bool ok = tx.is_read() ? read(tx.get_address(), tx.get_data_ptr(), tx.get_data_length())
                         : write(tx.get_address(), tx.get_data_ptr(), tx.get_data_length());
  tx.set_response_status(ok ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
  if (!ok)
    log::error("{}: {} of {} bytes at {:#x} touches unmapped memory (or a program's it cannot reach)", name(),
               tx.is_read() ? "read" : "write", tx.get_data_length(), tx.get_address());
  if (ok && tx.is_write())
    for (const Watch& w : watches_)
      if (ranges_overlap(tx.get_address(), tx.get_data_length(), w.addr, w.len)) w.on_write();
  return ok;
}

void HostMemory::b_transport(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay) {
  if (refuse_annotated_delay(name(), tx, delay)) return;
  bool ok = execute(tx);
  tx.set_dmi_allowed(ok);
}

unsigned HostMemory::transport_dbg(tlm::tlm_generic_payload& tx) {
  return execute(tx) ? tx.get_data_length() : 0;
}

bool HostMemory::get_direct_mem_ptr(tlm::tlm_generic_payload& tx, tlm::tlm_dmi& dmi) {
  uint64_t base = tx.get_address() / kPageSize * kPageSize;
  bool straddles = false;
  if (external_at(base, kPageSize, &straddles) || straddles) return false;  // not memory of this process's
  if (!mapped(base, 1)) return false;
  Page* page = &backed_page(base);
  dmi.allow_read_write();
  dmi.set_dmi_ptr(page->data());
  dmi.set_start_address(base);
  dmi.set_end_address(base + kPageSize - 1);
  dmi.set_read_latency(sc_core::SC_ZERO_TIME);
  dmi.set_write_latency(sc_core::SC_ZERO_TIME);
  return true;
}

}  // namespace vhca
