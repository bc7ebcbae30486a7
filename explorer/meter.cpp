#include "explorer/meter.h"

#include <algorithm>
#include <initializer_list>

namespace vhca {

Snapshot take_snapshot(Node& node, const std::vector<IbCq*>& cqs) {
  Snapshot s;
  const auto& st = node.hca.cq.stats();
  s.cqes = st.cqes;
  s.events = st.events;
  s.interrupts = node.cpu.interrupts();
  for (int c = 0; c < kEventCauses; ++c) s.events_by[c] = st.events_of(EventCause(c));
  s.async_interrupts = node.cpu.interrupts_on(node.driver.async_host_vector());
  for (uint32_t v = 0; v < node.driver.num_comp_vectors(); ++v)
    s.vector_interrupts.push_back(node.cpu.interrupts_on(node.driver.host_vector_of(v)));
  for (IbCq* cq : cqs) {
    const CqContext c = node.hca.cq.context(cq->cq->cqn);
    s.cq_cqes.push_back(c.cqes);
    s.cq_events.push_back(c.events);
    std::array<uint64_t, kEventCauses> by;
    std::copy(c.events_by, c.events_by + kEventCauses, by.begin());
    s.cq_events_by.push_back(by);
  }
  for (int c = 0; c < kCpuContexts; ++c) s.busy[c] = node.cpu.busy(CpuContext(c));
  for (uint32_t k = 0; k < node.cpu.cores(); ++k) {
    sc_core::sc_time t;
    for (int c = 0; c < kCpuContexts; ++c) t += node.cpu.core_busy(k, CpuContext(c));
    s.core_busy.push_back(t);
  }
  s.preemptions = node.cpu.preemptions();
  s.at = sc_core::sc_time_stamp();
  return s;
}

void window_stats(HostStats& hs, const Snapshot& a, const Snapshot& b) {
  const double measured_s = (b.at - a.at).to_seconds();
  hs.cqes = b.cqes - a.cqes;
  hs.events = b.events - a.events;
  hs.interrupts = b.interrupts - a.interrupts;
  for (int c = 0; c < kEventCauses; ++c) hs.events_by[c] = b.events_by[c] - a.events_by[c];
  hs.async_interrupts = b.async_interrupts - a.async_interrupts;
  hs.vector_interrupts.clear();
  for (size_t v = 0; v < b.vector_interrupts.size(); ++v)
    hs.vector_interrupts.push_back(b.vector_interrupts[v] - (v < a.vector_interrupts.size() ? a.vector_interrupts[v] : 0));
  hs.interrupts_per_s = measured_s > 0 ? double(hs.interrupts) / measured_s : 0;
  hs.cqes_per_interrupt = hs.interrupts ? double(hs.cqes) / double(hs.interrupts) : 0;
  auto pct = [&](std::initializer_list<CpuContext> ctxs) {
    double s = 0;
    for (CpuContext c : ctxs) s += (b.busy[int(c)] - a.busy[int(c)]).to_seconds();
    return measured_s > 0 ? s / measured_s * 100 : 0;
  };
  hs.cpu_busy_pct = pct({CpuContext::hardirq, CpuContext::softirq, CpuContext::thread, CpuContext::workqueue,
                         CpuContext::app});
  hs.hardirq_pct = pct({CpuContext::hardirq});
  hs.core_util_pct.clear();
  double sum = 0;
  for (size_t k = 0; k < b.core_busy.size(); ++k) {
    const double busy = (b.core_busy[k] - (k < a.core_busy.size() ? a.core_busy[k] : sc_core::SC_ZERO_TIME)).to_seconds();
    hs.core_util_pct.push_back(measured_s > 0 ? busy / measured_s * 100 : 0);
    sum += hs.core_util_pct.back();
  }
  hs.cpu_util_pct = b.core_busy.empty() ? 0 : sum / double(b.core_busy.size());
  hs.preemptions = b.preemptions - a.preemptions;
  hs.poll_pct = pct({CpuContext::softirq, CpuContext::thread, CpuContext::workqueue});
}

}  // namespace vhca
