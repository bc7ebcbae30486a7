#include "model/regs/register_file.h"

#include <cstring>
#include <stdexcept>

#include "model/common/log.h"

namespace vhca {

RegisterFile::RegisterFile(const std::vector<RegSpec>& specs) {
  for (const RegSpec& s : specs) {
    for (uint32_t i = 0; i < s.count; ++i) {
      std::string name = s.count > 1 ? fmt::format("{}[{}]", s.name, i) : std::string(s.name);
      uint32_t off = s.offset + i * s.stride;
      if (by_offset_.count(off)) throw std::logic_error("register table: two registers at " + std::to_string(off));
      by_offset_[off] = regs_.size();
      if (i == 0 && !first_.emplace(s.name, regs_.size()).second)
        throw std::logic_error(std::string("register table: two registers named ") + s.name);
      regs_.push_back(Register{name, &s, off, i, s.reset});
    }
  }
  hooks_.resize(regs_.size());
}

size_t RegisterFile::first_of(const char* name) const {
  auto it = first_.find(name);
  if (it == first_.end()) throw std::out_of_range(std::string("no register ") + name);
  return it->second;
}

// A register has one behaviour, its block's: a second hook of a kind would silently replace the
// first, so it is refused, naming the register.
template <typename Hook>
void RegisterFile::set_hook(const char* name, const char* kind, Hook Hooks::*slot, const Hook& hook) {
  const size_t first = first_of(name);
  if (hooks_[first].*slot) throw std::logic_error(std::string(name) + " already has a " + kind + " hook");
  for (uint32_t i = 0; i < regs_[first].spec->count; ++i) hooks_[first + i].*slot = hook;
}

void RegisterFile::on_write(const char* name, WriteHook hook) { set_hook(name, "write", &Hooks::write, hook); }

void RegisterFile::on_read(const char* name, ReadHook hook) { set_hook(name, "read", &Hooks::read, hook); }

void RegisterFile::on_block_write(const char* name, BlockWriteHook hook) {
  if (regs_[first_of(name)].spec->width <= 8) throw std::logic_error(std::string(name) + " is not a block register");
  set_hook(name, "block write", &Hooks::block_write, hook);
}

void RegisterFile::reset() {
  for (Register& r : regs_) r.value = r.spec->reset;
}

const Register& RegisterFile::at(const char* name, uint32_t index) const {
  const size_t first = first_of(name);
  if (index >= regs_[first].spec->count)
    throw std::out_of_range(std::string("no register ") + name + "[" + std::to_string(index) + "]");
  return regs_[first + index];
}

Register& RegisterFile::at(const char* name, uint32_t index) {
  return const_cast<Register&>(static_cast<const RegisterFile&>(*this).at(name, index));
}

tlm::tlm_response_status RegisterFile::fail(const char* what, uint64_t offset, unsigned len) {
  ++errors_;
  log::error("BAR0: {} ({} bytes at offset {:#x})", what, len, offset);
  return tlm::TLM_ADDRESS_ERROR_RESPONSE;
}

tlm::tlm_response_status RegisterFile::access(bool is_write, uint64_t offset, uint8_t* data, unsigned len) {
  auto it = by_offset_.find(uint32_t(offset));
  if (offset > UINT32_MAX || it == by_offset_.end()) return fail("no register at this offset", offset, len);
  Register& r = regs_[it->second];
  if (len != r.spec->width) return fail(("access size does not match " + r.name).c_str(), offset, len);
  const Hooks& hooks = hooks_[it->second];
  if (is_write) {
    if (r.spec->access == Access::ro) return fail(("write to read-only " + r.name).c_str(), offset, len);
    if (len > sizeof(uint64_t)) {
      log::write(log::Cat::mmio, "write {} ({} bytes)", r.name, len);
      if (hooks.block_write) hooks.block_write(r, data, len);
      return tlm::TLM_OK_RESPONSE;
    }
    uint64_t v = 0;
    std::memcpy(&v, data, len);  // little-endian host and bus
    log::write(log::Cat::mmio, "write {} = {:#x}", r.name, v);
    if (hooks.write)
      hooks.write(r, v);
    else
      r.value = v;
  } else {
    if (r.spec->access == Access::wo) return fail(("read of write-only " + r.name).c_str(), offset, len);
    uint64_t v = hooks.read ? hooks.read(r) : r.value;
    std::memcpy(data, &v, len);
    log::write(log::Cat::mmio, "read {} = {:#x}", r.name, v);
  }
  return tlm::TLM_OK_RESPONSE;
}

}  // namespace vhca
