// The DMA engine: one ordered posted-write channel shared by every block (CQE, EQE, MSI-X and
// command writes leave in the order they were queued: an EQE can never pass its CQE, an MSI-X
// message never its EQE) issuing at most one write per cycle, and one read channel that serves
// consumer-index refreshes before firmware reads, one read at a time.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <vector>

#include "model/common/sim_clock.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_types.h"
#include "tlm/pcie_credits.h"
#include "tlm/posted_tag.h"

namespace vhca {

struct DmaEngineConfig {
  size_t write_queue_depth = 64;
};

class DmaEngine : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<DmaEngine> socket{"socket"};
  StreamIn<DmaWrite> s_write;       // the ordered posted-write channel, every writer's input
  StreamIn<CiRequest> s_ci_req;     // consumer-index refreshes from the CQ writer
  StreamOut<CiResponse> m_ci_rsp{"m_ci_rsp"};
  // The upstream link's flow-control credits: a write waits at the head of the queue until the
  // link can take it (unbound: no credit limit, as when the HCA stands alone).
  sc_core::sc_port<PcieCreditIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND> credits{"credits"};

  SC_HAS_PROCESS(DmaEngine);
  DmaEngine(const sc_core::sc_module_name& name, const SimClock& clock, const DmaEngineConfig& cfg = {});

  // Firmware helpers, called from an SC_THREAD (the command unit): a blocking read that returns
  // on the cycle its completion has arrived, and a write queued behind everything already queued.
  bool read_blocking(uint64_t addr, uint8_t* out, uint32_t len);
  void write_blocking(DmaWrite w);
  // Data-path read from the calling thread, with others in flight (PCIe allows many outstanding
  // reads); returns on the cycle its data is usable. `fence`: first wait for every write queued
  // before it to be issued, so that the read observes them (RDMA READ after WRITE, atomics).
  bool read_now(uint64_t addr, uint8_t* out, uint32_t len, bool fence);

  uint64_t writes_issued() const { return writes_; }
  uint64_t reads_issued() const { return reads_; }
  uint64_t read_errors() const { return read_errors_; }
  uint64_t credit_stalls() const { return credit_stalls_; }  // activations that found no credits

 private:
  struct FirmwareRead {
    uint64_t addr;
    uint8_t* out;
    uint32_t len;
    bool ok;
    bool done;
    sc_core::sc_event* done_event;
  };
  void write_step();
  void end_of_elaboration() override;
  void read_thread();
  bool issue_read(uint64_t addr, uint8_t* out, uint32_t len);
  void fence_writes();

  const SimClock& clock_;
  Wakeup write_wakeup_;
  tlm::tlm_generic_payload write_tx_;  // reused: constructing a payload per write costs an allocation
  PostedTag write_tag_;
  sc_core::sc_event read_work_;
  sc_core::sc_event write_space_;  // the write queue stopped being full
  sc_core::sc_event write_issued_;  // a write left for the link (fences wait for it)
  std::deque<FirmwareRead*> firmware_reads_;
  uint64_t writes_ = 0, reads_ = 0, read_errors_ = 0, credit_stalls_ = 0;
};

}  // namespace vhca
