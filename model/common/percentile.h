// Nearest-rank quantiles of latency samples (the explorer's results, the device server's reports).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace vhca {

// The p-quantile (0 < p <= 1, nearest rank) of `v`, which it partly reorders; 0 if empty.
inline double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = size_t(std::ceil(p * double(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + long(i), v.end());
  return v[i];
}

}  // namespace vhca
