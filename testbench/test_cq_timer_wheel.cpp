// rtl/cq_timer_wheel.v in lockstep with its C++ cycle model (model/cq/timer_wheel.*), and both
// against the rules (issue 13: moderation timers without a table-wide search). A writer-like driver
// inserts CQs whose timer is not running, with deadlines from the next tick to 4,096 ticks ahead
// (and some already due), takes expiries under random backpressure and sometimes re-inserts the
// CQ at once (a CQE-mode restart). Every cycle the pins of the RTL and the model must be equal;
// every insert must expire exactly once, on its deadline tick (a due one on the tick after its
// insert), not before the tick has begun, the CQs of one tick most recently inserted first.
#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "Vcq_timer_wheel_64.h"
#include "Vcq_timer_wheel_64k.h"
#include "model/cq/timer_wheel.h"
#include "verilated.h"

namespace {
using vhca::TimerWheel;

struct Running {
  uint32_t tick;      // the tick it must expire on
  uint64_t order;     // insertion order (later inserts of one tick come out first)
};

template <typename V>
struct Lockstep {
  V rtl;
  TimerWheel model;
  uint32_t cycles_per_us;
  uint64_t cycle = 0;
  uint64_t mismatches = 0, expiries = 0, inserts = 0, late = 0;
  std::string first_mismatch;
  std::map<uint32_t, Running> running;  // CQN -> its timer
  std::map<uint32_t, uint64_t> tick_began;  // tick -> the first cycle it was current
  uint32_t last_tick = 0;
  uint64_t last_order_in_tick = UINT64_MAX;
  uint32_t order_tick = UINT32_MAX;

