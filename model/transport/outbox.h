// What one transport process hands on, in the order it did it: payload writes into the DMA
// engine's ordered write queue and completion records into the CQ writer's input (through the
// completion arbiter). The order is kept across the two, so a receive CQE never passes the data
// it reports. A process takes no new work while its outbox holds anything: a full DMA queue or a
// full completion input holds the process, as a blocked thread did, but without a thread. What
// one action of a process can put here is bounded (one packet's data and CQEs, one ring's flush).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <systemc>
#include <variant>

#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/cq/completion_arbiter.h"
#include "model/cq/cq_types.h"
#include "model/dma/dma_engine.h"
#include "model/transport/transport_types.h"

namespace vhca {

class Outbox : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Outbox);
  Outbox(const sc_core::sc_module_name& name, const SimClock& clock, DmaEngine& dma,
         sc_core::sc_port<CompletionPutIf>& completions, TransportStats& stats);

  // Payload bytes to host memory (split into DMA writes of at most 4 KiB).
  void write(uint64_t addr, const uint8_t* data, uint32_t len);
  void complete(const CompletionRecord& r);
  bool empty() const { return items_.empty(); }
  // Wake-ups for the processes it held: told when it empties after it had to hold something.
  Observers<> on_empty;
  uint64_t holds() const { return holds_; }  // times something had to wait for room

 private:
  void drain();
  void drain_method();

  const SimClock& clock_;
  DmaEngine& dma_;
  sc_core::sc_port<CompletionPutIf>& completions_;
  TransportStats& stats_;
  std::deque<std::variant<DmaWrite, CompletionRecord>> items_;
  sc_core::sc_event wake_;
  bool held_ = false, held_by_completions_ = false, in_method_ = false;
  uint64_t holds_ = 0;
};

}  // namespace vhca
