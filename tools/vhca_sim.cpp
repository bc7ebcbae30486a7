// vhca-sim: the main job. With no arguments (or `traffic`) it runs two HCAs on an IB link with RC
// SEND and RDMA WRITE traffic on QPs that share moderated CQs (explorer/traffic.h). `inject` drives
// the CQ engine alone through the completion-injection port; `cosim` runs the lockstep RTL check.
// Each exits non-zero if any completion was lost, duplicated or reordered (or data damaged), so
// that its run is also a test.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <systemc>
#include <vector>
#include <unistd.h>

#include "firmware-shim/cq_pool.h"
#include "model/common/log.h"
#include "cosim/cosim.h"
#include "cosim/rtl_cq_writer.h"
#include "sim/system.h"
#include "explorer/scenario.h"
#include "explorer/sweep.h"
#include "explorer/traffic.h"

namespace {

struct Options {
  int cqs = 8;
  int vectors = 2;
  double rate_mcqe = 4.0;       // aggregate completion rate, millions per second
  double duration_us = 20000;  // simulated workload duration
  int cq_size = 1024;
  int mod_count = 32;
  int mod_period_us = 16;
  vhca::PeriodMode mode = vhca::PeriodMode::eqe;
  vhca::PollContext context = vhca::PollContext::softirq;
  uint64_t seed = 1;
  bool quiet = false;
  bool rtl = false;  // the Verilated RTL CQ writer inside the HCA
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "vhca-sim: %s\n"
               "usage: vhca-sim [traffic] [--qps N] [--cqs N] [--vectors N] [--msg-size BYTES] [--write-fraction F]\n"
               "                [--rate-kmsg K] [--duration-us US] [--depth N] [--cq-size N] [--count N] [--period-us US]\n"
               "                [--mode eqe|cqe] [--context softirq|thread|workqueue] [--seed S] [--loss RATE] [--rtl]\n"
               "                [--fault flip-payload] [--queues] [--log CATS]\n"
               "       vhca-sim run SCENARIO.yaml [--set key=value ...] [--json FILE] [--csv FILE] [--trace FILE]\n"
               "                [--vcd FILE [--signals GLOB,...]] [--record FILE] [--queues] [--log CATS]\n"
               "       vhca-sim sweep SCENARIO.yaml --grid KEY=V1,V2,... [--grid ...] [--set key=value] [--jobs N]\n"
               "                [--out DIR] [--latency COLUMN] [--emit-jobs] [--collect]\n"
               "                (KEY: count, period, mode, policy or a dotted key, list items as name[k])\n"
               "       vhca-sim inject [--cqs N] [--vectors N] [--rate MCQE_PER_S] [--duration-us US] [--cq-size N]\n"
               "                [--count N] [--period-us US] [--mode eqe|cqe] [--context softirq|thread|workqueue]\n"
               "                [--seed S] [--rtl] [--log CATEGORIES] [--quiet]\n"
               "       vhca-sim cosim [--cqes N] [--seed S] [--vcd FILE] [--fault owner|late-event]\n",
               why.c_str());
  std::exit(2);
}

// Walks argv from `first`, handing each option to `on` with helpers for its value.
struct ArgWalker {
  int argc;
  char** argv;
  int i;
  std::string a;
  std::string value() {
    if (i + 1 >= argc) usage("option " + a + " needs a value");
    return argv[++i];
  }
  double number(double lo, double hi) {
    std::string v = value();
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end || d < lo || d > hi)
      usage(a + ": '" + v + "' is not a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return d;
  }
  vhca::PeriodMode mode() {
    std::string v = value();
    if (v == "eqe") return vhca::PeriodMode::eqe;
    if (v == "cqe") return vhca::PeriodMode::cqe;
    usage("--mode: '" + v + "' is neither eqe nor cqe");
  }
  vhca::PollContext context() {
    std::string v = value();
    if (v == "softirq") return vhca::PollContext::softirq;
    if (v == "thread") return vhca::PollContext::thread;
    if (v == "workqueue") return vhca::PollContext::workqueue;
    usage("--context: '" + v + "' is not softirq, thread or workqueue");
  }
};

