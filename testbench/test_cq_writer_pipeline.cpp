// The pipelined CQ writer: the contract of docs/cosim-guide.md ("The pipelined writer") asserted
// cycle for cycle on the C++ model (CqWriterPipeline), and the model and the Verilated RTL
// (rtl/cq_writer_pipelined.v) in lockstep on the directed scripts, on random streams at 64, 4,096
// and 65,536 CQs, and against the faults the lockstep must catch.
#include <map>

#include "cosim/cosim.h"
#include "model/cq/cq_writer_pipeline.h"
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;

namespace {

// The C++ model alone, clocked every cycle from cycle 1, every output taken as it leaves.
struct Bench {
  explicit Bench(ArmEvent arm_event = ArmEvent::moderated) : w(config(arm_event), 500.0) {
    w.m_dma = &dma;
    w.m_event = &events;
    w.m_ci_req = &ci_req;
    dma.on_push.add([this](const DmaWrite& d, uint64_t c) { cqes.emplace_back(c, d); });
    events.on_push.add([this](const DeviceEvent& e, uint64_t c) { event_cycles.emplace_back(c, e); });
    w.on_control_done.add([this](const CqControl&, uint64_t c) { controls_done.push_back(c); });
  }
  static CqeWriterConfig config(ArmEvent arm_event) {
    CqeWriterConfig cfg;
    cfg.num_cqs = 64;
    cfg.arm_event = arm_event;
    return cfg;
  }
  // The first cycle on which the writer takes an item: clocked from cycle 1, it clears its table
  // and wheel for clearing_cycles() cycles.
  uint64_t ready() const { return 1 + w.clearing_cycles(); }
  // Tick n begins on this cycle (a tick is 500 cycles, counted from the first cycle).
  static uint64_t tick_start(uint64_t n) { return 1 + n * 500; }

  void run_to(uint64_t until) {
    while (c < until) {
      ++c;
      for (auto it = inputs.begin(); it != inputs.end() && it->first == c;) {
        it->second();
        it = inputs.erase(it);
      }
      w.act(c);
      if (!dma.empty()) dma.pop(c);
      if (!events.empty()) events.pop(c);
      if (!ci_req.empty()) ci_req.pop(c);
    }
  }
  void create(uint64_t at, uint32_t cqn, uint16_t count, uint16_t period, PeriodMode mode = PeriodMode::eqe) {
    CqControl k;
    k.cqn = cqn;
    k.cfg.log_size = 6;
    k.cfg.base = 0x10'0000'0000ull + (uint64_t(cqn) << 28);
    k.cfg.eqn = 1;
    k.cfg.mod_count = count;
    k.cfg.mod_period = period;
    k.cfg.period_mode = mode;
    inputs.emplace(at, [this, k, at] { w.s_ctl.push(k, at); });
  }
  void completion(uint64_t at, uint32_t cqn, uint64_t wr_id) {
    inputs.emplace(at, [this, cqn, wr_id, at] { w.s_cpl.push(test::recv_record(cqn, wr_id), at); });
  }
  void arm(uint64_t at, uint32_t cqn, uint8_t sn, uint32_t ci) {
    inputs.emplace(at, [this, cqn, sn, ci, at] { w.s_arm.push(ArmRequest{cqn, sn, ArmCmd::next, ci}, at); });
  }
  uint64_t cqe_cycle(size_t i) const { return i < cqes.size() ? cqes[i].first : 0; }
  uint64_t event_cycle(size_t i) const { return i < event_cycles.size() ? event_cycles[i].first : 0; }

  CqWriterPipeline w;
  Stream<DmaWrite> dma{"m_dma", 4};
  Stream<DeviceEvent> events{"m_event", 4};
  Stream<CiRequest> ci_req{"m_ci_req", 2};
  std::multimap<uint64_t, std::function<void()>> inputs;
  std::vector<std::pair<uint64_t, DmaWrite>> cqes;
  std::vector<std::pair<uint64_t, DeviceEvent>> event_cycles;
  std::vector<uint64_t> controls_done;
  uint64_t c = 0;
};

}  // namespace

TEST_CASE("pipeline contract: nothing is taken while the table and the wheel clear, then a control acts 3 cycles after it is pushed") {
  Bench b;
  REQUIRE(b.w.clearing_cycles() == 8192);  // the wheel's 8,192 slots outlast 64 contexts
  b.create(1, 1, 0, 0);                    // waits in s_ctl through the sweep
  b.create(b.ready() + 100, 2, 0, 0);
  b.run_to(b.ready() + 200);
  REQUIRE(b.controls_done.size() == 2);
  CHECK(b.controls_done[0] == b.ready() + 2);    // selected on the first ready cycle, acted 2 later
  CHECK(b.controls_done[1] == b.ready() + 103);  // visible +1, selected, acted at stage 3: +3
}

