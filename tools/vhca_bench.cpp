// vhca-bench: the model's cost against the SystemC kernel floor, measured in one run.
//
// Phases (each in the one elaborated System; docs/performance.md defines them):
//   floor      one SC_METHOD re-notifying itself one cycle later (the cheapest timed activation)
//   cqe        completion records through the CQ writer, DMA engine, PCIe link and host memory
//              (an overrun-ignore CQ: no events), one record per cycle
//   event      one CQE per interrupt: CQE -> EQE -> MSI-X -> the host's IRQ handler, EQ dispatch,
//              the CQ handler polling its CQE and re-arming (device and host side together)
//   interrupt  the same through the driver's own path: the CQ pool's softirq poller polls the CQE,
//              runs its done callback and re-arms; the host side's share is reported apart
//   message    64-byte RC SENDs through the loopback port: doorbell, WQE fetch, payload read,
//              packet, receive WQE, responder write, ACK, both CQEs
//   scale_K    the cqe phase with records spread round robin over K CQs (K = 1 .. 65,024)
//   paced_K    the same at one record every two cycles, the rate a single CQ sustains (its CQEs
//              go one every two cycles: the pipeline's hazard stall) and under the PCIe link's
//              for every K: the cost per CQE against K at equal load
//   cq_create  CREATE_CQ through the driver (command block, firmware, CQ writer)
//   moderated  bursts of 32 records into a CQ moderated at 32 CQEs an event, taken by the driver's
//              path: the CQ engine with its events as moderation spreads them (the host side apart)
// and, before elaboration, the start-up: constructing a System whose HCA has 64 K CQs.
//
// --instructions runs the same phases under callgrind (valgrind) and reports instructions per
// item, which repeat exactly where wall time drifts. --quick runs small counts (CI proves the
// bench works; it asserts nothing about speed).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <systemc>
#include <vector>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(x)
#endif

#include "firmware-shim/cq_pool.h"
#include "firmware-shim/verbs.h"
#include "sim/fabric.h"
#include "sim/system.h"