vhca::TrafficOptions parse_traffic(int argc, char** argv, int first) {
  vhca::TrafficOptions o;
  for (ArgWalker w{argc, argv, first, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    const std::string& a = w.a;
    if (a == "--qps") o.qps = int(w.number(1, 1000));
    else if (a == "--cqs") o.cqs = int(w.number(1, 60));
    else if (a == "--vectors") o.vectors = int(w.number(1, 31));
    else if (a == "--msg-size") o.workload.sizes = {uint32_t(w.number(1, 1 << 20))};
    else if (a == "--write-fraction") o.workload.write_fraction = w.number(0, 1);
    else if (a == "--rate-kmsg") o.workload.rate_kmsg = w.number(0.001, 1e5);
    else if (a == "--duration-us") o.duration_us = w.number(1, 1e7);
    else if (a == "--depth") o.depth = int(w.number(1, 4096));
    else if (a == "--cq-size") o.cq_size = int(w.number(1, 1 << 22));
    else if (a == "--count") o.moderation.mod.count = uint16_t(w.number(0, 65535));
    else if (a == "--period-us") o.moderation.mod.period_us = uint16_t(w.number(0, 4095));
    else if (a == "--mode") o.moderation.mod.mode = w.mode();
    else if (a == "--context") o.context = w.context();
    else if (a == "--seed") o.seed = uint64_t(w.number(0, 1e18));
    else if (a == "--rtl") o.rtl = true;
    else if (a == "--loss") o.link.loss_rate = w.number(0, 0.5);
    else if (a == "--fault") {
      const std::string f = w.value();
      if (f != "flip-payload") usage("--fault: '" + f + "' is not flip-payload");
      o.fault_flip_payload = true;
    }
    else if (a == "--quiet") {}
    else if (a == "--queues") o.queues = true;
    else if (a == "--log") vhca::log::enable(w.value());
    else usage("traffic: unknown option " + a);
  }
  return o;
}

Options parse(int argc, char** argv) {
  Options o;
  for (ArgWalker w{argc, argv, 2, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    const std::string& a = w.a;
    if (a == "--cqs") o.cqs = int(w.number(1, 4096));
    else if (a == "--vectors") o.vectors = int(w.number(1, 31));
    else if (a == "--rate") o.rate_mcqe = w.number(0.001, 1000);
    else if (a == "--duration-us") o.duration_us = w.number(1, 1e7);
    else if (a == "--cq-size") o.cq_size = int(w.number(1, 1 << 22));
    else if (a == "--count") o.mod_count = int(w.number(0, 65535));
    else if (a == "--period-us") o.mod_period_us = int(w.number(0, 4095));
    else if (a == "--seed") o.seed = uint64_t(w.number(0, 1e18));
    else if (a == "--quiet") o.quiet = true;
    else if (a == "--rtl") o.rtl = true;
    else if (a == "--log") vhca::log::enable(w.value());
    else if (a == "--mode") o.mode = w.mode();
    else if (a == "--context") o.context = w.context();
    else usage("inject: unknown option " + a);
  }
  return o;
}

// `vhca-sim cosim`: the lockstep check, then the model alone and the RTL alone on the same stream.
int run_cosim_command(int argc, char** argv) {
  vhca::CosimOptions o;
  o.cqes = 1000000;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("option " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--cqes") o.cqes = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--seed") o.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--vcd") o.vcd = value();
    else if (a == "--fault") {
      std::string f = value();
      if (f == "owner") o.faults.flip_owner_at_cqe = 1000;
      else if (f == "late-event") o.faults.delay_event_at = 100;
      else usage("--fault: '" + f + "' is neither owner nor late-event");
    } else usage("cosim: unknown option " + a);
  }
  if (o.cqes == 0) usage("--cqes must be at least 1");
  const vhca::CosimReport lock = vhca::run_cosim(o);
  std::printf("vhca-sim cosim: lockstep C++ model vs Verilated RTL CQ writer, seed %llu\n%s",
              static_cast<unsigned long long>(o.seed), lock.summary().c_str());
  if (!lock.vcd_written.empty()) std::printf("waveform around the mismatch: %s\n", lock.vcd_written.c_str());
  if (!lock.coverage_equal) std::printf("coverage counters of model and RTL DIFFER\n");
  std::printf("lockstep: %.0f cycles/s, %.0f CQEs/s (wall %.2f s)\n", double(lock.cycles) / lock.wall_seconds,
              double(lock.cqes) / lock.wall_seconds, lock.wall_seconds);
  if (lock.mismatches) return 1;
  vhca::CosimOptions alone = o;
  alone.cqes = lock.cqes;
  alone.mode = vhca::CosimMode::model_only;
  const vhca::CosimReport model = vhca::run_cosim(alone);
  alone.mode = vhca::CosimMode::rtl_only;
  const vhca::CosimReport rtl = vhca::run_cosim(alone);
  const double model_rate = double(model.cqes) / model.wall_seconds, rtl_rate = double(rtl.cqes) / rtl.wall_seconds;
  std::printf("model alone: %.0f CQEs/s, %.0f cycles/s (wall %.2f s)\n", model_rate,
              double(model.cycles) / model.wall_seconds, model.wall_seconds);
  std::printf("RTL alone:   %.0f CQEs/s, %.0f RTL cycles/s (wall %.2f s)\n", rtl_rate,
              double(rtl.cycles) / rtl.wall_seconds, rtl.wall_seconds);
  std::printf("model / RTL speed ratio: %.2f\n", model_rate / rtl_rate);
  // Same stream: both alone must have seen exactly what the lockstep run saw.
  return model.cycles == lock.cycles && rtl.cycles == lock.cycles ? 0 : 1;
}

}  // namespace

