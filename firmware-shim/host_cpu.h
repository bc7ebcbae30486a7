// The modelled host CPU the driver runs on: MMIO (through the PCIe link), host memory access
// (DMI), interrupt delivery (MSI write landed -> the hard IRQ is taken irq_delivery later) and the
// cost of each kind of work, charged as simulated CPU time.
//
// The host is event-driven (firmware-shim/cpu_core.h): kernel work — interrupt handlers, the
// polling loops of softirq, kthread and workqueue contexts — runs as tasks on cores, a step at a
// time, without a thread; only the application (and rare kernel work that must wait for a
// command) runs in SystemC threads, whose charges the cores serve. On a host with cores, a core
// runs one context of each priority at a time and a hard IRQ preempts softirq and thread work; on
// a host without cores every context runs in parallel and only hard IRQs are serialised.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <unordered_map>
#include <vector>

#include "firmware-shim/cpu_core.h"
#include "model/common/observers.h"
#include "model/common/slot_ring.h"
#include "tlm/irq_if.h"
#include "tlm/pcie_credits.h"
#include "tlm/pending_writes.h"

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
  // Simulation speed only (host.run_ahead): a core does its work's next write, step or end before
  // its instant where that is quiet and nothing else comes first (CpuCore, decisions.md 50).
  bool run_ahead = true;
};

class HostCpu;

// CPU work charged a piece at a time by a thread that nothing outside it can see between the
// pieces (a verb building WQEs before it rings their doorbell: the device reads a WQE only once
// the doorbell says it is there): the pieces owed are charged together, in one wait, when the
// thread is next about to do something others see (pay()). Where it does, that happens at the
// instant it would with a charge() per piece; only the waits between are saved. A value another
// context may change meanwhile (a consumer index the pollers advance) is read after pay(). It
// assumes one poster per queue at a time (a provider's queue lock), and an exception thrown while
// building leaves what is owed uncharged (the verb fails with it).
class PieceCharges {
 public:
  PieceCharges(HostCpu& cpu, CpuContext ctx, const sc_core::sc_time& each) : cpu_(cpu), ctx_(ctx), each_(each) {}
  void add() { ++owed_; }
  inline void pay();  // before the thread reads or writes what others see, or reports anything

 private:
  HostCpu& cpu_;
  CpuContext ctx_;
  sc_core::sc_time each_;
  uint32_t owed_ = 0;
};

class HostCpu : public sc_core::sc_module, public IrqIf {
 public:
  tlm_utils::simple_initiator_socket<HostCpu> mmio{"mmio"};  // to the PCIe link (downstream)
  // The downstream link's credits: a posted MMIO write waits for them (as a core's write-combining
  // buffers wait to drain). Unbound: no limit.
  sc_core::sc_port<PcieCreditIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND> mmio_credits{"mmio_credits"};
  tlm_utils::simple_initiator_socket<HostCpu> mem{"mem"};    // to the host router
  // Device writes that land quietly (tlm/pending_writes.h) are landed before each access through
  // DMI, which bypasses host memory's own interface. Unbound: every write lands on time.
  PendingWritesPort pending_writes{"pending_writes"};
  sc_core::sc_export<IrqIf> s_irq{"s_irq"};  // the MSI sink raises host vectors here

  SC_HAS_PROCESS(HostCpu);
  HostCpu(const sc_core::sc_module_name& name, const HostCpuConfig& cfg = {});
  const HostCpuConfig& config() const { return cfg_; }

  // Host memory, zero simulated time (the cost of the work is charged separately), at the
  // instant of the step running (quiet device writes due by then land first). Inline: a driver
  // reads an EQE, a CQE, a doorbell record at a time, within a page, several times an interrupt.
  void read(uint64_t addr, void* dst, uint32_t len) { access<false>(addr, static_cast<uint8_t*>(dst), len); }
  void write(uint64_t addr, const void* src, uint32_t len) {
    access<true>(addr, static_cast<uint8_t*>(const_cast<void*>(src)), len);
  }

