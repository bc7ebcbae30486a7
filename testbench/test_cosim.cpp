// Lockstep co-simulation of the C++ and the RTL CQ writer (the pipelined one): directed scenarios
// per rule, constrained-random streams from several seeds, and proof that the checker catches
// faults.
#include "cosim/cosim.h"
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;

namespace {
// The scripts name cycles from the writer's reset; the pipelined writer takes nothing while it
// clears its tables (8,192 cycles at 64 CQs), so they are played after that.
CosimReport directed_run(std::vector<CosimInput> script, ArmEvent arm_event = ArmEvent::moderated) {
  CosimOptions o;
  o.arm_event = arm_event;
  o.random = false;
  for (CosimInput& in : script) in.cycle += 8200;
  o.script = std::move(script);
  CosimReport r = run_cosim(o);
  INFO(r.summary());
  CHECK(r.mismatches == 0);
  CHECK(r.coverage_equal);
  return r;
}
}  // namespace

TEST_CASE("[S7][S10] lockstep, directed: NEXT, arm-once, stale sequence number") {
  CosimReport r = directed_run(directed::notify_next());
  CHECK(r.coverage.events == 2);  // cycle 20 (armed at 10), cycle 50 (re-armed at 40); not 21, not 60
  CHECK(r.coverage.arms_ignored_pending == 1);
  CHECK(r.coverage.arms_stale == 1);
}

TEST_CASE("[S8][S11] lockstep, directed: SOLICITED, errors, NEXT precedence") {
  CosimReport r = directed_run(directed::notify_solicited());
  CHECK(r.coverage.events == 3);
  CHECK(r.coverage.arms_upgraded == 1);
}

TEST_CASE("[S9][S26] lockstep, directed: arms behind the producer owe an event, arms at the seen index do not") {
  // Unmoderated CQ: the owed CQEs fire at once through moderation (immediate), or at the arm with
  // the old rule.
  CosimReport r = directed_run(directed::fire_at_arm());
  CHECK(r.coverage.arms_owed == 2);
  CHECK(r.coverage.events_at_arm == 0);
  CHECK(r.coverage.events_immediate == 3);
  CosimReport old = directed_run(directed::fire_at_arm(), ArmEvent::at_once);
  CHECK(old.coverage.events_at_arm == 2);
  CHECK(old.coverage.arms_owed == 0);
}

TEST_CASE("[S26] lockstep, directed: CQEs owed at an arm wait for the count or the period, both modes") {
  CosimReport r = directed_run(directed::arm_moderated());
  CHECK(r.coverage.arms_owed == 4);
  CHECK(r.coverage.events_by_count >= 1);
  CHECK(r.coverage.timer_expiries >= 2);
  CHECK(r.coverage.events_at_arm == 0);
}

TEST_CASE("[S12] lockstep, directed: count, EQE and CQE period modes, run-time change") {
  CosimReport r = directed_run(directed::moderation());
  CHECK(r.coverage.events_by_count >= 2);
  CHECK(r.coverage.events_by_period >= 2);
  CHECK(r.coverage.timer_expiries >= 2);
}

TEST_CASE("[S14] lockstep, directed: consumer-index refresh, overflow") {
  CosimReport r = directed_run(directed::overflow());
  CHECK(r.coverage.ci_refreshes == 2);
  CHECK(r.coverage.overflows == 1);
}

TEST_CASE("lockstep, constrained random: 30,000 CQEs from each of three seeds (one with the old arm rule), no mismatch, every coverage point hit") {
  for (uint64_t seed : {1, 2, 3}) {
    CosimOptions o;
    o.seed = seed;
    o.arm_event = seed == 3 ? ArmEvent::at_once : ArmEvent::moderated;
    o.cqes = 30000;
    CosimReport r = run_cosim(o);
    INFO("seed " << seed << "\n" << r.summary());
    REQUIRE(r.mismatches == 0);
    CHECK(r.coverage_equal);
    CHECK(r.cqes >= 30000);
    const CqeWriterStats& c = r.coverage;
    CHECK(c.events_by_count > 0);
    CHECK(c.events_by_period > 0);
    CHECK(c.events_immediate > 0);
    if (o.arm_event == ArmEvent::at_once) CHECK(c.events_at_arm > 0);
    else CHECK(c.arms_owed > 0);
    CHECK(c.arms_upgraded > 0);
    CHECK(c.arms_ignored_pending > 0);
    CHECK(c.arms_stale > 0);
    CHECK(r.arms_next > 0);
    CHECK(r.arms_solicited > 0);
    CHECK(c.ci_refreshes > 0);
    CHECK(c.overflows > 0);
    CHECK(c.owner_wraps > 0);
    CHECK(c.bad_records > 0);
    CHECK(r.pipeline.holds > 0);  // output backpressure reached stage 3, which held
  }
}

TEST_CASE("the checker catches an RTL fault: an owner bit flipped") {
  CosimOptions o;
  o.cqes = 5000;
  o.faults.flip_owner_at_cqe = 1234;
  CosimReport r = run_cosim(o);
  REQUIRE(r.mismatches == 1);
  CHECK(r.first_mismatch.find("cqe.owner") != std::string::npos);
  CHECK(r.first_mismatch.find("last inputs") != std::string::npos);
  CHECK(r.cqes < 5000);  // the run stopped at the mismatch
}

TEST_CASE("the checker catches an RTL fault: an event one cycle late, and writes a waveform around it") {
  CosimOptions o;
  o.cqes = 5000;
  o.faults.delay_event_at = 77;
  o.vcd = "late_event.vcd";
  CosimReport r = run_cosim(o);
  REQUIRE(r.mismatches == 1);
  CHECK(r.first_mismatch.find("m_event: model raised 1 event(s), RTL 0") != std::string::npos);
  CHECK(r.vcd_written == "late_event.vcd");
  std::FILE* f = std::fopen("late_event.vcd", "r");
  REQUIRE(f != nullptr);
  std::fseek(f, 0, SEEK_END);
  CHECK(std::ftell(f) > 1000);
  std::fclose(f);
}

TEST_CASE("the checker compares hidden state: a moderation counter that reaches no output yet is caught") {
  CosimOptions o;
  o.cqes = 5000;
  o.faults.misread_pending_from = 12000;  // after the clearing sweep (8,192 cycles), with CQs busy
  CosimReport r = run_cosim(o);
  REQUIRE(r.mismatches == 1);
  CHECK(r.first_mismatch.find("context.mod_pending expected") != std::string::npos);
  CHECK(r.first_mismatch_cycle >= 12000);
  CHECK(r.first_mismatch_cycle < 12000 + 64 * 8);  // one CQ a cycle: found within a few sweeps
  CHECK(r.contexts_compared >= 12000 - 8192);
}