TEST_CASE("[S17] pipeline contract: a completion's CQE leaves 5 cycles after the record is pushed, and back-to-back completions to one CQ go one every two cycles, in order (the hazard stall)") {
  Bench b;
  const uint64_t t0 = b.ready();
  b.create(t0, 1, 0, 0);
  // Pushed on p: visible p+1, into the replay buffer on that edge, selected p+2, acted p+4, out of
  // the skid buffer p+5. Four at once enter the buffer one a cycle; each after the first waits a
  // cycle in stage 2 behind the one for its CQ in stage 3, so they leave every other cycle.
  const uint64_t p = t0 + 100;
  for (uint64_t i = 0; i < 4; ++i) b.completion(p, 1, i);
  b.run_to(p + 50);
  REQUIRE(b.cqes.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(b.cqe_cycle(i) == p + 5 + 2 * i);
    CHECK(b.cqes[i].second.addr == 0x10'1000'0000ull + 64 * i);  // producer index 0, 1, 2, 3
    CHECK(get_field(b.cqes[i].second.data.data(), cqe::wr_id) == i);
  }
  CHECK(b.w.coverage().hazard_stalls == 3);  // each after the first waited once
  CHECK(b.w.context(1).pi == 4);
}

TEST_CASE("[S17] pipeline contract: back-to-back completions alternating between two CQs go one a cycle (no hazard)") {
  Bench b;
  const uint64_t t0 = b.ready();
  b.create(t0, 1, 0, 0);
  b.create(t0 + 1, 2, 0, 0);
  const uint64_t p = t0 + 100;
  for (uint64_t i = 0; i < 4; ++i) b.completion(p, 1 + uint32_t(i % 2), i);
  b.run_to(p + 50);
  REQUIRE(b.cqes.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(b.cqe_cycle(i) == p + 5 + i);
    CHECK(b.cqes[i].second.addr == 0x10'0000'0000ull + (uint64_t(1 + i % 2) << 28) + 64 * (i / 2));
  }
  CHECK(b.w.coverage().hazard_stalls == 0);
}

TEST_CASE("[S12] pipeline contract: the count reached fires with the CQE that reaches it") {
  Bench b;
  const uint64_t t0 = b.ready();
  b.create(t0, 1, 2, 0);
  b.arm(t0 + 10, 1, 0, 0);
  const uint64_t p = t0 + 100;
  b.completion(p, 1, 1);
  b.completion(p + 1, 1, 2);
  b.run_to(p + 50);
  REQUIRE(b.cqes.size() == 2);
  REQUIRE(b.event_cycles.size() == 1);
  // The second is a cycle behind the first, which it waits for in stage 2 (the hazard stall): it
  // acts on p + 6, not p + 5, and leaves on p + 7.
  CHECK(b.cqe_cycle(0) == p + 5);
  CHECK(b.cqe_cycle(1) == p + 7);
  CHECK(b.event_cycle(0) == p + 7);  // same action as the second CQE, out of the skids together
  CHECK(b.w.stats().events_by_count == 1);
}

TEST_CASE("[S26][S12] pipeline contract: an arm with CQEs pending waits for the period, which ends on the P-th microsecond tick after the one it began in") {
  Bench b;
  const uint64_t t0 = b.ready();  // cycle 8193: tick 16 began on cycle 8001
  b.create(t0, 1, 0, 2);          // acted on cycle 8195: the period starts mid-tick 16
  b.completion(t0 + 100, 1, 1);
  b.arm(t0 + 200, 1, 0, 0);       // the CQE is owed: it waits for the period
  b.run_to(t0 + 3000);
  REQUIRE(b.event_cycles.size() == 1);
  // Begun in tick 16, 2 us long: it ends on tick 18 (cycle 9001), 806 cycles after it began (a
  // timer counting microsecond ticks is up to a microsecond early, never late). The wheel
  // detaches slot 18 on 9001, reads its head on 9002 and offers the CQ, stage 1 takes it on 9003,
  // stage 3 fires on 9005, and the event leaves the skid buffer on 9006.
  CHECK(b.event_cycle(0) == Bench::tick_start(18) + 5);
  CHECK(b.w.stats().events_by_period == 1);
  CHECK(b.w.stats().arms_owed == 1);
}

TEST_CASE("[S26] pipeline contract: with the old rule the owed event leaves 4 cycles after the arm is pushed") {
  Bench b(ArmEvent::at_once);
  const uint64_t t0 = b.ready();
  b.create(t0, 1, 0, 2);
  b.completion(t0 + 100, 1, 1);
  b.arm(t0 + 200, 1, 0, 0);
  b.run_to(t0 + 3000);
  REQUIRE(b.event_cycles.size() == 1);
  CHECK(b.event_cycle(0) == t0 + 204);
  CHECK(b.w.stats().events_at_arm == 1);
}

