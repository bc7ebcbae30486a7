// Scenario files: the schema, units, --set overrides, and errors that name file, line and key.
#include "testbench/test_support.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "firmware-shim/dim.h"
#include "explorer/arrival_trace.h"
#include "explorer/scenario.h"
#include "explorer/vcd.h"

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
  CHECK(o.moderation.mod.count == 8);
  CHECK(o.moderation.mod.period_us == 4);
  CHECK(o.moderation.mod.mode == PeriodMode::cqe);
  CHECK(o.qps == 9);
  CHECK(o.depth == 32);
  CHECK(o.path_mtu == 3);
  CHECK(o.workload.write_fraction == 0.25);
  CHECK(o.workload.read_fraction == 0.25);
  CHECK(o.workload.sizes == std::vector<uint32_t>{64, 4096});
  CHECK(o.workload.size_weights == std::vector<double>{3, 1});
  CHECK(o.workload.arrival == Arrival::onoff);
  CHECK(o.workload.rate_kmsg == 500);
  CHECK(o.workload.on_us == 10);
  CHECK(o.workload.off_us == 30);
}

TEST_CASE("scenario errors name the file, the line and the key, and say what was expected") {
  CHECK(error_of("name: x\ncqs:\n  moderatoin: {count: 1}\n") ==
        "t.yaml:3: key 'cqs.moderatoin': unknown key (expected one of: count, size, moderation, overrides)");
  CHECK(error_of("duration: 5\n") == "t.yaml:1: key 'duration': '5' needs a unit (time: ns, us, ms, s)");
  CHECK(error_of("cqs: {moderation: {period: 2.5us}}\n") ==
        "t.yaml:1: key 'cqs.moderation.period': must be whole microseconds (the CQ context counts us)");
  CHECK(error_of("cqs:\n  moderation:\n    count: 70000\n") ==
        "t.yaml:3: key 'cqs.moderation.count': '70000' is outside 0 .. 65535");
  CHECK(error_of("qps: {mtu: 3000B}\n") == "t.yaml:1: key 'qps.mtu': must be 256B, 512B, 1KiB, 2KiB or 4KiB");
  CHECK(error_of("workload: {arrival: {process: pingpong, rate: 1M/s}}\n") ==
        "t.yaml:1: key 'workload.arrival.rate': a ping-pong or a trace sets its own pace: no rate");
  CHECK(error_of("workload: {arrival: {process: lumpy}}\n") ==
        "t.yaml:1: key 'workload.arrival.process': 'lumpy' is not one of poisson, constant, onoff, pingpong, trace");
  CHECK(error_of("duration: 1ms\nwarmup: 2ms\n") == "t.yaml:2: key 'warmup': must be shorter than the duration");
  CHECK(error_of("link: [1, 2]\n") == "t.yaml:1: key 'link': must be a map of keys");
  CHECK(error_of("name: [x\n").rfind("t.yaml:", 0) == 0);  // a YAML syntax error, with its line
}

TEST_CASE("overrides given with --set change a key before the checks, and their errors name the --set") {
  const TrafficOptions o =
      parse_scenario("cqs: {moderation: {count: 32}}\n", "t.yaml", {"cqs.moderation.count=4", "workload.size=1KiB"});
  CHECK(o.moderation.mod.count == 4);
  CHECK(o.workload.sizes == std::vector<uint32_t>{1024});
  CHECK(error_of("", {"cqs.moderation.period=3"}) ==
        "--set cqs.moderation.period: '3' needs a unit (time: ns, us, ms, s)");
  CHECK(error_of("", {"cqs.colour=red"}) == "--set cqs.colour: unknown key (expected one of: count, size, moderation, overrides)");
  CHECK(error_of("", {"novalue"}) == "--set novalue: expected key=value");
}

TEST_CASE("every shipped scenario in traces/ loads") {
  for (const char* name : {"pingpong", "streaming", "many-qp-mixed", "storage-4k-reads", "storage-replay", "two-tenants",
                           "cq-engine"}) {
    INFO(name);
    const std::string path = std::string(VHCA_SOURCE_DIR) + "/traces/" + name + ".yaml";
    TrafficOptions o;
    CHECK_NOTHROW(o = load_scenario(path));
    CHECK(o.name == name);
  }
  CHECK_THROWS_WITH(load_scenario("/nonexistent.yaml"), "/nonexistent.yaml: cannot be read");
}