int run_inject(int argc, char** argv);

// `vhca-sim sweep SCENARIO --grid key=v1,v2 ... [--set key=value] [--jobs N] [--out DIR]
// [--emit-jobs] [--collect]`.
int run_sweep_command(int argc, char** argv) {
  if (argc < 3) usage("sweep: which scenario file?");
  vhca::SweepOptions o;
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  o.self = n > 0 ? std::string(self, size_t(n)) : std::string(argv[0]);
  o.scenario = argv[2];
  for (ArgWalker w{argc, argv, 3, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    if (w.a == "--grid") o.grids.push_back(w.value());
    else if (w.a == "--set") o.sets.push_back(w.value());
    else if (w.a == "--jobs") o.jobs = int(w.number(1, 256));
    else if (w.a == "--out") o.out = w.value();
    else if (w.a == "--emit-jobs") o.emit_jobs = true;
    else if (w.a == "--collect") o.collect = true;
    else if (w.a == "--latency") o.latency_column = w.value();
    else usage("sweep: unknown option " + w.a);
  }
  if (o.grids.empty()) usage("sweep: at least one --grid key=value,value,...");
  return vhca::run_sweep(o);
}

bool write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "vhca-sim: cannot write %s\n", path.c_str());
    return false;
  }
  std::fputs(text.c_str(), f);
  return std::fclose(f) == 0;
}