  // MMIO to BAR0. Writes are posted and leave once the CPU time charged before them has been
  // served: a thread waits for it; a step of kernel work goes on, and its core issues the write at
  // that point of the step's time (DeferredWrite). A write that finds no link credits stalls the
  // thread, or the core, until they return. A read (threads only) blocks for the round trip. Each returns
  // the TLM status so the driver can see an error response.
  bool mmio_write32(uint64_t offset, uint32_t value, CpuContext ctx = CpuContext::app);
  bool mmio_write64(uint64_t offset, uint64_t value, CpuContext ctx = CpuContext::app);
  bool mmio_read32(uint64_t offset, uint32_t& value);
  // A block of `len` bytes in one posted write (write-combined MMIO: a BlueFlame WQE).
  bool mmio_write_block(uint64_t offset, const void* data, unsigned len, CpuContext ctx = CpuContext::app);

  // Interrupts: the MSI sink calls raise() (through s_irq); the hard IRQ for that host vector is taken
  // irq_delivery later, on the vector's core (or the host's one hard-IRQ context), in arrival
  // order: a step of handler_entry, then the handler, as kernel work (its steps may continue with
  // then()).
  void raise(uint32_t vector) override;
  // `quiet`: the handler's first step is quiet (CpuWork::next_quiet), so it may run ahead of its
  // instant, right after the entry's step.
  void set_irq_handler(uint32_t vector, std::function<void()> handler, bool quiet = false);
  uint64_t interrupts() const { return interrupts_; }
  // Interrupts taken on one host vector (0 if none).
  uint64_t interrupts_on(uint32_t vector) const {
    auto it = vectors_.find(vector);
    return it == vectors_.end() ? 0 : it->second.interrupts;
  }
  // Observation: a hard-IRQ handler ran for `vector` from `begin` to now (timelines).
  Observers<uint32_t, const sc_core::sc_time&> on_handler_done;  // (vector, when the handler began)

  // Spend `t` of CPU time in context `ctx`: in a step of kernel work, the step's time grows; in a
  // thread, the thread waits until the time has been served.
  void charge(CpuContext ctx, const sc_core::sc_time& t) {
    if (CpuWork* step = CpuCore::stepping()) {  // kernel work: its core serves the step's time after it
      step->remaining += t;
      if (cores_.empty()) note_busy(ctx, t);
      return;
    }
    charge_thread(ctx, t);
  }
  // `n` charges of `each`, one after another, by a thread that does nothing between them that
  // others see (PieceCharges): the same as n calls of charge() but for the waits, one here where
  // they would take n. busy() meanwhile grows a piece at a time, as it would with n waits.
  void charge_pieces(CpuContext ctx, const sc_core::sc_time& each, uint32_t n);
  // Kernel work (see CpuWork): `w` becomes ready on `where` `after` from now, and its steps run
  // there at its context's level. In a step, then() names the task's next step, which runs once
  // the CPU time the step charged has been served.
  void start(CpuWork& w, CpuCore& where, const sc_core::sc_time& after = sc_core::SC_ZERO_TIME);
  // `quiet`: the step is quiet (CpuWork::next_quiet) and may run ahead of its instant.
  // Inline, the step is made in place in the work's `next` (every step names one).
  template <typename Step>
  void then(Step&& step, bool quiet = false) {
    CpuWork* w = CpuCore::stepping();
    if (!w) then_outside_a_step();
    w->next = std::forward<Step>(step);
    w->next_quiet = quiet ? CpuCore::activation() : 0;
  }
  bool in_step() const { return CpuCore::stepping() != nullptr; }
  // The instant of the step running now (CpuCore::step_instant), or now.
  sc_core::sc_time step_instant() const { return CpuCore::step_instant(); }
  // Now as the running code sees it (CpuCore::local_time): in a step, after what it has charged.
  sc_core::sc_time local_time() const { return CpuCore::local_time(); }
  // Where kernel work runs: core k of a host with cores; on a host without cores a context takes
  // a lane of its own (make_lane), so that contexts run in parallel.
  CpuCore& core(uint32_t k) { return *cores_.at(k); }
  std::unique_ptr<CpuCore> make_lane(const std::string& name);
  // A polling loop that charges `interval` of `ctx` at each poll, from now, without waking for
  // the polls it knows will fail: busy() counts each poll's charge from the instant the poll
  // happens, as if the loop had woken for it; end_polling() settles the `polls` that failed.
  void begin_polling(CpuContext ctx, const sc_core::sc_time& interval);
  void end_polling(uint64_t polls);
  // CPU time charged in `ctx` by work that started before the current instant, so that a
  // snapshot at a window's edge does not depend on which process SystemC runs first there.
  sc_core::sc_time busy(CpuContext ctx) const;
  sc_core::sc_time busy_total() const;

