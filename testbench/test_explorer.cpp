// The moderation explorer end to end: per-CQ moderation overrides and QP groups reach the device
// and shape what each CQ does; the VCD agrees with the device's own counters, cycle for cycle.
// Each case runs one two-host traffic scenario (explorer/traffic.h), which elaborates its own
// System: ctest runs every case in its own process, and this file has its own sc_main.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <systemc>

#include "explorer/scenario.h"
#include "explorer/traffic.h"

using namespace vhca;

int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  return Catch::Session().run(argc, argv);
}

namespace {

const CqStats& cq_stats(const TrafficResult& r, int host, int cq) {
  for (const CqStats& c : r.cqs)
    if (c.host == host && c.cq == cq) return c;
  FAIL("no statistics for host " << host << " CQ " << cq);
  return r.cqs.front();
}

// A VCD as the test reads it back: each signal's changes (time in ps, value), by dotted name.
struct Waves {
  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> changes;
  bool times_increase = true;
  std::string timescale;
  uint64_t final_value(const std::string& name) const {
    auto it = changes.find(name);
    return it == changes.end() || it->second.empty() ? 0 : it->second.back().second;
  }
  int rising_edges(const std::string& name) const {
    int n = 0;
    uint64_t last = 0;
    auto it = changes.find(name);
    if (it == changes.end()) return 0;
    for (auto [t, v] : it->second) n += v && !last, last = v;
    return n;
  }
};

Waves read_vcd(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  Waves w;
  std::map<std::string, std::string> name_of;  // identifier code -> dotted name
  std::vector<std::string> scope;
  uint64_t now = 0;
  bool first_time = true;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    std::string word;
    s >> word;
    if (word == "$timescale") {
      std::string a, b;
      s >> a >> b;
      w.timescale = a + " " + b;
    } else if (word == "$scope") {
      std::string kind, name;
      s >> kind >> name;
      scope.push_back(name);
    } else if (word == "$upscope") {
      scope.pop_back();
    } else if (word == "$var") {
      std::string kind, width, code, leaf;
      s >> kind >> width >> code >> leaf;
      std::string full;
      for (const std::string& p : scope) full += p + ".";
      name_of[code] = full + leaf;
      w.changes[full + leaf];
    } else if (!word.empty() && word[0] == '#') {
      const uint64_t t = std::stoull(word.substr(1));
      if (!first_time && t <= now) w.times_increase = false;
      first_time = false;
      now = t;
    } else if (!word.empty() && word[0] == 'b') {
      std::string code;
      s >> code;
      w.changes[name_of.at(code)].push_back({now, std::stoull(word.substr(1), nullptr, 2)});
    } else if (!word.empty() && (word[0] == '0' || word[0] == '1')) {
      w.changes[name_of.at(word.substr(1))].push_back({now, uint64_t(word[0] - '0')});
    }
  }
  return w;
}

}  // namespace

TEST_CASE("per-CQ moderation and QP groups reach the device and shape what each CQ does") {
  const TrafficOptions o = parse_scenario(R"(
duration: 400us
warmup: 50us
cqs:
  count: 2
  moderation: {count: 32, period: 32us, mode: eqe}
  overrides:
    - {cq: 0, moderation: {count: 1, period: 0us}}
    - {cq: 1, host: 1, vector: 0}
qps: {depth: 32}
workload:
  groups:
    - {name: lat, qps: 2, cqs: [0], mix: {send: 1}, size: 64B, arrival: {process: pingpong}}
    - {name: bulk, qps: 6, cqs: [1], mix: {send: 1, write: 1}, size: 4KiB, arrival: {process: poisson, rate: 400k/s}}
)",
                                          "groups.yaml");
  const TrafficResult r = run_traffic(o);
  REQUIRE(r.ok);
  for (int h = 0; h < 2; ++h) {
    INFO("host " << h);
    // The moderation the device holds, read back from its CQ contexts.
    CHECK(cq_stats(r, h, 0).mod_count == 1);
    CHECK(cq_stats(r, h, 0).mod_period_us == 0);
    CHECK(cq_stats(r, h, 1).mod_count == 32);
    CHECK(cq_stats(r, h, 1).mod_period_us == 32);
    CHECK(cq_stats(r, h, 0).vector == 0);
  }
  // The vector the driver created the CQ on: the default (1 of 2) on host 0, the override on host 1.
  CHECK(cq_stats(r, 0, 1).vector == 1);
  CHECK(cq_stats(r, 1, 1).vector == 0);
  const CqStats &fast = cq_stats(r, 0, 0), &slow = cq_stats(r, 0, 1);
  REQUIRE(fast.events > 0);
  REQUIRE(slow.events > 0);
  // A ping's SEND and its pong's RECV complete close together on CQ 0, so even count 1 gathers
  // about two CQEs per event there; CQ 1 gathers many more.
  CHECK(double(fast.cqes) / double(fast.events) < 3.0);
  CHECK(double(slow.cqes) / double(slow.events) > 8.0);
  // Each group's completions are measured apart; the unmoderated CQ's handlers run sooner.
  REQUIRE(r.latency.count("lat/SEND"));
  REQUIRE(r.latency.count("bulk/SEND"));
  REQUIRE(r.latency.count("lat/PINGPONG"));
  CHECK(r.latency.at("lat/SEND").samples + r.latency.at("bulk/SEND").samples == r.latency.at("SEND").samples);
  CHECK(r.latency.at("lat/SEND").hdl_p50 * 3 < r.latency.at("bulk/SEND").hdl_p50);
  CHECK(fast.latency.hdl_p50 * 3 < slow.latency.hdl_p50);
  CHECK(r.latency.count("bulk/PINGPONG") == 0);
}

