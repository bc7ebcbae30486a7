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
#include <deque>
#include <functional>
#include <memory>
#include <systemc>
#include <vector>

#include "model/common/observers.h"
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
  std::deque<RecvWqe> take_all(uint32_t qpn);
  // Reads the doorbell record if need be and fetches the next burst; done(false) when the ring
  // holds no more WQEs (or a read failed).
  void fetch_more(uint32_t qpn, Done done);
  uint32_t generation(uint32_t qpn) const { return qps_[qpn].gen; }

  void reset_qp(uint32_t qpn);
  void reset();

 private:
  // Who waits for the read in flight: kept by the read's callback, so that a QP reset (which
  // renews PerQp) cannot lose a waiter.
  using Waiters = std::shared_ptr<std::vector<Done>>;
  struct PerQp {
    uint32_t gen = 0;  // bumped when the QP is reset: reads in flight for it are dropped
    uint16_t pi = 0, fetched = 0;
    std::deque<RecvWqe> wqes;
    Waiters in_flight;  // a fetch or doorbell-record read is on its way (null: none)
  };
  void refresh_pi(uint32_t qpn, Done done);
  void read_pi(uint32_t qpn, Done done);
  void fetch(uint32_t qpn, Done done);
  void read_burst(uint32_t qpn, Done done);
  void prefetch(uint32_t qpn);
  // Runs `read` as the QP's one read in flight; done (and whoever waited meanwhile) get its result.
  void start_read(uint32_t qpn, Done done, const std::function<void(Done)>& read);
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
};

}  // namespace vhca
