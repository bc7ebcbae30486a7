// The results of a traffic run for people (the summary table) and for programs (JSON and CSV with
// the same fields, deterministic: no wall time).
#include <cstdio>
#include <sstream>

#include "explorer/profile.h"
#include "explorer/traffic.h"

namespace vhca {
namespace {

std::string sizes_text(const Workload& w) {
  std::string s;
  for (uint32_t x : w.sizes) s += (s.empty() ? "" : "/") + std::to_string(x);
  return s;
}

std::string moderation_text(const ModerationChoice& m) {
  char b[96];
  std::snprintf(b, sizeof b, "%u CQEs / %u us (%s mode)%s", m.mod.count, m.mod.period_us,
                m.mod.mode == PeriodMode::eqe ? "EQE" : "CQE", m.adaptive ? ", adaptive (DIM)" : "");
  return b;
}

void print_group(const QpGroup& g, int cqs) {
  const Workload& w = g.workload;
  std::string cq_list;
  for (int c : g.cqs) cq_list += (cq_list.empty() ? "" : ",") + std::to_string(c);
  std::printf("  group %s: %d QPs on CQ %s, ", g.name.c_str(), g.qps,
              cq_list.empty() ? ("i mod " + std::to_string(cqs)).c_str() : cq_list.c_str());
  if (w.arrival == Arrival::trace) {
    std::printf("%zu arrivals (opcodes and sizes too) replayed from %s\n", w.trace.size(), w.trace_file.c_str());
    return;
  }
  std::printf("%s-byte messages, %.0f%% WRITE %.0f%% READ %.0f%% SEND, %s", sizes_text(w).c_str(), w.write_fraction * 100,
              w.read_fraction * 100, (1 - w.write_fraction - w.read_fraction) * 100, arrival_name(w.arrival));
  if (w.arrival == Arrival::pingpong) std::printf(", %d outstanding per QP\n", w.outstanding);
  else std::printf(" %.0f k msg/s\n", w.rate_kmsg);
}

}  // namespace

void print_queues(const TrafficResult& r) {
  if (r.queues.empty()) return;
  std::printf("\nqueues between blocks (depth, high-water mark, items pushed, producers):\n%s",
              describe_queues(r.queues).c_str());
  std::printf("host0 completion arbiter: %llu injections passed on early, %llu taken back; %llu transport records "
              "and %llu injections passed on at once, %llu taken back\n",
              static_cast<unsigned long long>(r.injections_early), static_cast<unsigned long long>(r.injections_taken_back),
              static_cast<unsigned long long>(r.records_at_once), static_cast<unsigned long long>(r.injections_at_once),
              static_cast<unsigned long long>(r.records_taken_back));
  std::printf("host0 DMA write channel: %llu writes issued ahead (%llu EQEs and MSI-X messages, %llu payloads, %llu "
              "held by a rank guard; %llu rank-order breaks); PCIe link: %llu TLPs placed before others\n",
              static_cast<unsigned long long>(r.writes_issued_ahead), static_cast<unsigned long long>(r.events_issued_ahead),
              static_cast<unsigned long long>(r.payloads_issued_ahead),
              static_cast<unsigned long long>(r.events_held), static_cast<unsigned long long>(r.ahead_order_breaks),
              static_cast<unsigned long long>(r.link_passes));
  std::printf("host0 PCIe link: %llu read completions told early, %llu of them passed and told again\n",
              static_cast<unsigned long long>(r.completions_early), static_cast<unsigned long long>(r.completions_moved));
  std::printf("host0 DMA write channel: %llu turns held for PCIe credits, %llu of them slept through (known before "
              "their edge)\n",
              static_cast<unsigned long long>(r.credit_stalls), static_cast<unsigned long long>(r.turns_slept_for_credits));
  std::printf("host0 transport, one order on an edge (timers, reads, receiver, transmit arbiter): %llu timers fired, "
              "%llu reads answered and %llu packets handed on ahead of their block's own process\n",
              static_cast<unsigned long long>(r.timers_fired_first), static_cast<unsigned long long>(r.reads_answered_first),
              static_cast<unsigned long long>(r.packets_handed_first));
  std::printf("host0 port: %llu packets taken from the link as the receiver looked (%llu sent while it was busy), "
              "%llu wake-ups asked for an arrival\n",
              static_cast<unsigned long long>(r.arrivals_taken), static_cast<unsigned long long>(r.arrivals_sent_busy),
              static_cast<unsigned long long>(r.arrival_wakes));
  const CpuCore::Counters& c = r.host_cores;
  std::printf("host0 cores: %llu activations; run ahead of their instant: %llu steps, %llu MMIO writes, %llu ends; "
              "%llu times something else came first\n",
              static_cast<unsigned long long>(c.activations), static_cast<unsigned long long>(c.steps_ahead),
              static_cast<unsigned long long>(c.writes_ahead), static_cast<unsigned long long>(c.ends_ahead),
              static_cast<unsigned long long>(c.ahead_declined));
}

void print_summary(const TrafficOptions& o, const TrafficResult& r) {
  if (o.profile != "baseline") {
    const HcaProfile* p = find_hca_profile(o.profile);
    std::printf("hardware profile %s: %s\n", o.profile.c_str(), p ? p->description : "?");
  }
  std::printf("vhca-sim %s%s: 2 HCAs, %d RC QPs on %d CQs per host (%d vectors) for %.0f us (warm-up %.0f us), "
              "moderation %s, %s polling, seed %llu\n",
              o.name.c_str(), o.rtl ? " (pipelined RTL CQ writers in the loop)" : "", o.qps, o.cqs, o.vectors, o.duration_us,
              o.warmup_us, moderation_text(o.moderation).c_str(), poll_context_name(o.context),
              static_cast<unsigned long long>(o.seed));
  for (const QpGroup& g : o.effective_groups()) print_group(g, o.cqs);
  for (const CqOverride& c : o.cq_overrides) {
    std::printf("  CQ %d on %s:", c.cq, c.host < 0 ? "both hosts" : c.host == 0 ? "host0" : "host1");
    if (c.has_moderation) std::printf(" moderation %s", moderation_text(c.moderation).c_str());
    if (c.vector >= 0) std::printf(" completion vector %d", c.vector);
    std::printf("\n");
  }
  auto count = [](const char* name, uint64_t v) {
    std::printf("  %-44s %12llu\n", name, static_cast<unsigned long long>(v));
  };
  auto row = [](const char* name, double v, const char* unit) { std::printf("  %-44s %12.3f %s\n", name, v, unit); };
  count("messages posted", r.posted);
  count("arrivals refused (send queue full)", r.refused);
  count("send completions", r.completed);
  count("receive completions", r.recvs);
  count("completion errors", r.errors);
  count("out-of-order completions", r.misordered);
  count("messages with wrong data", r.data_errors);
  count("packets host0 -> host1", r.packets_out);
  count("packets host1 -> host0", r.packets_back);
  count("packets lost on the link", r.packets_lost);
  count("retransmissions (go-back-N)", r.retransmits);
  row("link utilisation host0 -> host1", r.link_gbps, "Gb/s");
  for (int h = 0; h < 2; ++h) {
    const HostStats& s = r.host[h];
    std::printf("  host%d: %llu CQEs, %llu events, %llu interrupts (%.1f k/s, %.2f CQEs each), CPU %.2f %% "
                "(hard-IRQ %.2f %%, polling %.2f %%), CQ occupancy mean %.2f max %u, overflows %llu",
                h, static_cast<unsigned long long>(s.cqes), static_cast<unsigned long long>(s.events),
                static_cast<unsigned long long>(s.interrupts), s.interrupts_per_s / 1e3, s.cqes_per_interrupt,
                s.cpu_busy_pct, s.hardirq_pct, s.poll_pct, s.cq_occupancy_mean, s.cq_occupancy_max,
                static_cast<unsigned long long>(s.overflows));
    if (s.dim_decisions)
      std::printf(", DIM %llu decisions, %llu changes", static_cast<unsigned long long>(s.dim_decisions),
                  static_cast<unsigned long long>(s.dim_changes));
    std::printf("\n         events by cause: count %llu, period %llu, immediate %llu, at arm %llu; interrupts by vector:",
                static_cast<unsigned long long>(s.events_by[0]), static_cast<unsigned long long>(s.events_by[1]),
                static_cast<unsigned long long>(s.events_by[2]), static_cast<unsigned long long>(s.events_by[3]));
    for (size_t v = 0; v < s.vector_interrupts.size(); ++v)
      std::printf(" %zu: %llu,", v, static_cast<unsigned long long>(s.vector_interrupts[v]));
    std::printf(" async: %llu", static_cast<unsigned long long>(s.async_interrupts));
    if (!s.core_util_pct.empty()) {
      std::printf("\n         cores: utilisation %.2f %% of %zu (", s.cpu_util_pct, s.core_util_pct.size());
      for (size_t k = 0; k < s.core_util_pct.size(); ++k)
        std::printf("%s%zu: %.2f %%", k ? ", " : "", k, s.core_util_pct[k]);
      std::printf("), %llu preemptions", static_cast<unsigned long long>(s.preemptions));
    }
    std::printf("\n");
  }
  std::printf("  latency from post, us (CQE = landed in host memory, hdlr = done callback)\n");
  std::printf("  %-22s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "", "samples", "CQE p50", "CQE p99", "CQE p99.9",
              "hdlr p50", "hdlr p90", "hdlr p99", "hdlr p99.9", "hdlr max");
  for (const auto& [op, l] : r.latency)
    std::printf("  %-22s %8llu %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", op.c_str(),
                static_cast<unsigned long long>(l.samples), l.cqe_p50, l.cqe_p99, l.cqe_p999, l.hdl_p50, l.hdl_p90,
                l.hdl_p99, l.hdl_p999, l.hdl_max);
  std::printf("  per CQ (moderation at the end; latency of every completion it carried, us)\n");
  std::printf("  %-10s %6s %14s %10s %10s %10s %8s %8s %8s   %s\n", "", "vector", "moderation", "CQEs", "events",
              "CQEs/event", "CQE p50", "hdlr p50", "hdlr p99", "events by count/period/immediate/at arm");
  for (const CqStats& c : r.cqs) {
    char name[32], mod[40];
    std::snprintf(name, sizeof name, "host%d CQ %d", c.host, c.cq);
    std::snprintf(mod, sizeof mod, "%u/%uus%s", c.mod_count, c.mod_period_us, c.adaptive ? " DIM" : "");
    std::printf("  %-10s %6d %14s %10llu %10llu %10.2f %8.3f %8.3f %8.3f   %llu/%llu/%llu/%llu\n", name, c.vector,
                mod, static_cast<unsigned long long>(c.cqes), static_cast<unsigned long long>(c.events),
                c.events ? double(c.cqes) / double(c.events) : 0.0, c.latency.cqe_p50, c.latency.hdl_p50,
                c.latency.hdl_p99, static_cast<unsigned long long>(c.events_by[0]),
                static_cast<unsigned long long>(c.events_by[1]), static_cast<unsigned long long>(c.events_by[2]),
                static_cast<unsigned long long>(c.events_by[3]));
  }
  row("measured (simulated) time", r.measured_s * 1e3, "ms");
  row("wall time", r.wall_s, "s");
  row("simulated messages per wall second", r.wall_s > 0 ? double(r.completed) / r.wall_s : 0.0, "");
  if (o.check) {
    std::printf("  %-44s %12s\n", "S29 invariants held (--check)", r.invariant_violations.empty() ? "yes" : "NO");
    std::printf("  %-44s %12llu\n", "  observations checked", static_cast<unsigned long long>(r.invariants_checked));
    for (size_t i = 0; i < r.invariant_violations.size() && i < 20; ++i)
      std::printf("  broken: %s\n", r.invariant_violations[i].c_str());
    if (r.invariant_violations.size() > 20) std::printf("  ... and %zu more\n", r.invariant_violations.size() - 20);
  }
  std::printf("  %-44s %12s\n", "every message intact, completed once, in order", r.ok ? "yes" : "NO");
  if (!r.outstanding.empty()) std::printf("  not drained: %s\n", r.outstanding.c_str());
}

namespace {

using Fields = std::vector<std::pair<std::string, double>>;

void latency_fields(Fields& f, const std::string& prefix, const LatencyStats& l) {
  for (auto [k, v] : std::initializer_list<std::pair<const char*, double>>{
           {"samples", double(l.samples)}, {"cqe_p50_us", l.cqe_p50}, {"cqe_p90_us", l.cqe_p90},
           {"cqe_p99_us", l.cqe_p99}, {"cqe_p999_us", l.cqe_p999}, {"cqe_max_us", l.cqe_max},
           {"hdl_p50_us", l.hdl_p50}, {"hdl_p90_us", l.hdl_p90}, {"hdl_p99_us", l.hdl_p99},
           {"hdl_p999_us", l.hdl_p999}, {"hdl_max_us", l.hdl_max}})
    f.push_back({prefix + k, v});
}

// The result fields in one order for JSON and CSV (name, value). The fixed fields come first;
// the per-group and per-CQ fields follow and depend on the scenario's groups and CQs.
Fields result_fields(const TrafficOptions& o, const TrafficResult& r) {
  Fields f = {{"mod_count", o.moderation.mod.count}, {"mod_period_us", o.moderation.mod.period_us},
              {"mode_cqe", o.moderation.mod.mode == PeriodMode::cqe}, {"adaptive", o.moderation.adaptive},
              {"posted", double(r.posted)}, {"refused", double(r.refused)}, {"completed", double(r.completed)},
              {"recvs", double(r.recvs)}, {"errors", double(r.errors)}, {"misordered", double(r.misordered)},
              {"data_errors", double(r.data_errors)}, {"packets_lost", double(r.packets_lost)},
              {"retransmits", double(r.retransmits)}, {"link_gbps", r.link_gbps}, {"measured_s", r.measured_s}};
  for (int h = 0; h < 2; ++h) {
    const HostStats& s = r.host[h];
    const std::string p = "host" + std::to_string(h) + "_";
    for (auto [k, v] : std::initializer_list<std::pair<const char*, double>>{
             {"cqes", double(s.cqes)}, {"interrupts", double(s.interrupts)}, {"interrupts_per_s", s.interrupts_per_s},
             {"cqes_per_interrupt", s.cqes_per_interrupt}, {"cpu_busy_pct", s.cpu_busy_pct},
             {"hardirq_pct", s.hardirq_pct}, {"poll_pct", s.poll_pct}, {"cq_occupancy_mean", s.cq_occupancy_mean},
             {"cq_occupancy_max", double(s.cq_occupancy_max)}, {"overflows", double(s.overflows)},
             {"dim_changes", double(s.dim_changes)}})
      f.push_back({p + k, v});
    f.push_back({p + "events", double(s.events)});
    for (int c = 0; c < kEventCauses; ++c)
      f.push_back({p + "events_" + event_cause_name(EventCause(c)), double(s.events_by[c])});
    f.push_back({p + "async_interrupts", double(s.async_interrupts)});
    if (const int cores = o.host_cores(); cores > 0) {  // known before the run, as the vectors below
      f.push_back({p + "cpu_util_pct", s.cpu_util_pct});
      f.push_back({p + "preemptions", double(s.preemptions)});
      for (int k = 0; k < cores; ++k)
        f.push_back({p + "core" + std::to_string(k) + "_util_pct",
                     size_t(k) < s.core_util_pct.size() ? s.core_util_pct[size_t(k)] : 0.0});
    }
    for (int v = 0; v < o.vectors; ++v)  // known before the run: the columns of a sweep's CSV
      f.push_back({p + "vector" + std::to_string(v) + "_interrupts",
                   size_t(v) < s.vector_interrupts.size() ? double(s.vector_interrupts[size_t(v)]) : 0.0});
  }
  auto op_fields = [&](const std::string& key, const std::string& prefix) {
    auto it = r.latency.find(key);
    latency_fields(f, prefix, it == r.latency.end() ? LatencyStats{} : it->second);
  };
  static const char* const kOps[] = {"SEND", "RDMA_WRITE", "RDMA_READ", "RECV", "PONG", "PINGPONG", "INJECTED"};
  for (const char* op : kOps) op_fields(op, std::string(op) + "_");
  for (const QpGroup& g : o.groups)  // named groups only (none: the totals above are the one group's)
      for (const char* op : kOps) op_fields(g.name + "/" + op, g.name + "_" + op + "_");
  for (const CqStats& c : r.cqs) {
    const std::string p = "host" + std::to_string(c.host) + "_cq" + std::to_string(c.cq) + "_";
    f.push_back({p + "vector", c.vector});
    f.push_back({p + "mod_count", c.mod_count});
    f.push_back({p + "mod_period_us", c.mod_period_us});
    f.push_back({p + "cqes", double(c.cqes)});
    f.push_back({p + "events", double(c.events)});
    f.push_back({p + "cqes_per_event", c.events ? double(c.cqes) / double(c.events) : 0.0});
    for (int k = 0; k < kEventCauses; ++k)
      f.push_back({p + "events_" + event_cause_name(EventCause(k)), double(c.events_by[k])});
    f.push_back({p + "cqe_p50_us", c.latency.cqe_p50});
    f.push_back({p + "hdl_p50_us", c.latency.hdl_p50});
    f.push_back({p + "hdl_p99_us", c.latency.hdl_p99});
  }
  f.push_back({"ok", r.ok});
  return f;
}

std::string number(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace

std::string results_json(const TrafficOptions& o, const TrafficResult& r) {
  std::ostringstream s;
  s << "{\n  \"scenario\": \"" << o.name << "\",\n  \"profile\": \"" << o.profile << "\",\n  \"seed\": " << o.seed;
  for (const auto& [k, v] : result_fields(o, r)) s << ",\n  \"" << k << "\": " << number(v);
  // The time series (not in the CSV: one row per run).
  const TimeSeries& ts = r.series;
  s << ",\n  \"series\": {\n    \"interval_us\": " << number(ts.interval_us);
  for (int h = 0; h < 2; ++h) {
    s << ",\n    \"host" << h << "_interrupts_per_s\": [";
    for (size_t i = 0; i < ts.interrupts_per_s[h].size(); ++i) s << (i ? ", " : "") << number(ts.interrupts_per_s[h][i]);
    s << "]";
  }
  s << ",\n    \"dim_changes\": [";
  for (size_t i = 0; i < ts.dim.size(); ++i)
    s << (i ? "," : "") << "\n      {\"time_us\": " << number(ts.dim[i].time_us) << ", \"host\": " << ts.dim[i].host
      << ", \"cq\": " << ts.dim[i].cq << ", \"profile\": " << ts.dim[i].profile << "}";
  s << (ts.dim.empty() ? "]" : "\n    ]") << "\n  }\n}\n";
  return s.str();
}

std::vector<std::string> result_columns(const TrafficOptions& o) {
  TrafficResult shape;
  for (int h = 0; h < 2; ++h)
    for (int c = 0; c < o.cqs; ++c) shape.cqs.push_back(CqStats{h, c, 0, 0, 0, false, 0, 0, {}});
  std::vector<std::string> names = {"scenario", "seed"};
  for (const auto& [k, v] : result_fields(o, shape)) names.push_back(k);
  return names;
}

std::string results_csv(const TrafficOptions& o, const TrafficResult& r) {
  std::string header = "scenario,seed", row = o.name + "," + std::to_string(o.seed);
  for (const auto& [k, v] : result_fields(o, r)) {
    header += "," + k;
    row += "," + number(v);
  }
  return header + "\n" + row + "\n";
}

}  // namespace vhca