TEST_CASE("the VCD shows the chosen signals on clock edges and agrees with the device counters") {
  TrafficOptions o = parse_scenario(R"(
duration: 300us
cqs: {count: 2, moderation: {count: 4, period: 8us, mode: eqe}}
qps: {count: 4, depth: 32}
host: {vectors: 2}
workload: {mix: {send: 1}, size: 256B, arrival: {process: poisson, rate: 300k/s}}
)",
                                    "vcd.yaml");
  o.vcd_path = "explorer.vcd";
  o.vcd_signals = {"host0.*", "host1.cq1.pi"};
  const TrafficResult r = run_traffic(o);
  REQUIRE(r.ok);
  const Waves w = read_vcd(o.vcd_path);
  CHECK(w.timescale == "1 ps");
  CHECK(w.times_increase);
  CHECK(w.changes.count("host0.cq0.mod_pending") == 1);
  CHECK(w.changes.count("host1.cq1.pi") == 1);
  CHECK(w.changes.count("host1.cq0.pi") == 0);  // not chosen
  CHECK(w.changes.count("host1.cq1.ci") == 0);
  uint64_t interrupts = 0;
  for (int v = 1; v <= o.vectors; ++v) interrupts += uint64_t(w.rising_edges("host0.cpu.irq" + std::to_string(v)));
  CHECK(interrupts == r.host[0].interrupts);  // no warm-up: the window is the whole run
  uint64_t messages = 0;
  for (int v = 1; v <= o.vectors; ++v) messages += w.final_value("host0.msix" + std::to_string(v) + ".messages");
  CHECK(messages == r.host[0].interrupts);
  for (int c = 0; c < 2; ++c) {
    const std::string cq = "host0.cq" + std::to_string(c) + ".";
    INFO(cq);
    const CqStats& s = cq_stats(r, 0, c);
    REQUIRE(s.cqes > 20);
    CHECK(w.final_value(cq + "pi") == s.cqes);
    CHECK(w.final_value(cq + "events") == s.events);
    CHECK(w.final_value(cq + "ci") == s.cqes);  // everything was polled
    CHECK(w.final_value(cq + "occupancy") == 0);
    CHECK(w.final_value(cq + "mod_count") == 4);
    CHECK(w.final_value(cq + "mod_period") == 8);
    // The CQ writer acts on edges of its 500 MHz clock: every change lands on a 2 ns boundary.
    for (auto [t, v] : w.changes.at(cq + "pi")) CHECK(t % 2000 == 0);
    // Moderation by count: while the CQ is armed (state 1) fewer than 4 CQEs are pending; the
    // 4th fires the event on the cycle it is written, which disarms the CQ.
    std::map<uint64_t, std::pair<int64_t, int64_t>> at;  // time -> (state, pending) changed then
    for (auto [t, v] : w.changes.at(cq + "state")) at[t].first = int64_t(v) + 1;
    for (auto [t, v] : w.changes.at(cq + "mod_pending")) at[t].second = int64_t(v) + 1;
    int64_t state = 0, pending = 0, armed_samples = 0, most_pending_armed = 0, most_pending = 0;
    for (auto [t, sp] : at) {
      if (sp.first) state = sp.first - 1;
      if (sp.second) pending = sp.second - 1;
      most_pending = std::max(most_pending, pending);
      if (state == 1) ++armed_samples, most_pending_armed = std::max(most_pending_armed, pending);
    }
    CHECK(armed_samples > 10);
    CHECK(most_pending_armed == 3);
    CHECK(most_pending >= 3);
    CHECK(w.rising_edges(cq + "polling") > 0);
  }
  CHECK(w.final_value("host1.cq1.pi") == cq_stats(r, 1, 1).cqes);
}

