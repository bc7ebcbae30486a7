// Scenario files: the schema, units, --set overrides, and errors that name file, line and key.
#include "testbench/test_support.h"

#include <fstream>

#include "firmware-shim/dim.h"
#include "tools/scenario.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}  // namespace vhca::test
using namespace vhca;

namespace {
// The message of the ScenarioError the text raises ("" if it loads).
std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse_scenario(text, "t.yaml", sets);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("scenario units: times, sizes, rates and bandwidths need their unit") {
  CHECK(parse_duration_ns("16us") == 16000);
  CHECK(parse_duration_ns("2 ms") == 2e6);
  CHECK(parse_duration_ns("500ns") == 500);
  CHECK(parse_size_bytes("4KiB") == 4096);
  CHECK(parse_size_bytes("64B") == 64);
  CHECK(parse_rate_per_s("1M/s") == 1e6);
  CHECK(parse_rate_per_s("250k/s") == 250e3);
  CHECK(parse_gbps("100Gbps") == 100);
  CHECK_THROWS_WITH(parse_duration_ns("16"), "'16' needs a unit (time: ns, us, ms, s)");
  CHECK_THROWS_WITH(parse_duration_ns("16 parsecs"), "'parsecs' is not a unit of time: ns, us, ms, s");
  CHECK_THROWS_WITH(parse_size_bytes("4KB"), "'KB' is not a unit of size: B, KiB, MiB");
  CHECK_THROWS_WITH(parse_size_bytes("1.5B"), "'1.5B' is not a whole number of bytes");
}

TEST_CASE("a scenario sets every part: link, host CPU, CQs and moderation, QPs, workload, duration, seed") {
  const TrafficOptions o = parse_scenario(R"(
name: t
seed: 7
duration: 3ms
warmup: 1ms
link: {rate: 200Gbps, latency: 1us, loss: 0.01}
host:
  vectors: 3
  poll: thread
  cpu: {irq_delivery: 2us, cqe_cost: 80ns}
cqs: {count: 5, size: 2048, moderation: {count: 8, period: 4us, mode: cqe}}
qps: {count: 9, depth: 32, mtu: 1KiB}
workload:
  mix: {send: 2, write: 1, read: 1}
  size: [{size: 64B, weight: 3}, {size: 4KiB}]
  arrival: {process: onoff, rate: 500k/s, on: 10us, off: 30us}
)",
                                          "t.yaml");
  CHECK(o.name == "t");
  CHECK(o.seed == 7);
  CHECK(o.duration_us == 3000);
  CHECK(o.warmup_us == 1000);
  CHECK(o.link.gbit_per_s == 200);
  CHECK(o.link.latency == sc_core::sc_time(1, sc_core::SC_US));
  CHECK(o.link.loss_rate == 0.01);
  CHECK(o.vectors == 3);
  CHECK(o.context == PollContext::thread);
  CHECK(o.cpu.irq_delivery == sc_core::sc_time(2, sc_core::SC_US));
  CHECK(o.cpu.cqe_cost == sc_core::sc_time(80, sc_core::SC_NS));
  CHECK(o.cqs == 5);
  CHECK(o.cq_size == 2048);
  CHECK(o.mod_count == 8);
  CHECK(o.mod_period_us == 4);
  CHECK(o.mode == PeriodMode::cqe);
  CHECK(o.qps == 9);
  CHECK(o.depth == 32);
  CHECK(o.path_mtu == 3);
  CHECK(o.write_fraction == 0.25);
  CHECK(o.read_fraction == 0.25);
  CHECK(o.sizes == std::vector<uint32_t>{64, 4096});
  CHECK(o.size_weights == std::vector<double>{3, 1});
  CHECK(o.arrival == Arrival::onoff);
  CHECK(o.rate_kmsg == 500);
  CHECK(o.on_us == 10);
  CHECK(o.off_us == 30);
}