namespace {

struct Floor : sc_core::sc_module {
  SC_HAS_PROCESS(Floor);
  explicit Floor(const sc_core::sc_module_name& n) : sc_module(n) {
    SC_METHOD(tick);
    sensitive << ev;
    dont_initialize();
  }
  void tick() {
    if (++count < target) ev.notify(2, sc_core::SC_NS);
  }
  sc_core::sc_event ev;
  uint64_t count = 0, target = 0;
};

struct PhaseResult {
  std::string name;
  uint64_t items = 0;
  double wall_s = 0;
  double instructions = 0;  // with --instructions
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

struct Options {
  bool quick = false, instructions = false, child = false;
};

struct HostSide {
  uint64_t activations = 0, interrupts = 0, events = 0;
  double work = 0;
};

struct Report {
  std::vector<PhaseResult> phases;
  double startup_s = 0, startup_mib = 0, floor_lo = 0, floor_hi = 0;
  uint32_t num_cqs = 0;
  // The host side of the phases through the driver's path (interrupt, moderated): its cores'
  // activations, the interrupts taken and the CQ events raised, and (under callgrind) the
  // instructions of the work they ran less the PCIe link's part of its doorbells.
  std::map<std::string, HostSide> host;
  // The floor's own notification (under callgrind): a floor is the kernel's share of an
  // activation plus the notification that caused it, which the host's work counts already.
  double floor_notify = 0;
};

// Runs `body` as one measured phase: instructions are zeroed before and dumped after (under
// callgrind), wall time is taken around it. The body returns the items it processed.
template <typename Body>
PhaseResult phase(const std::string& name, Body body) {
  CALLGRIND_ZERO_STATS;
  const auto t0 = std::chrono::steady_clock::now();
  PhaseResult r{name, body(), 0, 0};
  r.wall_s = seconds_since(t0);
  CALLGRIND_DUMP_STATS_AT(name.c_str());
  return r;
}

// The record of a 64-byte SEND received: every phase's completions.
vhca::CompletionRecord receive_record(uint32_t cqn, uint64_t wr_id) {
  vhca::CompletionRecord r;
  r.cqn = cqn;
  r.wr_id = wr_id;
  r.opcode = vhca::cqe::kRespSend;
  r.byte_cnt = 64;
  return r;
}

// Records for `cqs` CQs, round robin, one every `gap` cycles, in chunks, until every CQE is
// visible in the ring at `ring` (in host memory).
uint64_t inject_round_robin(vhca::System& sys, const std::vector<uint32_t>& cqns, uint64_t n, uint64_t ring,
                            uint64_t gap = 1) {
  vhca::CompletionRecord r = receive_record(0, 0);
  const uint64_t before = sys.hca.cq.stats().cqes, chunk = 1000;
  for (uint64_t done = 0; done < n; done += chunk) {
    const uint64_t base = sys.cycle() + 1;
    for (uint64_t i = 0; i < chunk && done + i < n; ++i) {
      r.wr_id = done + i;
      r.cqn = cqns[(done + i) % cqns.size()];
      sys.hca.inject(r, base + i * gap);
    }
    sys.wait_cycle(base + chunk * gap);
  }
  // Until every record is written: the link (88 bytes a CQE on the wire) cannot take one every
  // cycle, so the writer is held by PCIe credits and the records queue behind it.
  while (sys.hca.cq.stats().cqes - before < n && sys.hca.cq.stats().dropped == 0) sys.wait_cycle(sys.cycle() + 1000);
  // The last CQE has landed, and the host looks: writes into memory nothing watches land when
  // someone looks (tlm/pending_writes.h), so the phase pays for landing its own CQEs.
  const sc_core::sc_time landed = sys.link.posted_landed_by(true);
  if (landed > sc_core::sc_time_stamp()) sc_core::wait(landed - sc_core::sc_time_stamp());
  uint8_t first_byte = 0;
  sys.memory.read(ring, &first_byte, 1);
  return sys.hca.cq.stats().cqes - before;
}

// The host's counters at a phase's start, and what they moved by since.
struct HostMark {
  uint64_t activations = 0, interrupts = 0, events = 0;
};

HostMark host_mark(vhca::System& sys) {
  return HostMark{sys.cpu.core_activations(), sys.cpu.interrupts(), sys.hca.cq.stats().events};
}

HostSide host_since(vhca::System& sys, const HostMark& m) {
  const HostMark now = host_mark(sys);
  return HostSide{now.activations - m.activations, now.interrupts - m.interrupts, now.events - m.events, 0};
}

// CQEs an event in the moderated phase: its CQ's moderation count.
constexpr uint64_t kBurst = 32;

// A control op into the CQ writer's control stream, waiting a cycle at a time while it is full.
void push_control(vhca::System& sys, const vhca::CqControl& c) {
  vhca::Stream<vhca::CqControl>& ctl = sys.hca.cq.s_ctl.stream();
  while (!ctl.can_push(sys.cycle())) sys.wait_cycle(sys.cycle() + 1);
  ctl.push(c, sys.cycle());
}

// `k` overrun-ignore CQs loaded straight into the CQ writer through its control stream (the
// firmware's path without the command round trip, so that 64 K of them load in a moment), the
// highest CQNs of the table, all writing one shared ring: the cost measured is the writer's.
std::vector<uint32_t> load_cqs(vhca::System& sys, uint32_t k, uint64_t ring, uint64_t dbr, uint32_t eqn) {
  std::vector<uint32_t> cqns;
  const uint32_t top = sys.hca.cq.config().num_cqs;
  for (uint32_t cqn = top - k; cqn < top; ++cqn) {
    vhca::CqControl c;
    c.op = vhca::CqControl::Op::create;
    c.cqn = cqn;
    c.cfg.log_size = 6;
    c.cfg.base = ring;
    c.cfg.dbr = dbr;
    c.cfg.eqn = eqn;
    c.cfg.overrun_ignore = true;
    push_control(sys, c);
    cqns.push_back(cqn);
  }
  sys.wait_cycle(sys.cycle() + 4);
  return cqns;
}

int run_phases(const Options& opt, Report& rep) {
  const uint64_t n = opt.quick ? 20000 : 1000000;
  // Start-up: a System whose HCA has a 64 K-entry CQ context table.
  const double rss0 = rss_mib();
  const auto t_build = std::chrono::steady_clock::now();
  Floor floor("floor");
  vhca::SystemConfig cfg;
  cfg.wall_clock_watch = false;  // instruction counts repeat exactly (sim/system.h)
  vhca::System sys(cfg);
  rep.startup_s = seconds_since(t_build);
  rep.startup_mib = rss_mib() - rss0;
  rep.num_cqs = sys.hca.cq.config().num_cqs;
  std::vector<PhaseResult>& results = rep.phases;
  bool ok = true;
  sys.run(
      [&] {
        // The floor: the median of three runs by wall time (one run alone swung by 2x on a
        // 2-core machine); the middle run is the one measured for instructions.
        double runs[3];
        for (double& w : runs) {
          floor.count = 0;
          floor.target = n;
          const auto t0 = std::chrono::steady_clock::now();
          floor.ev.notify(sc_core::SC_ZERO_TIME);
          sc_core::wait(sc_core::sc_time(2.0 * double(n) + 10, sc_core::SC_NS));
          w = seconds_since(t0);
        }
        PhaseResult f = phase("floor", [&] {
          floor.count = 0;
          floor.target = n;
          floor.ev.notify(sc_core::SC_ZERO_TIME);
          sc_core::wait(sc_core::sc_time(2.0 * double(n) + 10, sc_core::SC_NS));
          return n;
        });
        std::sort(std::begin(runs), std::end(runs));
        f.wall_s = runs[1];
        rep.floor_lo = runs[0];
        rep.floor_hi = runs[2];
        results.push_back(f);

        if (!sys.driver.boot().ok()) {
          ok = false;
          return;
        }
        vhca::Cq* cq = nullptr;
        if (vhca::verbs::create_cq(sys.driver, 4096, 0, &cq, {}, vhca::cmd::kCqFlagOverrunIgnore) != 0) {
          ok = false;
          return;
        }
        results.push_back(phase("cqe", [&] { return inject_round_robin(sys, {cq->cqn}, n, cq->buf); }));

        // One CQE per interrupt: the CQ handler polls and re-arms, records 5 us apart.
        vhca::Cq* ecq = nullptr;
        vhca::verbs::create_cq(sys.driver, 64, 0, &ecq);
        uint64_t handled = 0;
        vhca::verbs::set_comp_handler(*ecq, [&](vhca::Cq& c) {
          vhca::Wc wc[4];
          handled += uint64_t(vhca::verbs::poll_cq(c, 4, wc, vhca::CpuContext::hardirq));
          vhca::verbs::req_notify_cq(c, vhca::kNotifyNext, vhca::CpuContext::hardirq);
        });
        vhca::verbs::req_notify_cq(*ecq, vhca::kNotifyNext);
        const uint64_t interrupts0 = sys.cpu.interrupts();
        results.push_back(phase("event", [&] {
          vhca::CompletionRecord r = receive_record(ecq->cqn, 0);
          const uint64_t events = n / 20;
          for (uint64_t i = 0; i < events; ++i) {
            r.wr_id = i;
            sys.hca.inject_now(r);
            sc_core::wait(sc_core::sc_time(5, sc_core::SC_US));
          }
          return handled;
        }));
        ok &= handled == n / 20 && sys.cpu.interrupts() - interrupts0 >= handled;

        // The driver's own path, one CQE per interrupt: hard IRQ and EQ dispatch, the softirq
        // poller polling the CQE, its done callback, the re-arm (CqPool, as a kernel consumer).
        vhca::CqPool pool(sys.driver);
        vhca::IbCq* icq = pool.alloc_cq(64, 0, vhca::PollContext::softirq);
        uint64_t done = 0;
        vhca::CqeDone on_done;
        on_done.done = [&](vhca::IbCq&, const vhca::Wc&) { ++done; };
        pool.track(on_done);
        const HostMark interrupt0 = host_mark(sys);
        results.push_back(phase("interrupt", [&] {
          const vhca::CompletionRecord r = receive_record(icq->cq->cqn, vhca::CqPool::wr_id_of(on_done));
          for (uint64_t i = 0; i < n / 20; ++i) {
            sys.hca.inject_now(r);
            sc_core::wait(sc_core::sc_time(5, sc_core::SC_US));
          }
          return done;
        }));
        const HostSide& interrupt = rep.host["interrupt"] = host_since(sys, interrupt0);
        ok &= done == n / 20 && interrupt.interrupts == done;

        namespace fb = vhca::fabric;
        vhca::Pd* pd = fb::alloc_pd(sys.driver);
        vhca::Cq* scq = fb::create_cq(sys.driver, 1024);
        vhca::Cq* rcq = fb::create_cq(sys.driver, 1024);
        vhca::Qp* a = fb::create_qp(*pd, scq, scq, vhca::QpType::rc, 256);
        vhca::Qp* b = fb::create_qp(*pd, rcq, rcq, vhca::QpType::rc, 256);
        fb::connect_rc(*a, *b);
        fb::Buffer buf = fb::reg_buffer(*pd, 1 << 16);
        results.push_back(phase("message", [&] {
          vhca::SendWr w;
          w.opcode = vhca::sqwqe::kSend;
          w.flags = vhca::kSendSignaled;
          w.sg_list = {buf.sge(0, 64)};
          const std::vector<vhca::SendWr> sends(32, w);
          const std::vector<vhca::RecvWr> recvs(32, vhca::RecvWr{0, {buf.sge(4096, 64)}});
          vhca::Wc wc[64];
          uint64_t sent = 0, received = 0, posted_recv = 0, posted_send = 0;
          const uint64_t messages = n / 10 / 32 * 32;
          while (sent < messages || received < messages) {
            // Receives ahead of the sends (no RNR), both rings kept full.
            if (posted_recv < messages && uint16_t(b->rq_pi - b->rq_ci) + recvs.size() <= b->rq_depth) {
              vhca::verbs::post_recv(*b, recvs);
              posted_recv += recvs.size();
            }
            if (posted_send < posted_recv && uint16_t(a->sq_pi - a->sq_ci) + sends.size() <= a->sq_depth) {
              vhca::verbs::post_send(*a, sends);
              posted_send += sends.size();
            }
            int got = vhca::verbs::poll_cq(*scq, 64, wc);
            sent += uint64_t(std::max(got, 0));
            int rgot = vhca::verbs::poll_cq(*rcq, 64, wc);
            received += uint64_t(std::max(rgot, 0));
            if (got <= 0 && rgot <= 0) sc_core::wait(sc_core::sc_time(200, sc_core::SC_NS));
          }
          return received;
        }));

        // Cost per CQE against the number of CQs in use.
        const uint64_t ring = sys.memory.allocate(4096), dbr = sys.memory.allocate(64);
        const uint32_t eqn = sys.hca.cq.context(ecq->cqn).cfg.eqn;  // the completion EQ
        const std::vector<uint32_t> sizes = opt.quick ? std::vector<uint32_t>{1, 64, 4096}
                                                      : std::vector<uint32_t>{1, 64, 4096, 65024};
        for (uint32_t k : sizes) {
          const std::vector<uint32_t> cqns = load_cqs(sys, k, ring, dbr, eqn);
          results.push_back(phase("scale_" + std::to_string(k), [&] { return inject_round_robin(sys, cqns, n, ring); }));
          results.push_back(phase("paced_" + std::to_string(k), [&] { return inject_round_robin(sys, cqns, n, ring, 2); }));
          for (uint32_t cqn : cqns) {  // unload: the next size loads its own
            vhca::CqControl c;
            c.op = vhca::CqControl::Op::destroy;
            c.cqn = cqn;
            push_control(sys, c);
          }
          sys.wait_cycle(sys.cycle() + 4);
        }

        const uint64_t creates = opt.quick ? 200 : 2000;
        results.push_back(phase("cq_create", [&] {
          uint64_t made = 0;
          for (uint64_t i = 0; i < creates; ++i) {
            vhca::Cq* c = nullptr;
            if (vhca::verbs::create_cq(sys.driver, 64, 0, &c) == 0) ++made;
          }
          return made;
        }));
        ok &= results.back().items == creates;

        // The CQ engine with its events as moderation spreads them: bursts of 32 records, one a
        // cycle, into a CQ moderated at 32 CQEs an event (count 32, period 16 us, EQE mode) of
        // 1,024 entries (the cq-engine scenario's CQs), taken by the driver's path as in the
        // interrupt phase. Bursts 20 us apart, so the host has polled and re-armed before the
        // next: one event a burst.
        const vhca::CqModeration every_32{32, 16, vhca::PeriodMode::eqe};
        vhca::IbCq* mcq = pool.alloc_cq(1024, 0, vhca::PollContext::softirq, every_32);
        const HostMark moderated0 = host_mark(sys);
        const uint64_t moderated_cqes = n / 20 / kBurst * kBurst;
        done = 0;
        results.push_back(phase("moderated", [&] {
          const vhca::CompletionRecord r = receive_record(mcq->cq->cqn, vhca::CqPool::wr_id_of(on_done));
          for (uint64_t i = 0; i < moderated_cqes; i += kBurst) {
            const uint64_t base = sys.cycle() + 1;
            for (uint64_t k = 0; k < kBurst; ++k) sys.hca.inject(r, base + k);
            sc_core::wait(sc_core::sc_time(20, sc_core::SC_US));
          }
          return done;
        }));
        const HostSide& moderated = rep.host["moderated"] = host_since(sys, moderated0);
        ok &= done == moderated_cqes && moderated.events == moderated_cqes / kBurst &&
              moderated.interrupts == moderated.events;
      },
      sc_core::sc_time(1000, sc_core::SC_SEC));
  return ok ? 0 : 1;
}

// The child under callgrind prints its report as lines; the parent reads them back.
void print_lines(const Report& rep) {
  std::printf("STARTUP %.6f %.1f %u\n", rep.startup_s, rep.startup_mib, rep.num_cqs);
  std::printf("FLOOR_RANGE %.9f %.9f\n", rep.floor_lo, rep.floor_hi);
  for (const auto& [name, h] : rep.host)
    std::printf("HOST %s %llu %llu %llu\n", name.c_str(), static_cast<unsigned long long>(h.activations),
                static_cast<unsigned long long>(h.interrupts), static_cast<unsigned long long>(h.events));
  for (const auto& p : rep.phases)
    std::printf("PHASE %s %llu %.9f\n", p.name.c_str(), static_cast<unsigned long long>(p.items), p.wall_s);
}

void parse_lines(const std::string& text, Report& rep) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string tag;
    l >> tag;
    if (tag == "PHASE") {
      PhaseResult p;
      l >> p.name >> p.items >> p.wall_s;
      rep.phases.push_back(p);
    } else if (tag == "STARTUP") {
      l >> rep.startup_s >> rep.startup_mib >> rep.num_cqs;
    } else if (tag == "FLOOR_RANGE") {
      l >> rep.floor_lo >> rep.floor_hi;
    } else if (tag == "HOST") {
      std::string name;
      HostSide h;
      l >> name >> h.activations >> h.interrupts >> h.events;
      rep.host[name] = h;
    }
  }
}

