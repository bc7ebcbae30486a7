// The receive-queue descriptor cache: per QP, the RQ producer counter (from doorbells, or read from
// the QP's doorbell record when the device has taken every WQE it knew of), the fetch cursor and
// the receive WQEs fetched and not yet consumed. WQEs are fetched on demand, when a message needs
// one, in bursts of up to fetch_burst contiguous WQEs; each read completes by a callback. With
// rq_prefetch they are also fetched ahead, from the doorbell and after each use, up to
// prefetch_depth cached. One fetch (or doorbell-record read) per QP is in flight at a time; a
// message that needs a WQE meanwhile waits for it.
//
// Shared receive queues have caches of their own, after the QPs' (queue ids num_qps + srqn): a
// QP attached to one takes the SRQ's head WQE into its own cache when a message needs one, so
// that the message keeps its WQE while other QPs' messages take the next ones.
#pragma once
#include <cstdint>
#include <functional>
#include <systemc>
#include <vector>

#include "model/common/object_pool.h"
#include "model/common/observers.h"
#include "model/common/slot_ring.h"
#include "model/dma/dma_engine.h"
#include "model/qp/qp_table.h"
#include "model/transport/transport_types.h"

namespace vhca {

class RecvQueue : public sc_core::sc_module {
 public:
  using Done = std::function<void(bool ok)>;

  RecvQueue(const sc_core::sc_module_name& name, const TransportConfig& cfg, DmaEngine& dma, QpTables& tables,
            TransportStats& stats);

  // The queue id of a shared receive queue (ensure, has_wqe, generation take either kind).
  uint32_t srq_id(uint32_t srqn) const { return num_qps_ + srqn; }
  // Moves the SRQ's head WQE into the QP's cache; false if the SRQ's cache is empty. May raise the
  // SRQ-limit event (on_srq_limit) if the SRQ is armed and now holds fewer WQEs than its limit.
  bool take_from_srq(uint32_t qpn, uint32_t srqn);
  // The SRQ was created or destroyed (forget it), or armed (check its limit now).
  void reset_srq(uint32_t srqn) { renew(qps_[srq_id(srqn)]); }
  void srq_armed(uint32_t srqn) { check_limit(srqn); }
  Observers<uint32_t> on_srq_limit;  // an armed SRQ fell below its limit (it is disarmed)

  // The doorbell unit: the new producer counter, and how far the device has taken the ring.
  void doorbell(uint32_t qpn, uint16_t pi) {
    qps_[qpn].pi = pi;
    prefetch(qpn);
  }
  uint16_t taken(uint32_t qpn) const { return qps_[qpn].fetched; }

  // The cache is empty (has_wqe false): read the doorbell record if every known WQE is taken, fetch,
  // then done(true) if a receive WQE is at the head; done(false) if there is none, a read failed
  // or the QP was reset meanwhile. Always answers later, from the read's completion.
  void ensure(uint32_t qpn, Done done);
  bool has_wqe(uint32_t qpn) const { return !qps_[qpn].wqes.empty(); }
  size_t cached(uint32_t qpn) const { return qps_[qpn].wqes.size(); }  // WQEs in the QP's cache
  RecvWqe& front(uint32_t qpn) { return qps_[qpn].wqes.front(); }
  RecvWqe pop(uint32_t qpn);
  // For a flush: every cached WQE, and whether the ring may hold more (then fetch_more).
  SlotRing<RecvWqe> take_all(uint32_t qpn);
  // Reads the doorbell record if need be and fetches the next burst; done(false) when the ring
  // holds no more WQEs (or a read failed).
  void fetch_more(uint32_t qpn, Done done);
  uint32_t generation(uint32_t qpn) const { return qps_[qpn].gen; }

  void reset_qp(uint32_t qpn);
  void reset();

 private:
  // One who waits for a queue's read: done(ok), or, for ensure, done(whether the queue's cache
  // then holds a WQE, the queue not reset since: gen).
  struct Waiter {
    Done done;
    bool wants_wqe = false;
    uint32_t gen = 0;
  };
  struct Read;
  struct PerQp {
    uint32_t gen = 0;  // bumped when the QP is reset: reads in flight for it are dropped
    uint16_t pi = 0, fetched = 0;
    SlotRing<RecvWqe> wqes{1};  // grows by doubling to the most the queue caches, then stays
    Read* in_flight = nullptr;  // a fetch or doorbell-record read is on its way (null: none)
  };
  // A read in flight: the doorbell record, or a burst of WQEs. It holds its waiters, so that a QP
  // reset (which renews PerQp) cannot lose one; reads are pooled with their buffers, so that one
  // allocates nothing once the pool has grown.
  struct Read {
    enum class Kind { pi, burst } kind = Kind::burst;
    uint32_t qpn = 0, gen = 0, n = 0;
    uint16_t first = 0;
    uint8_t log_size = 0;
    std::vector<uint8_t> buf;
    std::vector<Waiter> waiters;
  };
  void fetch_more_for(uint32_t qpn, Waiter w);
  void refresh_pi(uint32_t qpn, Waiter w);
  void fetch(uint32_t qpn, Waiter w);
  void prefetch(uint32_t qpn);
  // Starts the queue's one read in flight; `w` (and whoever waits meanwhile) get its result.
  void start_read(uint32_t qpn, Waiter w, Read::Kind kind);
  void read_pi(Read& r);
  void read_burst(Read& r);
  void read_done(Read* r, bool ok);
  bool took_pi(Read& r, bool ok);
  bool took_burst(Read& r, bool ok);
  void answer(uint32_t qpn, const Waiter& w, bool ok) const {
    w.done(ok && (!w.wants_wqe || (qps_[qpn].gen == w.gen && !qps_[qpn].wqes.empty())));
  }
  // Where a queue's ring and doorbell record are: its QP's RQ, or its SRQ.
  struct Ring {
    uint64_t base, dbr;
    uint8_t log_size;
  };
  Ring ring_of(uint32_t id) const;
  std::string name_of(uint32_t id) const;  // "QP 0x12" or "SRQ 3", for messages
  void check_limit(uint32_t srqn);

  TransportConfig cfg_;
  DmaEngine& dma_;
  QpTables& tables_;
  TransportStats& stats_;
  uint32_t num_qps_;
  std::vector<PerQp> qps_;  // QPs, then SRQs
  ObjectPool<Read> reads_;
};

}  // namespace vhca