TEST_CASE("malformed input never escapes as a raw exception: a list item under a missing key, a scalar file, a complex key, a 20-digit index") {
  CHECK(error_of("name: x\n", {"workload.groups[0].qps=2"}) ==
        "--set workload.groups[0].qps=2: 'groups' has no item 0 (it is not a list)");
  CHECK(error_of("just a scalar\n", {"name=y"}) == "t.yaml:1: a scenario is a map of keys, not a single value");
  CHECK(error_of("- a\n- b\n") == "t.yaml:1: a scenario is a map of keys, not a list");
  CHECK_THAT(error_of("? [a, b]\n: 1\n"), Catch::StartsWith("t.yaml:1: bad conversion (keys are plain words"));
  CHECK(error_of("name: x\n", {"cqs.overrides[99999999999999999999].cq=1"}) ==
        "--set cqs.overrides[99999999999999999999].cq=1: 'overrides' has no item 99999999999999999999 (it is not a list)");
}

TEST_CASE("arrival.kind: cqe injects completions instead of posting work requests, and a ping-pong refuses it") {
  TrafficOptions o = load_scenario(std::string(VHCA_SOURCE_DIR) + "/traces/cq-engine.yaml");
  CHECK(o.workload.inject_cqes);
  o = load_scenario(std::string(VHCA_SOURCE_DIR) + "/traces/cq-engine.yaml", {"workload.arrival.kind=wqe"});
  CHECK_FALSE(o.workload.inject_cqes);
  CHECK(error_of("", {"workload.arrival.kind=packet"}) ==
        "--set workload.arrival.kind: 'packet' is not one of wqe (post a work request), cqe (inject a completion)");
  CHECK_THROWS_WITH(load_scenario(std::string(VHCA_SOURCE_DIR) + "/traces/pingpong.yaml", {"workload.arrival.kind=cqe"}),
                    Catch::Contains("a ping-pong exchanges SENDs: its arrivals cannot be injected CQEs"));
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

TEST_CASE("QP groups: each has its QPs, CQs, mix, sizes and arrivals, and inherits the workload's defaults") {
  const TrafficOptions o = parse_scenario(R"(
cqs: {count: 4}
workload:
  size: 1KiB
  arrival: {process: poisson, rate: 100k/s}
  groups:
    - {name: lat, qps: 2, cqs: [0], mix: {send: 1}, arrival: {process: pingpong, outstanding: 2}}
    - {name: bulk, qps: 6, cqs: [1, 3], mix: {write: 1}, size: 64KiB}
)",
                                          "t.yaml");
  REQUIRE(o.groups.size() == 2);
  CHECK(o.qps == 8);
  CHECK(o.groups[0].name == "lat");
  CHECK(o.groups[0].cqs == std::vector<int>{0});
  CHECK(o.groups[0].workload.arrival == Arrival::pingpong);
  CHECK(o.groups[0].workload.outstanding == 2);
  CHECK(o.groups[0].workload.sizes == std::vector<uint32_t>{1024});  // inherited
  CHECK(o.groups[1].workload.write_fraction == 1);
  CHECK(o.groups[1].workload.sizes == std::vector<uint32_t>{65536});
  CHECK(o.groups[1].workload.arrival == Arrival::poisson);  // inherited
  CHECK(o.groups[1].workload.rate_kmsg == 100);
  CHECK(o.max_size() == 65536);
  // Without groups there is one group of every QP.
  const std::vector<QpGroup> one = parse_scenario("qps: {count: 5}\n", "t.yaml").effective_groups();
  REQUIRE(one.size() == 1);
  CHECK(one[0].qps == 5);
  CHECK(one[0].cqs.empty());
}

