// rtl/skid_buffer.v, Verilated, with the pin-level stream checker (cosim/stream_checker.h) on both
// of its sides (issue 13, items 1 and 4): under random valid and ready patterns every item comes
// out once, in order, with no handshake rule broken on either side; with the consumer always
// ready it passes an item every cycle, one cycle after taking it; its outputs do not follow
// m_ready combinationally. And the checker fires: a producer that withdraws an offered item, or
// changes it while it waits, is reported on the cycle it does so.
#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "Vskid_buffer.h"
#include "cosim/stream_checker.h"
#include "verilated.h"

namespace {
using vhca::StreamChecker;

// A producer that keeps the handshake rules unless told to break one at a given cycle.
struct Producer {
  uint64_t next = 1, last = 0;
  bool offering = false;
  uint64_t drop_at = UINT64_MAX, change_at = UINT64_MAX;  // faults: withdraw, or change the data
};

struct Bench {
  Vskid_buffer v;
  uint64_t cycle = 0;
  StreamChecker<uint64_t> in{"skid s_*"}, out{"skid m_*"};
  std::vector<uint64_t> received;
  std::vector<uint64_t> taken_cycle, out_cycle;  // per item: the edge it was taken, the cycle it showed

  Bench() {
    v.rst = 1;
    v.s_valid = 0;
    v.m_ready = 0;
    edge();
    edge();
    v.rst = 0;
    cycle = 0;
  }
  void edge() {
    v.clk = 0;
    v.eval();
    v.clk = 1;
    v.eval();
  }
  // One cycle: drive, sample both sides, then the edge.
  void step(Producer& p, bool offer, bool ready) {
    if (!p.offering && offer && p.next <= p.last) p.offering = true;
    bool valid = p.offering;
    uint64_t data = p.next;
    if (cycle == p.drop_at) valid = false;
    if (cycle == p.change_at) data = p.next + 1000;
    v.s_valid = valid;
    v.s_data = data;
    v.m_ready = ready;
    v.eval();
    in.sample(cycle, valid, v.s_ready, data);
    out.sample(cycle, v.m_valid, ready, v.m_data);
    const bool took = valid && v.s_ready, gave = v.m_valid && ready;
    if (gave) {
      received.push_back(v.m_data);
      out_cycle.push_back(cycle);
    }
    edge();
    if (took) {
      taken_cycle.push_back(cycle);
      p.offering = false;
      ++p.next;
    }
    ++cycle;
  }
};
}  // namespace

TEST_CASE("the RTL skid buffer passes every item once and in order under random valid and ready, keeping the handshake rules") {
  Verilated::randReset(2);
  Bench b;
  Producer p;
  p.last = 20000;
  std::mt19937 rng(11);
  for (int i = 0; i < 200000 && b.received.size() < p.last; ++i) b.step(p, rng() % 3 != 0, rng() % 2 == 0);
  REQUIRE(b.received.size() == p.last);
  for (uint64_t k = 0; k < p.last; ++k) REQUIRE(b.received[k] == k + 1);
  CHECK(b.in.violations().empty());
  CHECK(b.out.violations().empty());
  CHECK(b.in.transfers() == p.last);
  CHECK(b.out.transfers() == p.last);
}

TEST_CASE("the RTL skid buffer passes an item every cycle, one cycle after it takes it, and its outputs do not follow m_ready") {
  Verilated::randReset(2);
  Bench b;
  Producer p;
  p.last = 1000;
  for (int i = 0; i < 1001; ++i) b.step(p, true, true);
  REQUIRE(b.received.size() == 1000);
  for (size_t k = 0; k < 1000; ++k) {
    CHECK(b.out_cycle[k] == b.taken_cycle[k] + 1);
    CHECK(b.taken_cycle[k] == k);  // never refused: full throughput
  }
  // Stall the output with an item in each register, then flip m_ready without an edge: s_ready
  // and m_valid stay (registered), so no combinational path runs through the buffer.
  Producer q;
  q.next = 5000;
  q.last = 5010;
  b.step(q, true, false);
  b.step(q, true, false);
  REQUIRE(b.v.m_valid == 1);
  REQUIRE(b.v.s_ready == 0);
  b.v.m_ready = 1;
  b.v.eval();
  CHECK(b.v.s_ready == 0);
  CHECK(b.v.m_valid == 1);
  b.v.m_ready = 0;
  b.v.eval();
  CHECK(b.v.s_ready == 0);
  CHECK(b.in.violations().empty());
  CHECK(b.out.violations().empty());
}

TEST_CASE("the stream checker reports a producer that withdraws an offered item or changes it while it waits") {
  Verilated::randReset(2);
  Bench b;
  Producer p;
  p.last = 100;
  // Fill both registers (output stalled) so that the producer's offer waits, then break a rule.
  for (int i = 0; i < 4; ++i) b.step(p, true, false);
  REQUIRE(b.v.s_ready == 0);
  p.drop_at = b.cycle;        // withdraws its waiting offer
  p.change_at = b.cycle + 2;  // then, offering again, changes the data for one cycle while it waits
  for (int i = 0; i < 4; ++i) b.step(p, true, false);
  for (const std::string& v : b.in.violations()) UNSCOPED_INFO(v);
  REQUIRE(b.in.violations().size() == 3);
  CHECK(b.in.violations()[0].find("cycle 4: valid dropped before ready") != std::string::npos);
  CHECK(b.in.violations()[1].find("cycle 6: data changed while valid waited") != std::string::npos);
  CHECK(b.in.violations()[2].find("cycle 7: data changed while valid waited") != std::string::npos);  // and back
  CHECK(b.out.violations().empty());
}
