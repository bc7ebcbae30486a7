// The block that reads work queue rings on a QP's behalf, one action at a time, on core-clock
// edges: the SQ descriptor cache's prefetch (up to prefetch_depth WQEs ahead of the send cursor,
// in reads of up to fetch_burst contiguous WQEs, QPs round robin), and the flush of a QP in error
// (every WQE the device holds, then the rest of each ring up to its producer counter, each with a
// WR-flush CQE). It also owns the QP's producer counter from SQ doorbells, moves QPs into the
// error state, and sends the transport's asynchronous events (QP fatal, SQ drained). Priority:
// events, flushes, fetches. One SC_METHOD; reads complete by callback.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <systemc>
#include <vector>

#include "model/common/observers.h"
#include "model/common/queue_gauge.h"
#include "model/common/sim_clock.h"
#include "model/common/slot_ring.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_types.h"
#include "model/dma/dma_engine.h"
#include "model/qp/qp_table.h"
#include "model/transport/recv_queue.h"
#include "model/transport/requester.h"
#include "model/transport/responder.h"
#include "model/transport/transport_types.h"

namespace vhca {

class WqeFetch : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(WqeFetch);
  WqeFetch(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg, DmaEngine& dma,
           QpTables& tables, Requester& requester, Responder& responder, RecvQueue& rq,
           StreamOut<DeviceEvent>& events, TransportStats& stats);

  // Its own queues, as the hierarchy reports them: the QPs whose SQ wants WQEs and those waiting
  // to be flushed (each QP at most once in each), and the QP, SRQ and port events on their way to
  // the EQ engine. Those come from sources that cannot wait (an error found in a packet, a CQ
  // overflow putting every QP on it in error): two per QP (SQ drained, then QP fatal), one per SRQ
  // (its limit) and a few port changes fit (assumption); one that does not is counted in
  // TransportStats::events_lost and in LOST_EVENTS (on_event_lost).
  GaugeExport s_fetches;
  GaugeExport s_flushes;
  GaugeExport s_events;
  Observers<> on_event_lost;
  static constexpr size_t kPortEventSlack = 8;  // s_events' room for port changes (assumption)

  // The doorbell unit: the new SQ producer counter, how far the device has taken the ring.
  void sq_doorbell(uint32_t qpn, uint16_t pi) { qps_[qpn].pi = pi; }
  uint16_t sq_taken(uint32_t qpn) const { return qps_[qpn].fetched; }
  void want_fetch(uint32_t qpn);
  void want_flush(uint32_t qpn);
  // BlueFlame: a WQE the CPU wrote with its doorbell, taken into the descriptor cache without a
  // fetch if it is the QP's next WQE (nothing posted before it is still to be read) and the cache
  // has room; false: not taken (the caller rings the doorbell as usual and the ring is read).
  bool take_written(uint32_t qpn, const WqDoorbell& db);

  // The QP enters an error state (err, or sqe for a datagram QP's send queue) and flushes.
  void enter_error(uint32_t qpn, QpState state = QpState::err);
  void post_event(const DeviceEvent& ev);

  void qp_reset(uint32_t qpn);
  void reset();

 private:
  struct SqCursor {
    uint32_t gen = 0;
    uint16_t pi = 0, fetched = 0;
    bool in_fetch_queue = false, flush_pending = false;
  };
  using Burst = std::function<void(bool valid, std::vector<SendWqe>& wqes)>;

  void kick() { wakeup_.wake(clock_.now()); }
  void step();
  void run();
  bool start_fetch(uint32_t qpn);
  bool start_flush(uint32_t qpn);
  void flush_sq_rest(uint32_t qpn, uint32_t gen, QpState state);
  void flush_rq(uint32_t qpn);
  void hand_on_flushed(std::function<void()> then);
  void finish_action();
  // Reads the next burst of SQ WQEs from the fetch cursor (at most fetch_burst and `limit`, never
  // past the ring's end) and advances the cursor; `valid` is false if the QP was reset or flushed
  // while the read was in flight. A failed read marks the WQEs with a local QP operation error.
  void read_sq_burst(uint32_t qpn, uint32_t limit, Burst done);
  // Runs `then` once `settled` holds (checked again whenever an outbox empties): a flush goes one
  // burst at a time, each after the last has been handed on.
  void when(std::function<bool()> settled, std::function<void()> then);

  const SimClock& clock_;
  TransportConfig cfg_;
  DmaEngine& dma_;
  QpTables& tables_;
  Requester& requester_;
  Responder& responder_;
  RecvQueue& rq_;
  StreamOut<DeviceEvent>& events_out_;
  TransportStats& stats_;
  Wakeup wakeup_;
  std::vector<SqCursor> qps_;
  SlotRing<uint32_t> fetch_queue_;  // QPs whose SQ wants WQEs
  SlotRing<uint32_t> flush_queue_;
  SlotRing<DeviceEvent> events_;
  bool busy_ = false;                 // an action's reads are in flight
  bool in_run_ = false;
  std::function<void()> parked_;      // a flush step waiting for an outbox to drain
  // The running RQ flush's completions not yet handed to the responder's outbox (at most a fetch
  // burst or a QP's receive cache: one flush runs at a time).
  std::deque<CompletionRecord> flush_owed_;
  std::function<bool()> parked_until_;
  // The SQ read in flight (an action's: one at a time), and the buffer and decoded burst kept
  // from read to read, so that a burst allocates nothing.
  struct SqRead {
    uint32_t qpn = 0, gen = 0, n = 0;
    uint16_t first = 0;
    QpType type{};
    Burst done;
  };
  void sq_burst_read(bool ok);
  SqRead sq_read_;
  std::vector<uint8_t> sq_buf_;
  std::vector<SendWqe> sq_burst_;
};

}  // namespace vhca