// One phase's dump: its total, and the inclusive cost of the calls to functions named by each
// needle (the dump is written with uncompressed names: "cfn=NAME", "calls=...", then the call's
// cost as the line's last number).
struct PhaseDump {
  double total = -1;
  std::map<std::string, double> calls_to;
};

std::map<std::string, PhaseDump> callgrind_dumps(const std::string& dir, const std::vector<std::string>& needles) {
  std::map<std::string, PhaseDump> dumps;
  FILE* ls = popen(("ls " + dir).c_str(), "r");
  char name[512];
  while (ls && std::fgets(name, sizeof name, ls)) {
    std::string file = dir + "/" + std::string(name, strcspn(name, "\n"));
    std::ifstream f(file);
    std::string line, phase, callee;
    PhaseDump d;
    bool cost_next = false;
    while (std::getline(f, line)) {
      const std::string trigger = "desc: Trigger: Client Request: ";
      if (line.rfind(trigger, 0) == 0) phase = line.substr(trigger.size());
      if (line.rfind("summary: ", 0) == 0) d.total = std::atof(line.c_str() + 9);
      if (cost_next) {
        cost_next = false;
        if (!callee.empty()) d.calls_to[callee] += std::atof(line.c_str() + line.find_last_of(' ') + 1);
      } else if (line.rfind("cfn=", 0) == 0) {
        callee.clear();
        for (const std::string& n : needles)
          if (line.find(n) != std::string::npos) callee = n;
      } else if (line.rfind("calls=", 0) == 0) {
        cost_next = true;
      }
    }
    if (!phase.empty() && d.total >= 0) dumps[phase] = d;
  }
  if (ls) pclose(ls);
  return dumps;
}

