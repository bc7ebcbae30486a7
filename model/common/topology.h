// The HCA's wiring as the SystemC object hierarchy holds it: every queue between blocks (a stream
// a block exports, or a block's own input queue behind an export) with its bound, high-water mark
// and traffic, the block that consumes it and every port that produces into it. `vhca-sim run
// --queues` prints it after a run; docs/architecture.md is drawn from it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sc_core {
class sc_object;
}

namespace vhca {

struct QueueLink {
  std::string queue;                   // the export's hierarchical name
  std::string consumer;                // the block that owns it
  std::vector<std::string> producers;  // hierarchical names of the ports bound to it
  std::string fed_by;                  // a producer that is not a port (register writes, reports)
  size_t depth = 0, high_water = 0;
  uint64_t pushed = 0;
};

// Every queue reachable from `roots` (default: the top-level objects), in hierarchy order.
std::vector<QueueLink> queue_links(const std::vector<sc_core::sc_object*>& roots = {});
// A table: queue, depth, high-water, pushed, consumer <- producers.
std::string describe_queues(const std::vector<QueueLink>& links);

}  // namespace vhca
