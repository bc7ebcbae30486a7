// Scenario files (YAML, traces/*.yaml; schema in docs/scenarios.md) for vhca-sim run and sweep.
// Every key is checked: an unknown key, a value without its unit, a wrong unit or an impossible
// value is a ScenarioError naming the file, the line and the key, and nothing runs.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "explorer/traffic.h"

namespace vhca {

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `sets` are "dotted.key=value" overrides applied to the file before it is checked.
TrafficOptions load_scenario(const std::string& path, const std::vector<std::string>& sets = {});
// The same from text; `source` names it in errors.
TrafficOptions parse_scenario(const std::string& text, const std::string& source,
                              const std::vector<std::string>& sets = {});

// Unit parsers, exposed for tests: "16us" -> 16000 ns, "4KiB" -> 4096, "1M/s" -> 1e6, "100Gbps" -> 100.
// Each throws std::invalid_argument with a message saying what was expected.
double parse_duration_ns(const std::string& v);
uint64_t parse_size_bytes(const std::string& v);
double parse_rate_per_s(const std::string& v);
double parse_gbps(const std::string& v);

}  // namespace vhca
