// The doorbell unit: SQ and RQ doorbells (UAR writes, held by PCIe credits while its FIFO is full)
// taken in FIFO order, one every doorbell_cycles (the QP lookup). A doorbell for no QP, for a QP
// in RESET, or whose producer counter moves more than the ring past what the device has taken is
// refused with a reason (dberr::); a good one moves the queue's producer counter and asks for a
// fetch (SQ of a QP in RTS / SQD) or, for a QP in error, a flush of what was just posted.
#pragma once
#include <cstdint>
#include <systemc>

#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/qp/qp_table.h"
#include "model/transport/recv_queue.h"
#include "model/transport/transport_types.h"
#include "model/transport/wqe_fetch.h"

namespace vhca {

class DoorbellUnit : public sc_core::sc_module {
 public:
  StreamIn<WqDoorbell> s_doorbell;

  SC_HAS_PROCESS(DoorbellUnit);
  DoorbellUnit(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
               QpTables& tables, WqeFetch& fetch, RecvQueue& rq, TransportStats& stats);

  Observers<const WqDoorbell&, uint64_t> on_doorbell;  // every doorbell taken (cycle)
  Observers<uint8_t, uint32_t> on_bad_doorbell;        // a refused one: reason (dberr::), QPN
  void reset();

 private:
  void step();
  void take(const WqDoorbell& db);

  const SimClock& clock_;
  TransportConfig cfg_;
  QpTables& tables_;
  WqeFetch& fetch_;
  RecvQueue& rq_;
  TransportStats& stats_;
  Wakeup wakeup_;
  uint64_t free_at_ = 0;  // the unit takes the next doorbell from this cycle
};

}  // namespace vhca