// `vhca-sim run SCENARIO [--set key=value ...] [--json FILE] [--csv FILE] [--trace FILE] [--vcd FILE
// [--signals GLOBS]] [--record FILE]`.
int run_scenario_command(int argc, char** argv) {
  if (argc < 3) usage("run: which scenario file?");
  const std::string path = argv[2];
  std::vector<std::string> sets;
  std::string json, csv, trace, record, vcd, signals;
  bool queues = false;
  for (ArgWalker w{argc, argv, 3, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    if (w.a == "--set") sets.push_back(w.value());
    else if (w.a == "--queues") queues = true;
    else if (w.a == "--json") json = w.value();
    else if (w.a == "--csv") csv = w.value();
    else if (w.a == "--trace") trace = w.value();
    else if (w.a == "--record") record = w.value();
    else if (w.a == "--vcd") vcd = w.value();
    else if (w.a == "--signals") signals = w.value();
    else if (w.a == "--log") vhca::log::enable(w.value());
    else usage("run: unknown option " + w.a);
  }
  vhca::TrafficOptions o;
  try {
    o = vhca::load_scenario(path, sets);
  } catch (const vhca::ScenarioError& e) {
    std::fprintf(stderr, "vhca-sim: %s\n", e.what());
    return 2;
  }
  o.trace_path = trace;
  o.record_path = record;
  o.vcd_path = vcd;
  o.queues = queues;
  if (!signals.empty() && vcd.empty()) usage("run: --signals chooses what --vcd FILE dumps; give --vcd too");
  for (size_t from = 0; !signals.empty();) {
    const size_t comma = signals.find(',', from);
    o.vcd_signals.push_back(signals.substr(from, comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (const std::string why = vhca::check_vcd_signals(o); !why.empty()) {
    std::fprintf(stderr, "vhca-sim: %s\n", why.c_str());
    return 2;
  }
  const vhca::TrafficResult r = vhca::run_traffic(o);
  vhca::print_summary(o, r);
  vhca::print_queues(r);
  if (!json.empty() && !write_file(json, vhca::results_json(o, r))) return 2;
  if (!csv.empty() && !write_file(csv, vhca::results_csv(o, r))) return 2;
  return r.ok ? 0 : 1;
}

int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "cosim") return run_cosim_command(argc, argv);
  if (command == "inject") return run_inject(argc, argv);
  if (command == "run") return run_scenario_command(argc, argv);
  if (command == "sweep") return run_sweep_command(argc, argv);
  const int first = command == "traffic" ? 2 : 1;
  const vhca::TrafficOptions o = parse_traffic(argc, argv, first);
  const vhca::TrafficResult r = vhca::run_traffic(o);
  vhca::print_summary(o, r);
  vhca::print_queues(r);
  return r.ok ? 0 : 1;
}

// `vhca-sim inject`: the CQ engine alone, fed through the completion-injection port.
int run_inject(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  vhca::SystemConfig cfg;
  cfg.driver.num_comp_vectors = uint32_t(opt.vectors);
  if (opt.rtl) {
    if (opt.cqs + 1 > int(vhca::RtlCqWriter::kRtlNumCqs)) usage("--rtl supports at most 63 CQs");
    cfg.hca.cq.num_cqs = vhca::RtlCqWriter::kRtlNumCqs;
    cfg.hca.cq_engine = [](const vhca::CqeWriterConfig& c) { return std::make_unique<vhca::RtlCqWriter>(c); };
  }
  vhca::System sys(cfg);

  struct Request {
    vhca::CqeDone done;
    uint64_t injected_cycle = 0;
  };
  std::vector<Request> requests;
  std::vector<double> latency_ns;
  uint64_t completed = 0, misordered = 0;
  std::vector<uint64_t> next_expected(size_t(opt.cqs), 0);
  vhca::HostCpu& cpu = sys.cpu;
  bool ok = true;
  double wall_s = 0;
  sc_core::sc_time sim_start, sim_end;

  sys.run([&] {
    vhca::CommandResult r = sys.driver.boot();
    if (!r.ok()) {
      std::fprintf(stderr, "vhca-sim: boot failed: %s\n", r.message().c_str());
      ok = false;
      return;
    }
    vhca::CqPool pool(sys.driver);
    std::vector<vhca::IbCq*> cqs;
    for (int i = 0; i < opt.cqs; ++i) {
      vhca::IbCq* cq = pool.alloc_cq(opt.cq_size, uint32_t(i % opt.vectors), opt.context,
                                     vhca::CqModeration{uint16_t(opt.mod_count), uint16_t(opt.mod_period_us), opt.mode});
      if (!cq) {
        std::fprintf(stderr, "vhca-sim: %s\n", sys.driver.last_error().c_str());
        ok = false;
        return;
      }
      cqs.push_back(cq);
    }
    // Poisson arrivals over all CQs, drawn from a fully specified generator (mt19937_64 and
    // inverse-CDF sampling) so that every platform produces the same workload.
    std::mt19937_64 rng(opt.seed);
    auto uniform = [&] { return (double(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
    const double mean_gap_cycles = sys.hca.clock.mhz() / opt.rate_mcqe;
    const uint64_t start = sys.cycle() + 100;
    const uint64_t end = start + uint64_t(opt.duration_us * sys.hca.clock.mhz());
    double t = double(start);
    std::vector<std::pair<uint64_t, int>> arrivals;
    while ((t += -std::log(uniform()) * mean_gap_cycles) < double(end))
      arrivals.emplace_back(uint64_t(t), int(rng() % uint64_t(opt.cqs)));
    requests.resize(arrivals.size());
    std::vector<uint64_t> seq(size_t(opt.cqs), 0);
    for (size_t i = 0; i < arrivals.size(); ++i) {
      Request& req = requests[i];
      const int q = arrivals[i].second;
      const uint64_t order = seq[size_t(q)]++;
      req.injected_cycle = arrivals[i].first;
      req.done.done = [&, q, order, i](vhca::IbCq&, const vhca::Wc& wc) {
        ++completed;
        if (wc.status != 0 || order != next_expected[size_t(q)]) ++misordered;
        next_expected[size_t(q)] = order + 1;
        // From the cycle the device wrote the CQE (its timestamp) to the done callback.
        latency_ns.push_back((sc_core::sc_time_stamp() - sys.hca.clock.at(wc.timestamp)).to_seconds() * 1e9);
      };
      pool.track(req.done);
      vhca::CompletionRecord rec;
      rec.cqn = cqs[size_t(q)]->cq->cqn;
      rec.opcode = vhca::cqe::kRespSend;
      rec.byte_cnt = 1024;
      rec.qpn = 0x100 + uint32_t(q);
      rec.wr_id = vhca::CqPool::wr_id_of(req.done);
      sys.hca.inject(rec, req.injected_cycle);
    }
    sim_start = sc_core::sc_time_stamp();
    const auto wall0 = std::chrono::steady_clock::now();
    sys.wait_cycle(end);
    // Let the last completions through moderation and polling.
    sc_core::wait(sc_core::sc_time(opt.mod_period_us + 50, sc_core::SC_US));
    wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    sim_end = sc_core::sc_time_stamp();
    for (vhca::IbCq* cq : cqs) {
      if (vhca::verbs::peek_cq(*cq->cq, opt.cq_size) != 0) ok = false;  // stranded completions
    }
  }, sc_core::sc_time(opt.duration_us + 10000, sc_core::SC_US));

  const uint64_t injected = requests.size();
  const uint64_t interrupts = cpu.interrupts();
  const uint64_t eqes = sys.driver.eqes_handled();
  const double sim_s = (sim_end - sim_start).to_seconds();
  std::vector<double> lat = latency_ns;
  const double p50 = vhca::percentile(lat, 0.50), p99 = vhca::percentile(lat, 0.99), pmax = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
  const auto& st = sys.hca.cq.stats();
  if (completed != injected || misordered != 0 || st.overflows != 0) ok = false;

  std::printf("vhca-sim%s: %d CQs on %d vectors, moderation %d CQEs / %d us (%s mode), %s polling, Poisson %.2f M CQE/s, seed %llu\n",
              opt.rtl ? " (RTL CQ writer in the loop)" : "", opt.cqs, opt.vectors, opt.mod_count, opt.mod_period_us, opt.mode == vhca::PeriodMode::eqe ? "EQE" : "CQE",
              vhca::poll_context_name(opt.context), opt.rate_mcqe, static_cast<unsigned long long>(opt.seed));
  std::printf("  %-34s %12llu\n", "CQEs injected", static_cast<unsigned long long>(injected));
  std::printf("  %-34s %12llu\n", "CQEs written", static_cast<unsigned long long>(st.cqes));
  std::printf("  %-34s %12llu\n", "CQEs delivered to done callbacks", static_cast<unsigned long long>(completed));
  std::printf("  %-34s %12llu  (by count %llu, by period %llu, at arm %llu)\n", "completion events",
              static_cast<unsigned long long>(st.events), static_cast<unsigned long long>(st.events_by_count),
              static_cast<unsigned long long>(st.events_by_period), static_cast<unsigned long long>(st.events_at_arm));
  std::printf("  %-34s %12llu\n", "EQEs handled", static_cast<unsigned long long>(eqes));
  std::printf("  %-34s %12llu\n", "interrupts", static_cast<unsigned long long>(interrupts));
  std::printf("  %-34s %12.1f k/s\n", "interrupt rate", sim_s > 0 ? double(interrupts) / sim_s / 1e3 : 0.0);
  std::printf("  %-34s %12.2f\n", "CQEs per interrupt", interrupts ? double(completed) / double(interrupts) : 0.0);
  std::printf("  %-34s %12.3f us\n", "CQE write -> done callback p50", p50 / 1e3);
  std::printf("  %-34s %12.3f us\n", "CQE write -> done callback p99", p99 / 1e3);
  std::printf("  %-34s %12.3f us\n", "CQE write -> done callback max", pmax / 1e3);
  std::printf("  %-34s %12.2f %%  (hardirq %.2f, softirq %.2f, thread %.2f, workqueue %.2f)\n", "host CPU busy",
              sim_s > 0 ? cpu.busy_total().to_seconds() / sim_s * 100 : 0.0,
              cpu.busy(vhca::CpuContext::hardirq).to_seconds() / sim_s * 100,
              cpu.busy(vhca::CpuContext::softirq).to_seconds() / sim_s * 100,
              cpu.busy(vhca::CpuContext::thread).to_seconds() / sim_s * 100,
              cpu.busy(vhca::CpuContext::workqueue).to_seconds() / sim_s * 100);
  std::printf("  %-34s %12.3f ms\n", "simulated time", sim_s * 1e3);
  std::printf("  %-34s %12.3f s\n", "wall time", wall_s);
  std::printf("  %-34s %12.0f\n", "simulated CQEs per wall second", wall_s > 0 ? double(completed) / wall_s : 0.0);
  std::printf("  %-34s %12s\n", "every CQE delivered once, in order", ok ? "yes" : "NO");
  return ok ? 0 : 1;
}