TEST_CASE("[S27] an overload with a small receive buffer drops nothing: the credits hold the sender and the run drains") {
  TrafficOptions o;
  o.qps = 64;
  o.workload.sizes = {64};
  o.workload.rate_kmsg = 50000;  // far beyond what host 1's port can check
  o.duration_us = 200;
  o.transport.rx_fifo_depth = 16;
  o.queues = true;
  const TrafficResult r = run_traffic(o);
  INFO(r.outstanding);
  CHECK(r.ok);
  CHECK(r.outstanding.empty());
  CHECK(r.completed == r.posted);
  CHECK(r.packets_lost == 0);
  CHECK(r.retransmits == 0);
  bool buffer_filled = false;
  for (const QueueLink& q : r.queues)
    if (q.queue == "host1.hca.transport.rx.s_fifo") buffer_filled = q.high_water == 16;
  CHECK(buffer_filled);  // the sender was held at a full buffer, not short of work
}

TEST_CASE("[S27] a run that cannot drain says what is outstanding: overflowed CQs leave receives that never complete") {
  TrafficOptions o;
  o.qps = 2;
  o.cq_size = 4;
  o.moderation.mod = CqModeration{65535, 0, PeriodMode::eqe};  // no event ever: the CQs overflow
  o.duration_us = 100;
  const TrafficResult r = run_traffic(o);
  CHECK_FALSE(r.ok);
  INFO(r.outstanding);
  CHECK(r.outstanding.find("still outstanding") != std::string::npos);
  CHECK(r.outstanding.find("without a completion") != std::string::npos);
  CHECK(r.outstanding.find("QP 0:") != std::string::npos);
}

namespace {
// vhca-sim inject's shape: 8 CQs on host 0 fed 20 M completion records/s, count disabled, an
// EQE-mode period of `period_us`, for 2 ms.
TrafficResult saturated_cqs(uint16_t period_us, ArmEvent arm_event) {
  TrafficOptions o;
  o.qps = o.cqs = 8;
  o.depth = 16;
  o.duration_us = 2000;
  o.moderation.mod = CqModeration{0, period_us, PeriodMode::eqe};
  o.arm_event = arm_event;
  o.workload.sizes = {1024};
  o.workload.write_fraction = 0;
  o.workload.arrival = Arrival::poisson;
  o.workload.rate_kmsg = 20000;
  o.workload.inject_cqes = true;
  return run_traffic(o);
}

// Every event has one cause, every interrupt one vector: the breakdowns add up.
void check_breakdowns(const TrafficResult& r) {
  for (int h = 0; h < 2; ++h) {
    const HostStats& s = r.host[h];
    uint64_t by_cause = 0, by_vector = s.async_interrupts;
    for (uint64_t n : s.events_by) by_cause += n;
    for (uint64_t n : s.vector_interrupts) by_vector += n;
    CHECK(by_cause == s.events);
    CHECK(by_vector == s.interrupts);
  }
  for (const CqStats& c : r.cqs) {
    uint64_t by_cause = 0;
    for (uint64_t n : c.events_by) by_cause += n;
    CHECK(by_cause == c.events);
  }
}
}  // namespace

TEST_CASE("[S26] a saturated CQ with count disabled raises one event per EQE-mode period, each by the period") {
  const TrafficResult r = saturated_cqs(8, ArmEvent::moderated);
  REQUIRE(r.ok);
  check_breakdowns(r);
  const double periods = r.measured_s / 8e-6;
  for (const CqStats& c : r.cqs) {
    if (c.host != 0) continue;
    INFO("CQ " << c.cq << ": " << c.events << " events in " << periods << " periods");
    CHECK(double(c.events) <= periods + 1);  // at most one per period
    CHECK(double(c.events) >= 0.95 * periods);
    CHECK(c.events_by[int(EventCause::period)] == c.events);
    CHECK(c.events_by[int(EventCause::at_arm)] == 0);
  }
}