// The kernel work the host's cores ran, less the PCIe link's part of its doorbells.
const char* const kHostWork = "vhca::CpuCore::run()";
const char* const kHostMmio = "vhca::PcieLink::Entry<1>::b_transport(";  // reached through the socket: never inlined
// A timed notification: the floor's one per activation.
const char* const kTimedNotify = "sc_core::sc_event::notify(sc_core::sc_time const&)";

// The cost per CQE against the number of CQs: the largest of the phases named `prefix`K over the
// smallest (instructions when counted, else wall time).
void print_spread(const Report& rep, const std::string& prefix, const char* how, bool instructions) {
  double lo = 0, hi = 0;
  std::string lo_name, hi_name;
  for (const auto& p : rep.phases) {
    if (p.items == 0 || p.name.rfind(prefix, 0) != 0) continue;
    const double v = (instructions ? p.instructions : p.wall_s) / double(p.items);
    if (lo_name.empty() || v < lo) lo = v, lo_name = p.name;
    if (hi_name.empty() || v > hi) hi = v, hi_name = p.name;
  }
  if (lo_name.empty() || lo <= 0) return;
  std::printf("cost per CQE against the CQs in use, %s: %.2fx (%s over %s)\n", how, hi / lo, hi_name.c_str(),
              lo_name.c_str());
}

