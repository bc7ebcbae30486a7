// The modelled host CPU the driver runs on. Driver code runs in SystemC threads; the CPU model
// supplies MMIO (through the PCIe link), host memory access (DMI), interrupt delivery (MSI write
// landed -> handler entry after irq_delivery, handlers serialized in one hard-IRQ context) and
// the cost of each kind of work, charged as simulated time in the context doing it and summed
// per context so that CPU time is measurable.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <unordered_map>
#include <vector>

#include "model/common/observers.h"
#include "tlm/pcie_credits.h"

namespace vhca {

struct HostCpuConfig {
  sc_core::sc_time irq_delivery{1, sc_core::SC_US};     // MSI landed -> handler entry (APIC, IDT, entry code)
  sc_core::sc_time handler_entry{300, sc_core::SC_NS};  // fixed cost of one hard-IRQ handler run
  sc_core::sc_time eqe_cost{40, sc_core::SC_NS};        // per EQE consumed
  sc_core::sc_time cqe_cost{50, sc_core::SC_NS};        // per CQE polled
  sc_core::sc_time empty_poll_cost{20, sc_core::SC_NS}; // a poll that finds nothing
  sc_core::sc_time mmio_write_cost{10, sc_core::SC_NS}; // issuing a posted doorbell write
  sc_core::sc_time post_wr_cost{40, sc_core::SC_NS};    // building one WQE in the ring
  sc_core::sc_time softirq_latency{500, sc_core::SC_NS};     // raise -> softirq poll loop runs
  sc_core::sc_time workqueue_latency{2, sc_core::SC_US};     // queue_work -> worker runs
  sc_core::sc_time thread_latency{4, sc_core::SC_US};        // wake_up -> kthread runs
  sc_core::sc_time command_poll_interval{500, sc_core::SC_NS};
  // Cores. 0: every context runs in parallel and only hard IRQs are serialised (one hard-IRQ
  // context for the host: vhca's host before cores). N: N cores. Host vector v's hard IRQ runs on
  // core (v - 1) mod N (the async vector 0 on core 0), and so do the softirq, kthread and
  // workqueue polling of the CQs on that vector; the application runs on core N - 1. On a core a
  // hard IRQ preempts a softirq, which preempts threads; contexts of one kind take turns.
  uint32_t cores = 0;
};

enum class CpuContext : uint8_t { hardirq, softirq, thread, workqueue, app };
constexpr int kCpuContexts = 5;
const char* context_name(CpuContext c);

class HostCpu : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<HostCpu> mmio{"mmio"};  // to the PCIe link (downstream)
  // The downstream link's credits: a posted MMIO write waits for them (the CPU stalls, as a core
  // does when its write-combining buffers cannot drain). Unbound: no limit.
  sc_core::sc_port<PcieCreditIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND> mmio_credits{"mmio_credits"};
  tlm_utils::simple_initiator_socket<HostCpu> mem{"mem"};    // to the host router

  SC_HAS_PROCESS(HostCpu);
  HostCpu(const sc_core::sc_module_name& name, const HostCpuConfig& cfg = {});
  const HostCpuConfig& config() const { return cfg_; }

  // Host memory, zero simulated time (the cost of the work is charged separately).
  void read(uint64_t addr, void* dst, uint32_t len);
  void write(uint64_t addr, const void* src, uint32_t len);

  // MMIO to BAR0. Writes are posted; a read blocks the calling thread for the round trip.
  // Each returns the TLM status so the driver can see an error response.
  bool mmio_write32(uint64_t offset, uint32_t value, CpuContext ctx = CpuContext::app);
  bool mmio_write64(uint64_t offset, uint64_t value, CpuContext ctx = CpuContext::app);
  bool mmio_read32(uint64_t offset, uint32_t& value);
  // A block of `len` bytes in one posted write (write-combined MMIO: a BlueFlame WQE).
  bool mmio_write_block(uint64_t offset, const void* data, unsigned len, CpuContext ctx = CpuContext::app);

  // Interrupts: the MSI sink calls raise(); the handler for that host vector runs in the
  // hard-IRQ thread irq_delivery later.
  void raise(uint32_t vector);
  void set_irq_handler(uint32_t vector, std::function<void()> handler);
  uint64_t interrupts() const { return interrupts_; }
  // Interrupts taken on one host vector (0 if none).
  uint64_t interrupts_on(uint32_t vector) const {
    auto it = vector_interrupts_.find(vector);
    return it == vector_interrupts_.end() ? 0 : it->second;
  }
  // Observation: a hard-IRQ handler ran for `vector` from `begin` to now (timelines).
  Observers<uint32_t, const sc_core::sc_time&> on_handler_done;  // (vector, when the handler began)

