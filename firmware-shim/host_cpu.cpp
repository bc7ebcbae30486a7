#include "firmware-shim/host_cpu.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "model/common/log.h"
#include "tlm/host_memory.h"

namespace vhca {

const char* context_name(CpuContext c) {
  switch (c) {
    case CpuContext::hardirq: return "hardirq";
    case CpuContext::softirq: return "softirq";
    case CpuContext::thread: return "thread";
    case CpuContext::workqueue: return "workqueue";
    case CpuContext::app: return "app";
  }
  return "?";
}

namespace {
// A core's priority levels: hard IRQ over softirq over every thread (kthreads, workers, the
// application).
int level_of(CpuContext c) {
  return c == CpuContext::hardirq ? 0 : c == CpuContext::softirq ? 1 : 2;
}
}  // namespace

HostCpu::HostCpu(const sc_core::sc_module_name& name, const HostCpuConfig& cfg)
    : sc_module(name), cfg_(cfg), cores_(cfg.cores) {
  mem.register_invalidate_direct_mem_ptr(this, &HostCpu::invalidate_dmi);
  if (cores_.empty()) {
    SC_THREAD(irq_thread);
    return;
  }
  for (uint32_t k = 0; k < cores(); ++k)
    sc_core::sc_spawn([this, k] { core_irq_thread(k); }, sc_core::sc_gen_unique_name("core_irq"));
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

uint8_t* HostCpu::dmi_pointer(uint64_t addr) {
  const uint64_t page = addr / HostMemory::kPageSize;
  if (page == last_page_) return last_ptr_ + addr % HostMemory::kPageSize;  // the common case: the same page again
  auto it = dmi_pages_.find(page);
  if (it != dmi_pages_.end()) {
    last_page_ = page, last_ptr_ = it->second;
    return it->second + addr % HostMemory::kPageSize;
  }
  tlm::tlm_generic_payload tx;
  tlm::tlm_dmi dmi;
  tx.set_address(addr);
  tx.set_command(tlm::TLM_READ_COMMAND);
  if (!mem->get_direct_mem_ptr(tx, dmi))
    throw std::runtime_error(fmt::format("host CPU: access to unmapped host memory at {:#x}", addr));
  dmi_pages_[page] = dmi.get_dmi_ptr();
  last_page_ = page, last_ptr_ = dmi.get_dmi_ptr();
  return dmi.get_dmi_ptr() + addr % HostMemory::kPageSize;
}

void HostCpu::read(uint64_t addr, void* dst, uint32_t len) {
  auto* out = static_cast<uint8_t*>(dst);
  while (len) {
    uint32_t n = std::min<uint64_t>(len, HostMemory::kPageSize - addr % HostMemory::kPageSize);
    std::memcpy(out, dmi_pointer(addr), n);
    out += n, addr += n, len -= n;
  }
}

void HostCpu::write(uint64_t addr, const void* src, uint32_t len) {
  auto* in = static_cast<const uint8_t*>(src);
  while (len) {
    uint32_t n = std::min<uint64_t>(len, HostMemory::kPageSize - addr % HostMemory::kPageSize);
    std::memcpy(dmi_pointer(addr), in, n);
    in += n, addr += n, len -= n;
  }
}

bool HostCpu::mmio_access(tlm::tlm_command cmd, uint64_t offset, uint8_t* data, unsigned len) {
  tlm::tlm_generic_payload tx;
  tx.set_command(cmd);
  tx.set_address(offset);
  tx.set_data_ptr(data);
  tx.set_data_length(len);
  tx.set_streaming_width(len);
  tx.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  if (cmd == tlm::TLM_WRITE_COMMAND && mmio_credits.size())
    while (!mmio_credits->can_post(len)) sc_core::wait(mmio_credits->returned_event());
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  mmio->b_transport(tx, delay);
  return tx.is_response_ok();
}

bool HostCpu::mmio_write32(uint64_t offset, uint32_t value, CpuContext ctx) {
  charge(ctx, cfg_.mmio_write_cost);
  return mmio_access(tlm::TLM_WRITE_COMMAND, offset, reinterpret_cast<uint8_t*>(&value), 4);
}

bool HostCpu::mmio_write64(uint64_t offset, uint64_t value, CpuContext ctx) {
  charge(ctx, cfg_.mmio_write_cost);
  return mmio_access(tlm::TLM_WRITE_COMMAND, offset, reinterpret_cast<uint8_t*>(&value), 8);
}

bool HostCpu::mmio_write_block(uint64_t offset, const void* data, unsigned len, CpuContext ctx) {
  charge(ctx, cfg_.mmio_write_cost);
  // A write's data is only read by its target (TLM's payload pointer is not const): no copy.
  return mmio_access(tlm::TLM_WRITE_COMMAND, offset, const_cast<uint8_t*>(static_cast<const uint8_t*>(data)), len);
}

bool HostCpu::mmio_read32(uint64_t offset, uint32_t& value) {
  return mmio_access(tlm::TLM_READ_COMMAND, offset, reinterpret_cast<uint8_t*>(&value), 4);
}

void HostCpu::raise(uint32_t vector) {
  IrqQueue& q = cores_.empty() ? irqs_ : cores_[core_of_vector(vector)].irqs;
  q.pending.push_back({sc_core::sc_time_stamp() + cfg_.irq_delivery, vector});
  q.raised.notify(sc_core::SC_ZERO_TIME);
}

void HostCpu::set_irq_handler(uint32_t vector, std::function<void()> handler) { handlers_[vector] = std::move(handler); }

// One hard-IRQ context: interrupts are taken in arrival order, one handler at a time.
void HostCpu::irq_thread() { take_irqs(irqs_); }

// A core's hard-IRQ context: its vectors' interrupts, preempting what runs there.
void HostCpu::core_irq_thread(uint32_t core) {
  bind_current(core, CpuContext::hardirq);
  take_irqs(cores_[core].irqs);
}

void HostCpu::take_irqs(IrqQueue& q) {
  for (;;) {
    while (q.pending.empty()) sc_core::wait(q.raised);
    const Pending p = q.pending.front();
    q.pending.pop_front();
    if (p.due > sc_core::sc_time_stamp()) sc_core::wait(p.due - sc_core::sc_time_stamp());
    take_irq(p);
  }
}

void HostCpu::take_irq(const Pending& p) {
  ++interrupts_;
  ++vector_interrupts_[p.vector];
  auto it = handlers_.find(p.vector);
  if (it == handlers_.end()) {
    log::error("host: interrupt on vector {} with no handler", p.vector);
    return;
  }
  log::write(log::Cat::irq, "host: handler for vector {} runs", p.vector);
  const sc_core::sc_time begin = sc_core::sc_time_stamp();
  charge(CpuContext::hardirq, cfg_.handler_entry);
  it->second();
  on_handler_done(p.vector, begin);
}

// `t` of `ctx` work on a core: it runs while no higher level runs there and no other context of
// its own level does; a higher level starting preempts it (the rest waits until that is done).
void HostCpu::run_on_core(uint32_t core, CpuContext ctx, sc_core::sc_time t) {
  Core& c = cores_[core];
  const int level = level_of(ctx);
  auto blocked = [&c, level] {
    for (int l = 0; l <= level; ++l)
      if (c.running[l]) return true;
    return false;
  };
  while (t > sc_core::SC_ZERO_TIME) {
    while (blocked()) sc_core::wait(c.changed);
    c.running[level] = true;
    c.since[level] = sc_core::sc_time_stamp();
    c.ctx[level] = ctx;
    for (int l = level + 1; l < kLevels; ++l)
      if (c.running[l]) {
        ++preemptions_;
        c.preempt[l].notify();
      }
    sc_core::wait(t, c.preempt[level]);
    const sc_core::sc_time used = sc_core::sc_time_stamp() - c.since[level];
    c.busy[int(ctx)] += used;
    t -= used;
    c.running[level] = false;
    c.changed.notify(sc_core::SC_ZERO_TIME);
  }
}

void HostCpu::charge(CpuContext ctx, const sc_core::sc_time& t) {
  if (!cores_.empty()) {
    const Binding* b = binding();
    if (t != sc_core::SC_ZERO_TIME) {
      if (b)
        run_on_core(b->core, b->ctx, t);
      else
        run_on_core(app_core(), ctx == CpuContext::hardirq ? CpuContext::hardirq : CpuContext::app, t);
    }
    return;
  }
  busy_[int(ctx)] += t;
  Instant& i = charged_now_[int(ctx)];
  if (i.at != sc_core::sc_time_stamp()) i = {sc_core::sc_time_stamp(), sc_core::SC_ZERO_TIME};
  i.sum += t;
  if (t != sc_core::SC_ZERO_TIME) sc_core::wait(t);
}

void HostCpu::begin_polling(CpuContext ctx, const sc_core::sc_time& interval) {
  polling_ = Polling{true, ctx, sc_core::sc_time_stamp(), interval};
}

void HostCpu::end_polling(uint64_t polls) {
  polling_.active = false;
  busy_[int(polling_.ctx)] += polling_.interval * double(polls);
}

// Work that starts at this very instant is not counted yet, whichever of the threads that run
// at this instant asks first: a snapshot taken at a window's edge is the same for any order.
sc_core::sc_time HostCpu::core_busy(uint32_t core, CpuContext ctx) const {
  const Core& c = cores_.at(core);
  sc_core::sc_time t = c.busy[int(ctx)];
  for (int l = 0; l < kLevels; ++l)  // the segment running now, up to now
    if (c.running[l] && c.ctx[l] == ctx) t += sc_core::sc_time_stamp() - c.since[l];
  return t;
}

sc_core::sc_time HostCpu::busy(CpuContext ctx) const {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
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
  return t;
}

sc_core::sc_time HostCpu::busy_total() const {
  sc_core::sc_time t;
  for (int c = 0; c < kCpuContexts; ++c) t += busy(CpuContext(c));
  return t;
}

}  // namespace vhca