  // Cores (HostCpuConfig::cores; all 0 when the host has none).
  uint32_t cores() const { return uint32_t(cores_.size()); }
  uint32_t core_of_vector(uint32_t host_vector) const;
  uint32_t app_core() const { return cores_.empty() ? 0 : cores() - 1; }
  // The calling SystemC thread runs `ctx` work on `core` from now on: its charges occupy that
  // core at that context's priority, whatever context they name. Without cores: nothing to do.
  void bind_current(uint32_t core, CpuContext ctx);
  void unbind_current();  // before a bound process ends (its object's address may be reused)
  // CPU time core `core` spent in `ctx` before now (as busy()), and times a context was preempted.
  sc_core::sc_time core_busy(uint32_t core, CpuContext ctx) const { return cores_.at(core)->busy(ctx); }
  uint64_t preemptions() const { return counters_.preemptions; }
  // Activations of the host's cores and lanes so far (the benchmark's host-side count).
  uint64_t core_activations() const { return counters_.activations; }
  // Their run-ahead counts (CpuCore::Counters).
  const CpuCore::Counters& core_counters() const { return counters_; }

 private:
  // A hard IRQ from the moment it is raised until its handler's last step has been served.
  struct Irq : CpuWork {
    uint32_t vector = 0;
    sc_core::sc_time begin;
    bool handled = false;
  };
  // Interrupts raised and not yet finished, for one hard-IRQ context (the host's, or a core's).
  struct IrqQueue {
    SlotRing<std::unique_ptr<Irq>> irqs;  // in arrival order: each finishes before the next is taken
    std::vector<std::unique_ptr<Irq>> spare;
    CpuCore* where = nullptr;
  };
  struct Binding {
    uint32_t core;
    CpuContext ctx;
  };
  void take_irq(Irq& irq);  // the first step of a hard IRQ
  void finish_irq(IrqQueue& q);
  const Binding* binding() const;
  // A host without cores: busy() by context (inline: charged by every step).
  void note_busy(CpuContext ctx, const sc_core::sc_time& t) {
    busy_[int(ctx)] += t;
    Instant& i = charged_now_[int(ctx)];
    const sc_core::sc_time at = step_instant();
    if (i.at != at) i = {at, sc_core::SC_ZERO_TIME};
    i.sum += t;
  }
  void serve_on_core(uint32_t core, CpuContext ctx, const sc_core::sc_time& t);  // a thread's charge
  bool mmio_post(uint64_t offset, const uint8_t* data, unsigned len, CpuContext ctx);
  [[noreturn]] static void then_outside_a_step();
  void charge_thread(CpuContext ctx, const sc_core::sc_time& t);  // charge() from a thread: it waits
  // Host memory across pages: to it from `data` (`to_memory`), else from it into `data`.
  void copy_pages(uint64_t addr, uint8_t* data, uint32_t len, bool to_memory);
  // read() and write(): within a page through DMI, else page by page.
  template <bool kToMemory>
  void access(uint64_t addr, uint8_t* data, uint32_t len) {
    pending_writes.land_due_by(CpuCore::step_instant);
    if (len == 0) return;  // touches no memory (a zero-byte inline SEND gathers from address 0)
    if (addr % kPage + len > kPage) return copy_pages(addr, data, len, kToMemory);
    uint8_t* const memory = dmi_pointer(addr);
    if constexpr (kToMemory)
      std::memcpy(memory, data, len);
    else
      std::memcpy(data, memory, len);
  }
  // A step's write, `delay` ahead of its instant; false: no credits (CpuCore::Issue).
  bool mmio_issue(const DeferredWrite& w, const sc_core::sc_time& delay, sc_core::sc_time* effects_after);
  bool credits_for(unsigned len);  // the downstream link takes a posted write of `len` bytes now
  bool mmio_transport(tlm::tlm_command cmd, uint64_t offset, uint8_t* data, unsigned len,
                      const sc_core::sc_time& delay = sc_core::SC_ZERO_TIME);
  // Host memory's page (HostMemory::kPageSize; checked where both are seen, host_cpu.cpp).
  static constexpr uint64_t kPage = 4096;
  // A pointer to `addr` through DMI. Inline: most accesses hit the recent pages, and a call with the
  // map search behind it costs a frame twice what the hit does.
  uint8_t* dmi_pointer(uint64_t addr) {
    const uint64_t page = addr / kPage;
    const RecentPage& recent = recent_pages_[page % recent_pages_.size()];
    if (recent.page == page) return recent.ptr + addr % kPage;
    return dmi_pointer_mapped(addr);
  }
  uint8_t* dmi_pointer_mapped(uint64_t addr);  // not among the recent pages: the map, or the memory's DMI
  void invalidate_dmi(sc_dt::uint64, sc_dt::uint64) {
    dmi_pages_.clear();
    recent_pages_.fill(RecentPage{});
  }

