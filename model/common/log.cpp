#include "model/common/log.h"

#include <cstdio>
#include <cstdlib>
#include <systemc>

#include "model/common/sim_now.h"

namespace vhca::log {
namespace {
uint64_t g_errors = 0;

uint32_t initial_mask() {
  uint32_t mask = static_cast<uint32_t>(Cat::err);
  if (const char* env = std::getenv("VHCA_LOG")) {
    g_enabled = mask;
    if (const std::string why = enable(env); !why.empty()) std::fprintf(stderr, "VHCA_LOG: %s\n", why.c_str());
    return g_enabled;
  }
  return mask;
}

const char* name_of(Cat c) {
  switch (c) {
    case Cat::mmio: return "mmio";
    case Cat::dma: return "dma";
    case Cat::cmd: return "cmd";
    case Cat::cq: return "cq";
    case Cat::eq: return "eq";
    case Cat::irq: return "irq";
    case Cat::drv: return "drv";
    case Cat::err: return "ERROR";
    case Cat::link: return "link";
    case Cat::wq: return "wq";
  }
  return "?";
}
}  // namespace

uint32_t g_enabled = static_cast<uint32_t>(Cat::err);
static const uint32_t g_init_once = (g_enabled = initial_mask());

std::string enable(std::string_view spec) {
  static const std::pair<const char*, Cat> names[] = {
      {"mmio", Cat::mmio}, {"dma", Cat::dma}, {"cmd", Cat::cmd}, {"cq", Cat::cq}, {"eq", Cat::eq},
      {"irq", Cat::irq},   {"drv", Cat::drv}, {"err", Cat::err}, {"link", Cat::link}, {"wq", Cat::wq}};
  std::string why;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view word = spec.substr(pos, end - pos);
    bool known = word == "all" || word == "none";
    if (word == "all") g_enabled = ~0u;
    if (word == "none") g_enabled = 0;
    for (auto& [n, c] : names)
      if (word == n) g_enabled |= static_cast<uint32_t>(c), known = true;
    if (!known && why.empty())
      why = "'" + std::string(word) + "' is not a log category (mmio, dma, cmd, cq, eq, irq, drv, err, link, wq, all, none)";
    pos = end + 1;
  }
  return why;
}

void emit(Cat c, const std::string& text) {
  if (c == Cat::err) ++g_errors;
  if (!enabled(c)) return;
  std::fprintf(stderr, "%12.3f ns [%s] %s\n", (sim_now() + running_ahead).to_seconds() * 1e9, name_of(c),
               text.c_str());
}

uint64_t error_count() { return g_errors; }

}  // namespace vhca::log
