#include "model/common/topology.h"

#include <fmt/format.h>

#include <map>
#include <systemc>

#include "model/common/stream.h"

namespace vhca {

namespace {

void walk(sc_core::sc_object* obj, std::vector<QueueLink>& links, std::map<const sc_core::sc_interface*, size_t>& index,
          std::vector<std::pair<const sc_core::sc_interface*, std::string>>& ports) {
  if (auto* exp = dynamic_cast<sc_core::sc_export_base*>(obj)) {
    const sc_core::sc_interface* iface = exp->get_interface();
    if (auto* q = dynamic_cast<const QueueInfo*>(iface); q && !index.count(iface)) {
      index[iface] = links.size();
      links.push_back({exp->name(), obj->get_parent_object() ? obj->get_parent_object()->name() : "", {},
                       q->fed_by(), q->queue_depth(), q->queue_high_water(), q->queue_pushed()});
    }
  } else if (auto* port = dynamic_cast<sc_core::sc_port_base*>(obj)) {
    if (const sc_core::sc_interface* iface = port->get_interface()) ports.emplace_back(iface, port->name());
  }
  for (sc_core::sc_object* child : obj->get_child_objects()) walk(child, links, index, ports);
}

}  // namespace

std::vector<QueueLink> queue_links(const std::vector<sc_core::sc_object*>& roots) {
  std::vector<QueueLink> links;
  std::map<const sc_core::sc_interface*, size_t> index;
  std::vector<std::pair<const sc_core::sc_interface*, std::string>> ports;
  for (sc_core::sc_object* root : roots.empty() ? sc_core::sc_get_top_level_objects() : roots)
    walk(root, links, index, ports);
  for (const auto& [iface, name] : ports)
    if (auto it = index.find(iface); it != index.end()) links[it->second].producers.push_back(name);
  return links;
}

std::string describe_queues(const std::vector<QueueLink>& links) {
  std::string out = fmt::format("{:<34} {:>5} {:>5} {:>10}  {}\n", "queue", "depth", "high", "pushed",
                                "producers");
  for (const QueueLink& l : links) {
    std::string producers;
    for (const std::string& p : l.producers) producers += (producers.empty() ? "" : ", ") + p;
    if (producers.empty()) producers = l.fed_by;
    out += fmt::format("{:<34} {:>5} {:>5} {:>10}  {}\n", l.queue, l.depth, l.high_water, l.pushed, producers);
  }
  return out;
}

}  // namespace vhca