TEST_CASE("scenario errors name the file, the line and the key, and say what was expected") {
  CHECK(error_of("name: x\ncqs:\n  moderatoin: {count: 1}\n") ==
        "t.yaml:3: key 'cqs.moderatoin': unknown key (expected one of: count, size, moderation)");
  CHECK(error_of("duration: 5\n") == "t.yaml:1: key 'duration': '5' needs a unit (time: ns, us, ms, s)");
  CHECK(error_of("cqs: {moderation: {period: 2.5us}}\n") ==
        "t.yaml:1: key 'cqs.moderation.period': must be whole microseconds (the CQ context counts us)");
  CHECK(error_of("cqs:\n  moderation:\n    count: 70000\n") ==
        "t.yaml:3: key 'cqs.moderation.count': '70000' is outside 0 .. 65535");
  CHECK(error_of("qps: {mtu: 3000B}\n") == "t.yaml:1: key 'qps.mtu': must be 256B, 512B, 1KiB, 2KiB or 4KiB");
  CHECK(error_of("workload: {arrival: {process: pingpong, rate: 1M/s}}\n") ==
        "t.yaml:1: key 'workload.arrival.rate': a ping-pong is closed-loop: its rate is what the round trips allow");
  CHECK(error_of("workload: {arrival: {process: lumpy}}\n") ==
        "t.yaml:1: key 'workload.arrival.process': 'lumpy' is not one of poisson, constant, onoff, pingpong");
  CHECK(error_of("duration: 1ms\nwarmup: 2ms\n") == "t.yaml:2: key 'warmup': must be shorter than the duration");
  CHECK(error_of("link: [1, 2]\n") == "t.yaml:1: key 'link': must be a map of keys");
  CHECK(error_of("name: [x\n").rfind("t.yaml:", 0) == 0);  // a YAML syntax error, with its line
}

TEST_CASE("overrides given with --set change a key before the checks, and their errors name the --set") {
  const TrafficOptions o =
      parse_scenario("cqs: {moderation: {count: 32}}\n", "t.yaml", {"cqs.moderation.count=4", "workload.size=1KiB"});
  CHECK(o.mod_count == 4);
  CHECK(o.sizes == std::vector<uint32_t>{1024});
  CHECK(error_of("", {"cqs.moderation.period=3"}) ==
        "--set cqs.moderation.period: '3' needs a unit (time: ns, us, ms, s)");
  CHECK(error_of("", {"cqs.colour=red"}) == "--set cqs.colour: unknown key (expected one of: count, size, moderation)");
  CHECK(error_of("", {"novalue"}) == "--set novalue: expected key=value");
}

TEST_CASE("every shipped scenario in traces/ loads") {
  for (const char* name : {"pingpong", "streaming", "many-qp-mixed", "storage-4k-reads"}) {
    INFO(name);
    const std::string path = std::string(VHCA_SOURCE_DIR) + "/traces/" + name + ".yaml";
    TrafficOptions o;
    CHECK_NOTHROW(o = load_scenario(path));
    CHECK(o.name == name);
  }
  CHECK_THROWS_WITH(load_scenario("/nonexistent.yaml"), "/nonexistent.yaml: cannot be read");
}

TEST_CASE("DIM walks its profile ladder: on while better, back when worse, home when quiet") {
  CqDim dim(0);
  double t = 0;
  // A window is 64 events; each call is one event with its completions, 1 us apart.
  auto window = [&](uint64_t completions_per_event) {
    bool changed = false;
    for (uint32_t i = 0; i < CqDim::kEventsPerDecision; ++i) {
      t += 1000;
      changed = dim.on_event(completions_per_event, t) || changed;
    }
    if (changed) dim.applied();
    return changed;
  };
  dim.on_event(0, t);  // opens the first window
  CHECK_FALSE(window(2));          // the first window has nothing to compare with
  CHECK(dim.profile_index() == 0);
  CHECK(window(4));                // twice the completions per ms: better, step right
  CHECK(dim.profile_index() == 1);
  CHECK(window(8));
  CHECK(dim.profile_index() == 2);
  CHECK(window(4));                // worse: turn around and step left
  CHECK(dim.profile_index() == 1);
  CHECK_FALSE(window(4));          // the same, with enough completions per event: stay
  CHECK(dim.profile_index() == 1);
  CHECK(dim.decisions() == 5);
  CHECK(dim.changes() == 3);
  // The same rate with fewer completions per event than half the profile index: back home.
  CqDim high(6);
  high.on_event(0, 0);
  t = 0;
  for (uint32_t i = 0; i < 64; ++i) high.on_event(2, t += 1000);
  for (uint32_t i = 0; i < 64; ++i) high.on_event(2, t += 1000);
  CHECK(high.profile_index() == 0);
  CHECK(dim_profile_near(16, 32) == 8);
  CHECK(dim_profile_near(3, 5) == 4);
  CHECK(dim_profile_near(100, 1) == 8);
}
