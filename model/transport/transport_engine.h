// The work-request path of the HCA: the doorbell unit, WQE fetch, and the RC / UD transport
// (requester and responder), between the DMA engine and the port on the IB link.
//
//   SQ/RQ doorbells ─► doorbell FIFO ─► per-QP SQ state ─► WQE fetch (DMA reads, bursts, prefetch)
//   tx: ACK/NAK > READ responses, atomic ACKs > requests (round robin over QPs, one packet a turn)
//   rx: one packet at a time: responder (PSN check, RQ WQE fetch on arrival, MR checks, DMA
//       writes, READ / atomic execution) and requester (ACK / NAK / responses, completions)
//   completion records ─► the CQ writer (through the HCA's completion input)
//
// Four processes, each waking only when it has work: the doorbell method (one doorbell a
// cycle), the control thread (WQE fetch, flushes, QP fatal events), the transmit thread and the
// receive thread. docs/transport.md is the timing specification.
#pragma once
#include <cstdint>
#include <deque>
#include <queue>
#include <functional>
#include <memory>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <vector>

#include "model/common/earliest_timer.h"
#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/completion_arbiter.h"
#include "model/cq/cq_types.h"
#include "model/dma/dma_engine.h"
#include "model/qp/qp_table.h"
#include "model/transport/ib_packet.h"

namespace vhca {

struct TransportConfig {
  uint16_t lid = 1;                 // this port's LID (PORT_LID)
  uint32_t doorbell_fifo_depth = 16;
  uint32_t doorbell_cycles = 1;     // cycles the doorbell unit spends on one doorbell (QP lookup)
  uint32_t prefetch_depth = 8;      // SQ WQEs fetched ahead of the send cursor, per QP
  uint32_t fetch_burst = 4;         // WQEs per fetch read (contiguous in the ring)
  uint32_t tx_packet_cycles = 4;    // building one packet (headers, scheduling)
  uint32_t rx_packet_cycles = 4;    // checking one packet (headers, PSN, QP lookup)
  uint32_t ack_coalesce = 4;        // the responder ACKs after this many ACK-requesting messages...
  uint32_t ack_delay_cycles = 64;   // ...or when this many cycles pass without another
  uint32_t max_inflight_psns = 256; // requester window: unacknowledged PSNs per QP
  uint32_t rx_fifo_depth = 256;     // packets; the link's credit limit
  uint32_t tx_read_tags = 8;        // payload reads in flight for packets being built
};

enum class WqKind : uint8_t { sq, rq };
struct WqDoorbell {
  WqKind kind = WqKind::sq;
  uint32_t qpn = 0;
  uint16_t pi = 0;
};

struct TransportStats {
  uint64_t doorbells = 0, bad_doorbells = 0, wqe_fetches = 0, wqes_fetched = 0, rq_fetches = 0, dbr_reads = 0,
           packets_sent = 0, packets_received = 0, bytes_sent = 0, acks_sent = 0, naks_sent = 0, rnr_naks_sent = 0,
           acks_received = 0, retransmits = 0, timeouts = 0, rnr_retries = 0, duplicates = 0, corrupt_dropped = 0,
           dropped_no_qp = 0, qkey_violations = 0, ud_no_wqe = 0, completions = 0, flushed = 0, qp_errors = 0;
};

class TransportEngine : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<TransportEngine> port_out{"port_out"};
  tlm_utils::simple_target_socket<TransportEngine> port_in{"port_in"};
  StreamIn<WqDoorbell> s_doorbell;
  // Completion records to the CQ writer (through the completion arbiter: a full input holds the
  // thread that completes) and asynchronous events (QP fatal, SQ drained) to the EQ engine.
  sc_core::sc_port<CompletionPutIf> m_cpl{"m_cpl"};
  StreamOut<DeviceEvent> m_event{"m_event"};

  SC_HAS_PROCESS(TransportEngine);
  TransportEngine(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
                  DmaEngine& dma, QpTables& tables);

