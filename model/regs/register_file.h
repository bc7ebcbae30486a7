// Declared registers: each has a name, offset, width, reset value, access policy and callbacks.
// The file decodes an access by looking the offset up in the declared set; an undefined offset, a
// size that does not match the register, a write to RO or a read of WO gets an error response
// and a log line, and is counted.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tlm>
#include <unordered_map>
#include <vector>

#include "model/regs/tables.h"

namespace vhca {

struct Register {
  std::string name;    // "UAR_CQ_ARM[3]" for array members
  const RegSpec* spec;
  uint32_t offset;
  uint32_t index;      // position in its array (0 for plain registers)
  uint64_t value;
};

// A declared register (or register array) resolved once by name, for a block's hot path: an
// access is an index, not a name lookup. Valid for the file's life (its registers never move).
class RegisterRef {
 public:
  RegisterRef() = default;
  RegisterRef(Register* first, uint32_t count) : first_(first), count_(count) {}
  Register& operator[](uint32_t index) const { return first_[index]; }
  uint64_t value(uint32_t index = 0) const { return first_[index].value; }
  void set(uint64_t v, uint32_t index = 0) const { first_[index].value = v; }
  uint32_t count() const { return count_; }

 private:
  Register* first_ = nullptr;
  uint32_t count_ = 0;
};

class RegisterFile {
 public:
  using WriteHook = std::function<void(Register&, uint64_t new_value)>;
  using ReadHook = std::function<uint64_t(const Register&)>;
  // A block register (wider than 8 bytes: a WQE written through the doorbell page) keeps no value;
  // its hook gets the bytes as written.
  using BlockWriteHook = std::function<void(Register&, const uint8_t* data, unsigned len)>;

  explicit RegisterFile(const std::vector<RegSpec>& specs);
  // Behaviour is bound by name; for an array every member gets the hook. An undeclared name, or a
  // second hook of one kind on a register, is a logic error (a typo must not leave a register
  // without its behaviour, nor a second binding silently replace the first).
  void on_write(const char* name, WriteHook hook);
  void on_read(const char* name, ReadHook hook);
  void on_block_write(const char* name, BlockWriteHook hook);
  void reset();
  // Decode and execute; returns the TLM response status.
  tlm::tlm_response_status access(bool is_write, uint64_t offset, uint8_t* data, unsigned len);

  Register& at(const char* name, uint32_t index = 0);
  const Register& at(const char* name, uint32_t index = 0) const;
  uint64_t value(const char* name, uint32_t index = 0) const { return at(name, index).value; }
  // The register (array) `name`, resolved now (an undeclared name throws, as at() does).
  RegisterRef ref(const char* name) { return RegisterRef(&at(name), regs_[first_of(name)].spec->count); }
  void set(const char* name, uint64_t v, uint32_t index = 0) { at(name, index).value = v; }
  uint64_t error_count() const { return errors_; }
  const std::vector<Register>& registers() const { return regs_; }

 private:
  struct Hooks {
    WriteHook write;
    ReadHook read;
    BlockWriteHook block_write;
  };
  tlm::tlm_response_status fail(const char* what, uint64_t offset, unsigned len);

  size_t first_of(const char* name) const;
  template <typename Hook>
  void set_hook(const char* name, const char* kind, Hook Hooks::*slot, const Hook& hook);

  std::vector<Register> regs_;
  std::vector<Hooks> hooks_;  // per register, parallel to regs_
  std::map<uint32_t, size_t> by_offset_;
  // Spec name -> its first register (an array's members follow in index order): accesses by name
  // are a hash lookup, not a scan of the table.
  std::unordered_map<std::string_view, size_t> first_;
  uint64_t errors_ = 0;
};

}  // namespace vhca