  HostCpuConfig cfg_;
  tlm::tlm_generic_payload write_tx_;  // every posted MMIO write's (a payload allocates when built)
  struct Handler {
    std::function<void()> fn;
    bool quiet = false;
  };
  // A host vector's handler (none: an empty fn) and the interrupts taken on it: one look-up an
  // interrupt.
  struct Vector {
    Handler handler;
    uint64_t interrupts = 0;
  };
  std::map<uint32_t, Vector> vectors_;
  std::map<uint64_t, uint8_t*> dmi_pages_;
  tlm::tlm_generic_payload dmi_tx_;  // asks for a page's pointer (reused, as write_tx_)
  struct RecentPage {
    uint64_t page = UINT64_MAX;
    uint8_t* ptr = nullptr;
  };
  std::array<RecentPage, 16> recent_pages_{};  // dmi_pointer's cache, by page number modulo 16
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
  struct Pieces {  // a thread's charge_pieces() in progress (a host without cores)
    const sc_core::sc_object* thread;
    CpuContext ctx;
    sc_core::sc_time start, each;
    uint32_t n;
  };
  std::vector<Pieces> pieces_;
  static uint64_t pieces_begun(const Pieces& p, const sc_core::sc_time& now);
  uint64_t interrupts_ = 0;
  CpuCore::Counters counters_;  // every core's and lane's (lanes are never preempted)
  std::vector<std::unique_ptr<CpuCore>> cores_;
  std::unique_ptr<CpuCore> irq_lane_;  // the hard-IRQ context of a host without cores
  std::deque<IrqQueue> irq_queues_;    // one per core, or the lane's
  std::unordered_map<const sc_core::sc_object*, Binding> bindings_;  // thread -> its core
};

inline void PieceCharges::pay() {
  if (owed_) cpu_.charge_pieces(ctx_, each_, owed_);
  owed_ = 0;
}

}  // namespace vhca