  // A doorbell the unit refused: reason (1 unknown QP, 3 index out of range, 6 QP state), QPN.
  std::function<void(uint8_t reason, uint32_t qpn)> on_bad_doorbell;
  // Observers for tests and tools: an ACK / NAK arrived at the requester (QPN, PSN, cycle), a
  // packet left the port, a doorbell was taken.
  Observers<uint32_t, uint32_t, uint64_t> on_ack_received;
  Observers<const IbPacket&, uint64_t> on_packet_sent;
  Observers<const WqDoorbell&, uint64_t> on_doorbell;

  // Called by the command unit after a QP changed state (or was created / destroyed).
  void qp_state_changed(uint32_t qpn, QpState from, QpState to);
  // A CQ overflowed: its QPs enter the error state with a QP fatal event (S14).
  void cq_overflowed(uint32_t cqn);
  void reset();

  const TransportStats& stats() const { return stats_; }
  const TransportConfig& config() const { return cfg_; }
  uint32_t path_mtu_bytes(const QpContext& q) const;

 public:
  struct Sge {  // a scatter/gather entry as the device decodes it
    uint64_t addr = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
  };

 private:
  struct SendWqe {
    uint16_t index = 0;
    uint64_t wr_id = 0;
    uint8_t opcode = 0;
    bool signaled = false, solicited = false, fence = false, is_inline = false;
    uint32_t imm = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint64_t compare_add = 0, swap = 0;
    uint32_t ud_dest_qpn = 0, ud_qkey = 0;
    uint16_t ud_dlid = 0;
    uint8_t ud_sl = 0;
    bool ud_grh = false;
    std::vector<Sge> sges;
    std::vector<uint8_t> inline_data;
    uint32_t length = 0;
    uint8_t decode_error = 0;  // a syndrome found when the WQE was decoded
    // Progress.
    bool started = false;
    uint32_t first_psn = 0, npkts = 0;
    uint32_t resp_pkts = 0;    // READ: response packets placed
    bool done = false;         // ACKed, response placed, or UD transmitted
    uint8_t status = 0;
    bool is_read_or_atomic() const;
  };
  struct RecvWqe {
    uint16_t index = 0;
    uint64_t wr_id = 0;
    std::vector<Sge> sges;
    uint32_t capacity = 0;
    uint8_t decode_error = 0;
  };
  struct QpRuntime {
    uint32_t gen = 0;  // bumped when the QP is reset or destroyed: stale work is dropped
    // Send queue.
    uint16_t sq_pi = 0, sq_fetched = 0;
    std::deque<SendWqe> sq;  // fetched, not yet completed, in posting order
    size_t cursor = 0;       // the WQE being transmitted
    uint32_t cursor_pkt = 0;
    uint32_t next_psn = 0, una_psn = 0;
    uint8_t retry_left = 0, rnr_left = 0;
    uint64_t timer_deadline = 0;  // retransmit timer (0: stopped)
    uint64_t rnr_until = 0;
    bool in_tx_ring = false, in_fetch_queue = false;
    bool halted = false;      // a WQE failed: send nothing more
    uint32_t tx_epoch = 0;    // bumped at each go-back: packets built before it are stale
    uint32_t ud_psn = 0;
    // Receive queue.
    uint16_t rq_pi = 0, rq_fetched = 0;
    std::deque<RecvWqe> rq;
    // Responder.
    uint32_t epsn = 0, msn = 0;
    uint32_t recv_offset = 0;   // bytes placed into the front RQ WQE by a multi-packet SEND
    bool in_send = false;
    uint64_t write_va = 0;      // multi-packet WRITE: next address
    uint32_t write_left = 0, write_total = 0;
    bool in_write = false;
    bool nak_seq_sent = false;
    uint32_t last_atomic_psn = UINT32_MAX;
    uint64_t last_atomic_orig = 0;
    // READ responses and atomic ACKs owed and not yet on the wire: a later ACK waits for them,
    // since responses leave in PSN order.
    uint32_t responses_owed = 0;
    // Acknowledgement due from this QP's responder.
    bool ack_due = false, ack_queued = false;
    uint32_t ack_psn = 0, ack_count = 0;
    uint64_t ack_deadline = 0;
    bool nak_due = false;
    AckKind nak_kind = AckKind::nak;
    uint8_t nak_code = 0;
    uint32_t nak_psn = 0;
    // Errors and draining.
    bool flush_pending = false;
    bool drain_pending = false;  // SQD: the SQ drained event is still to be sent
    uint64_t live_seq = 0;       // order in which the QP left INIT (0: not yet): timers fire in it
  };
  // A READ response or atomic ACK the responder owes.
  struct ResponseJob {
    uint32_t qpn = 0, gen = 0;
    bool atomic = false;
    uint32_t first_psn = 0, npkts = 0, sent = 0;
    uint64_t va = 0;
    uint32_t length = 0;
    uint64_t atomic_orig = 0;
  };

