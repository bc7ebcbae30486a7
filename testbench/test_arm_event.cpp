// S26's comparison option: with `arm_event: at-arm` (vhca before S26) an arm that finds CQEs owed
// raises the event on its own cycle, whatever the count and the period say. The same sequences as
// the first [S26] case of test_moderation.cpp, where the event waits for the period.
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) { cfg.hca.cq.arm_event = ArmEvent::at_once; }
}
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S26] the old rule (arm_event at-arm): an arm that finds CQEs owed fires on its cycle, before the period") {
  sys().run([] {
    EventLog ev;
    const OwedArm o = arm_with_two_owed(ev);
    wait_us(2);
    REQUIRE(ev.count() == 2);
    CHECK(ev.eqe_cycles[1] == o.m + 110);  // at the arm (acted on m+108): 2 owed, below the count, long before the period ends
    CHECK(ev.eqe_cycles[1] < period_end_action(o.k1 + kCompletionActs, 10));
    CHECK(sys().hca.cq.stats().events_at_arm == 1);
    CHECK(sys().hca.cq.stats().arms_owed == 0);
  });
}
