#include "firmware-shim/host_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "model/common/log.h"
#include "model/common/sim_now.h"
#include "tlm/host_memory.h"

namespace vhca {

HostCpu::HostCpu(const sc_core::sc_module_name& name, const HostCpuConfig& cfg) : sc_module(name), cfg_(cfg) {
  mem.register_invalidate_direct_mem_ptr(this, &HostCpu::invalidate_dmi);
  s_irq.bind(*this);
  // A core is built as a lane is; only what runs on it differs.
  for (uint32_t k = 0; k < cfg.cores; ++k) cores_.push_back(make_lane("core"));
  if (cores_.empty()) irq_lane_ = make_lane("hardirq");
  irq_queues_.resize(std::max<size_t>(1, cores_.size()));
  for (size_t k = 0; k < irq_queues_.size(); ++k) irq_queues_[k].where = cores_.empty() ? irq_lane_.get() : cores_[k].get();
}

std::unique_ptr<CpuCore> HostCpu::make_lane(const std::string& name) {
  return std::make_unique<CpuCore>(
      name, counters_,
      [this](const DeferredWrite& w, const sc_core::sc_time& delay, sc_core::sc_time* effects_after) {
        return mmio_issue(w, delay, effects_after);
      },
      [this]() -> const sc_core::sc_event& { return mmio_credits->returned_event(); }, cfg_.run_ahead);
}

uint32_t HostCpu::core_of_vector(uint32_t host_vector) const {
  if (cores_.empty() || host_vector == 0) return 0;
  return (host_vector - 1) % cores();
}

void HostCpu::bind_current(uint32_t core, CpuContext ctx) {
  if (cores_.empty()) return;
  bindings_[sc_core::sc_get_current_process_handle().get_process_object()] = Binding{core % cores(), ctx};
}

void HostCpu::unbind_current() { bindings_.erase(sc_core::sc_get_current_process_handle().get_process_object()); }

const HostCpu::Binding* HostCpu::binding() const {
  auto it = bindings_.find(sc_core::sc_get_current_process_handle().get_process_object());
  return it == bindings_.end() ? nullptr : &it->second;
}

// A driver goes back and forth between a few pages (an EQ, a CQ, their doorbell records): a small
// direct-mapped cache (dmi_pointer) answers those without the map.
uint8_t* HostCpu::dmi_pointer_mapped(uint64_t addr) {
  static_assert(kPage == HostMemory::kPageSize, "the host CPU's DMI pages are host memory's");
  const uint64_t page = addr / kPage;
  RecentPage& recent = recent_pages_[page % recent_pages_.size()];
  auto it = dmi_pages_.find(page);
  if (it == dmi_pages_.end()) {
    tlm::tlm_dmi dmi;
    dmi_tx_.set_address(addr);
    dmi_tx_.set_command(tlm::TLM_READ_COMMAND);
    if (!mem->get_direct_mem_ptr(dmi_tx_, dmi))
      throw std::runtime_error(fmt::format("host CPU: access to unmapped host memory at {:#x}", addr));
    it = dmi_pages_.emplace(page, dmi.get_dmi_ptr()).first;
  }
  recent = RecentPage{page, it->second};
  return it->second + addr % kPage;
}

void HostCpu::copy_pages(uint64_t addr, uint8_t* data, uint32_t len, bool to_memory) {
  while (len) {
    const uint32_t n = uint32_t(std::min<uint64_t>(len, kPage - addr % kPage));
    uint8_t* mem = dmi_pointer(addr);
    if (to_memory)
      std::memcpy(mem, data, n);
    else
      std::memcpy(data, mem, n);
    data += n, addr += n, len -= n;
  }
}

bool HostCpu::mmio_transport(tlm::tlm_command cmd, uint64_t offset, uint8_t* data, unsigned len,
                             const sc_core::sc_time& ahead) {
  auto transport = [&](tlm::tlm_generic_payload& tx) {
    tx.set_command(cmd);
    tx.set_address(offset);
    tx.set_data_ptr(data);
    tx.set_data_length(len);
    tx.set_streaming_width(len);
    tx.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = ahead;  // the link honours it: the TLP enters its wire then
    mmio->b_transport(tx, delay);
    return tx.is_response_ok();
  };
  if (cmd == tlm::TLM_WRITE_COMMAND) return transport(write_tx_);  // posted: returns at once
  tlm::tlm_generic_payload read;  // a read blocks its thread, and another may write meanwhile
  return transport(read);
}

// Whether the downstream link takes a posted write of `len` bytes now (always, unbound).
bool HostCpu::credits_for(unsigned len) { return !mmio_credits.size() || mmio_credits->can_post(len); }

// A posted write: charged first (its cost comes before it leaves). A step's write is issued by
// its core once the step's time up to it has been served; a thread's now that its charge is.
bool HostCpu::mmio_post(uint64_t offset, const uint8_t* data, unsigned len, CpuContext ctx) {
  charge(ctx, cfg_.mmio_write_cost);
  if (CpuWork* step = CpuCore::stepping()) {
    if (len > sizeof(DeferredWrite::data)) throw std::logic_error(fmt::format("host CPU: an MMIO write of {} bytes", len));
    DeferredWrite& w = step->writes.emplace_back();  // filled in place: a BlueFlame WQE's room is not copied
    w.at = step->remaining;
    w.offset = offset;
    w.len = len;
    std::memcpy(w.data.data(), data, len);
    return true;  // a posted write's errors are reported where it lands
  }
  // A thread stalls while the link has no credits (as a core whose write-combining buffers cannot drain).
  while (!credits_for(len)) sc_core::wait(mmio_credits->returned_event());
  return mmio_transport(tlm::TLM_WRITE_COMMAND, offset, const_cast<uint8_t*>(data), len);
}

// A step's write, when its core gets to it: refused while the link has no credits (the core
// stalls and tries again when they return). Ahead of its instant (run ahead), only if the link has
// credits now: they stay, as nothing else posts before then (returns only add to them).
bool HostCpu::mmio_issue(const DeferredWrite& w, const sc_core::sc_time& delay, sc_core::sc_time* effects_after) {
  if (delay == sc_core::SC_ZERO_TIME ? !credits_for(w.len) : mmio_credits.size() && !mmio_credits->has_room(w.len))
    return false;
  if (effects_after) *effects_after = mmio_credits.size() ? mmio_credits->posted_effects_after() : sc_core::SC_ZERO_TIME;
  mmio_transport(tlm::TLM_WRITE_COMMAND, w.offset, const_cast<uint8_t*>(w.data.data()), w.len, delay);
  return true;
}

bool HostCpu::mmio_write32(uint64_t offset, uint32_t value, CpuContext ctx) {
  return mmio_post(offset, reinterpret_cast<const uint8_t*>(&value), 4, ctx);
}

bool HostCpu::mmio_write64(uint64_t offset, uint64_t value, CpuContext ctx) {
  return mmio_post(offset, reinterpret_cast<const uint8_t*>(&value), 8, ctx);
}

bool HostCpu::mmio_write_block(uint64_t offset, const void* data, unsigned len, CpuContext ctx) {
  return mmio_post(offset, static_cast<const uint8_t*>(data), len, ctx);
}

bool HostCpu::mmio_read32(uint64_t offset, uint32_t& value) {
  if (in_step())
    throw std::logic_error("host CPU: an MMIO read from kernel work (a step cannot wait for the round trip)");
  return mmio_transport(tlm::TLM_READ_COMMAND, offset, reinterpret_cast<uint8_t*>(&value), 4);
}

void HostCpu::raise(uint32_t vector) {
  IrqQueue& q = irq_queues_[cores_.empty() ? 0 : core_of_vector(vector)];
  if (q.spare.empty()) {  // hard IRQs are recycled: a new one only when more are on their way
    auto irq = std::make_unique<Irq>();
    irq->ctx = CpuContext::hardirq;
    irq->done = [this, &q] { finish_irq(q); };
    irq->end_quiet = [this] { return on_handler_done.empty(); };
    q.spare.push_back(std::move(irq));
  }
  std::unique_ptr<Irq> irq = std::move(q.spare.back());
  q.spare.pop_back();
  irq->vector = vector;
  irq->handled = false;
  irq->next = [this, p = irq.get()] { take_irq(*p); };
  q.irqs.push_back(std::move(irq));
  q.where->submit(*q.irqs.back(), sim_now() + cfg_.irq_delivery);
}

void HostCpu::set_irq_handler(uint32_t vector, std::function<void()> handler, bool quiet) {
  vectors_[vector].handler = Handler{std::move(handler), quiet};
}

// Taken when its context is free (arrival order): the entry costs handler_entry, then the handler
// runs, a step of its own that may go on with then().
void HostCpu::take_irq(Irq& irq) {
  ++interrupts_;
  Vector& vector = vectors_[irq.vector];
  ++vector.interrupts;
  if (!vector.handler.fn) {
    log::error("host: interrupt on vector {} with no handler", irq.vector);
    return;
  }
  log::write(log::Cat::irq, "host: handler for vector {} runs", irq.vector);
  irq.handled = true;
  irq.begin = step_instant();
  charge(CpuContext::hardirq, cfg_.handler_entry);
  then([h = &vector.handler] { h->fn(); }, vector.handler.quiet);
}

void HostCpu::finish_irq(IrqQueue& q) {
  const Irq& irq = *q.irqs.front();
  if (irq.handled) on_handler_done(irq.vector, irq.begin);
  q.spare.push_back(std::move(q.irqs.front()));
  q.irqs.pop_front();
}

void HostCpu::start(CpuWork& w, CpuCore& where, const sc_core::sc_time& after) {
  where.submit(w, step_instant() + after);
}

void HostCpu::then_outside_a_step() { throw std::logic_error("host CPU: then() outside a step of kernel work"); }

// A thread's charge on a core: the core serves it at the context's level (preemptibly) and wakes
// the thread when it is done.
void HostCpu::serve_on_core(uint32_t core, CpuContext ctx, const sc_core::sc_time& t) {
  sc_core::sc_event served;
  CpuWork w;
  w.ctx = ctx;
  w.remaining = t;
  w.served = &served;
  w.owner = sc_core::sc_get_current_process_handle().get_process_object();
  cores_[core]->submit(w, sim_now());
  sc_core::wait(served);
}

void HostCpu::charge_thread(CpuContext ctx, const sc_core::sc_time& t) {
  if (t == sc_core::SC_ZERO_TIME) return;
  if (!cores_.empty()) {
    if (const Binding* b = binding())
      serve_on_core(b->core, b->ctx, t);
    else
      serve_on_core(app_core(), ctx == CpuContext::hardirq ? CpuContext::hardirq : CpuContext::app, t);
    return;
  }
  note_busy(ctx, t);
  sc_core::wait(t);
}

void HostCpu::charge_pieces(CpuContext ctx, const sc_core::sc_time& each, uint32_t n) {
  if (n == 0 || each == sc_core::SC_ZERO_TIME) return;
  if (CpuCore::stepping() || !cores_.empty()) {  // no wait to save, or a core's turns to keep
    for (uint32_t i = 0; i < n; ++i) charge(ctx, each);
    return;
  }
  const sc_core::sc_object* self = sc_core::sc_get_current_process_handle().get_process_object();
  pieces_.push_back(Pieces{self, ctx, sim_now(), each, n});
  // Settled when the wait ends, or when the thread is killed or reset in it (the pieces begun count).
  struct Settle {
    HostCpu& cpu;
    const sc_core::sc_object* self;
    ~Settle() {
      auto it = std::find_if(cpu.pieces_.begin(), cpu.pieces_.end(), [&](const Pieces& p) { return p.thread == self; });
      cpu.busy_[int(it->ctx)] += it->each * double(pieces_begun(*it, sim_now()));
      cpu.pieces_.erase(it);
    }
  } settle{*this, self};
  sc_core::wait(each * double(n));
}

// Of pieces in progress, those begun before `now`: a charge() at `start` + k `each` counts after
// its own instant, so k of them by `start` + k `each`, as with a wait apiece; all n once they end.
uint64_t HostCpu::pieces_begun(const Pieces& p, const sc_core::sc_time& now) {
  const uint64_t elapsed = (now - p.start).value(), step = p.each.value();
  return std::min<uint64_t>(p.n, (elapsed + step - 1) / step);
}

void HostCpu::begin_polling(CpuContext ctx, const sc_core::sc_time& interval) {
  polling_ = Polling{true, ctx, sim_now(), interval};
}

void HostCpu::end_polling(uint64_t polls) {
  polling_.active = false;
  busy_[int(polling_.ctx)] += polling_.interval * double(polls);
}

sc_core::sc_time HostCpu::busy(CpuContext ctx) const {
  const sc_core::sc_time now = sim_now();
  sc_core::sc_time t = busy_[int(ctx)];  // with cores: only settled polling loops
  if (cores_.empty()) {
    const Instant& i = charged_now_[int(ctx)];
    if (i.at == now) t -= i.sum;
  } else {
    for (uint32_t k = 0; k < cores(); ++k) t += core_busy(k, ctx);
  }
  // A polling loop in progress has charged one interval at each poll before now.
  if (polling_.active && polling_.ctx == ctx)
    t += polling_.interval * std::ceil((now - polling_.start) / polling_.interval);
  for (const Pieces& p : pieces_)
    if (p.ctx == ctx) t += p.each * double(pieces_begun(p, now));
  return t;
}

sc_core::sc_time HostCpu::busy_total() const {
  sc_core::sc_time t;
  for (int c = 0; c < kCpuContexts; ++c) t += busy(CpuContext(c));
  return t;
}

}  // namespace vhca
