// The arrivals of a traffic run: for one group of QPs, when each message arrives, on which QP,
// what it is and how big — constant or Poisson rates, on/off bursts, a recorded trace, or the
// first pings of a closed loop. Every draw comes from a fully specified generator (mt19937_64 with
// inverse-CDF sampling), so every platform produces the same workload.
#pragma once
#include <cstdint>
#include <functional>
#include <random>

#include <systemc>

#include "explorer/traffic.h"

namespace vhca {

// Called at each arrival's time: QP index (over all groups), opcode (sqwqe::), size in bytes.
using ArriveFn = std::function<void(int qp, uint8_t opcode, uint32_t size)>;

// Runs group `g`'s arrivals from `start` until `end`, in the calling SystemC thread; the group's
// QPs are first_qp .. first_qp + group.qps - 1. A closed loop (ping-pong) only starts here: each
// pong's arrival posts the next ping. Group 0 draws from the seed itself, so a scenario without
// groups keeps its workload.
void run_arrivals(const QpGroup& group, int g, int first_qp, uint64_t seed, const sc_core::sc_time& start,
                  const sc_core::sc_time& end, const ArriveFn& arrive);

}  // namespace vhca
