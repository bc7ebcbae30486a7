// What the transport's blocks share: the configuration, the doorbell record, the counters, the
// timer kinds and a packet on its way out. Each block's own per-QP state lives in that block.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "model/regs/tables.h"
#include "model/transport/ib_packet.h"
#include "model/transport/wqe.h"

namespace vhca {

struct TransportConfig {
  uint16_t lid = 1;                 // this port's LID (PORT_LID)
  uint32_t doorbell_fifo_depth = 16;
  uint32_t doorbell_cycles = 1;     // cycles the doorbell unit spends on one doorbell (QP lookup)
  uint32_t prefetch_depth = 8;      // SQ WQEs fetched ahead of the send cursor, per QP
  uint32_t fetch_burst = 4;         // WQEs per fetch read (contiguous in the ring)
  // Receive WQEs fetched when they are posted (the RQ doorbell) and refilled as they are used, up
  // to prefetch_depth per QP, so that an arriving SEND finds its WQE cached; off: fetched when a
  // message needs one.
  bool rq_prefetch = false;
  uint32_t tx_packet_cycles = 4;    // building one packet (headers, scheduling)
  uint32_t rx_packet_cycles = 4;    // checking one packet (headers, PSN, QP lookup)
  uint32_t ack_coalesce = 4;        // the responder ACKs after this many ACK-requesting messages...
  uint32_t ack_delay_cycles = 64;   // ...or when this many cycles pass without another
  uint32_t max_inflight_psns = 256; // requester window: unacknowledged PSNs per QP
  uint32_t rx_fifo_depth = 256;     // packets; advertised to the link as its credits (S27)
  // Simulation speed only (hca.rx_takes_arrivals): while the receiver is busy it takes the packets
  // that have arrived from the link when it next looks, and the link does not wake on each
  // arrival (docs/architecture.md, "Arrivals taken when the receiver looks"); off: it always wakes.
  bool rx_takes_arrivals = true;
  uint32_t tx_read_tags = 8;        // payload reads in flight for packets being built
  uint32_t outbox_depth = 16;       // writes and completions a requester / responder may hold
};

enum class WqKind : uint8_t { sq, rq };
struct WqDoorbell {
  WqKind kind = WqKind::sq;
  uint32_t qpn = 0;
  uint16_t pi = 0;
  // BlueFlame (UAR_SQ_BF): the doorbell carries the WQE it announces, written by the CPU through
  // the doorbell page; pi is then that WQE's index + 1.
  bool has_wqe = false;
  std::array<uint8_t, sqwqe::kSize> wqe{};
};

struct TransportStats {
  uint64_t doorbells = 0, bad_doorbells = 0, wqe_fetches = 0, wqes_fetched = 0, rq_fetches = 0, dbr_reads = 0,
           packets_sent = 0, packets_received = 0, bytes_sent = 0, acks_sent = 0, naks_sent = 0, rnr_naks_sent = 0,
           acks_received = 0, retransmits = 0, timeouts = 0, rnr_retries = 0, duplicates = 0, corrupt_dropped = 0,
           dropped_no_qp = 0, qkey_violations = 0, ud_no_wqe = 0, completions = 0, flushed = 0, qp_errors = 0,
           uc_dropped = 0,     // UC packets dropped silently (a message cut by a lost packet, no receive WQE, a bad R_Key)
           rx_fifo_drops = 0,  // packets the full rx FIFO could not take (a sender that ignored its credits)
           tx_credit_stalls = 0,  // times a packet due on the wire found no link credit and was held (S27)
           ack_placement_holds = 0,  // ACKs held at the port until the data they acknowledge was issued to PCIe
           bf_wqes = 0,           // WQEs taken from a BlueFlame doorbell, no fetch
           bf_fallbacks = 0,      // BlueFlame doorbells whose WQE was not taken (not the next one, cache full): fetched
           rd_atomic_refused = 0,  // READ/atomic requests beyond the responder's max_dest_rd_atomic: NAK invalid request
           events_lost = 0,        // QP and port events the full event queue could not take (also in LOST_EVENTS)
           // Work a block did on an edge ahead of its own process, for a later block of that edge's
           // order (decisions.md 48): timers fired, reads answered, packets handed on early.
           timers_fired_first = 0, reads_answered_first = 0, packets_handed_first = 0,
           // Packets the receiver took from the link as it looked (rx_takes_arrivals; a reset's
           // included, taken to be discarded), packets sent to it while it was not idle with an
           // empty FIFO (counted as sent: no wake-up was asked for them, it looks before its next
           // take), and the wake-ups it asked for an arrival (some covered by an earlier one).
           arrivals_taken = 0, arrivals_sent_busy = 0, arrival_wakes = 0;
};

// The transport's timers, per QP, in the order they fire when due on the same cycle.
enum class TimerKind : uint8_t { ack, rnr, retransmit };

// A packet built by the transmit arbiter, waiting for its payload (read from host memory) and its
// turn on the wire.
// What a packet being built carries besides the packet: plain values, so that a job taken from
// the pool (PendingTxPool) is made new by a plain copy.
struct PendingTxState {
  uint32_t qpn = 0, gen = 0, epoch = 0;
  uint16_t wqe_index = 0;
  bool response = false;
  bool completes_when_sent = false;  // UD, and UC's last packet: the WQE completes as it leaves (no ACK comes)
  bool last_of_job = false;  // response: the job's last packet
  bool fresh_job = false;    // response: to a new request (counted against max_dest_rd_atomic)
  SgeList sges;              // request: gather from these at `offset`
  uint32_t offset = 0;
  uint64_t va = 0;           // READ response: read from here
  bool fence = false;
  bool ready = false, ok = true;
  uint32_t next_piece = 0;   // request: the SGE piece whose read is next
};
static_assert(std::is_trivially_copyable_v<PendingTxState>);

struct PendingTx : PendingTxState {
  IbPacket packet;
};

// Jobs the transmit arbiter is done with, kept for the next packets with their payload's storage
// (a job and its payload were two allocations a packet, and two frees). take() gives a job as a
// new one is, whatever it held before.
class PendingTxPool {
 public:
  std::unique_ptr<PendingTx> take() {
    if (spare_.empty()) return std::make_unique<PendingTx>();
    std::unique_ptr<PendingTx> job = std::move(spare_.back());
    spare_.pop_back();
    static_cast<PendingTxState&>(*job) = PendingTxState{};
    static_cast<IbHeaders&>(job->packet) = IbHeaders{};
    job->packet.payload.clear();  // its storage stays for the next payload
    return job;
  }
  void give(std::unique_ptr<PendingTx> job) {
    if (job && spare_.size() < kKept) spare_.push_back(std::move(job));
  }

 private:
  // At most tx_read_tags + 1 jobs are alive at once (those built, and the one sending), so with
  // the default tags every one comes back; a larger setting only reuses fewer.
  static constexpr size_t kKept = 64;
  std::vector<std::unique_ptr<PendingTx>> spare_;
};

// A QP's state in one block, forgotten when the QP is reset or destroyed: everything goes back to
// its initial value except the generation, which moves on, so that work still in flight for the
// old QP (a read completing later) sees it is stale and is dropped.
template <typename PerQpState>
void renew(PerQpState& s) {
  const uint32_t gen = s.gen + 1;
  s = PerQpState{};
  s.gen = gen;
}

// IB path MTU encoding 1..5 = 256..4096; UD and unset RC QPs use the largest.
inline uint32_t path_mtu_bytes(const QpContext& q) { return 128u << (q.path_mtu ? q.path_mtu : 5); }

}  // namespace vhca
