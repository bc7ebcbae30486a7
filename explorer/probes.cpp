#include "explorer/probes.h"

#include <algorithm>
#include <cstdio>

#include "cosim/fst.h"
#include "model/common/bytes.h"
#include "model/common/percentile.h"

namespace vhca {

namespace {
// The waveform signals of one CQ, in declaration order (docs/scenarios.md describes each).
enum CqSignal { kPi, kCi, kOccupancy, kState, kModPending, kTimer, kEvents, kModCount, kModPeriod, kPolling, kCqSignalCount };
constexpr std::pair<const char*, int> kCqSignals[kCqSignalCount] = {
    {"pi", 24},     {"ci", 24},        {"occupancy", 24},  {"state", 3},       {"mod_pending", 16},
    {"timer", 1},   {"events", 32},    {"mod_count", 16},  {"mod_period", 12}, {"polling", 1}};
}  // namespace

void for_each_vcd_signal(const TrafficOptions& o, const std::function<void(const std::string&, int)>& fn) {
  for (int h = 0; h < 2; ++h) {
    const std::string host = "host" + std::to_string(h) + ".";
    for (int c = 0; c < o.cqs; ++c)
      for (auto [leaf, width] : kCqSignals) fn(host + "cq" + std::to_string(c) + "." + leaf, width);
    for (int v = 0; v < o.vectors; ++v) {
      fn(host + "eq" + std::to_string(v) + ".pi", 24);
      fn(host + "eq" + std::to_string(v) + ".armed", 1);
    }
    for (int v = 0; v <= o.vectors; ++v) {
      fn(host + "msix" + std::to_string(v) + ".messages", 32);
      fn(host + "cpu.irq" + std::to_string(v), 1);
    }
  }
}

std::string check_vcd_signals(const TrafficOptions& o) {
  for (const std::string& p : o.vcd_signals) {
    bool matched = false;
    for_each_vcd_signal(o, [&](const std::string& name, int) { matched = matched || glob_match(p, name); });
    if (!matched)
      return "--signals: '" + p + "' matches no signal (names look like host0.cq0.mod_pending, host1.eq0.pi, "
             "host0.msix1.messages, host0.cpu.irq1; see docs/scenarios.md)";
  }
  return "";
}

void Probes::Samples::add(const sc_core::sc_time& posted, const sc_core::sc_time& visible) {
  to_cqe_ns.push_back((visible - posted).to_seconds() * 1e9);
  // The done callback's moment: a callback running in a step of kernel work sees the CPU time the
  // step charged before it.
  to_handler_ns.push_back((CpuCore::local_time() - posted).to_seconds() * 1e9);
}

LatencyStats Probes::Samples::stats() {
  LatencyStats s;
  s.samples = to_cqe_ns.size();
  auto fill = [](std::vector<double>& v, double& p50, double& p90, double& p99, double& p999, double& mx) {
    p50 = percentile(v, 0.5) / 1e3;
    p90 = percentile(v, 0.9) / 1e3;
    p99 = percentile(v, 0.99) / 1e3;
    p999 = percentile(v, 0.999) / 1e3;
    mx = v.empty() ? 0 : *std::max_element(v.begin(), v.end()) / 1e3;
  };
  fill(to_cqe_ns, s.cqe_p50, s.cqe_p90, s.cqe_p99, s.cqe_p999, s.cqe_max);
  fill(to_handler_ns, s.hdl_p50, s.hdl_p90, s.hdl_p99, s.hdl_p999, s.hdl_max);
  return s;
}

Probes::Probes(const TrafficOptions& o) : o_(o), vcd_(!o.vcd_path.empty() || !o.fst_path.empty(), o.vcd_signals) {
  if (!o.trace_path.empty()) timeline_.enable();
}

void Probes::attach(int h, Node& n, CqPool& pool, const std::vector<IbCq*>& cqs) {
  node_[h] = &n;
  cqs_[h] = cqs;
  for (size_t i = 0; i < cqs.size(); ++i) cq_index_[h][cqs[i]->cq->cqn] = int(i);
  declare_waves(h);
  // A CQE's landing time is used when the host polls it, so its write may land quietly (told
  // late, with its arrival); an MSI-X write always lands on time. The timeline records instants
  // as they happen, so with it every write lands on time.
  auto landed = [this, h](DmaSource s, uint32_t id, uint64_t, const sc_core::sc_time& at) {
    if (s == DmaSource::cqe) landed_[h][id].push_back(at);
    if (s == DmaSource::msix && id < waves_[h].msix.size()) vcd_.set(waves_[h].msix[id], ++waves_[h].messages[id]);
    if (!timeline_.enabled()) return;
    if (s == DmaSource::cqe) timeline_.instant(h, cq_track(h, id), "CQE");
    if (s == DmaSource::eqe) timeline_.instant(h, "EQ " + std::to_string(id), "EQE");
    if (s == DmaSource::msix) timeline_.instant(h, "MSI-X " + std::to_string(id), "MSI-X");
  };
  if (timeline_.enabled())
    n.link.on_upstream_landed.add([landed](DmaSource s, uint32_t id, uint64_t a) { landed(s, id, a, sc_core::sc_time_stamp()); });
  else
    n.link.on_upstream_landed_at.add(landed);
  n.cpu.on_handler_done.add([this, h](uint32_t vector, const sc_core::sc_time& begin) {
    if (vector < waves_[h].irq.size()) {
      vcd_.set(waves_[h].irq[vector], 1, begin);
      vcd_.set(waves_[h].irq[vector], 0);
    }
    if (timeline_.enabled()) timeline_.span(h, "IRQ handler, vector " + std::to_string(vector), "handler", begin);
    if (series_on_ && begin >= series_start_ && begin < series_end_) {
      const size_t bin = size_t((begin - series_start_) / series_interval_);
      if (bin < interrupt_bins_[h].size()) ++interrupt_bins_[h][bin];
    }
  });
  pool.on_poll_done.add([this, h](IbCq& cq, const sc_core::sc_time& begin, int cqes) {
    HostWaves::Cq& w = waves_[h].cqs[size_t(cq_index_[h][cq.cq->cqn])];
    if (w.any) {
      vcd_.set(w.id[kPolling], 1, begin);
      vcd_.set(w.id[kPolling], 0);
      w.ci = cq.cq->ci;
      vcd_.set(w.id[kCi], w.ci);
      vcd_.set(w.id[kOccupancy], index_distance(w.ci, w.pi));
    }
    if (timeline_.enabled()) timeline_.span(h, cq_track(h, cq.cq->cqn), "poll", begin, cqes);
  });
  pool.on_dim_change.add([this, h](IbCq& cq) {
    if (!series_on_ || !cq.dim) return;
    const int index = cq_index_[h][cq.cq->cqn];
    series_.dim.push_back({(sc_core::sc_time_stamp() - series_start_).to_seconds() * 1e6, h, index, cq.dim->profile_index()});
    if (timeline_.enabled()) timeline_.counter(h, "DIM profile, CQ " + std::to_string(index), double(cq.dim->profile_index()));
  });
  if (vcd_.signals() == 0) return;  // the engines' hooks cost a call per action: only when dumping
  n.hca.cq.on_acted.add([this, h](uint64_t) { sample_cqs(h); });
  n.hca.eq.on_acted.add([this, h](uint64_t) { sample_eqs(h); });
}

std::string Probes::cq_track(int h, uint32_t cqn) {
  return "CQ " + std::to_string(cq_index_[h][cqn]) + " (cqn " + std::to_string(cqn) + ")";
}

void Probes::declare_waves(int h) {
  HostWaves& w = waves_[h];
  const std::string host = "host" + std::to_string(h) + ".";
  for (size_t c = 0; c < cqs_[h].size(); ++c) {
    HostWaves::Cq cq;
    cq.cqn = cqs_[h][c]->cq->cqn;
    for (int s = 0; s < kCqSignalCount; ++s) {
      cq.id.push_back(vcd_.declare(host + "cq" + std::to_string(c) + "." + kCqSignals[s].first, kCqSignals[s].second));
      cq.any = cq.any || cq.id.back() >= 0;
    }
    w.cqs.push_back(cq);
  }
  for (int v = 0; v < o_.vectors; ++v)
    w.eqs.emplace_back(vcd_.declare(host + "eq" + std::to_string(v) + ".pi", 24),
                       vcd_.declare(host + "eq" + std::to_string(v) + ".armed", 1));
  for (int v = 0; v <= o_.vectors; ++v) {
    w.msix.push_back(vcd_.declare(host + "msix" + std::to_string(v) + ".messages", 32));
    w.irq.push_back(vcd_.declare(host + "cpu.irq" + std::to_string(v), 1));
  }
  w.messages.assign(w.msix.size(), 0);
  if (vcd_.signals() > 0) sample_cqs(h), sample_eqs(h);
}

// After the CQ writer acted: the state of every chosen CQ (the VCD keeps only changes).
void Probes::sample_cqs(int h) {
  for (HostWaves::Cq& w : waves_[h].cqs) {
    if (!w.any) continue;
    const CqContext c = node_[h]->hca.cq.context(w.cqn);
    w.pi = c.pi;
    vcd_.set(w.id[kPi], c.pi);
    vcd_.set(w.id[kOccupancy], index_distance(w.ci, w.pi));
    vcd_.set(w.id[kState], uint64_t(c.state));
    vcd_.set(w.id[kModPending], c.mod_pending);
    vcd_.set(w.id[kTimer], c.timer_deadline != 0);
    vcd_.set(w.id[kEvents], c.events);
    vcd_.set(w.id[kModCount], c.cfg.mod_count);
    vcd_.set(w.id[kModPeriod], c.cfg.mod_period);
  }
}

void Probes::sample_eqs(int h) {
  for (int v = 0; v < o_.vectors; ++v) {
    const auto [pi, armed] = waves_[h].eqs[size_t(v)];
    if (pi < 0 && armed < 0) continue;
    const EqContext& e = node_[h]->hca.eq.context(node_[h]->driver.eqn_for_vector(uint32_t(v)));
    vcd_.set(pi, e.pi);
    vcd_.set(armed, e.armed);
  }
}

sc_core::sc_time Probes::claim_cqe(int h, uint32_t cqn) {
  auto& q = landed_[h][cqn];
  if (q.empty()) return sc_core::sc_time_stamp();
  const sc_core::sc_time t = q.front();
  q.pop_front();
  return t;
}

void Probes::sample_occupancy(int h, IbCq& cq) {
  const uint32_t pi = node_[h]->hca.cq.context(cq.cq->cqn).pi;
  const uint32_t occupancy = index_distance(cq.cq->ci, pi);
  occupancy_sum_[h] += occupancy;
  ++occupancy_samples_[h];
  occupancy_max_[h] = std::max(occupancy_max_[h], occupancy);
}

void Probes::sample_latency(int h, int cq, const std::string& group, const char* op, const sc_core::sc_time& posted,
                            const sc_core::sc_time& visible) {
  samples_[op].add(posted, visible);
  if (!group.empty()) samples_[group + "/" + op].add(posted, visible);
  cq_samples_[h][cq].add(posted, visible);
}

std::map<std::string, LatencyStats> Probes::latency_by_op() {
  std::map<std::string, LatencyStats> out;
  for (auto& [op, s] : samples_) out[op] = s.stats();
  return out;
}

LatencyStats Probes::latency_of_cq(int h, int cq) { return cq_samples_[h][cq].stats(); }

double Probes::occupancy_mean(int h) const {
  return occupancy_samples_[h] ? double(occupancy_sum_[h]) / double(occupancy_samples_[h]) : 0;
}

void Probes::start_series(const sc_core::sc_time& start, const sc_core::sc_time& end, const sc_core::sc_time& interval) {
  series_start_ = start;
  series_end_ = end;
  series_interval_ = interval;
  series_on_ = true;
  series_.interval_us = interval.to_seconds() * 1e6;
  const size_t bins = size_t((end - start) / interval);
  for (int h = 0; h < 2; ++h) interrupt_bins_[h].assign(bins, 0);
  for (int h = 0; h < 2; ++h) {
    if (!timeline_.enabled() || !node_[h]) continue;
    for (size_t c = 0; c < cqs_[h].size(); ++c)  // where each adaptive CQ's profile starts
      if (cqs_[h][c]->dim) timeline_.counter(h, "DIM profile, CQ " + std::to_string(c), double(cqs_[h][c]->dim->profile_index()));
  }
}

const TimeSeries& Probes::series() {
  for (int h = 0; h < 2; ++h) {
    series_.interrupts_per_s[h].clear();
    for (size_t i = 0; i < interrupt_bins_[h].size(); ++i) {
      const double rate = double(interrupt_bins_[h][i]) / series_interval_.to_seconds();
      series_.interrupts_per_s[h].push_back(rate);
      if (timeline_.enabled() && !series_drawn_)
        timeline_.counter(h, "interrupts per second", rate, series_start_ + double(i) * series_interval_);
    }
  }
  series_drawn_ = true;
  return series_;
}

bool Probes::write_outputs() const {
  bool ok = true;
  auto written = [&](bool done, const std::string& path) {
    if (done) return;
    std::fprintf(stderr, "vhca-sim: cannot write %s\n", path.c_str());
    ok = false;
  };
  if (timeline_.enabled()) written(timeline_.write(o_.trace_path, 2), o_.trace_path);
  if (!o_.vcd_path.empty()) written(vcd_.write(o_.vcd_path), o_.vcd_path);
  if (!o_.fst_path.empty()) {
    // The FST is the VCD converted by GTKWave's vcd2fst (a temporary VCD when none was asked for).
    const std::string vcd = o_.vcd_path.empty() ? o_.fst_path + ".vcd" : o_.vcd_path;
    if (o_.vcd_path.empty()) written(vcd_.write(vcd), vcd);
    if (const std::string why = vcd_to_fst(vcd, o_.fst_path); !why.empty()) {
      std::fprintf(stderr, "vhca-sim: --fst: %s\n", why.c_str());
      ok = false;
    }
    if (o_.vcd_path.empty()) std::remove(vcd.c_str());
  }
  return ok;
}

}  // namespace vhca