// The moderated phase apart: its host side (as the interrupt phase's, by the same accounting) and
// what is left, the device's share, per CQE: the CQ engine with its events spread by moderation.
void print_moderated(const Report& rep, double floor_ir, double kernel_share, bool instructions) {
  const auto it = rep.host.find("moderated");
  const auto phase = std::find_if(rep.phases.begin(), rep.phases.end(),
                                  [](const PhaseResult& p) { return p.name == "moderated"; });
  if (it == rep.host.end() || phase == rep.phases.end() || phase->items == 0 || it->second.events == 0) return;
  const HostSide& h = it->second;
  const double interrupts = double(std::max<uint64_t>(h.interrupts, 1));
  std::printf("moderated phase: %.1f CQEs an event, %.2f core activations per interrupt",
              double(phase->items) / double(h.events), double(h.activations) / interrupts);
  if (instructions && h.work > 0) {
    const double host = h.work + double(h.activations) * kernel_share;
    const double device = (phase->instructions - host) / double(phase->items);
    std::printf("; the host side %.1f floors an interrupt", host / interrupts / floor_ir);
    std::printf("; the device side (record -> CQE -> event -> EQE -> MSI-X, and the re-arm; the bench's "
                "injections included) %.0f instructions a CQE: %.2f floors",
                device, device / floor_ir);
  }
  std::printf("\n");
}

