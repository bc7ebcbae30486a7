// Adaptive CQ moderation, DIM-style (after the idea of Linux's lib/dim for RDMA CQs): the driver
// measures, over every 64 completion events of a CQ, the completions per millisecond and the
// completions per event; it compares that window with the previous one (a change counts only
// above 10 %, completions per ms first, then per event) and walks a ladder of (period, count)
// profiles: on to the next while things improve, back when they worsen, staying put when they
// do not change (falling back to the first profile when events carry few completions).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vhca {

struct DimProfile {
  uint16_t period_us;
  uint16_t count;
};

// (1,1) (1,4) (2,4) (2,8) (4,8) (16,8) (16,16) (32,16) (32,32).
const std::vector<DimProfile>& dim_profiles();
// The first profile at least as long and as large as (period, count), else the last: where DIM
// starts from a static setting.
size_t dim_profile_near(uint16_t period_us, uint16_t count);

class CqDim {
 public:
  static constexpr uint32_t kEventsPerDecision = 64;
  static constexpr uint32_t kSignificantPct = 10;

  explicit CqDim(size_t start_profile = 0);
  // One completion event of the CQ, with the completions polled since the previous event, at
  // `now_ns`. Returns true when a new profile has been chosen: apply profile(), then applied().
  bool on_event(uint64_t completions, double now_ns);
  void applied();
  size_t profile_index() const { return profile_; }
  const DimProfile& profile() const { return dim_profiles()[profile_]; }
  uint64_t decisions() const { return decisions_; }
  uint64_t changes() const { return changes_; }

 private:
  enum class Result { same, better, worse };
  struct Stats {
    double per_ms = 0;   // completions per millisecond
    double per_event = 0;
  };
  Result compare(const Stats& now, const Stats& before) const;
  bool decide(const Stats& now);
  bool step();  // false at the end of the ladder

  size_t profile_;
  bool going_right_ = true;
  bool applying_ = false;
  Stats previous_;
  uint64_t window_events_ = 0, window_completions_ = 0;
  double window_start_ns_ = -1;
  uint64_t decisions_ = 0, changes_ = 0;
};

}  // namespace vhca