TEST_CASE("QP group errors name the group's key") {
  const std::string g = "cqs: {count: 2}\nworkload:\n  groups:\n";
  CHECK(error_of(g + "    - {qps: 2, cqs: [2]}\n") == "t.yaml:4: key 'workload.groups[0].cqs[0]': '2' is not a CQ index 0 .. 1");
  CHECK(error_of(g + "    - {cqs: [0]}\n") == "t.yaml:4: key 'workload.groups[0].qps': a group needs its number of QPs");
  CHECK(error_of(g + "    - {name: a, qps: 1}\n    - {name: a, qps: 1}\n") ==
        "t.yaml:5: key 'workload.groups[1].name': 'a' names two groups");
  CHECK(error_of(g + "    - {name: 'a b', qps: 1}\n") ==
        "t.yaml:4: key 'workload.groups[0].name': 'a b' must be letters, digits, '_' or '-', starting with a letter");
  CHECK(error_of("qps: {count: 3}\n" + g + "    - {qps: 2}\n") ==
        "t.yaml:5: key 'workload.groups': the groups have 2 QPs but qps.count is 3");
  CHECK(error_of(g + "    - {qps: 2, colour: red}\n") ==
        "t.yaml:4: key 'workload.groups[0].colour': unknown key (expected one of: name, qps, cqs, mix, size, arrival)");
  CHECK(error_of(g + "    - {qps: 1, mix: {write: 1}, arrival: {process: pingpong}}\n") ==
        "t.yaml:4: key 'workload.groups[0].mix': a ping-pong exchanges SENDs only: write and read must be 0");
}

TEST_CASE("per-CQ moderation overrides inherit the unset fields from cqs.moderation") {
  const TrafficOptions o = parse_scenario(R"(
cqs:
  count: 3
  moderation: {count: 32, period: 16us, mode: cqe, policy: dim}
  overrides:
    - {cq: 0, moderation: {count: 1, period: 0us, policy: static}}
    - {cq: 2, host: 1, moderation: {period: 4us}}
)",
                                          "t.yaml");
  REQUIRE(o.cq_overrides.size() == 2);
  const ModerationChoice c0 = o.moderation_of(1, 0);
  CHECK(c0.mod.count == 1);
  CHECK(c0.mod.period_us == 0);
  CHECK(c0.mod.mode == PeriodMode::cqe);  // inherited
  CHECK_FALSE(c0.adaptive);
  CHECK(o.moderation_of(0, 2).mod.period_us == 16);  // host 1 only
  CHECK(o.moderation_of(1, 2).mod.period_us == 4);
  CHECK(o.moderation_of(1, 2).mod.count == 32);
  CHECK(o.moderation_of(1, 2).adaptive);
  CHECK(o.moderation_of(0, 1).mod.count == 32);  // not overridden
  // A vector override leaves the moderation alone; a host's own vector beats the both-hosts one.
  const TrafficOptions v = parse_scenario(R"(
host: {vectors: 3}
cqs:
  count: 2
  moderation: {count: 8}
  overrides:
    - {cq: 1, moderation: {count: 2}}
    - {cq: 1, host: 0, vector: 0}
)",
                                          "t.yaml");
  CHECK(v.vector_of(0, 1) == 0);
  CHECK(v.vector_of(1, 1) == 1);  // the default: cq mod vectors
  CHECK(v.vector_of(0, 0) == 0);
  CHECK(v.moderation_of(0, 1).mod.count == 2);  // from the both-hosts override
  CHECK(v.moderation_of(1, 1).mod.count == 2);
  const std::string c = "cqs:\n  count: 2\n  overrides:\n";
  CHECK(error_of(c + "    - {cq: 2, moderation: {count: 1}}\n") == "t.yaml:4: key 'cqs.overrides[0].cq': '2' is outside 0 .. 1");
  CHECK(error_of(c + "    - {cq: 0}\n") == "t.yaml:4: key 'cqs.overrides[0]': an override sets a moderation, a vector or both");
  CHECK(error_of(c + "    - {cq: 0, vector: 2}\n") == "t.yaml:4: key 'cqs.overrides[0].vector': '2' is outside 0 .. 1");
  CHECK(error_of(c + "    - {cq: 0, moderation: {count: 1}}\n    - {cq: 0, moderation: {count: 2}}\n") ==
        "t.yaml:5: key 'cqs.overrides[1]': CQ 0 is overridden twice");
  CHECK(error_of(c + "    - {cq: 0, host: 2, moderation: {count: 1}}\n") ==
        "t.yaml:4: key 'cqs.overrides[0].host': '2' is outside 0 .. 1");
  CHECK(error_of(c + "    - {cq: 0, moderation: {period: 1.5us}}\n") ==
        "t.yaml:4: key 'cqs.overrides[0].moderation.period': must be whole microseconds (the CQ context counts us)");
}

