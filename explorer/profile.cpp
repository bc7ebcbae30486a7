#include "explorer/profile.h"

namespace vhca {

// The sources of these figures are in docs/timing.md; the PCIe latencies and host memory access
// stay at PcieLinkConfig's defaults (Neugebauer et al., measured on Gen3) in every profile.
const std::vector<HcaProfile>& hca_profiles() {
  static const std::vector<HcaProfile> all = {
      {"baseline", "vhca's defaults before profiles: Gen4 x16, 100 Gb/s, WQEs and receive WQEs fetched on demand",
       500, 31.5, 100, false, 0, false, 0, 300, 2},
      {"cx5",
       "ConnectX-5 (EDR): PCIe Gen3 x16, 100 Gb/s, BlueFlame, inline data, receive WQE prefetch; a host with cores",
       500, 15.75, 100, true, 64, true, -1, 1000, 20},
      {"cx6",
       "ConnectX-6 (HDR): PCIe Gen4 x16, 200 Gb/s, BlueFlame, inline data, receive WQE prefetch; a host with cores",
       500, 31.5, 200, true, 64, true, -1, 1000, 20},
  };
  return all;
}

const HcaProfile* find_hca_profile(const std::string& name) {
  for (const HcaProfile& p : hca_profiles())
    if (name == p.name) return &p;
  return nullptr;
}

std::string hca_profile_names() {
  std::string names;
  for (const HcaProfile& p : hca_profiles()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

void apply_hca_profile(const HcaProfile& p, TrafficOptions& o) {
  o.profile = p.name;
  o.hca_clock_mhz = p.hca_clock_mhz;
  o.pcie.gbytes_per_s = p.pcie_gbytes_per_s;
  o.link.gbit_per_s = p.link_gbit_per_s;
  o.blueflame = p.blueflame;
  o.max_inline = p.max_inline;
  o.transport.rq_prefetch = p.rq_prefetch;
  o.cores = p.cores;
  o.cpu.handler_entry = sc_core::sc_time(p.handler_entry_ns, sc_core::SC_NS);
  o.command_latency = sc_core::sc_time(p.command_latency_us, sc_core::SC_US);
}

}  // namespace vhca
