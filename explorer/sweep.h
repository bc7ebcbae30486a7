// vhca-sim sweep: runs a scenario over a grid of settings, each point a separate vhca-sim process
// (SystemC elaborates once per process), at most `jobs` at a time; merges the points' CSV rows
// into one CSV in grid order and draws the latency-vs-interrupt-rate Pareto plot (gnuplot, PNG
// and SVG). --emit-jobs prints the point commands instead, for an external scheduler, and
// --collect merges and plots what they wrote.
#pragma once
#include <string>
#include <vector>

namespace vhca {

struct SweepOptions {
  std::string self;       // this executable, to run the points
  std::string scenario;
  std::vector<std::string> grids;  // "key=v1,v2,..."; count, period, mode, policy name the moderation keys
  std::vector<std::string> sets;   // fixed --set overrides for every point
  std::string out = "sweep";       // output folder
  int jobs = 0;                    // 0: the number of cores
  bool emit_jobs = false;
  bool collect = false;
  std::string latency_column;      // the plot's latency (a result column); empty: chosen from the results
  std::string x_column;            // the plot's X (a result column); empty: interrupts/s of both hosts, in k/s
  int seeds = 1;                   // runs per grid point, seeds 1..seeds: summary.csv gives mean and 95 % CI
};

// Returns the process exit code; errors (bad grid, bad scenario at any point) are reported
// before anything runs.
int run_sweep(const SweepOptions& o);

}  // namespace vhca
