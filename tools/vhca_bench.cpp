// vhca-bench: wall-clock cost of the model against the SystemC kernel floor, measured in one run.
//  - floor: one SC_METHOD re-notifying itself one cycle later (the cheapest timed activation);
//  - CQE path: completion records through the CQ writer, DMA engine, PCIe link and host memory
//    (an overrun-ignore CQ, no events, no driver work), one record per cycle.
// Prints both costs per item and their ratio. Not a test: absolute times drift on shared machines.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <systemc>

#include "firmware-shim/verbs.h"
#include "testbench/system.h"

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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  Floor floor("floor");
  vhca::System sys;

  double floor_s = 0, model_s = 0;
  uint64_t written = 0;
  sys.run([&] {
    floor.target = n;
    auto t0 = std::chrono::steady_clock::now();
    floor.ev.notify(sc_core::SC_ZERO_TIME);
    sc_core::wait(sc_core::sc_time(2.0 * double(n) + 10, sc_core::SC_NS));
    floor_s = seconds_since(t0);

    if (!sys.driver.boot().ok()) return;
    vhca::Cq* cq = nullptr;
    if (vhca::verbs::create_cq(sys.driver, 4096, 0, &cq, {}, vhca::cmd::kCqFlagOverrunIgnore) != 0) return;
    vhca::CompletionRecord r;
    r.cqn = cq->cqn;
    r.opcode = vhca::cqe::kRespSend;
    r.byte_cnt = 64;
    const uint64_t before = sys.hca.cq.stats().cqes;
    t0 = std::chrono::steady_clock::now();
    const uint64_t chunk = 1000;
    for (uint64_t done = 0; done < n; done += chunk) {
      const uint64_t base = sys.cycle() + 1;
      for (uint64_t i = 0; i < chunk && done + i < n; ++i) {
        r.wr_id = done + i;
        sys.hca.inject(r, base + i);
      }
      sys.wait_cycle(base + chunk);
    }
    sc_core::wait(sc_core::sc_time(2, sc_core::SC_US));
    model_s = seconds_since(t0);
    written = sys.hca.cq.stats().cqes - before;
  }, sc_core::sc_time(100, sc_core::SC_SEC));

  const double floor_ns = floor_s / double(n) * 1e9, model_ns = model_s / double(written ? written : 1) * 1e9;
  std::printf("kernel floor (timed SC_METHOD activation): %8.1f ns each (%llu activations)\n", floor_ns,
              static_cast<unsigned long long>(n));
  std::printf("CQE path (writer+DMA+link+memory):         %8.1f ns per CQE (%llu CQEs, %.2f M CQE/s)\n", model_ns,
              static_cast<unsigned long long>(written), written / model_s / 1e6);
  std::printf("ratio CQE path / kernel floor:             %8.2f\n", model_ns / floor_ns);
  return written == n ? 0 : 1;
}