TEST_CASE("recorded traces: exact picosecond times, and errors that name the line and the column") {
  const std::vector<TracedArrival> t =
      parse_arrival_trace("# a comment\ntime_us,qp,opcode,size\n0.000001,0,send,64\n12.5,3,read,4096\n12.5,1,write,1\n",
                          "r.csv");
  REQUIRE(t.size() == 3);
  CHECK(t[0].at_ps == 1);
  CHECK(t[1].at_ps == 12500000);
  CHECK(t[1].qp == 3);
  CHECK(t[1].opcode == sqwqe::kRdmaRead);
  CHECK(t[2].opcode == sqwqe::kRdmaWrite);
  CHECK(arrival_trace_text(t) == "time_us,qp,opcode,size\n0.000001,0,send,64\n12.500000,3,read,4096\n12.500000,1,write,1\n");
  auto error = [](const std::string& text) {
    try {
      parse_arrival_trace(text, "r.csv");
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string h = "time_us,qp,opcode,size\n";
  CHECK(error("t,q,o,s\n") == "r.csv:1: the first line must be the header 'time_us,qp,opcode,size'");
  CHECK(error(h + "1.0,0,fetch,8\n") == "r.csv:2: column 'opcode': 'fetch' is not send, write or read");
  CHECK(error(h + "2.0,0,send,8\n1.0,0,send,8\n") == "r.csv:3: column 'time_us': '1.0' is earlier than the line before");
  CHECK(error(h + "1.0000001,0,send,8\n") == "r.csv:2: column 'time_us': '1.0000001' is not microseconds with at most 6 decimals");
  CHECK(error(h + "1.0,0,send,0\n") == "r.csv:2: column 'size': '0' is not a size in bytes, 1 .. 1048576");
  CHECK(error(h + "1.0,-1,send,8\n") == "r.csv:2: column 'qp': '-1' is not a QP index");
  CHECK(error(h + "1.0,0,send\n") == "r.csv:2: expected 4 columns (time_us,qp,opcode,size), found 3");
  CHECK(error("") == "r.csv: empty (expected the header 'time_us,qp,opcode,size')");
}

TEST_CASE("a trace arrival process reads its file relative to the scenario and checks its QPs") {
  const std::string dir = "trace_test_dir";
  REQUIRE(std::system(("mkdir -p " + dir).c_str()) == 0);
  std::ofstream(dir + "/a.csv") << "time_us,qp,opcode,size\n1.0,0,send,64\n2.0,3,write,128\n";
  const std::string yaml = "qps: {count: 4}\nworkload: {arrival: {process: trace, file: a.csv}}\n";
  std::ofstream(dir + "/s.yaml") << yaml;
  const TrafficOptions o = load_scenario(dir + "/s.yaml");
  REQUIRE(o.workload.trace.size() == 2);
  CHECK(o.workload.trace[1].at_ps == 2000000);
  CHECK(o.max_size() == 128);
  std::ofstream(dir + "/small.yaml") << "qps: {count: 3}\nworkload: {arrival: {process: trace, file: a.csv}}\n";
  CHECK_THROWS_WITH(load_scenario(dir + "/small.yaml"),
                    dir + "/small.yaml:2: key 'workload.arrival.file': the trace names QP 3 but there are 3 QPs");
  std::ofstream(dir + "/missing.yaml") << "workload: {arrival: {process: trace, file: nope.csv}}\n";
  CHECK_THROWS_WITH(load_scenario(dir + "/missing.yaml"),
                    dir + "/missing.yaml:1: key 'workload.arrival.file': " + dir + "/nope.csv: cannot be read");
  CHECK(error_of("workload: {arrival: {process: trace}}\n") ==
        "t.yaml:1: key 'workload.arrival.file': a trace needs the file of recorded arrivals");
  CHECK(error_of("workload: {arrival: {process: poisson, file: a.csv}}\n") ==
        "t.yaml:1: key 'workload.arrival.file': only a trace is read from a file");
}

TEST_CASE("VCD signal choice: glob patterns, and a pattern that matches nothing is refused") {
  CHECK(glob_match("host0.cq*.pi", "host0.cq12.pi"));
  CHECK_FALSE(glob_match("host0.cq*.pi", "host0.cq12.ci"));
  CHECK(glob_match("*", "host1.cpu.irq0"));
  CHECK(glob_match("host?.msix1.*", "host1.msix1.messages"));
  TrafficOptions o;
  o.cqs = 2;
  o.vectors = 1;
  int n = 0;
  for_each_vcd_signal(o, [&](const std::string&, int) { ++n; });
  CHECK(n == 2 * (2 * 10 + 1 * 2 + 2 * 2));  // per host: 10 per CQ, 2 per EQ, 2 per MSI-X vector
  o.vcd_signals = {"host0.cq1.*", "host1.eq0.pi"};
  CHECK(check_vcd_signals(o).empty());
  o.vcd_signals = {"host0.cq2.*"};
  CHECK(check_vcd_signals(o).rfind("--signals: 'host0.cq2.*' matches no signal", 0) == 0);
}

TEST_CASE("a --set reaches into lists: a group rate or a CQ override count, for sweeps") {
  const std::string yaml = R"(
cqs:
  count: 2
  overrides:
    - {cq: 1, moderation: {count: 8}}
workload:
  groups:
    - {name: a, qps: 1}
    - {name: b, qps: 2, arrival: {process: poisson, rate: 10k/s}}
)";
  const TrafficOptions o =
      parse_scenario(yaml, "t.yaml", {"workload.groups[1].arrival.rate=20k/s", "cqs.overrides[0].moderation.count=2"});
  CHECK(o.groups[1].workload.rate_kmsg == 20);
  CHECK(o.moderation_of(0, 1).mod.count == 2);
  CHECK(error_of(yaml, {"workload.groups[2].qps=1"}) == "--set workload.groups[2].qps=1: 'groups' has no item 2 (it has 2)");
  CHECK(error_of(yaml, {"cqs[0].count=1"}) == "--set cqs[0].count=1: 'cqs' has no item 0 (it is not a list)");
  CHECK(error_of(yaml, {"workload.groups[0].qps=0"}) == "--set workload.groups[0].qps: '0' is outside 1 .. 1000");
}

TEST_CASE("the HCA and PCIe keys set the device's clock, transport timing and host link") {
  const TrafficOptions o = parse_scenario(
      "hca: {clock: 1GHz, doorbell_fifo: 4, prefetch: 16, fetch_burst: 8, ack_coalesce: 2, ack_delay: 32, max_inflight: 64}\n"
      "pcie: {rate: 128Gbps, latency: 300ns, read_access: 100ns}\n",
      "t.yaml");
  CHECK(o.hca_clock_mhz == 1000);
  CHECK(o.transport.doorbell_fifo_depth == 4);
  CHECK(o.transport.prefetch_depth == 16);
  CHECK(o.transport.fetch_burst == 8);
  CHECK(o.transport.ack_coalesce == 2);
  CHECK(o.transport.ack_delay_cycles == 32);
  CHECK(o.transport.max_inflight_psns == 64);
  CHECK(o.pcie.gbytes_per_s == 16);
  CHECK(o.pcie.latency == sc_core::sc_time(300, sc_core::SC_NS));
  CHECK(o.pcie.read_access == sc_core::sc_time(100, sc_core::SC_NS));
  CHECK(error_of("hca: {clock: 500}\n") == "t.yaml:1: key 'hca.clock': '500' needs a unit (frequency: MHz, GHz)");
  CHECK(error_of("hca: {prefetch: 2, fetch_burst: 4}\n") == "t.yaml:1: key 'hca.fetch_burst': must not exceed hca.prefetch");
  CHECK(error_of("pcie: {bandwidth: 1Gbps}\n") ==
        "t.yaml:1: key 'pcie.bandwidth': unknown key (expected one of: rate, latency, read_access)");
}

TEST_CASE("a group inherits the arrival process with its parameters unless it names another") {
  const TrafficOptions o = parse_scenario(R"(
workload:
  arrival: {process: onoff, rate: 1M/s, on: 10us, off: 20us}
  groups:
    - {name: a, qps: 1, arrival: {rate: 200k/s}}
    - {name: b, qps: 1, arrival: {process: constant}}
)",
                                          "t.yaml");
  CHECK(o.groups[0].workload.arrival == Arrival::onoff);
  CHECK(o.groups[0].workload.rate_kmsg == 200);
  CHECK(o.groups[0].workload.on_us == 10);
  CHECK(o.groups[1].workload.arrival == Arrival::constant);
  CHECK(o.groups[1].workload.rate_kmsg == 1000);
  // A ping-pong group under a mix with writes says where the writes come from.
  CHECK(error_of("workload:\n  mix: {write: 1}\n  groups:\n    - {qps: 1, arrival: {process: pingpong}}\n") ==
        "t.yaml:4: key 'workload.groups[0].arrival.process': a ping-pong exchanges SENDs only, but the inherited mix "
        "has writes or reads: give a mix of {send: 1}");
  // A default name that collides is reported, not a crash on the missing key.
  CHECK(error_of("workload:\n  groups:\n    - {name: g1, qps: 1}\n    - {qps: 1}\n") ==
        "t.yaml:4: key 'workload.groups[1].name': 'g1' names two groups");
  // One named group is still reported by name.
  const std::vector<std::string> cols =
      result_columns(parse_scenario("workload: {groups: [{name: solo, qps: 2}]}\n", "t.yaml"));
  CHECK(std::find(cols.begin(), cols.end(), "solo_SEND_hdl_p99_us") != cols.end());
  CHECK(std::find(cols.begin(), cols.end(), "host1_cq3_hdl_p99_us") != cols.end());
}

