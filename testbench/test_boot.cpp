#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

TEST_CASE("the driver boots the HCA: reset, init segment, QUERY_CAP, INIT, EQs, MSI-X") {
  sys().run([] {
    boot();
    CHECK(sys().driver.caps().log_max_cq == 16);
    CHECK(sys().driver.caps().log_max_cq_sz == 22);
    CHECK(sys().driver.caps().num_msix == kNumMsixVectors);
    CHECK((sys().driver.read_register(reg::health) & kHealthInitialized) != 0);
    CHECK(sys().hca.eq.exists(sys().driver.async_eqn()));
    CHECK(sys().hca.eq.context(sys().driver.eqn_for_vector(0)).armed);
    CommandResult r = sys().driver.teardown();
    CHECK(r.ok());
    CHECK((sys().driver.read_register(reg::health) & kHealthInitialized) == 0);
  });
}
