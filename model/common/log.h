// Logging by category. A disabled category costs one bit test: the message is never formatted.
// Categories are enabled with VHCA_LOG=cq,eq,... (or "all") or programmatically.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <fmt/format.h>

namespace vhca::log {

enum class Cat : uint32_t {
  mmio = 1u << 0,   // BAR register accesses
  dma = 1u << 1,    // device DMA reads and writes
  cmd = 1u << 2,    // command unit
  cq = 1u << 3,     // CQ writer: CQEs, arms, moderation
  eq = 1u << 4,     // EQ engine
  irq = 1u << 5,    // MSI-X and host interrupts
  drv = 1u << 6,    // driver library
  err = 1u << 7,    // every error response or error event (on by default)
  link = 1u << 8,   // PCIe and IB links
  wq = 1u << 9,     // work queues: doorbells, WQE fetch, packets, completions
};

extern uint32_t g_enabled;

inline bool enabled(Cat c) { return (g_enabled & static_cast<uint32_t>(c)) != 0; }
// Turns on the categories of `spec` ("cq,eq" / "all" / "none"); returns "" or the refusal of a
// word that names no category (the others are still turned on).
std::string enable(std::string_view spec);
void emit(Cat c, const std::string& text);
// Count of error-category messages so far: tests assert that bad input was reported.
uint64_t error_count();

template <typename... Args>
void write(Cat c, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(c)) emit(c, fmt::format(f, std::forward<Args>(args)...));
}

// Errors are always counted, and printed unless the err category is disabled.
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  emit(Cat::err, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace vhca::log
