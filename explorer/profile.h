// Hardware profiles: named sets of HCA, PCIe and IB-link settings that stand for a real adapter
// (hca.profile in a scenario, --profile on the command line). A profile is applied before any
// other key, so a scenario or flag that names a setting overrides the profile's value. Each
// value's source is in docs/timing.md ("Hardware profiles").
#pragma once
#include <string>
#include <vector>

#include "explorer/traffic.h"

namespace vhca {

struct HcaProfile {
  const char* name;
  const char* description;
  double hca_clock_mhz;
  double pcie_gbytes_per_s;
  double link_gbit_per_s;
  bool blueflame;        // a single inline WR's WQE written through UAR_SQ_BF
  uint32_t max_inline;   // bytes: messages up to this are posted inline (0: never)
  bool rq_prefetch;      // receive WQEs read as posted
  // The host it is calibrated with.
  int cores;                   // 0: parallel contexts (no cores); -1: one per completion vector + the application's
  double handler_entry_ns;     // hard-IRQ entry and exit
  double command_latency_us;   // firmware time per command
};

const std::vector<HcaProfile>& hca_profiles();
// The profile called `name`, or nullptr.
const HcaProfile* find_hca_profile(const std::string& name);
// "baseline, cx5, cx6": for error messages.
std::string hca_profile_names();
// Sets what the profile names in `o` (and records its name).
void apply_hca_profile(const HcaProfile& p, TrafficOptions& o);

}  // namespace vhca
