// vhca-sim: the main job. With no arguments (or `traffic`) it runs two HCAs on an IB link with RC
// SEND and RDMA WRITE traffic on QPs that share moderated CQs (explorer/traffic.h). `inject` drives
// the CQ engine alone through the completion-injection port; `cosim` runs the lockstep RTL check.
// Each exits non-zero if any completion was lost, duplicated or reordered (or data damaged), so
// that its run is also a test.
#include <algorithm>
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <systemc>
#include <vector>
#include <unistd.h>  // readlink: the sweep re-runs this executable

#include <fmt/format.h>

#include "model/common/log.h"
#include "cosim/cosim.h"
#include "cosim/fst.h"
#include "cosim/rtl_pipelined_writer.h"
#include "explorer/resources.h"
#include "explorer/soak.h"
#include "explorer/profile.h"
#include "explorer/scenario.h"
#include "explorer/sweep.h"
#include "explorer/traffic.h"
#include "serve/device_server.h"
#include "sim/system.h"

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
  bool rtl = false;  // the Verilated RTL CQ writer inside the HCA (choose_rtl)
  vhca::ArmEvent arm_event = vhca::ArmEvent::moderated;
  double wall_limit_s = 0;
};

const char* const kUsage =
               "usage: vhca-sim [traffic] [--qps N] [--cqs N] [--vectors N] [--msg-size BYTES] [--write-fraction F]\n"
               "                [--rate-kmsg K] [--duration-us US] [--depth N] [--cq-size N] [--count N] [--period-us US]\n"
               "                [--mode eqe|cqe] [--context softirq|thread|workqueue] [--seed S] [--loss RATE] [--rtl]\n"
               "                [--arm-event moderated|at-arm] [--profile baseline|cx5|cx6] [--fault flip-payload] [--queues]\n"
               "                [--log CATS] [--wall-limit SECONDS]\n"
               "       vhca-sim run SCENARIO.yaml [--set key=value ...] [--json FILE] [--csv FILE] [--trace FILE]\n"
               "                [--vcd FILE] [--fst FILE] [--signals GLOB,...] [--record FILE] [--queues] [--check] [--log CATS]\n"
               "                [--wall-limit SECONDS]\n"
               "       vhca-sim sweep SCENARIO.yaml --grid KEY=V1,V2,... [--grid ...] [--set key=value] [--jobs N]\n"
               "                [--out DIR] [--latency COLUMN] [--x COLUMN] [--seeds N] [--emit-jobs]\n"
               "                [--collect]\n"
               "                (KEY: count, period, mode, policy or a dotted key, list items as name[k])\n"
               "       vhca-sim inject [--cqs N] [--vectors N] [--rate MCQE_PER_S] [--duration-us US] [--cq-size N]\n"
               "                [--count N] [--period-us US] [--mode eqe|cqe] [--context softirq|thread|workqueue]\n"
               "                [--seed S] [--rtl] [--arm-event moderated|at-arm] [--log CATEGORIES] [--quiet]\n"
               "                [--wall-limit SECONDS]\n"
               "       vhca-sim cosim [--cqes N] [--seed S] [--vcd FILE] [--fst FILE] [--fault owner|late-event]\n"
               "                [--arm-event moderated|at-arm] [--writer pipelined] [--cqs 64|4096|65536]\n"
               "                [--rtl-init-seed S] [--fault unstable-cqe]\n"
               "       vhca-sim soak [--minutes M] [--episodes N] [--seed S] [--no-packet-faults] [--log CATS]\n"
               "                (randomized traffic and verbs with faults, the S29 checker on)\n"
               "       vhca-sim serve [--socket PATH] [--devices N] [--json FILE] [--timeline FILE]\n"
               "                [--spin-grace-us N] [--port-down DEVICE@[doorbell:N|AT_US][+FOR_US]]... [--quiet]\n"
               "                (the HCAs as devices vhca0, vhca1, ... for verbs programs run with the drop-in\n"
               "                 libibverbs: docs/verbs-programs.md; more than two share an IB switch)\n";

// A run that does not fit the hosts' memory budget or the HCAs' contexts is refused before it
// starts, with the numbers (explorer/resources.h); the caller exits 2.
bool refuse_unfit(const vhca::TrafficOptions& o) {
  const std::string why = vhca::check_resources(o);
  if (why.empty()) return false;
  std::fprintf(stderr, "vhca-sim: %s\n", why.c_str());
  return true;
}

