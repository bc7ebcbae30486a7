#include "model/transport/doorbell_unit.h"

#include <algorithm>

#include "model/common/log.h"
#include "model/regs/codes.h"

namespace vhca {

DoorbellUnit::DoorbellUnit(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
                           QpTables& tables, WqeFetch& fetch, RecvQueue& rq, TransportStats& stats)
    : sc_module(name),
      s_doorbell("s_doorbell", cfg.doorbell_fifo_depth),
      clock_(clock),
      cfg_(cfg),
      tables_(tables),
      fetch_(fetch),
      rq_(rq),
      stats_(stats),
      wakeup_(clock) {
  s_doorbell->on_data = [this](uint64_t c) { wakeup_.wake(c); };
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

// One doorbell a cycle at most, in FIFO order.
void DoorbellUnit::step() {
  if (!wakeup_.begin_cycle()) return;
  wakeup_.count();
  const uint64_t now = clock_.now();
  if (now < free_at_) {
    wakeup_.wake(free_at_);
    return;
  }
  if (s_doorbell->ready(now)) {
    const WqDoorbell db = s_doorbell->pop(now);
    free_at_ = now + cfg_.doorbell_cycles;
    ++stats_.doorbells;
    on_doorbell(db, now);
    take(db);
  }
  if (!s_doorbell->empty()) wakeup_.wake(std::max({s_doorbell->head_ready_cycle(), now + 1, free_at_}));
}

void DoorbellUnit::take(const WqDoorbell& db) {
  const bool sq = db.kind == WqKind::sq;
  auto refuse = [&](uint8_t reason, const char* why) {
    ++stats_.bad_doorbells;
    log::error("{} doorbell for QP {:#x} (pi {}): {}", sq ? "SQ" : "RQ", db.qpn, db.pi, why);
    on_bad_doorbell(reason, db.qpn);
  };
  if (!tables_.qp_exists(db.qpn)) return refuse(dberr::kUnknownObject, "no such QP");
  const QpContext& q = tables_.qps[db.qpn];
  const uint32_t depth = 1u << (sq ? q.log_sq_size : q.log_rq_size);
  // The new producer counter may move forward by at most the ring depth past what the device has
  // taken from the ring.
  const uint16_t taken = sq ? fetch_.sq_taken(db.qpn) : rq_.taken(db.qpn);
  if (uint16_t(db.pi - taken) > depth) return refuse(dberr::kIndexOutOfRange, "producer counter moves past the ring");
  if (q.state == QpState::reset) return refuse(dberr::kQpState, "QP in RESET");
  if (sq && db.has_wqe) {
    if (fetch_.take_written(db.qpn, db)) {
      ++stats_.bf_wqes;
      return;
    }
    ++stats_.bf_fallbacks;
  }
  if (sq) {
    fetch_.sq_doorbell(db.qpn, db.pi);
    log::write(log::Cat::wq, "SQ doorbell QP {:#x} pi {}", db.qpn, db.pi);
    if (q.state == QpState::err || q.state == QpState::sqe)
      fetch_.want_flush(db.qpn);
    else if (q.state == QpState::rts || q.state == QpState::sqd)
      fetch_.want_fetch(db.qpn);
  } else {
    rq_.doorbell(db.qpn, db.pi);
    log::write(log::Cat::wq, "RQ doorbell QP {:#x} pi {}", db.qpn, db.pi);
    if (q.state == QpState::err) fetch_.want_flush(db.qpn);
  }
}

void DoorbellUnit::reset() {
  s_doorbell->clear();
  free_at_ = 0;
}

}  // namespace vhca
