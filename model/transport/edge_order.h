// The transport's one order on an edge (decisions.md 48): the timers due fire, then the reads
// usable are answered, then the receiver hands on the packet whose check ends there, then the
// transmit arbiter decides. SystemC runs the blocks' processes in an order of its own; each block
// asks the ones before it in this order to act first, and their own processes, when they come,
// find that work done. Inline: the arbiter asks on every edge it acts on, and mostly nothing is due.
#pragma once
#include <cstdint>

#include "model/dma/dma_engine.h"
#include "model/transport/transport_timers.h"
#include "model/transport/transport_types.h"

namespace vhca {

struct EdgeOrder {
  TransportTimers& timers;
  DmaEngine& dma;
  TransportStats& stats;  // counts the work done ahead of its block's own process

  // The inline checks first: the calls behind them are out of line and check again, and without
  // these a message costs about 30 instructions more (mostly nothing is due).
  void timers_and_reads(uint64_t now) const {  // now: the cycle on whose edge they act
    if (timers.due_by(now)) stats.timers_fired_first += timers.fire_due_now(now);
    if (dma.reads_usable()) stats.reads_answered_first += dma.answer_usable_reads();
  }
};

}  // namespace vhca
