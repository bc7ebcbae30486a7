// What the device server knows of its clients' work requests, to confirm that each completed
// exactly once and to measure simulated latencies: a WQE's post (the program's doorbell, in
// simulated time) to its CQE landing in host memory, and for RC, a message's post at the sender to
// the RECV CQE it produced at the receiver (RC and UC; what ib_send_lat calls the one-way latency).
//
// SystemC-free: the server feeds it times in microseconds. Server-wide, since a message latency
// pairs one client's post with another client's completion.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "firmware-shim/queue_format.h"

namespace vhca {

// Latency samples in microseconds and their summary.
struct LatencySamples {
  std::vector<double> us;
  struct Summary {
    size_t count = 0;
    double min = 0, p50 = 0, p99 = 0, max = 0, mean = 0;
  };
  Summary summary() const;
};

// One client's counters (a connection with a device).
struct ClientLedger {
  uint64_t sends_posted = 0;     // send WQEs the program posted (doorbells' producer indices)
  uint64_t sends_completed = 0;  // send WQEs a CQE covered (a signaled CQE covers the unsignaled before it)
  uint64_t recvs_completed = 0;  // receive WQEs a CQE consumed
  uint64_t error_cqes = 0;       // CQEs with a syndrome (flushes included)
  uint64_t unexpected = 0;       // CQEs for a WQE not outstanding: one never posted, or completed twice
  uint64_t sends_outstanding = 0, recvs_outstanding = 0;  // when the client left
  LatencySamples completion;     // a signaled send WQE's post to its CQE landing
  LatencySamples message;        // RC, UC: the peer's post of a SEND / WRITE with immediate to this RECV CQE
  LatencySamples post_interval;  // between one send doorbell of a QP and its next (a latency test's round trip)
};

class CompletionLedger {
 public:
  // The QP is known from its creation; `client` receives what its completions show.
  // `srq`: the SRQ it takes receives from (-1: its own RQ).
  void qp_created(int device, uint32_t qpn, bool connected, ClientLedger* client, int srq = -1);
  // RC, UC: the QP sends to `peer_qpn` on `peer_device` (MODIFY_QP to RTR).
  void qp_connected(int device, uint32_t qpn, int peer_device, uint32_t peer_qpn);
  // Counts what the QP leaves outstanding (`rq_pi`: the receive producer index in its record).
  void qp_destroyed(int device, uint32_t qpn, uint16_t rq_pi);
  // The SRQ is gone: a new one with its number starts counting from 0.
  void srq_destroyed(int device, uint32_t srqn);
  // WQEs [first, first + opcodes.size()) posted at `t_us`; `opcodes` are their WQE opcodes.
  void sends_posted(int device, uint32_t qpn, uint16_t first, const std::vector<uint8_t>& opcodes, double t_us);
  // A CQE that landed at `t_us` on the device's CQ, and the latencies it closed (-1: none).
  struct Landing {
    double completion_us = -1;  // a signaled send WQE's post to this CQE
    double message_us = -1;     // the peer's post of the message this RECV CQE received
  };
  Landing completed(int device, const Wc& wc, double t_us);

 private:
  struct QpBook {
    bool connected = false;  // RC or UC: its messages pair with its peer's RECV CQEs in order
    ClientLedger* client = nullptr;
    std::pair<int, uint32_t> peer{-1, 0};
    uint16_t next_send = 0;                 // index of the oldest send WQE not completed
    std::deque<double> send_posted_us;      // outstanding send WQEs' post times, oldest first
    std::deque<double> message_posted_us;   // this QP's messages that consume a receive at the peer
    uint16_t next_recv = 0;                 // index of the next receive WQE a CQE will consume
    int srq = -1;                           // its receives come from this SRQ of its device
    double last_post_us = -1;               // its last send doorbell
  };
  double send_completed(QpBook& q, const Wc& wc, double t_us);
  double recv_completed(int device, QpBook& q, const Wc& wc, double t_us);
  std::map<std::pair<int, uint32_t>, QpBook> qps_;
  std::map<std::pair<int, int>, uint16_t> srq_next_;  // an SRQ's next receive WQE index (its QPs share it)
};

// A client's report as JSON (one object), and as the words of the server's report line.
std::string client_json(int pid, const char* device, double left_at_us, const ClientLedger& c);
std::string client_summary(const ClientLedger& c);

}  // namespace vhca