  // A packet built by the transmit thread, waiting for its payload (read by a gather worker)
  // and its turn on the wire.
  struct PendingTx {
    IbPacket packet;
    uint32_t qpn = 0, gen = 0, epoch = 0;
    uint16_t wqe_index = 0;
    bool response = false, ud = false;
    bool last_of_job = false;  // response: the job's last packet
    std::vector<Sge> sges;  // request: gather from these at `offset`
    uint32_t offset = 0;
    uint64_t va = 0;        // READ response: read from here
    bool fence = false;
    bool ready = false, ok = true;
  };

  // Doorbells (transport_engine.cpp).
  void doorbell_step();
  void want_fetch(uint32_t qpn);
  void want_tx(uint32_t qpn);
  // Control thread: QP fatal events, flushes, SQ WQE fetch (transport_engine.cpp).
  void control_thread();
  bool fetch_sq(uint32_t qpn);
  bool fetch_rq(uint32_t qpn);
  bool refresh_rq_pi(uint32_t qpn);
  void flush(uint32_t qpn);
  void enter_error(uint32_t qpn, QpState state = QpState::err);
  void check_drained(uint32_t qpn);
  SendWqe decode_send(const uint8_t* w, uint16_t index, QpType type) const;
  RecvWqe decode_recv(const uint8_t* w, uint16_t index) const;
  // MR checks: the key names a valid MR of the QP's PD that covers [addr, addr+len) with `access`.
  bool mr_allows(uint32_t pdn, uint32_t key, uint64_t addr, uint64_t len, uint32_t access) const;
  bool sges_allowed(uint32_t pdn, const std::vector<Sge>& sges, uint32_t access) const;
  // Host memory through DMA: gather from / scatter to a list of SGEs at a byte offset.
  bool gather(const std::vector<Sge>& sges, uint32_t offset, uint32_t len, uint8_t* out);
  void scatter(const std::vector<Sge>& sges, uint32_t offset, const uint8_t* data, uint32_t len);
  void dma_write(uint64_t addr, const uint8_t* data, uint32_t len);
  void emit_completion(const CompletionRecord& r);
  CompletionRecord send_completion(const QpContext& q, uint32_t qpn, const SendWqe& w, uint8_t status) const;
  CompletionRecord recv_completion(const QpContext& q, uint32_t qpn, const RecvWqe& w) const;

