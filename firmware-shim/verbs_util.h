// Helpers the verbs share: error reporting and size rounding.
#pragma once
#include <cerrno>
#include <cstdint>
#include <string>

#include "firmware-shim/driver.h"
#include "model/common/log.h"

namespace vhca::verbs::detail {

// Records `msg` as the driver's last error and returns -err.
inline int fail(Driver& dev, int err, std::string msg) {
  log::write(log::Cat::drv, "verbs: {}", msg);
  dev.set_last_error(std::move(msg));
  return -err;
}

// The errno for a refused command.
inline int command_errno(const CommandResult& r) {
  if (r.timed_out) return ETIMEDOUT;
  switch (r.status) {
    case cmd::kBadResource: return ENOENT;
    case cmd::kResourceBusy: return EBUSY;
    case cmd::kNoResources: return ENOMEM;
    default: return EINVAL;
  }
}

inline uint8_t log2_at_least(uint32_t n) {
  uint8_t l = 0;
  while ((1u << l) < n) ++l;
  return l;
}

}  // namespace vhca::verbs::detail