  Lockstep(uint32_t num_cqs, uint32_t cpu) : model(num_cqs, cpu), cycles_per_us(cpu) {
    rtl.rst = 1;
    rtl.s_ins_valid = 0;
    rtl.m_exp_ready = 0;
    clock();
    model.reset();
    rtl.rst = 0;
    rtl.eval();
  }
  void clock() {
    rtl.clk = 0;
    rtl.eval();
    rtl.clk = 1;
    rtl.eval();
  }
  // Compares the pins; returns the model's view.
  TimerWheel::Outputs compare() {
    const TimerWheel::Outputs m = model.outputs();
    bool same = m.ready == bool(rtl.o_ready) && m.now == rtl.o_now && m.late == bool(rtl.o_late) &&
                m.idle == bool(rtl.o_idle) &&
                m.ins_ready == bool(rtl.s_ins_ready) && m.exp_valid == bool(rtl.m_exp_valid);
    if (same && m.exp_valid) same = m.exp_cqn == rtl.m_exp_cqn && m.exp_tick == rtl.m_exp_tick;
    if (!same) {
      if (mismatches == 0) {
        std::ostringstream s;
        s << "first mismatch at cycle " << cycle << ": model ready " << m.ready << " now " << m.now << " late " << m.late
          << " ins_ready " << m.ins_ready << " exp " << m.exp_valid << " " << m.exp_cqn << "@" << m.exp_tick << "; rtl "
          << int(rtl.o_ready) << " " << rtl.o_now << " " << int(rtl.o_late) << " " << int(rtl.s_ins_ready) << " "
          << int(rtl.m_exp_valid) << " " << uint32_t(rtl.m_exp_cqn) << "@" << rtl.m_exp_tick;
        first_mismatch = s.str();
      }
      ++mismatches;
    }
    return m;
  }
  void step(const TimerWheel::Inputs& in) {
    rtl.s_ins_valid = in.ins_valid;
    rtl.s_ins_cqn = in.ins_cqn;
    rtl.s_ins_deadline = in.ins_deadline;
    rtl.m_exp_ready = in.exp_ready;
    rtl.eval();
    compare();
    clock();
    model.edge(in);
    ++cycle;
  }
};

template <typename V>
void run(uint32_t num_cqs, uint32_t cpu, uint64_t cycles, uint32_t max_ahead) {
  Verilated::randReset(2);
  Lockstep<V> ls(num_cqs, cpu);
  std::mt19937_64 rng(42 + num_cqs);
  uint64_t order = 0;
  TimerWheel::Inputs in;
  for (uint64_t c = 0; c < cycles; ++c) {
    const TimerWheel::Outputs o = ls.model.outputs();
    if (!ls.tick_began.count(o.now)) ls.tick_began[o.now] = ls.cycle;
    // Keep an offer until it is taken; otherwise offer a CQ whose timer is not running.
    if (!in.ins_valid && o.ready && rng() % 3 == 0) {
      const uint32_t cqn = uint32_t(rng() % num_cqs);
      if (!ls.running.count(cqn)) {
        in.ins_valid = true;
        in.ins_cqn = cqn;
        const bool due = rng() % 50 == 0;
        in.ins_deadline = (o.now + (due ? 0 : 1 + uint32_t(rng() % max_ahead))) & TimerWheel::kTickMask;
      }
    }
    in.exp_ready = rng() % 4 != 0;
    const bool took_insert = in.ins_valid && o.ins_ready;
    const bool took_expiry = o.exp_valid && in.exp_ready;
    if (took_expiry) {
      ++ls.expiries;
      auto it = ls.running.find(o.exp_cqn);
      REQUIRE(it != ls.running.end());  // an expiry for a CQ with no timer: invented or duplicated
      CHECK(o.exp_tick == it->second.tick);
      REQUIRE(ls.tick_began.count(o.exp_tick));
      CHECK(ls.tick_began[o.exp_tick] <= ls.cycle);  // never before its tick
      if (ls.order_tick == o.exp_tick) CHECK(it->second.order < ls.last_order_in_tick);  // newest first
      ls.order_tick = o.exp_tick;
      ls.last_order_in_tick = it->second.order;
      ls.running.erase(it);
    }
    if (took_insert) {
      ++ls.inserts;
      const uint32_t ahead = (in.ins_deadline - o.now) & TimerWheel::kTickMask;
      const bool placeable = ahead != 0 && ahead < 0x2000;
      if (!placeable) ++ls.late;
      ls.running[in.ins_cqn] = Running{placeable ? in.ins_deadline : (o.now + 1) & TimerWheel::kTickMask, order++};
    }
    ls.step(in);
    if (took_insert) in.ins_valid = false;
    // A restart: the expired CQ goes straight back in (the writer's re-insert of a moved deadline).
    if (took_expiry && !in.ins_valid && rng() % 4 == 0 && !ls.running.count(o.exp_cqn)) {
      in.ins_valid = true;
      in.ins_cqn = o.exp_cqn;
      in.ins_deadline = (o.now + 1 + uint32_t(rng() % 3)) & TimerWheel::kTickMask;
    }
  }
  INFO(ls.inserts << " inserts, " << ls.expiries << " expiries, " << ls.late << " due at insert, " << ls.cycle << " cycles");
  INFO(ls.first_mismatch);
  CHECK(ls.mismatches == 0);
  CHECK(ls.expiries > 1000);
  CHECK(ls.late > 0);
  // Whatever is still running is due after the end, or waits behind the walk: nothing overdue.
  const uint32_t now = ls.model.outputs().now;
  for (const auto& [cqn, r] : ls.running) {
    INFO("CQ " << cqn << " due on tick " << r.tick << ", now " << now);
    CHECK(((r.tick - now) & TimerWheel::kTickMask) < 0x2000);
  }
}
}  // namespace

TEST_CASE("the RTL timer wheel (64 CQs, 20 cycles a tick) equals its C++ model on every pin and keeps the rules, for 2 M cycles") {
  run<Vcq_timer_wheel_64>(64, 20, 2'000'000, 40);
}

TEST_CASE("the RTL timer wheel (65,536 CQs, 500 cycles a tick) equals its C++ model on every pin and keeps the rules, for 1 M cycles") {
  run<Vcq_timer_wheel_64k>(65536, 500, 1'000'000, 4096);
}
