// vhca-sim soak (issue 14, item 7): randomized traffic and verbs with faults, for a wall-clock
// time, on one System of two hosts with the S29 invariant checker on. Each episode is one of:
// RC traffic (SEND, WRITE, READ of random sizes) under a loss rate or a burst of corrupted
// packets, which RC must recover; completions injected into a CQ while it is resized, or while it
// is armed again and again; a completion vector masked for a while (the event waits for the
// unmask); commands with bad fields; a CQ whose buffer vanished (DMA error: the CQ goes to error,
// the others on); doorbells for a CQ being destroyed. Every episode checks its own outcome (every
// WR completed once, with the data; every injected completion polled once, in order; the event
// after the unmask; each refusal answered) and the checker checks the rest.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vhca {

struct SoakOptions {
  double minutes = 1;      // wall-clock time (the episode in progress finishes)
  uint64_t episodes = 0;   // stop after this many instead (0: by time)
  uint64_t seed = 1;
  // Leave out the episodes that lose or corrupt packets (loss, corrupted packets, link outages).
  bool packet_faults = true;
};

struct SoakReport {
  uint64_t episodes = 0;
  std::map<std::string, uint64_t> by_kind;    // episodes of each kind
  uint64_t operations = 0;                    // WRs posted, completions injected, commands, doorbells
  std::map<std::string, uint64_t> faults;     // faults injected, by kind
  uint64_t invariants_checked = 0;
  std::vector<std::string> violations;        // S29 breaches and episodes whose outcome was wrong
  double simulated_ms = 0, wall_s = 0;
  bool ok() const { return violations.empty(); }
  std::string text() const;
};

SoakReport run_soak(const SoakOptions& o);

}  // namespace vhca
