// The S29 invariant checker (issue 14, item 6): watches a System's HCAs from outside, through the
// streams and the PCIe link's landing reports, and records every breach of:
//   - no CQE overwrites an entry the host has not consumed (the host's consumer index, as the
//     driver has it, against the CQE's index in its CQ; overrun-ignore CQs are exempt);
//   - CQEs of one work queue come in posting order, each once: per QP, SQ CQEs carry strictly
//     increasing WQE counters (unsignaled WQEs are skipped, never repeated), RQ CQEs of a QP
//     without an SRQ consecutive ones;
//   - no completion EQE lands before the CQEs its event covers (every CQE of the CQ issued before
//     the event was raised), and the event is raised only after them;
//   - no queue between blocks exceeds its bound (checked when asked, at the end of a run).
// What each breach was, and when, is in violations(). vhca-sim run --check and every Catch2 test
// run with it (testbench/test_main.cpp fails a test that breaches one); test_invariants feeds it
// each breach on purpose and shows it is caught.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/cq/cq_types.h"

namespace vhca {

class System;

class InvariantChecker {
 public:
  // The host's view of a CQ and a QP, as the driver has them (a QP's generation changes when it
  // is created anew under the same number; a CQ's count starts over with cq_created).
  struct HostCq {
    bool exists = false;
    uint32_t ci = 0;      // consumed, 24-bit index
    uint64_t base = 0;    // the ring the device writes into now, and its entries
    uint32_t size = 0;
    bool overrun_ignore = false;
    bool in_ring(uint64_t addr) const { return addr >= base && addr < base + uint64_t(size) * 64; }
  };
  struct HostQp {
    bool exists = false;
    uint64_t generation = 0;  // its SQ ring's address: a new QP gets a new one
    bool on_srq = false;
  };
  struct Host {
    std::function<HostCq(uint32_t cqn)> cq;
    std::function<HostQp(uint32_t qpn)> qp;
  };

  // Node `node` of `hosts` answers for its host.
  void add_host(Host host) { hosts_.push_back(std::move(host)); }
  // Wires every node of `sys`: its CQ writer's outputs, its EQ engine's input, its PCIe link.
  void attach(System& sys);

  // What the observers report (also called by tests with made-up traffic).
  // A CQE issued to CQ `cqn` at `addr` (resize copies, DmaSource::cqe_copy, are not CQEs and do
  // not come here): it must fall inside the ring the device holds for the CQ.
  void cqe_issued(uint32_t node, uint32_t cqn, uint64_t addr, const uint8_t* cqe);
  void event_raised(uint32_t node, const DeviceEvent& ev);
  // The CQ writer was told to create CQ `cqn`: its CQEs count from 0.
  void cq_created(uint32_t node, uint32_t cqn);
  void cqe_landed(uint32_t node, uint32_t cqn, uint64_t addr);
  // `bytes` of a message placed in the buffers of QP `qpn`'s receive WQE `wqe` (its index's low 7
  // bits; the GRH of a UD datagram included), `starts` at the message's offset 0: a successful
  // receive CQE's byte count must be what its WQE's last message placed (a UC message dropped
  // midway is begun again in the same WQE by the next one).
  void data_placed(uint32_t node, uint32_t qpn, uint8_t wqe, bool starts, uint32_t bytes);
  void eqe_landed(uint32_t node, uint32_t eqn);
  // A queue's bound and high-water mark (checked when a run ends).
  void queue_seen(const std::string& name, size_t depth, size_t high_water);
  // Every queue of `sys`; first, device writes that have arrived but wait to land quietly land
  // (tlm/pending_writes.h), so that every write that arrived in the run has been checked.
  void check_queues(System& sys);

  const std::vector<std::string>& violations() const { return violations_; }
  uint64_t checked() const { return checked_; }  // observations checked

 private:
  struct CqTrack {
    uint32_t issued = 0, landed = 0;
  };
  struct WqTrack {
    uint64_t generation = 0;
    bool any = false;
    uint16_t last = 0;
  };
  struct Placed {  // the messages of one QP placed and not yet completed, oldest first
    uint64_t generation = 0;
    std::deque<std::pair<uint8_t, uint64_t>> messages;  // (WQE index's low 7 bits, bytes)
  };
  void check_byte_count(uint32_t node, uint32_t qpn, uint64_t generation, const uint8_t* cqe);
  void violation(uint32_t node, const std::string& what);

  std::vector<Host> hosts_;
  std::map<std::pair<uint32_t, uint32_t>, CqTrack> cqs_;                 // (node, cqn)
  std::map<std::tuple<uint32_t, uint32_t, bool>, WqTrack> wqs_;          // (node, qpn, send)
  std::map<std::pair<uint32_t, uint32_t>, Placed> placed_;               // (node, qpn)
  std::map<std::pair<uint32_t, uint32_t>, std::deque<std::pair<uint32_t, uint32_t>>> owed_;  // (node, eqn) -> (cqn, CQEs)
  std::vector<std::string> violations_;
  uint64_t checked_ = 0;
};

}  // namespace vhca