  // Spend `t` of CPU time in context `ctx` (the calling thread advances by t).
  void charge(CpuContext ctx, const sc_core::sc_time& t);
  // A polling loop that charges `interval` of `ctx` at each poll, from now, without waking for
  // the polls it knows will fail: busy() counts each poll's charge from the instant the poll
  // happens, as if the loop had woken for it; end_polling() settles the `polls` that failed.
  void begin_polling(CpuContext ctx, const sc_core::sc_time& interval);
  void end_polling(uint64_t polls);
  // CPU time charged in `ctx` by work that started before the current instant, so that a
  // snapshot at a window's edge does not depend on which thread SystemC runs first there.
  sc_core::sc_time busy(CpuContext ctx) const;
  sc_core::sc_time busy_total() const;

  // Cores (HostCpuConfig::cores; all 0 when the host has none).
  uint32_t cores() const { return uint32_t(cores_.size()); }
  uint32_t core_of_vector(uint32_t host_vector) const;
  uint32_t app_core() const { return cores_.empty() ? 0 : cores() - 1; }
  // The calling SystemC process runs `ctx` work on `core` from now on: its charges occupy that
  // core at that context's priority, whatever context they name (a done callback that posts a
  // send from a softirq poller does softirq work). Without cores: nothing to do.
  void bind_current(uint32_t core, CpuContext ctx);
  void unbind_current();  // before a bound process ends (its object's address may be reused)
  // CPU time core `core` spent in `ctx` before now (as busy()), and times a context was preempted.
  sc_core::sc_time core_busy(uint32_t core, CpuContext ctx) const;
  uint64_t preemptions() const { return preemptions_; }

 private:
  struct Pending {
    sc_core::sc_time due;
    uint32_t vector;
  };
  // Interrupts raised and not yet taken, for one hard-IRQ context (the host's, or a core's).
  struct IrqQueue {
    std::deque<Pending> pending;
    sc_core::sc_event raised;
  };
  // A core: at most one context of each priority level runs on it at once, and only the highest
  // level with work runs (hard IRQ 0, softirq 1, threads 2).
  static constexpr int kLevels = 3;
  struct Core {
    bool running[kLevels] = {};
    sc_core::sc_time since[kLevels];  // when the running segment began
    CpuContext ctx[kLevels] = {};
    sc_core::sc_event changed;         // a level stopped running
    sc_core::sc_event preempt[kLevels];
    sc_core::sc_time busy[kCpuContexts];
    IrqQueue irqs;
  };
  struct Binding {
    uint32_t core;
    CpuContext ctx;
  };
  void irq_thread();
  void core_irq_thread(uint32_t core);
  // A hard-IRQ context's loop: its interrupts in arrival order, each taken when due.
  [[noreturn]] void take_irqs(IrqQueue& q);
  // Takes one hard IRQ due at p.due (the caller has waited for it) and runs its handler.
  void take_irq(const Pending& p);
  void run_on_core(uint32_t core, CpuContext ctx, sc_core::sc_time t);
  const Binding* binding() const;
  bool mmio_access(tlm::tlm_command cmd, uint64_t offset, uint8_t* data, unsigned len);
  uint8_t* dmi_pointer(uint64_t addr);
  void invalidate_dmi(sc_dt::uint64, sc_dt::uint64) {
    dmi_pages_.clear();
    last_page_ = UINT64_MAX;
  }

  HostCpuConfig cfg_;
  IrqQueue irqs_;  // the host's one hard-IRQ context when it has no cores
  std::map<uint32_t, std::function<void()>> handlers_;
  std::map<uint64_t, uint8_t*> dmi_pages_;
  uint64_t last_page_ = UINT64_MAX;  // the page of the last access, and its DMI pointer
  uint8_t* last_ptr_ = nullptr;
  sc_core::sc_time busy_[kCpuContexts];
  struct Instant {
    sc_core::sc_time at, sum;  // what was charged at instant `at`
  };
  Instant charged_now_[kCpuContexts];
  struct Polling {
    bool active = false;
    CpuContext ctx = CpuContext::app;
    sc_core::sc_time start, interval;
  } polling_;
  uint64_t interrupts_ = 0;
  std::map<uint32_t, uint64_t> vector_interrupts_;
  std::vector<Core> cores_;
  std::unordered_map<const sc_core::sc_object*, Binding> bindings_;  // process -> its core
  uint64_t preemptions_ = 0;
};

}  // namespace vhca