// Bad input: the reason, then the usage; exit 2 (README: exit codes).
[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "vhca-sim: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

// --log CATEGORIES: a word that names no category is bad input.
void enable_log(const std::string& spec) {
  if (const std::string why = vhca::log::enable(spec); !why.empty()) usage("--log: " + why);
}

// An output file named on the command line must be writable before the run starts, not found
// unwritable after it (the file is created empty, or appended to nothing, here).
void require_writable(const char* flag, const std::string& path) {
  if (path.empty()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) usage(std::string(flag) + ": cannot write " + path + ": " + std::strerror(errno));
  ::close(fd);
}

// --fst FILE needs GTKWave's vcd2fst: refused before the run when it is missing.
void require_fst_converter(const std::string& fst) {
  if (fst.empty()) return;
  require_writable("--fst", fst);
  if (const std::string why = vhca::fst_converter_missing(); !why.empty()) {
    std::fprintf(stderr, "vhca-sim: --fst: %s\n", why.c_str());
    std::exit(2);
  }
}

// --help on any command: the usage on standard output, exit 0.
[[noreturn]] void help() {
  std::fputs(kUsage, stdout);
  std::exit(0);
}

// The CQ writer inside both HCAs is the pipelined one: its C++ model, or with --rtl its RTL (an RTL
// a hardware team would take, docs/rtl.md) at the default 65,536 CQs. --pipelined, which chose the
// model before it was the default, is still read; the mirror RTL is retired.
[[noreturn]] void mirror_retired() {
  usage("--rtl-mirror: the mirror RTL (rtl/cq_writer.v) is retired; the HCA's CQ writer is the pipelined one, and --rtl puts its RTL in the loop");
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
  // A finite number in [lo, hi], the whole value (no trailing characters); NaN is refused.
  double number(double lo, double hi) {
    std::string v = value();
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end || !(d >= lo && d <= hi))
      usage(a + ": '" + v + "' is not a number in [" + fmt::format("{}", lo) + ", " + fmt::format("{}", hi) + "]");
    return d;
  }
  // A whole number in [lo, hi]: decimal digits only (no sign, fraction or exponent), no overflow.
  uint64_t integer(uint64_t lo, uint64_t hi) {
    std::string v = value();
    const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
    errno = 0;
    const unsigned long long n = digits ? std::strtoull(v.c_str(), nullptr, 10) : 0;
    if (!digits || errno == ERANGE || n < lo || n > hi)
      usage(a + ": '" + v + "' is not a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return n;
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
  vhca::ArmEvent arm_event() {
    std::string v = value();
    vhca::ArmEvent e;
    if (!vhca::parse_arm_event(v, e)) usage("--arm-event: '" + v + "' is neither moderated nor at-arm");
    return e;
  }
};

vhca::TrafficOptions parse_traffic(int argc, char** argv, int first) {
  vhca::TrafficOptions o;
  // The profile first, wherever it stands: every other flag overrides what it sets.
  for (ArgWalker w{argc, argv, first, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    if (w.a != "--profile") continue;
    const std::string name = w.value();
    const vhca::HcaProfile* p = vhca::find_hca_profile(name);
    if (!p) usage("--profile: '" + name + "' is not one of " + vhca::hca_profile_names());
    vhca::apply_hca_profile(*p, o);
  }
  for (ArgWalker w{argc, argv, first, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    const std::string& a = w.a;
    if (a == "--profile") w.value();  // applied above
    else if (a == "--qps") o.qps = int(w.integer(1, 1000));
    else if (a == "--cqs") o.cqs = int(w.integer(1, 60));
    else if (a == "--vectors") o.vectors = int(w.integer(1, 31));
    else if (a == "--msg-size") o.workload.sizes = {uint32_t(w.integer(1, 1 << 20))};
    else if (a == "--write-fraction") o.workload.write_fraction = w.number(0, 1);
    else if (a == "--rate-kmsg") o.workload.rate_kmsg = w.number(0.001, 1e5);
    else if (a == "--duration-us") o.duration_us = w.number(1, 1e7);
    else if (a == "--depth") o.depth = int(w.integer(1, 4096));
    else if (a == "--cq-size") o.cq_size = int(w.integer(1, 1 << 22));
    else if (a == "--count") o.moderation.mod.count = uint16_t(w.integer(0, 65535));
    else if (a == "--period-us") o.moderation.mod.period_us = uint16_t(w.integer(0, 4095));
    else if (a == "--mode") o.moderation.mod.mode = w.mode();
    else if (a == "--context") o.context = w.context();
    else if (a == "--seed") o.seed = w.integer(0, UINT64_MAX);
    else if (a == "--rtl") o.rtl = true;
    else if (a == "--rtl-mirror") mirror_retired();
    else if (a == "--pipelined") continue;  // the default
    else if (a == "--arm-event") o.arm_event = w.arm_event();
    else if (a == "--loss") o.link.loss_rate = w.number(0, 0.5);
    else if (a == "--fault") {
      const std::string f = w.value();
      if (f != "flip-payload") usage("--fault: '" + f + "' is not flip-payload");
      o.fault_flip_payload = true;
    }
    else if (a == "--quiet") {}
    else if (a == "--help" || a == "-h") help();
    else if (a == "--queues") o.queues = true;
    else if (a == "--log") enable_log(w.value());
    else if (a == "--wall-limit") o.wall_limit_s = w.number(0.001, 1e7);
    else if (!a.empty() && a[0] != '-' && w.i == first)
      usage("unknown command '" + a + "' (commands: traffic, run, sweep, inject, cosim, serve, soak)");
    else usage("traffic: unknown option " + a);
  }
  return o;
}

Options parse(int argc, char** argv) {
  Options o;
  for (ArgWalker w{argc, argv, 2, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    const std::string& a = w.a;
    if (a == "--cqs") o.cqs = int(w.integer(1, 4096));
    else if (a == "--vectors") o.vectors = int(w.integer(1, 31));
    else if (a == "--rate") o.rate_mcqe = w.number(0.001, 1000);
    else if (a == "--duration-us") o.duration_us = w.number(1, 1e7);
    else if (a == "--cq-size") o.cq_size = int(w.integer(1, 1 << 22));
    else if (a == "--count") o.mod_count = int(w.integer(0, 65535));
    else if (a == "--period-us") o.mod_period_us = int(w.integer(0, 4095));
    else if (a == "--seed") o.seed = w.integer(0, UINT64_MAX);
    else if (a == "--quiet") o.quiet = true;
    else if (a == "--help" || a == "-h") help();
    else if (a == "--rtl") o.rtl = true;
    else if (a == "--rtl-mirror") mirror_retired();
    else if (a == "--pipelined") continue;  // the default
    else if (a == "--arm-event") o.arm_event = w.arm_event();
    else if (a == "--log") enable_log(w.value());
    else if (a == "--mode") o.mode = w.mode();
    else if (a == "--context") o.context = w.context();
    else if (a == "--wall-limit") o.wall_limit_s = w.number(0.001, 1e7);
    else usage("inject: unknown option " + a);
  }
  return o;
}

// `vhca-sim cosim`: the lockstep check, then the model alone and the RTL alone on the same stream.
int run_cosim_command(int argc, char** argv) {
  vhca::CosimOptions o;
  o.cqes = 1000000;
  for (ArgWalker w{argc, argv, 2, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    const std::string& a = w.a;
    if (a == "--help" || a == "-h") help();
    else if (a == "--cqes") o.cqes = w.integer(1, uint64_t(1) << 40);
    else if (a == "--seed") o.seed = w.integer(0, UINT64_MAX);
    else if (a == "--vcd") o.vcd = w.value();
    else if (a == "--fst") o.fst = w.value();
    else if (a == "--arm-event") o.arm_event = w.arm_event();
    else if (a == "--writer") {
      const std::string v = w.value();
      if (v == "mirror") usage("--writer mirror: the mirror writer (rtl/cq_writer.v) is retired; the pipelined writer is the HCA's");
      if (v != "pipelined") usage("--writer: '" + v + "' is not pipelined");
    } else if (a == "--cqs") o.num_cqs = uint32_t(w.integer(2, 65536));
    else if (a == "--rtl-init-seed") o.rtl_init_seed = uint32_t(w.integer(1, UINT32_MAX));
    else if (a == "--fault") {
      std::string f = w.value();
      if (f == "owner") o.faults.flip_owner_at_cqe = 1000;
      else if (f == "late-event") o.faults.delay_event_at = 100;
      else if (f == "unstable-cqe") o.faults.unstable_cqe_at = 3;
      else usage("--fault: '" + f + "' is not owner, late-event or unstable-cqe");
    } else usage("cosim: unknown option " + a);
  }
  if (o.cqes == 0) usage("--cqes must be at least 1");
  require_writable("--vcd", o.vcd);
  require_fst_converter(o.fst);
  const auto& sizes = vhca::rtl_pipelined_sizes();
  if (std::find(sizes.begin(), sizes.end(), o.num_cqs) == sizes.end())
    usage("--cqs: the pipelined RTL is built with 64, 4096 or 65536 CQs, not " + std::to_string(o.num_cqs));
  const vhca::CosimReport lock = vhca::run_cosim(o);
  std::printf("vhca-sim cosim: lockstep C++ model vs Verilated RTL CQ writer (pipelined, %u CQs), seed %llu\n%s",
              o.num_cqs, static_cast<unsigned long long>(o.seed),
              lock.summary().c_str());
  if (!lock.vcd_written.empty()) std::printf("waveform around the mismatch: %s\n", lock.vcd_written.c_str());
  if (!lock.fst_written.empty()) std::printf("waveform around the mismatch (FST): %s\n", lock.fst_written.c_str());
  if (!lock.fst_error.empty()) {
    std::fprintf(stderr, "vhca-sim: --fst: %s\n", lock.fst_error.c_str());
    return 2;
  }
  if (!lock.coverage_equal) std::printf("coverage counters of model and RTL DIFFER\n");
  std::printf("lockstep: %.0f cycles/s, %.0f CQEs/s (wall %.2f s)\n", double(lock.cycles) / lock.wall_seconds,
              double(lock.cqes) / lock.wall_seconds, lock.wall_seconds);
  if (lock.mismatches) return 1;
  // A deliberate fault that never happened proves nothing: the run is refused rather than passed.
  const uint64_t fault_at = o.faults.flip_owner_at_cqe ? o.faults.flip_owner_at_cqe : o.faults.delay_event_at;
  if (fault_at || o.faults.unstable_cqe_at) {
    std::fprintf(stderr, "vhca-sim: --fault: the fault was never injected in %llu CQEs (%s); raise --cqes\n",
                 static_cast<unsigned long long>(lock.cqes),
                 o.faults.unstable_cqe_at ? "a CQE must wait at the pins for the third time" : "it comes at the 1,000th CQE or 100th event");
    return 2;
  }
  if (!lock.coverage_equal) return 1;
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
  if (model.cycles == lock.cycles && rtl.cycles == lock.cycles) return 0;
  std::fprintf(stderr, "vhca-sim: cosim: the model alone ran %llu cycles and the RTL alone %llu, the lockstep %llu\n",
               static_cast<unsigned long long>(model.cycles), static_cast<unsigned long long>(rtl.cycles),
               static_cast<unsigned long long>(lock.cycles));
  return 1;
}

}  // namespace

int run_inject(int argc, char** argv);

// `vhca-sim sweep SCENARIO --grid key=v1,v2 ... [--set key=value] [--jobs N] [--out DIR]
// [--emit-jobs] [--collect]`.
int run_sweep_command(int argc, char** argv) {
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) help();
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
    else if (w.a == "--help" || w.a == "-h") help();
    else if (w.a == "--jobs") o.jobs = int(w.integer(1, 256));
    else if (w.a == "--seeds") o.seeds = int(w.integer(1, 1000));
    else if (w.a == "--out") o.out = w.value();
    else if (w.a == "--emit-jobs") o.emit_jobs = true;
    else if (w.a == "--collect") o.collect = true;
    else if (w.a == "--latency") o.latency_column = w.value();
    else if (w.a == "--x") o.x_column = w.value();
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
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) help();
  if (argc < 3) usage("run: which scenario file?");
  const std::string path = argv[2];
  if (!path.empty() && path[0] == '-') usage("run: the scenario file comes first (run SCENARIO.yaml [options]), not " + path);
  std::vector<std::string> sets;
  std::string json, csv, trace, record, vcd, fst, signals;
  bool queues = false, check = false;
  double wall_limit_s = 0;
  for (ArgWalker w{argc, argv, 3, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    if (w.a == "--help" || w.a == "-h") help();
    else if (w.a == "--set") sets.push_back(w.value());
    else if (w.a == "--queues") queues = true;
    else if (w.a == "--check") check = true;
    else if (w.a == "--json") json = w.value();
    else if (w.a == "--csv") csv = w.value();
    else if (w.a == "--trace") trace = w.value();
    else if (w.a == "--record") record = w.value();
    else if (w.a == "--vcd") vcd = w.value();
    else if (w.a == "--fst") fst = w.value();
    else if (w.a == "--signals") signals = w.value();
    else if (w.a == "--log") enable_log(w.value());
    else if (w.a == "--wall-limit") wall_limit_s = w.number(0.001, 1e7);
    else usage("run: unknown option " + w.a);
  }
  vhca::TrafficOptions o;
  try {
    o = vhca::load_scenario(path, sets);
  } catch (const vhca::ScenarioError& e) {
    std::fprintf(stderr, "vhca-sim: %s\n", e.what());
    return 2;
  }
  for (const auto& [flag, file] : {std::pair<const char*, const std::string*>{"--json", &json}, {"--csv", &csv},
                                  {"--trace", &trace}, {"--record", &record}, {"--vcd", &vcd}})
    require_writable(flag, *file);
  require_fst_converter(fst);
  o.trace_path = trace;
  o.record_path = record;
  o.vcd_path = vcd;
  o.fst_path = fst;
  o.queues = queues;
  o.check = check;
  o.wall_limit_s = wall_limit_s;
  if (!signals.empty() && vcd.empty() && fst.empty())
    usage("run: --signals chooses what --vcd FILE (or --fst FILE) dumps; give one of them too");
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
  if (refuse_unfit(o)) return 2;
  const vhca::TrafficResult r = vhca::run_traffic(o);
  vhca::print_summary(o, r);
  vhca::print_queues(r);
  if (!json.empty() && !write_file(json, vhca::results_json(o, r))) return 2;
  if (!csv.empty() && !write_file(csv, vhca::results_csv(o, r))) return 2;
  return r.ok ? 0 : 1;
}

// --port-down DEVICE@AT_US[+FOR_US] or DEVICE@doorbell:N[+FOR_US], DEVICE as vhcaN or N.
vhca::ServeOptions::PortDown parse_port_down(const std::string& v) {
  const auto why = [&v](const char* what) {
    usage("serve: --port-down " + v + ": " + what +
          " (DEVICE@AT_US[+FOR_US] or DEVICE@doorbell:N[+FOR_US], e.g. vhca1@100+50)");
  };
  const size_t at = v.find('@');
  if (at == std::string::npos) why("no '@'");
  std::string dev = v.substr(0, at);
  if (dev.rfind("vhca", 0) == 0) dev = dev.substr(4);
  vhca::ServeOptions::PortDown p;
  char* end = nullptr;
  errno = 0;
  const unsigned long d = std::strtoul(dev.c_str(), &end, 10);
  if (dev.empty() || *end || errno || d >= vhca::SystemConfig::kMaxHosts) why("the device is not vhca0..vhca63");
  p.device = uint32_t(d);
  size_t from = at + 1;
  const bool by_doorbell = v.compare(from, 9, "doorbell:") == 0;
  if (by_doorbell) from += 9;
  const size_t plus = v.find('+', from);
  const std::string when = v.substr(from, plus == std::string::npos ? std::string::npos : plus - from);
  const std::string for_us = plus == std::string::npos ? "0" : v.substr(plus + 1);
  errno = 0;
  if (by_doorbell) {
    const unsigned long long n = std::strtoull(when.c_str(), &end, 10);
    if (when.empty() || when[0] == '-' || *end || errno || n == 0) why("the doorbell count is not a whole number from 1");
    p.at_doorbell = n;
  }
  for (auto [text, out] : {std::pair{&when, &p.at_us}, std::pair{&for_us, &p.for_us}}) {
    if (by_doorbell && text == &when) continue;
    errno = 0;
    *out = std::strtod(text->c_str(), &end);
    if (text->empty() || *end || errno || !(*out >= 0 && *out <= 1e9)) why("a time is not a number of microseconds in 0..1e9");
  }
  return p;
}

// `vhca-sim serve`: the device server for verbs programs (serve/device_server.h).
int run_serve_command(int argc, char** argv) {
  vhca::ServeOptions o;
  for (ArgWalker w{argc, argv, 2, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    const std::string& a = w.a;
    if (a == "--help" || a == "-h") help();
    else if (a == "--socket") o.socket_path = w.value();
    else if (a == "--devices") o.devices = uint32_t(w.integer(1, vhca::SystemConfig::kMaxHosts));
    else if (a == "--port-down") o.port_downs.push_back(parse_port_down(w.value()));
    else if (a == "--quiet") o.quiet = true;
    else if (a == "--json") o.json_path = w.value();
    else if (a == "--timeline") o.timeline_path = w.value();
    else if (a == "--spin-grace-us") o.spin_grace = std::chrono::microseconds(w.integer(1, 60'000'000));
    else usage("serve: unknown option " + a);
  }
  for (const vhca::ServeOptions::PortDown& p : o.port_downs)
    if (p.device >= o.devices)
      usage("serve: --port-down names vhca" + std::to_string(p.device) + ", but there are " + std::to_string(o.devices) +
            " devices (--devices)");
  return vhca::run_device_server(o);
}

// `vhca-sim soak [--minutes M] [--episodes N] [--seed S]`: randomized traffic and verbs with
// faults, the invariant checker on (explorer/soak.h).
int run_soak_command(int argc, char** argv) {
  vhca::SoakOptions o;
  for (ArgWalker w{argc, argv, 2, {}}; w.i < argc; ++w.i) {
    w.a = argv[w.i];
    const std::string& a = w.a;
    if (a == "--help" || a == "-h") help();
    else if (a == "--minutes") o.minutes = w.number(0.001, 1e4);
    else if (a == "--episodes") o.episodes = w.integer(1, uint64_t(1) << 40);
    else if (a == "--no-packet-faults") o.packet_faults = false;
    else if (a == "--seed") o.seed = w.integer(0, UINT64_MAX);
    else if (a == "--log") enable_log(w.value());
    else usage("soak: unknown option " + a);
  }
  const vhca::SoakReport r = vhca::run_soak(o);
  std::fputs(r.text().c_str(), stdout);
  return r.ok() ? 0 : 1;
}

int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "cosim") return run_cosim_command(argc, argv);
  if (command == "inject") return run_inject(argc, argv);
  if (command == "run") return run_scenario_command(argc, argv);
  if (command == "sweep") return run_sweep_command(argc, argv);
  if (command == "serve") return run_serve_command(argc, argv);
  if (command == "soak") return run_soak_command(argc, argv);
  const int first = command == "traffic" ? 2 : 1;
  const vhca::TrafficOptions o = parse_traffic(argc, argv, first);
  if (refuse_unfit(o)) return 2;
  const vhca::TrafficResult r = vhca::run_traffic(o);
  vhca::print_summary(o, r);
  vhca::print_queues(r);
  return r.ok ? 0 : 1;
}

// `vhca-sim inject`: the CQ engine alone. A shorthand for a scenario whose arrivals are
// completions injected into the CQs (`arrival.kind: cqe`, traces/cq-engine.yaml): one QP's worth
// of receive completions per CQ, Poisson over all of them.
int run_inject(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  vhca::TrafficOptions o;
  o.name = "inject";
  o.qps = opt.cqs;
  o.cqs = opt.cqs;
  o.vectors = opt.vectors;
  o.cq_size = opt.cq_size;
  o.depth = 16;  // the QPs carry no work requests
  o.duration_us = opt.duration_us;
  o.moderation.mod = vhca::CqModeration{uint16_t(opt.mod_count), uint16_t(opt.mod_period_us), opt.mode};
  o.context = opt.context;
  o.seed = opt.seed;
  o.rtl = opt.rtl;
  o.arm_event = opt.arm_event;
  o.workload.sizes = {1024};
  o.workload.write_fraction = 0;
  o.workload.read_fraction = 0;
  o.workload.arrival = vhca::Arrival::poisson;
  o.workload.rate_kmsg = opt.rate_mcqe * 1000;
  o.workload.inject_cqes = true;
  o.wall_limit_s = opt.wall_limit_s;
  if (refuse_unfit(o)) return 2;
  const vhca::TrafficResult r = vhca::run_traffic(o);
  if (!opt.quiet) vhca::print_summary(o, r);
  return r.ok ? 0 : 1;
}