TEST_CASE("a --set may end on a list item, and a shallow prefetch alone shrinks the fetch burst") {
  const TrafficOptions o = parse_scenario("cqs: {count: 3}\nworkload: {groups: [{qps: 2, cqs: [0, 1]}]}\n", "t.yaml",
                                          {"workload.groups[0].cqs[1]=2"});
  CHECK(o.groups[0].cqs == std::vector<int>{0, 2});
  CHECK(error_of("cqs: {count: 3}\nworkload: {groups: [{qps: 2, cqs: [0, 1]}]}\n", {"workload.groups[0].cqs[1]=5"}) ==
        "--set workload.groups[0].cqs[1]: '5' is not a CQ index 0 .. 2");
  CHECK(error_of("workload: {groups: [{qps: 2, cqs: [0]}]}\n", {"workload.groups[0].cqs[1]=0"}) ==
        "--set workload.groups[0].cqs[1]=0: 'cqs' has no item 1 (it has 1)");
  const TrafficOptions p = parse_scenario("hca: {prefetch: 2}\n", "t.yaml");
  CHECK(p.transport.prefetch_depth == 2);
  CHECK(p.transport.fetch_burst == 2);
}

TEST_CASE("the VCD writer keeps changes only, in time order, and shows a pulse that starts and ends at once") {
  VcdWriter off(false, {});
  CHECK(off.declare("a.b", 1) == -1);
  VcdWriter w(true, {"top.*"});
  const int pulse = w.declare("top.irq", 1), count = w.declare("top.cq.pi", 24);
  CHECK(w.declare("other.x", 1) == -1);
  const sc_core::sc_time ns(1, sc_core::SC_NS);
  w.set(count, 5, 3 * ns);
  w.set(count, 5, 4 * ns);  // unchanged: dropped
  w.set(pulse, 1, 2 * ns);  // reported late (a handler's start is known at its end)
  w.set(pulse, 0, 2 * ns);  // ... and it took no time
  w.set(pulse, 1, 6 * ns);
  w.set(pulse, 0, 8 * ns);
  w.set(pulse, 1, 8 * ns);  // back to back: the next one starts as this one ends
  w.set(pulse, 0, 9 * ns);
  REQUIRE(w.write("writer.vcd"));
  std::ifstream in("writer.vcd");
  std::stringstream text;
  text << in.rdbuf();
  const std::string body = text.str().substr(text.str().find("$enddefinitions"));
  CHECK(body ==
        "$enddefinitions $end\n#0\n$dumpvars\n0!\nb0 \"\n$end\n"
        "#2000\n1!\n#2001\n0!\n#3000\nb101 \"\n#6000\n1!\n#8000\n0!\n#8001\n1!\n#9000\n0!\n");
  CHECK(text.str().find("$scope module top $end\n$scope module cq $end\n$var wire 24 \" pi $end\n$upscope $end\n"
                        "$var wire 1 ! irq $end\n$upscope $end\n") != std::string::npos);
}

