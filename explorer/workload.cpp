#include "explorer/workload.h"

#include <cmath>

#include "model/regs/tables.h"

namespace vhca {
namespace {

using sc_core::sc_time;

double uniform(std::mt19937_64& rng) { return (double(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

uint32_t draw_size(const Workload& w, std::mt19937_64& rng) {
  if (w.sizes.size() == 1) return w.sizes[0];
  double total = 0;
  for (double x : w.size_weights) total += x;
  double x = uniform(rng) * total;
  for (size_t i = 0; i < w.sizes.size(); ++i)
    if ((x -= w.size_weights[i]) < 0) return w.sizes[i];
  return w.sizes.back();
}

void wait_until(const sc_time& at) {
  if (at > sc_core::sc_time_stamp()) sc_core::wait(at - sc_core::sc_time_stamp());
}

// Open loop: constant gaps, exponential gaps (Poisson), or either only inside the bursts of an
// on/off cycle; the QP, the opcode and the size drawn per arrival.
void open_loop(const QpGroup& group, int first, std::mt19937_64& rng, const sc_time& start, const sc_time& end,
               const ArriveFn& arrive) {
  const Workload& w = group.workload;
  const double gap_ns = 1e6 / w.rate_kmsg;
  const double cycle_ns = (w.on_us + w.off_us) * 1e3;
  double t = 0;
  for (;;) {
    t += w.arrival == Arrival::poisson ? -std::log(uniform(rng)) * gap_ns : gap_ns;
    if (w.arrival == Arrival::onoff && std::fmod(t, cycle_ns) >= w.on_us * 1e3)
      t = (std::floor(t / cycle_ns) + 1) * cycle_ns;  // skip to the next burst
    const sc_time at = start + sc_time(t, sc_core::SC_NS);
    if (at >= end) break;
    const int q = first + int(rng() % uint64_t(group.qps));
    const double pick = uniform(rng);
    const uint8_t op = pick < w.write_fraction                     ? sqwqe::kRdmaWrite
                       : pick < w.write_fraction + w.read_fraction ? sqwqe::kRdmaRead
                                                                    : sqwqe::kSend;
    const uint32_t size = draw_size(w, rng);
    wait_until(at);
    arrive(q, op, size);
  }
}

// A recorded trace, each arrival at its time (or as soon as the one before it was posted).
void replay(const QpGroup& group, int first, const sc_time& start, const sc_time& end, const ArriveFn& arrive) {
  for (const TracedArrival& a : group.workload.trace) {
    const sc_time at = start + sc_time(double(a.at_ps), sc_core::SC_PS);
    if (at >= end) break;
    wait_until(at);
    arrive(first + a.qp, a.opcode, a.size);
  }
}

// Closed loop: each QP starts with `outstanding` pings in flight.
void start_pings(const QpGroup& group, int first, std::mt19937_64& rng, const ArriveFn& arrive) {
  for (int q = first; q < first + group.qps; ++q)
    for (int i = 0; i < group.workload.outstanding; ++i) arrive(q, sqwqe::kSend, draw_size(group.workload, rng));
}

}  // namespace

void run_arrivals(const QpGroup& group, int g, int first_qp, uint64_t seed, const sc_time& start, const sc_time& end,
                  const ArriveFn& arrive) {
  std::mt19937_64 rng(seed + uint64_t(g) * 0x9E3779B97F4A7C15ull);
  switch (group.workload.arrival) {
    case Arrival::pingpong: return start_pings(group, first_qp, rng, arrive);
    case Arrival::trace: return replay(group, first_qp, start, end, arrive);
    default: return open_loop(group, first_qp, rng, start, end, arrive);
  }
}

}  // namespace vhca
