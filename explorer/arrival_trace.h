// Recorded arrivals: the text format `vhca-sim run --record FILE` writes and a workload with
// `arrival: {process: trace, file: FILE}` replays (docs/scenarios.md). One arrival per line:
//
//   time_us,qp,opcode,size
//   0.250000,3,send,4096
//
// time_us counts from the start of the workload, to the picosecond (six decimals), and never
// decreases; qp is the QP's index in its group; opcode is send, write or read; size is bytes.
// Lines starting with '#' and empty lines are ignored.
#pragma once
#include <string>
#include <vector>

#include "explorer/traffic.h"

namespace vhca {

// Throws ScenarioError naming `source`, the line and the column.
std::vector<TracedArrival> parse_arrival_trace(const std::string& text, const std::string& source);
std::vector<TracedArrival> load_arrival_trace(const std::string& path);
std::string arrival_trace_text(const std::vector<TracedArrival>& arrivals);

}  // namespace vhca
