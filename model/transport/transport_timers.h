// The transport's timers, per QP: the responder's ACK coalescing delay, the requester's RNR wait
// and its retransmit (local ACK) timer. One SC_METHOD fires the timers due on a cycle, in the
// order the QPs left INIT and, per QP, ACK, RNR, retransmit; one SystemC notification is pending
// at a time, for the earliest deadline (a timer stopped or restarted leaves its old deadline in the
// heap, stale, instead of cancelling a notification).
#pragma once
#include <array>
#include <cstdint>
#include <queue>
#include <systemc>
#include <vector>

#include "model/common/earliest_timer.h"
#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/transport/transport_types.h"

namespace vhca {

class TransportTimers : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(TransportTimers);
  TransportTimers(const sc_core::sc_module_name& name, const SimClock& clock, size_t qps);

  void set(uint32_t qpn, TimerKind kind, uint64_t at_cycle);
  void stop(uint32_t qpn, TimerKind kind) { qps_[qpn].at[size_t(kind)] = 0; }
  uint64_t deadline(uint32_t qpn, TimerKind kind) const { return qps_[qpn].at[size_t(kind)]; }  // 0: stopped
  // The QP left INIT: its timers fire after those of QPs that left before it.
  void qp_live(uint32_t qpn);
  void reset_qp(uint32_t qpn) { qps_[qpn] = PerQp{}; }
  void reset();
  // Fires now the timers due on this edge, for a block that must see them before it acts on the
  // edge whichever process SystemC runs first (decisions.md 48); the pending notification then
  // finds nothing due and arms for the next deadline.
  size_t fire_due_now(uint64_t now) { return due_by(now) ? fire_due(now) : 0; }  // how many fired
  bool due_by(uint64_t cycle) const { return !deadlines_.empty() && deadlines_.top().at <= cycle; }

  // A timer expired (it is stopped when this is called).
  Observers<uint32_t, TimerKind> on_expired;

 private:
  struct PerQp {
    std::array<uint64_t, 3> at{};  // by TimerKind; 0: stopped
    uint64_t live_seq = 0;         // order in which the QP left INIT (0: not yet)
  };
  struct Deadline {
    uint64_t at;
    uint32_t qpn;
    TimerKind kind;
    bool operator>(const Deadline& o) const {
      return at != o.at ? at > o.at : qpn != o.qpn ? qpn > o.qpn : kind > o.kind;
    }
  };
  bool stale(const Deadline& d) const { return qps_[d.qpn].at[size_t(d.kind)] != d.at; }
  void fire();
  size_t fire_due(uint64_t now);

  const SimClock& clock_;
  std::vector<PerQp> qps_;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> deadlines_;
  uint64_t live_count_ = 0;
  EarliestTimer timer_;
};

}  // namespace vhca