TEST_CASE("[S12] pipeline contract: CQE mode restarts the period at each CQE, and an expiry whose deadline moved later goes back into the wheel") {
  Bench b;
  const uint64_t t0 = b.ready();
  b.create(t0, 1, 0, 2, PeriodMode::cqe);
  b.arm(t0 + 10, 1, 0, 0);
  b.completion(t0 + 100, 1, 1);   // CQE on 8298 (tick 16): deadline tick 18
  b.completion(t0 + 700, 1, 2);   // CQE on 8898 (tick 17): deadline tick 19
  b.run_to(t0 + 4000);
  REQUIRE(b.event_cycles.size() == 1);
  CHECK(b.event_cycle(0) == Bench::tick_start(19) + 5);  // via tick 18's expiry, re-inserted at 19
  CHECK(b.w.coverage().reinserted == 1);
}

TEST_CASE("[S12] pipeline contract: timers expiring on one tick fire on successive offers of the walk, the last inserted first") {
  Bench b;
  const uint64_t t0 = b.ready();
  b.create(t0, 1, 0, 2);
  b.create(t0 + 1, 2, 0, 2);  // both periods end on tick 18
  b.arm(t0 + 10, 1, 0, 0);
  b.arm(t0 + 11, 2, 0, 0);
  b.completion(t0 + 100, 1, 1);
  b.completion(t0 + 100, 2, 1);  // CQ 2's timer is inserted a cycle after CQ 1's
  b.run_to(t0 + 3000);
  REQUIRE(b.event_cycles.size() == 2);
  CHECK(b.event_cycles[0].second.cqn == 2);
  CHECK(b.event_cycle(0) == Bench::tick_start(18) + 5);
  CHECK(b.event_cycles[1].second.cqn == 1);
  CHECK(b.event_cycle(1) == Bench::tick_start(18) + 7);  // an offer every two cycles
  CHECK(b.w.coverage().same_tick == 1);
}

TEST_CASE("pipelined lockstep, constrained random at 64, 4,096 and 65,536 CQs: no mismatch, every mechanism of the pipeline exercised") {
  for (uint32_t cqs : {64u, 4096u, 65536u}) {
    CosimOptions o;
    o.num_cqs = cqs;
    o.seed = 11 + cqs;
    o.cqes = 60000;
    CosimReport r = run_cosim(o);
    INFO(cqs << " CQs\n" << r.summary());
    REQUIRE(r.mismatches == 0);
    CHECK(r.coverage_equal);
    CHECK(r.protocol_violations.empty());
    const CqWriterPipeline::Coverage& p = r.pipeline;
    CHECK(p.hazard_stalls > 0);
    CHECK(p.bypass_written > 0);
    CHECK(p.squashed > 0);
    CHECK(p.reinserted > 0);
    CHECK(p.stale_expiries > 0);
    CHECK(p.same_tick > 0);
    CHECK(p.holds > 0);
    CHECK(r.coverage.events_by_period > 0);
    CHECK(r.coverage.ci_refreshes > 0);
    CHECK(r.coverage.overflows > 0);
  }
}

TEST_CASE("pipelined lockstep: no output depends on a register or RAM word that reset leaves random") {
  CosimOptions o;
  o.cqes = 40000;
  o.rtl_init_seed = 0xC0FFEE;
  CosimReport r = run_cosim(o);
  INFO(r.summary());
  CHECK(r.mismatches == 0);
}

TEST_CASE("pipelined lockstep catches faults: an owner bit, a late event, a hidden counter, a stream rule broken at the pins") {
  auto faulty = [](auto set) {
    CosimOptions o;
    o.cqes = 20000;
    set(o.faults);
    return run_cosim(o);
  };
  CosimReport owner = faulty([](RtlFaults& f) { f.flip_owner_at_cqe = 1234; });
  CHECK(owner.mismatches == 1);
  CHECK(owner.first_mismatch.find("cqe.owner") != std::string::npos);
  CosimReport late = faulty([](RtlFaults& f) { f.delay_event_at = 77; });
  CHECK(late.mismatches == 1);
  CHECK(late.first_mismatch.find("m_event: model raised 1 event(s), RTL 0") != std::string::npos);
  CosimReport hidden = faulty([](RtlFaults& f) { f.misread_pending_from = 12000; });
  CHECK(hidden.mismatches == 1);
  CHECK(hidden.first_mismatch.find("context.mod_pending expected") != std::string::npos);
  CosimReport unstable = faulty([](RtlFaults& f) { f.unstable_cqe_at = 3; });
  CHECK(unstable.mismatches == 1);
  CHECK(unstable.first_mismatch.find("stream protocol broken at the RTL's pins: m_dma") != std::string::npos);
  CHECK(unstable.protocol_violations.size() == 1);
}