TEST_CASE("hca.cq_writer chooses the C++ model or the Verilated RTL of the pipelined writer, the RTL needing the 500 MHz clock") {
  CHECK_FALSE(parse_scenario("", "t.yaml").rtl);
  // model and pipelined (its former name) are the C++ model; rtl and rtl-pipelined its RTL.
  for (const char* name : {"model", "pipelined"})
    CHECK_FALSE(parse_scenario(std::string("hca: {cq_writer: ") + name + "}\n", "t.yaml").rtl);
  for (const char* name : {"rtl", "rtl-pipelined"})
    CHECK(parse_scenario(std::string("hca: {cq_writer: ") + name + "}\n", "t.yaml").rtl);
  CHECK(error_of("hca: {cq_writer: rtl-mirror}\n") ==
        "t.yaml:1: key 'hca.cq_writer': 'rtl-mirror' is retired (session 11): the HCA's writer is the pipelined one, "
        "'model', and its RTL 'rtl'");
  CHECK(error_of("hca: {cq_writer: vhdl}\n") == "t.yaml:1: key 'hca.cq_writer': 'vhdl' is not model or rtl");
  CHECK(error_of("hca: {cq_writer: rtl-pipelined, clock: 1GHz}\n") ==
        "t.yaml:1: key 'hca.cq_writer': the Verilated RTL is built for 500 cycles per us: with rtl, hca.clock must be "
        "500MHz");
  CHECK(error_of("hca: {cq_writer: rtl, clock: 1GHz}\n") ==
        "t.yaml:1: key 'hca.cq_writer': the Verilated RTL is built for 500 cycles per us: with rtl, hca.clock must be "
        "500MHz");
}

