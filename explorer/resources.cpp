#include "explorer/resources.h"

#include <fmt/format.h>

#include "model/hca.h"
#include "model/regs/tables.h"

namespace vhca {

namespace {
uint64_t pow2_at_least(uint64_t n) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}
}  // namespace

std::string format_bytes(uint64_t b) {
  const double v = double(b);
  if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", v / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", v / double(1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.1f} KiB", v / double(1ull << 10));
  return fmt::format("{} B", b);
}

ResourceEstimate estimate_resources(const TrafficOptions& o) {
  ResourceEstimate e;
  uint64_t all_qps = 0, carried = 0;
  for (const QpGroup& g : o.effective_groups()) {
    all_qps += uint64_t(g.qps);
    if (!g.workload.inject_cqes) carried += uint64_t(g.qps);  // injected streams create no QP
  }
  const uint64_t depth = uint64_t(o.depth);
  // Each host registers three buffers of a slot per QP and WQE (traffic.cpp: host 0 the sources,
  // READ destinations and pong destinations; host 1 the receive, WRITE and READ-source buffers).
  e.buffer_bytes = 3 * all_qps * depth * uint64_t(o.max_size());
  e.ring_bytes = carried * pow2_at_least(depth) * (uint64_t(sqwqe::kSize) + uint64_t(rqwqe::kSize));
  e.cq_bytes = uint64_t(o.cqs) * pow2_at_least(uint64_t(o.cq_size)) * uint64_t(cqe::kSize);
  const HcaConfig hca;
  e.qps = carried;
  e.max_qps = hca.num_qps - 2;  // QPNs 0 and 1 are the special QPs
  e.cqs = uint64_t(o.cqs);
  e.max_cqs = hca.cq.num_cqs;
  e.mrs = 3;
  e.max_mrs = hca.num_mrs;
  return e;
}

std::string check_resources(const TrafficOptions& o) {
  const ResourceEstimate e = estimate_resources(o);
  std::string why;
  auto add = [&](const std::string& s) { why += (why.empty() ? "" : "; ") + s; };
  if (e.total() > o.host_memory)
    add(fmt::format("each host would back up to {} of simulated memory ({} of buffers: 3 x {} QPs x {} WQEs x {} B; "
                    "{} of WQE rings; {} of CQs: {} x {} CQEs x 64 B), more than host.memory {}: lower qps.count, "
                    "qps.depth or the message size, or raise host.memory",
                    format_bytes(e.total()), format_bytes(e.buffer_bytes), o.qps, o.depth, o.max_size(),
                    format_bytes(e.ring_bytes), format_bytes(e.cq_bytes), o.cqs, pow2_at_least(uint64_t(o.cq_size)),
                    format_bytes(o.host_memory)));
  if (e.qps > e.max_qps)
    add(fmt::format("{} QPs on each HCA (over all QP groups), more than its {} QP contexts", e.qps, e.max_qps));
  if (e.cqs > e.max_cqs) add(fmt::format("{} CQs on each HCA, more than its {} CQ contexts", e.cqs, e.max_cqs));
  if (e.mrs > e.max_mrs) add(fmt::format("{} MRs on each HCA, more than its {}", e.mrs, e.max_mrs));
  return why.empty() ? why : "the run does not fit: " + why;
}

}  // namespace vhca
