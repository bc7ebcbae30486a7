#include "cosim/rtl_engine.h"

#include "model/common/log.h"

namespace vhca {

void PerCqCounts::reset(uint32_t cqs) {
  cqes_.assign(cqs, 0);
  events_.assign(cqs, 0);
  causes_.assign(cqs, {});
}

void PerCqCounts::restart(uint32_t cqn) {
  if (cqn < cqes_.size()) cqes_[cqn] = events_[cqn] = 0, causes_[cqn] = {};
}

void PerCqCounts::cqe(uint32_t cqn) {
  if (cqn < cqes_.size()) ++cqes_[cqn];
}

void PerCqCounts::event(uint32_t cqn, uint32_t cov) {
  if (cqn >= events_.size()) return;
  ++events_[cqn];
  for (int k = 0; k < kEventCauses; ++k) causes_[cqn][size_t(k)] += (cov >> (kCovFirstCause + k)) & 1;
}

void PerCqCounts::fill(uint32_t cqn, CqContext& c) const {
  if (cqn >= cqes_.size()) return;
  c.cqes = cqes_[cqn];
  c.events = events_[cqn];
  for (int k = 0; k < kEventCauses; ++k) c.events_by[k] = causes_[cqn][size_t(k)];
}

void count_rtl_coverage(CqeWriterStats& stats, uint32_t cov) {
  auto bit = [&](int b) { return (cov >> b) & 1; };
  stats.cqes += bit(0);
  stats.events += bit(1);
  for (int c = 0; c < kEventCauses; ++c) stats.events_of(EventCause(c)) += bit(kCovFirstCause + c);
  stats.arms += bit(6);
  stats.arms_upgraded += bit(7);
  stats.arms_ignored_pending += bit(8);
  stats.arms_stale += bit(9);
  stats.ci_refreshes += bit(10);
  stats.overflows += bit(11);
  stats.owner_wraps += bit(12);
  stats.dropped += bit(13);
  stats.bad_records += bit(14);
  stats.timer_expiries += bit(15);
  stats.arms_owed += bit(16);
  if (bit(14)) log::error("RTL CQ writer: completion record for a CQ that does not exist: dropped");
  if (bit(11)) log::error("RTL CQ writer: CQ overflow, CQE not written");
}

}  // namespace vhca