void print_report(const Report& rep, bool instructions) {
  const PhaseResult* floor = nullptr;
  for (const auto& p : rep.phases)
    if (p.name == "floor") floor = &p;
  if (!floor || floor->items == 0) return;
  const double floor_ns = floor->wall_s / double(floor->items) * 1e9;
  const double floor_ir = floor->instructions / double(floor->items);
  std::printf("start-up: a System with a %u-CQ HCA in %.1f ms, +%.1f MiB resident\n", rep.num_cqs,
              rep.startup_s * 1e3, rep.startup_mib);
  std::printf("kernel floor: %.1f ns per timed SC_METHOD activation (median of 3: %.1f .. %.1f)%s\n", floor_ns,
              rep.floor_lo / double(floor->items) * 1e9, rep.floor_hi / double(floor->items) * 1e9,
              instructions ? "" : "");
  if (instructions) std::printf("              %.0f instructions per activation (callgrind)\n", floor_ir);
  std::printf("\n%-12s %10s %12s %10s", "phase", "items", "wall ns/item", "floors");
  if (instructions) std::printf(" %14s %10s", "instr/item", "floors");
  std::printf("\n");
  for (const auto& p : rep.phases) {
    if (p.items == 0) continue;
    const double ns = p.wall_s / double(p.items) * 1e9;
    std::printf("%-12s %10llu %12.1f %10.2f", p.name.c_str(), static_cast<unsigned long long>(p.items), ns,
                ns / floor_ns);
    if (instructions) {
      const double ir = p.instructions / double(p.items);
      std::printf(" %14.0f %10.2f", ir, ir / floor_ir);
    }
    std::printf("\n");
  }
  print_spread(rep, "scale_", "at the writer's full rate", instructions);
  print_spread(rep, "paced_", "at equal load", instructions);
  // The kernel's share of a host core's activation: a floor less the floor's own notification,
  // which the host's work (the notifications that wake the cores included) counts already.
  const double kernel_share = floor_ir - rep.floor_notify;
  const auto interrupt = rep.host.find("interrupt");
  if (interrupt != rep.host.end() && interrupt->second.interrupts > 0) {
    const HostSide& h = interrupt->second;
    const double per_irq = double(h.activations) / double(h.interrupts);
    std::printf("\nhost side of the interrupt phase: %.2f core activations per interrupt, no thread", per_irq);
    // Its work (under the cores' activations, less the link's part of the doorbells) and, for each
    // activation, the kernel's share.
    if (instructions && h.work > 0) {
      const double work = h.work / double(h.interrupts);
      std::printf("; %.0f instructions of work (the cores' wake-ups included) and the kernel's %.0f an "
                  "activation (a floor less its notification): %.1f floors",
                  work, kernel_share, (work + per_irq * kernel_share) / floor_ir);
    }
    std::printf("\n");
  }
  print_moderated(rep, floor_ir, kernel_share, instructions);
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") opt.quick = true;
    else if (a == "--instructions") opt.instructions = true;
    else if (a == "--callgrind-child") opt.child = true;
    else if (a == "--help" || a == "-h") {
      std::printf("usage: vhca-bench [--quick] [--instructions]\n"
                  "  --quick         small counts (CI: proves the bench runs)\n"
                  "  --instructions  also count instructions per item under callgrind (needs valgrind)\n");
      return 0;
    } else {
      std::fprintf(stderr, "vhca-bench: unknown option %s (try --help)\n", a.c_str());
      return 2;
    }
  }
  if (!opt.instructions) {
    Report rep;
    const int rc = run_phases(opt, rep);
    if (opt.child)
      print_lines(rep);
    else
      print_report(rep, false);
    return rc;
  }
  // Under callgrind: the same phases in a child process, one dump per phase.
  char dir_template[] = "/tmp/vhca-bench-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) return 1;
  const std::string cmd = std::string("valgrind --tool=callgrind --compress-strings=no --callgrind-out-file=") + dir +
                          "/cg.%p " + argv[0] + (opt.quick ? " --quick" : "") + " --callgrind-child 2>/dev/null";
  FILE* child = popen(cmd.c_str(), "r");
  if (!child) return 1;
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, child)) text += buf;
  const int status = pclose(child);
  Report rep;
  parse_lines(text, rep);
  if (rep.phases.empty()) {
    std::fprintf(stderr, "vhca-bench: the callgrind run printed no phase (is valgrind installed?)\n");
    return 1;
  }
  const auto dumps = callgrind_dumps(dir, {kHostWork, kHostMmio, kTimedNotify});
  bool counted = true;
  // The instructions of the calls to `callee` in a phase's dump (0 where none was made).
  auto cost = [&](const std::string& phase, const char* callee) {
    const auto it = dumps.find(phase);
    if (it == dumps.end()) return 0.0;
    const auto call = it->second.calls_to.find(callee);
    return call == it->second.calls_to.end() ? 0.0 : call->second;
  };
  for (auto& p : rep.phases) {
    if (auto it = dumps.find(p.name); it != dumps.end()) p.instructions = it->second.total;
    if (auto h = rep.host.find(p.name); h != rep.host.end()) {
      h->second.work = cost(p.name, kHostWork) - cost(p.name, kHostMmio);
      // The host re-arms through the link in both phases: a name that no longer matches would
      // count the link's part of its doorbells as host work without a word.
      for (const char* needle : {kHostWork, kHostMmio})
        if (cost(p.name, needle) <= 0) {
          std::fprintf(stderr, "vhca-bench: no call to %s counted in phase %s\n", needle, p.name.c_str());
          counted = false;
        }
    }
    if (p.name == "floor" && dumps.count(p.name) && p.items > 0) {
      rep.floor_notify = cost(p.name, kTimedNotify) / double(p.items);
      if (rep.floor_notify <= 0) {  // the host side would count its notifications twice
        std::fprintf(stderr, "vhca-bench: no timed notification counted in the floor phase (%s)\n", kTimedNotify);
        counted = false;
      }
    }
    if (p.instructions <= 0) {
      std::fprintf(stderr, "vhca-bench: no instruction count for phase %s\n", p.name.c_str());
      counted = false;
    }
  }
  print_report(rep, true);
  std::system((std::string("rm -rf ") + dir).c_str());
  return counted && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
