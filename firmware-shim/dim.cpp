#include "firmware-shim/dim.h"

#include <cmath>

namespace vhca {

const std::vector<DimProfile>& dim_profiles() {
  static const std::vector<DimProfile> p = {{1, 1}, {1, 4}, {2, 4}, {2, 8}, {4, 8}, {16, 8}, {16, 16}, {32, 16}, {32, 32}};
  return p;
}

size_t dim_profile_near(uint16_t period_us, uint16_t count) {
  const auto& p = dim_profiles();
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i].period_us >= period_us && p[i].count >= count) return i;
  return p.size() - 1;
}

CqDim::CqDim(size_t start_profile) : profile_(start_profile < dim_profiles().size() ? start_profile : 0) {}

bool CqDim::on_event(uint64_t completions, double now_ns) {
  if (applying_) return false;  // the last choice is still being applied: no measurement
  if (window_start_ns_ < 0) {
    window_start_ns_ = now_ns;
    return false;
  }
  ++window_events_;
  window_completions_ += completions;
  if (window_events_ < kEventsPerDecision) return false;
  const double elapsed_ns = now_ns - window_start_ns_;
  Stats s;
  s.per_ms = elapsed_ns > 0 ? double(window_completions_) * 1e6 / elapsed_ns : 0;
  s.per_event = double(window_completions_) / double(window_events_);
  window_events_ = window_completions_ = 0;
  window_start_ns_ = now_ns;
  ++decisions_;
  if (!decide(s)) return false;
  ++changes_;
  applying_ = true;
  return true;
}

void CqDim::applied() { applying_ = false; }

CqDim::Result CqDim::compare(const Stats& now, const Stats& before) const {
  auto significant = [](double a, double b) { return b > 0 && std::fabs(a - b) * 100.0 / b > kSignificantPct; };
  if (before.per_ms == 0) return Result::same;  // the first window: nothing to compare with
  if (significant(now.per_ms, before.per_ms)) return now.per_ms > before.per_ms ? Result::better : Result::worse;
  if (significant(now.per_event, before.per_event))
    return now.per_event > before.per_event ? Result::better : Result::worse;
  return Result::same;
}

bool CqDim::decide(const Stats& now) {
  const size_t before = profile_;
  switch (compare(now, previous_)) {
    case Result::same:
      // Few completions per event: moderation buys nothing, so take the lowest-latency profile.
      if (now.per_event <= 0.5 * double(before)) profile_ = 0;
      break;
    case Result::worse:
      going_right_ = !going_right_;
      [[fallthrough]];
    case Result::better:
      if (!step()) going_right_ = !going_right_;
      break;
  }
  previous_ = now;
  return profile_ != before;
}

bool CqDim::step() {
  if (going_right_) {
    if (profile_ + 1 == dim_profiles().size()) return false;
    ++profile_;
  } else {
    if (profile_ == 0) return false;
    --profile_;
  }
  return true;
}

}  // namespace vhca