  // Transmit thread and requester (requester.cpp).
  void tx_thread();
  void gather_worker();
  void queue_built(std::unique_ptr<PendingTx> job, bool needs_read);
  void finish_pending();
  sc_core::sc_time transmit(IbPacket& p);
  bool send_ack_or_nak();
  bool issue_response();
  bool issue_request();
  bool can_send(uint32_t qpn);
  void start_wqe(const QpContext& q, QpRuntime& rt, SendWqe& w);
  bool build_request(uint32_t qpn, const QpContext& q, QpRuntime& rt, const SendWqe& w, PendingTx& out);
  // Reads the next burst of SQ WQEs from the fetch cursor (at most fetch_burst and `limit`, never
  // past the ring's end) and advances the cursor; false if the QP was reset, destroyed or flushed
  // while the read was in flight. A failed read marks the WQEs with a local QP operation error.
  bool read_sq_burst(uint32_t qpn, uint32_t limit, std::vector<SendWqe>& out);
  void arm_retransmit_timer(uint32_t qpn, QpRuntime& rt, const QpContext& q, bool restart);
  // The deadlines of the QPs' timers, earliest first. A deadline is pushed whenever a timer is set
  // and is stale once the QP's field no longer holds it (stopped, restarted, or the QP reset), so
  // the transmit thread pays for timers that expire, not for every QP on every turn.
  enum class TimerKind : uint8_t { ack, rnr, retransmit };  // the order they fire in, per QP
  struct Deadline {
    uint64_t at;
    uint32_t qpn;
    TimerKind kind;
    bool operator>(const Deadline& o) const {
      return at != o.at ? at > o.at : qpn != o.qpn ? qpn > o.qpn : kind > o.kind;
    }
  };
  static uint64_t& timer_field(QpRuntime& rt, TimerKind k);
  void set_timer(uint32_t qpn, TimerKind k, uint64_t at);
  bool outstanding(const QpRuntime& rt) const;
  void check_timers(uint64_t now);
  void retransmit_timeout(uint32_t qpn, QpRuntime& rt);
  uint64_t next_timer(uint64_t now);
  long wqe_at(const QpRuntime& rt, uint32_t psn) const;
  void requester_receive(IbPacket& p);
  void ack_through(uint32_t qpn, uint32_t psn);
  void go_back(uint32_t qpn, uint32_t psn);
  void fail_wqe_at(uint32_t qpn, uint32_t psn, uint8_t syndrome);
  void complete_ready(uint32_t qpn);

  // Receive thread and responder (responder.cpp).
  void receive(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  void rx_thread();
  void responder_receive(IbPacket& p);
  void ud_receive(IbPacket& p);
  bool ensure_recv_wqe(uint32_t qpn);
  void request_ack(uint32_t qpn, QpRuntime& rt, uint32_t psn);
  void queue_nak(uint32_t qpn, AckKind kind, uint8_t code, uint32_t psn);
  void responder_error(uint32_t qpn, uint8_t syndrome, uint8_t nak_code, uint32_t psn);
  void handle_atomic(uint32_t qpn, QpContext& q, QpRuntime& rt, const IbPacket& p);
  void owe_response(const ResponseJob& job);

  void wait_edge();
  void wait_cycles(uint32_t n) { sc_core::wait(clock_.period() * double(n)); }
  void kick_tx() { tx_work_.notify(sc_core::SC_ZERO_TIME); }
  void kick_control() { control_work_.notify(sc_core::SC_ZERO_TIME); }

  const SimClock& clock_;
  TransportConfig cfg_;
  DmaEngine& dma_;
  QpTables& tables_;
  std::vector<QpRuntime> rt_;
  Wakeup doorbell_wakeup_;
  uint64_t doorbell_free_ = 0;  // the doorbell unit takes the next doorbell from this cycle
  sc_core::sc_event tx_work_, control_work_, rx_work_;
  EarliestTimer tx_timer_;  // the earliest transport timer deadline
  std::deque<uint32_t> tx_ring_;     // QPs with SQ work, round robin
  std::deque<uint32_t> ack_queue_;   // QPs with an ACK or NAK due
  std::deque<ResponseJob> responses_;
  std::deque<std::unique_ptr<PendingTx>> tx_pending_;  // built, in wire order
  std::deque<PendingTx*> gather_jobs_;
  sc_core::sc_event gather_work_;
  std::deque<uint32_t> fetch_queue_; // QPs whose SQ wants WQEs
  std::deque<uint32_t> flush_queue_;
  std::deque<DeviceEvent> fatal_events_;
  std::deque<IbPacket> rx_fifo_;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> deadlines_;
  uint64_t live_count_ = 0;          // QPs that have left INIT so far (their live_seq)
  sc_core::sc_time wire_free_at_;
  TransportStats stats_;
};

}  // namespace vhca
