// Fuzz target 1 (issue 14, item 4): the scenario parser, --set overrides and the arrival-trace
// parser, with the resource estimate over whatever parses. The first byte chooses the parser; the
// rest is its text. Bad input must come back as a ScenarioError (a message naming file, line and
// key), nothing else: any other exception, a crash, a hang or a sanitizer report is a finding.
//
// Built with libFuzzer (clang, testbench/fuzz/run.sh) or, for CI, with the replay driver
// (replay_main.cpp) that runs the seed corpus and a few thousand mutations of it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "explorer/arrival_trace.h"
#include "explorer/resources.h"
#include "explorer/scenario.h"

namespace {

// A scenario the --set lines are applied to: every kind of key is present to be overridden.
const char* const kBase =
    "name: fuzz\nduration: 100us\nhost: {vectors: 2}\ncqs: {count: 2, size: 64, moderation: {count: 4, period: 2us}}\n"
    "qps: {count: 2, depth: 8}\nworkload: {mix: {send: 1}, size: 64B, arrival: {process: poisson, rate: 100k/s}}\n";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t from = 0;
  while (from <= text.size() && lines.size() < 64) {
    const size_t nl = text.find('\n', from);
    lines.push_back(text.substr(from, nl == std::string::npos ? std::string::npos : nl - from));
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 1 << 16) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        const vhca::TrafficOptions o = vhca::parse_scenario(text, "fuzz.yaml");
        (void)vhca::check_resources(o);
        break;
      }
      case 1: {
        const vhca::TrafficOptions o = vhca::parse_scenario(kBase, "base.yaml", lines_of(text));
        (void)vhca::check_resources(o);
        break;
      }
      default:
        (void)vhca::parse_arrival_trace(text, "fuzz.csv");
        break;
    }
  } catch (const vhca::ScenarioError&) {
    // the expected refusal
  }
  return 0;
}

// libsystemc defines main() and calls sc_main from it; this program's main is libFuzzer's (or the
// replay driver's), and nothing here elaborates a model.
int sc_main(int, char*[]) { return 0; }