TEST_CASE("[S26][S23] the old rule (at-arm) under the same load: events at the arm, more than one per period, none lost") {
  const TrafficResult r = saturated_cqs(8, ArmEvent::at_once);
  // An arm that fires at once races the poller's second re-arm (after missed CQEs): the event
  // comes while the poller still holds the CQ and its re-arm carries a stale sequence number. The
  // poller must take the CQ again (IbCq::kicked); before, CQ 0 stalled with 806 CQEs unpolled.
  INFO(r.outstanding);
  REQUIRE(r.ok);
  check_breakdowns(r);
  const double periods = r.measured_s / 8e-6;
  uint64_t at_arm = 0, events = 0;
  for (const CqStats& c : r.cqs)
    if (c.host == 0) at_arm += c.events_by[int(EventCause::at_arm)], events += c.events;
  CHECK(at_arm > 0);
  CHECK(double(events) > 1.2 * 8 * periods);  // the moderated rule's bound, broken
}

TEST_CASE("time series: interrupts per interval add up, and DIM's recorded profile changes end where each CQ's moderation ends") {
  TrafficOptions o;
  o.qps = o.cqs = 8;
  o.depth = 16;
  o.duration_us = 2000;
  o.moderation.mod = CqModeration{8, 2, PeriodMode::eqe};
  o.moderation.adaptive = true;
  o.workload.sizes = {1024};
  o.workload.write_fraction = 0;
  o.workload.arrival = Arrival::poisson;
  o.workload.rate_kmsg = 20000;
  o.workload.inject_cqes = true;
  const TrafficResult r = run_traffic(o);
  REQUIRE(r.ok);
  const TimeSeries& ts = r.series;
  CHECK(ts.interval_us == Approx(20.0));
  REQUIRE(ts.interrupts_per_s[0].size() == 100);
  double in_workload = 0;
  for (double rate : ts.interrupts_per_s[0]) in_workload += rate * ts.interval_us * 1e-6;
  CHECK(in_workload > 0);
  CHECK(in_workload <= double(r.host[0].interrupts) + 0.5);  // the measured window also holds the drain
  REQUIRE(!ts.dim.empty());
  double last_time = 0;
  std::map<int, size_t> last_profile;
  for (const TimeSeries::DimChange& d : ts.dim) {
    CHECK(d.time_us >= last_time);
    last_time = d.time_us;
    CHECK(d.host == 0);
    last_profile[d.cq] = d.profile;
  }
  for (const auto& [cq, profile] : last_profile) {
    const CqStats& s = cq_stats(r, 0, cq);
    INFO("CQ " << cq << " profile " << profile);
    CHECK(s.mod_period_us == dim_profiles()[profile].period_us);
    CHECK(s.mod_count == dim_profiles()[profile].count);
  }
}

TEST_CASE("[validation] DIM follows the kernel's RDMA profile table and cadence: one decision per 64 counted events (traces/dim-step.yaml)") {
  // Whether DIM climbs under the surge and steps back after it is a claim about many CQs: one CQ's
  // first step is a coin flip (ctest validation_dim_step_seeds, docs/validation.md).
  const TrafficOptions o = load_scenario(std::string(VHCA_SOURCE_DIR) + "/traces/dim-step.yaml");
  const TrafficResult r = run_traffic(o);
  REQUIRE(r.ok);
  // The kernel's RDMA DIM table (include/linux/dim.h, rdma_dim_prof: usec, comps).
  const std::vector<std::pair<uint16_t, uint16_t>> kernel = {{1, 1}, {1, 4}, {2, 4}, {2, 8}, {4, 8},
                                                             {16, 8}, {16, 16}, {32, 16}, {32, 32}};
  REQUIRE(dim_profiles().size() == kernel.size());
  for (size_t i = 0; i < kernel.size(); ++i) {
    CHECK(dim_profiles()[i].period_us == kernel[i].first);
    CHECK(dim_profiles()[i].count == kernel[i].second);
  }
  // One decision per 64 counted events of a CQ (DIM_NEVENTS); a CQ's first event only opens its
  // window and events while a new profile is being applied are not counted, so each CQ may come
  // out a decision short (the kernel ignores events in DIM_APPLY_NEW_PROFILE).
  uint64_t at_most = 0;
  for (const CqStats& c : r.cqs)
    if (c.host == 0) at_most += c.events / 64;
  CHECK(r.host[0].dim_decisions > 0);
  CHECK(r.host[0].dim_decisions <= at_most);
  CHECK(r.host[0].dim_decisions + uint64_t(o.cqs) >= at_most);
  // Each change is one step along the table, except the fall to the first profile when events
  // carry few completions.
  std::vector<size_t> held(size_t(o.cqs), dim_profile_near(2, 8));
  for (const TimeSeries::DimChange& d : r.series.dim) {
    if (d.host != 0) continue;
    const size_t before = held.at(size_t(d.cq));
    CHECK((d.profile + 1 == before || d.profile == before + 1 || d.profile == 0));
    held[size_t(d.cq)] = d.profile;
  }
}