TEST_CASE("hca.profile sets the adapter's clock, PCIe, link rate and small-message mechanisms, and every other key overrides it") {
  const TrafficOptions base = parse_scenario("name: x\n", "t.yaml");
  CHECK(base.profile == "baseline");
  CHECK_FALSE(base.blueflame);
  CHECK(base.max_inline == 0);
  CHECK_FALSE(base.transport.rq_prefetch);
  const TrafficOptions cx5 = parse_scenario("hca: {profile: cx5}\n", "t.yaml");
  CHECK(cx5.profile == "cx5");
  CHECK(cx5.pcie.gbytes_per_s == 15.75);  // Gen3 x16
  CHECK(cx5.link.gbit_per_s == 100);      // EDR
  CHECK(cx5.blueflame);
  CHECK(cx5.max_inline == 64);
  CHECK(cx5.transport.rq_prefetch);
  const TrafficOptions cx6 = parse_scenario("hca: {profile: cx6}\n", "t.yaml");
  CHECK(cx6.pcie.gbytes_per_s == 31.5);  // Gen4 x16
  CHECK(cx6.link.gbit_per_s == 200);     // HDR
  // Keys before the profile in the file, and --set, still win over it.
  const TrafficOptions mixed = parse_scenario("link: {rate: 56Gbps}\nqps: {inline: 0B}\nhca: {profile: cx5, rq_prefetch: off}\n",
                                              "t.yaml", {"pcie.rate=64Gbps"});
  CHECK(mixed.link.gbit_per_s == 56);
  CHECK(mixed.max_inline == 0);
  CHECK_FALSE(mixed.transport.rq_prefetch);
  CHECK(mixed.pcie.gbytes_per_s == 8);
  CHECK(mixed.blueflame);
  CHECK(base.cores == 0);  // parallel contexts, as before cores
  CHECK(cx5.cores == -1);  // auto: one per completion vector + the application's
  CHECK(cx5.host_cores() == cx5.vectors + 1);
  CHECK(cx5.cpu.handler_entry == sc_core::sc_time(1, sc_core::SC_US));
  CHECK(cx5.command_latency == sc_core::sc_time(20, sc_core::SC_US));
  CHECK(parse_scenario("host: {cores: 3}\nhca: {profile: cx5, command_latency: 5us}\n", "t.yaml").host_cores() == 3);
  CHECK(parse_scenario("hca: {profile: cx5, command_latency: 5us}\n", "t.yaml").command_latency ==
        sc_core::sc_time(5, sc_core::SC_US));
  CHECK(parse_scenario("hca: {profile: cx6}\nhost: {cores: parallel}\n", "t.yaml").host_cores() == 0);
  CHECK(error_of("host: {cores: many}\n") ==
        "t.yaml:1: key 'host.cores': 'many' is not parallel, auto or a number of cores 1 .. 64");
  CHECK(error_of("host: {cores: 65}\n") == "t.yaml:1: key 'host.cores': '65' is outside 1 .. 64");
  CHECK(error_of("hca: {profile: cx7}\n") == "t.yaml:1: key 'hca.profile': 'cx7' is not one of baseline, cx5, cx6");
  CHECK(error_of("qps: {inline: 65B}\n") == "t.yaml:1: key 'qps.inline': '65B' exceeds the 64 bytes a WQE holds");
}
