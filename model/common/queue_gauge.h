// A block's own queue as the object hierarchy reports it: a named export whose interface gives the
// queue's bound, its high-water mark and its traffic, so that describe_queues() (topology.h) lists
// it beside the streams. For queues a block keeps itself (a FIFO it drops into when full, packets
// built ahead, an outbox) rather than a Stream between two blocks.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <systemc>

#include "model/common/stream.h"

namespace vhca {

class QueueGauge : public virtual sc_core::sc_interface, public QueueInfo {
 public:
  explicit QueueGauge(size_t depth) : depth_(depth) {}
  // An item went in; `size` is the queue's length after it.
  void pushed(size_t size) {
    ++pushed_;
    high_water_ = std::max(high_water_, size);
  }
  size_t queue_depth() const override { return depth_; }
  size_t queue_high_water() const override { return high_water_; }
  uint64_t queue_pushed() const override { return pushed_; }

 private:
  size_t depth_;
  size_t high_water_ = 0;
  uint64_t pushed_ = 0;
};

// The named export that shows a gauge in the hierarchy.
class GaugeExport : public sc_core::sc_export<QueueGauge> {
 public:
  GaugeExport(const char* name, size_t depth, std::string fed_by) : sc_core::sc_export<QueueGauge>(name), gauge_(depth) {
    gauge_.set_fed_by(std::move(fed_by));
    bind(gauge_);
  }
  void pushed(size_t size) { gauge_.pushed(size); }
  size_t depth() const { return gauge_.queue_depth(); }
  size_t high_water() const { return gauge_.queue_high_water(); }
  const char* kind() const override { return "vhca_queue_gauge"; }

 private:
  QueueGauge gauge_;
};

}  // namespace vhca
