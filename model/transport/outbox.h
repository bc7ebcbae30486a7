// What one transport process hands on, in the order it did it: payload writes into the DMA
// engine's ordered write queue and completion records into the CQ writer's input (through the
// completion arbiter). The order is kept across the two, so a receive CQE never passes the data
// it reports. A process takes no new work while its outbox holds anything: a full DMA queue or a
// full completion input holds the process, as a blocked thread did, but without a thread. Its
// depth (outbox_depth) covers what one action adds — one packet's data pieces (at most 4 SGEs and
// a GRH) and its CQE; completions that could be many (an ACK covering many WQEs, a flush) are
// handed in one at a time while there is room (has_room).
#pragma once
#include <cstdint>
#include <functional>
#include <systemc>
#include <variant>

#include "model/common/observers.h"
#include "model/common/queue_gauge.h"
#include "model/common/sim_clock.h"
#include "model/common/slot_ring.h"
#include "model/cq/completion_arbiter.h"
#include "model/cq/cq_types.h"
#include "model/dma/dma_engine.h"
#include "model/transport/transport_types.h"

namespace vhca {

class Outbox : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Outbox);
  // write_order: where this outbox's writes go among same-source writes pushed on one cycle (the
  // requester's before the responder's; docs/architecture.md, "Same-cycle order").
  Outbox(const sc_core::sc_module_name& name, const SimClock& clock, size_t depth, DmaEngine& dma,
         sc_core::sc_port<CompletionPutIf>& completions, TransportStats& stats, uint32_t write_order);

  // Payload bytes to host memory (split into DMA writes of at most 4 KiB).
  void write(uint64_t addr, const uint8_t* data, uint32_t len, DmaSource source = DmaSource::other, uint32_t id = 0);
  void complete(const CompletionRecord& r);
  bool empty() const { return items_.empty(); }
  // Whether it holds a payload write that the DMA write queue orders before `source`'s (a lower
  // rank): one it will still push.
  bool holds_writes_before(DmaSource source) const;
  bool has_room(size_t n = 1) const { return items_.size() + n <= depth_; }
  // Whether every payload write added so far has been issued to the link; if not, `then` runs
  // once they have (an ACK must not leave before the data it acknowledges is on its way to
  // memory: IBA's responder acknowledges executed requests).
  bool writes_issued(std::function<void()> then) { return writes_issued_through(writes_added_, std::move(then)); }
  // The same for the first `n` payload writes ever added (writes_added() when the data an ACK
  // acknowledges was placed): writes added later, for other requests, do not hold that ACK.
  bool writes_issued_through(uint64_t n, std::function<void()> then);
  uint64_t writes_added() const { return writes_added_; }
  // Issue marks kept: of payload writes handed on that the DMA engine had not issued at the last
  // hand-on, and one for that write (bounded by the DMA queue, not by the traffic).
  size_t issue_marks_held() const { return marks_.size(); }
  uint64_t writes_handed() const { return writes_handed_; }
  // Shown in the hierarchy with its depth and high-water mark.
  GaugeExport s_items;
  StreamOut<DmaWrite> m_dma{"m_dma"};  // its payload writes, into the DMA engine's write queue
  // Wake-ups for the processes it held: told when it empties after it had to hold something.
  Observers<> on_empty;
  uint64_t holds() const { return holds_; }  // times something had to wait for room
  uint64_t overflows() const { return overflows_; }  // items added past the depth (a model error, logged)

 private:
  template <typename Item>
  Item& add_item();
  void drain();
  void forget_issued_marks(uint64_t issued);
  void drain_method();

  const SimClock& clock_;
  DmaEngine& dma_;
  sc_core::sc_port<CompletionPutIf>& completions_;
  TransportStats& stats_;
  uint32_t write_order_;
  SlotRing<std::variant<DmaWrite, CompletionRecord>> items_;  // depth_ slots (more only past it: an error)
  uint64_t writes_added_ = 0;    // payload writes ever added
  uint64_t writes_handed_ = 0;   // of them, handed on to the DMA queue
  // The DMA queue mark of each write handed on and perhaps not yet issued: writes number
  // marks_base_ + 1 .. writes_handed_ (those up to marks_base_ are issued).
  SlotRing<uint64_t> marks_;
  uint64_t marks_base_ = 0;
  // A writes_issued_through() waiter (one: the transmit arbiter's held ACK) for writes not yet
  // handed on: asked of the DMA engine once write number after_writes_n_ is handed on.
  std::function<void()> after_writes_handed_;
  uint64_t after_writes_n_ = 0;
  size_t depth_;
  sc_core::sc_event wake_;
  bool held_ = false, held_by_completions_ = false, in_method_ = false, pushing_front_ = false;
  uint64_t holds_ = 0, overflows_ = 0;
};

}  // namespace vhca
