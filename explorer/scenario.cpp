#include "explorer/scenario.h"

#include <filesystem>

#include "explorer/arrival_trace.h"
#include "explorer/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

namespace vhca {
namespace {

// "<number><unit>" with optional space; returns false if it does not have that shape.
bool split_number(const std::string& v, double& number, std::string& unit) {
  static const std::regex re(R"(^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z/]*)\s*$)");
  std::smatch m;
  if (!std::regex_match(v, m, re)) return false;
  number = std::stod(m[1]);
  unit = m[2];
  return true;
}

double with_unit(const std::string& v, const std::map<std::string, double>& units, const char* expected) {
  double n = 0;
  std::string unit;
  if (!split_number(v, n, unit)) throw std::invalid_argument("'" + v + "' is not a number with a unit (" + expected + ")");
  if (unit.empty()) throw std::invalid_argument("'" + v + "' needs a unit (" + expected + ")");
  auto it = units.find(unit);
  if (it == units.end()) throw std::invalid_argument("'" + unit + "' is not a unit of " + expected);
  return n * it->second;
}

}  // namespace

double parse_duration_ns(const std::string& v) {
  return with_unit(v, {{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}, "time: ns, us, ms, s");
}

uint64_t parse_size_bytes(const std::string& v) {
  const double b = with_unit(v, {{"B", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}}, "size: B, KiB, MiB");
  if (b != std::floor(b)) throw std::invalid_argument("'" + v + "' is not a whole number of bytes");
  return uint64_t(b);
}

double parse_rate_per_s(const std::string& v) {
  return with_unit(v, {{"/s", 1.0}, {"k/s", 1e3}, {"M/s", 1e6}}, "rate: /s, k/s, M/s");
}

double parse_gbps(const std::string& v) {
  return with_unit(v, {{"Mbps", 1e-3}, {"Gbps", 1.0}}, "bandwidth: Mbps, Gbps");
}

namespace {

// Reads a scenario tree, checking every key against the schema and naming file, line and key in
// every error.
class Reader {
 public:
  Reader(std::string source, std::set<std::string> from_set) : source_(std::move(source)), from_set_(std::move(from_set)) {}

  [[noreturn]] void fail(const YAML::Node& n, const std::string& key, const std::string& why) const {
    std::ostringstream s;
    if (from_set_.count(key))
      s << "--set " << key << ": " << why;
    else if (n.IsDefined() && n.Mark().line >= 0)  // a missing key's node has no mark
      s << source_ << ":" << n.Mark().line + 1 << ": key '" << key << "': " << why;
    else
      s << source_ << ": key '" << key << "': " << why;
    throw ScenarioError(s.str());
  }

  // The node at `key` must be a map whose keys are all in `allowed`.
  void check_map(const YAML::Node& n, const std::string& key, std::initializer_list<const char*> allowed) const {
    if (!n.IsMap()) fail(n, key.empty() ? "(top)" : key, "must be a map of keys");
    std::vector<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      // YAML leaves a repeated key to the reader, and yaml-cpp keeps the first: say so instead.
      if (std::find(seen.begin(), seen.end(), k) != seen.end()) fail(it->first, join(key, k), "given twice in one map");
      seen.push_back(k);
      bool ok = false;
      std::string list;
      for (const char* a : allowed) {
        ok = ok || k == a;
        list += std::string(list.empty() ? "" : ", ") + a;
      }
      if (!ok) fail(it->first, join(key, k), "unknown key (expected one of: " + list + ")");
    }
  }

  static std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

  // A file named in the scenario: relative paths are relative to the scenario's folder.
  std::string relative(const std::string& file) const {
    if (file.empty() || file[0] == '/') return file;
    const size_t slash = source_.rfind('/');
    return slash == std::string::npos ? file : source_.substr(0, slash + 1) + file;
  }

  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "must be a single value");
    return n.as<std::string>();
  }

  // Parses the value at `key` with `parse`, which throws std::invalid_argument.
  template <typename Parse>
  auto value(const YAML::Node& parent, const std::string& prefix, const char* name, Parse parse) const
      -> decltype(parse(std::string())) {
    const std::string key = join(prefix, name);
    const YAML::Node n = parent[name];
    try {
      return parse(scalar(n, key));
    } catch (const std::invalid_argument& e) {
      fail(n, key, e.what());
    } catch (const std::out_of_range&) {
      fail(n, key, "out of range");
    }
  }

  double number(const YAML::Node& parent, const std::string& prefix, const char* name, double lo, double hi) const {
    return value(parent, prefix, name, [&](const std::string& v) {
      double n = 0;
      std::string unit;
      if (!split_number(v, n, unit) || !unit.empty()) throw std::invalid_argument("'" + v + "' is not a plain number");
      if (n < lo || n > hi) throw std::invalid_argument(fmt_range(v, lo, hi));
      return n;
    });
  }
  int integer(const YAML::Node& parent, const std::string& prefix, const char* name, double lo, double hi) const {
    const double n = number(parent, prefix, name, lo, hi);
    if (n != std::floor(n)) fail(parent[name], join(prefix, name), "must be a whole number");
    return int(n);
  }
  double duration_us(const YAML::Node& parent, const std::string& prefix, const char* name, double lo_us,
                     double hi_us) const {
    return value(parent, prefix, name, [&](const std::string& v) {
      const double us = parse_duration_ns(v) / 1e3;
      if (us < lo_us || us > hi_us)
        throw std::invalid_argument("'" + v + "' is outside " + fmt(lo_us) + " us .. " + fmt(hi_us) + " us");
      return us;
    });
  }

 private:
  // A bound as a user wrote it: whole numbers in full (2147483647, not 2.14748e+09).
  static std::string fmt(double v) {
    std::ostringstream s;
    if (v == std::floor(v) && std::fabs(v) < 1e18)
      s << static_cast<long long>(v);
    else
      s << v;
    return s.str();
  }
  static std::string fmt_range(const std::string& v, double lo, double hi) {
    return "'" + v + "' is outside " + fmt(lo) + " .. " + fmt(hi);
  }
  std::string source_;
  std::set<std::string> from_set_;
};

// "name[k]" names item k of the list at name; returns that item of `n` (which must exist: --set
// never creates a list item), or an undefined node if `part` is a plain key.
YAML::Node list_item(const YAML::Node& n, const std::string& part, const std::string& set) {
  static const std::regex item(R"(^([A-Za-z_][A-Za-z0-9_]*)\[([0-9]+)\]$)");
  std::smatch m;
  if (!std::regex_match(part, m, item)) return YAML::Node(YAML::NodeType::Undefined);
  const std::string list = m[1], index = m[2];
  // Nine digits at most: a longer index names no item and would overflow the conversion.
  const size_t k = index.size() <= 9 ? std::stoul(index) : SIZE_MAX;
  // A missing key reads as an invalid node, which throws on anything but IsDefined().
  const YAML::Node items = n.IsMap() ? n[list] : YAML::Node(YAML::NodeType::Undefined);
  const bool is_list = items.IsDefined() && items.IsSequence();
  if (!is_list || k >= items.size())
    throw ScenarioError("--set " + set + ": '" + list + "' has no item " + index +
                        (is_list ? " (it has " + std::to_string(items.size()) + ")" : " (it is not a list)"));
  return items[k];
}

// Applies "a.b.c=value" (parts may be list items, "groups[1]") to the tree, creating maps on the way.
void apply_set(YAML::Node root, const std::string& set, std::set<std::string>& from_set) {
  const size_t eq = set.find('=');
  if (eq == std::string::npos || eq == 0) throw ScenarioError("--set " + set + ": expected key=value");
  const std::string key = set.substr(0, eq), value = set.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  YAML::Node n = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (YAML::Node item = list_item(n, parts[i], set); item.IsDefined()) {
      if (!item.IsMap()) throw ScenarioError("--set " + set + ": '" + parts[i] + "' is not a map of keys");
      n.reset(item);
      continue;
    }
    if (n[parts[i]].IsDefined() && !n[parts[i]].IsMap())
      throw ScenarioError("--set " + set + ": '" + parts[i] + "' is not a map of keys");
    if (!n[parts[i]].IsDefined()) n[parts[i]] = YAML::Node(YAML::NodeType::Map);
    n.reset(n[parts[i]]);
  }
  if (YAML::Node item = list_item(n, parts.back(), set); item.IsDefined())
    item = value;  // a node handle: assigning sets the item in the tree
  else
    n[parts.back()] = value;
  from_set.insert(key);
}

void read_cpu(const Reader& r, const YAML::Node& n, const std::string& key, HostCpuConfig& cpu) {
  r.check_map(n, key, {"irq_delivery", "handler_entry", "eqe_cost", "cqe_cost", "empty_poll_cost",
                       "softirq_latency", "thread_latency", "workqueue_latency", "post_cost"});
  auto t = [&](const char* name, sc_core::sc_time& field) {
    if (n[name]) field = sc_core::sc_time(r.duration_us(n, key, name, 0, 1e5), sc_core::SC_US);
  };
  t("irq_delivery", cpu.irq_delivery);
  t("handler_entry", cpu.handler_entry);
  t("eqe_cost", cpu.eqe_cost);
  t("cqe_cost", cpu.cqe_cost);
  t("empty_poll_cost", cpu.empty_poll_cost);
  t("softirq_latency", cpu.softirq_latency);
  t("thread_latency", cpu.thread_latency);
  t("workqueue_latency", cpu.workqueue_latency);
  t("post_cost", cpu.post_wr_cost);
}

// The moderation keys of `m` (count, period, mode, policy) over `into`.
void read_moderation(const Reader& r, const YAML::Node& m, const std::string& key, ModerationChoice& into) {
  r.check_map(m, key, {"count", "period", "mode", "policy"});
  if (m["policy"]) {
    const std::string v = r.scalar(m["policy"], key + ".policy");
    if (v == "static") into.adaptive = false;
    else if (v == "dim") into.adaptive = true;
    else r.fail(m["policy"], key + ".policy", "'" + v + "' is neither static nor dim");
  }
  if (m["count"]) into.mod.count = uint16_t(r.integer(m, key, "count", 0, 65535));
  if (m["period"]) {
    const double us = r.duration_us(m, key, "period", 0, 4095);
    if (us != std::floor(us)) r.fail(m["period"], key + ".period", "must be whole microseconds (the CQ context counts us)");
    into.mod.period_us = uint16_t(us);
  }
  if (m["mode"]) {
    const std::string v = r.scalar(m["mode"], key + ".mode");
    if (v == "eqe") into.mod.mode = PeriodMode::eqe;
    else if (v == "cqe") into.mod.mode = PeriodMode::cqe;
    else r.fail(m["mode"], key + ".mode", "'" + v + "' is neither eqe nor cqe");
  }
}

void read_mix(const Reader& r, const YAML::Node& mix, const std::string& key, Workload& w) {
  r.check_map(mix, key, {"send", "write", "read"});
  const double send = mix["send"] ? r.number(mix, key, "send", 0, 1e9) : 0;
  const double write = mix["write"] ? r.number(mix, key, "write", 0, 1e9) : 0;
  const double read = mix["read"] ? r.number(mix, key, "read", 0, 1e9) : 0;
  const double total = send + write + read;
  if (total <= 0) r.fail(mix, key, "needs at least one opcode with a positive share");
  w.write_fraction = write / total;
  w.read_fraction = read / total;
}

void read_sizes(const Reader& r, const YAML::Node& parent, const std::string& prefix, Workload& w) {
  const YAML::Node size = parent["size"];
  const std::string key = Reader::join(prefix, "size");
  w.sizes.clear();
  w.size_weights.clear();
  auto bytes = [&](const YAML::Node& p, const std::string& pre, const char* name) {
    return r.value(p, pre, name, [](const std::string& v) {
      const uint64_t b = parse_size_bytes(v);
      if (b < 1 || b > (1u << 20)) throw std::invalid_argument("'" + v + "' is outside 1 B .. 1 MiB");
      return uint32_t(b);
    });
  };
  if (size.IsSequence()) {
    if (size.size() == 0) r.fail(size, key, "an empty list");
    for (size_t i = 0; i < size.size(); ++i) {
      const std::string k = key + "[" + std::to_string(i) + "]";
      r.check_map(size[i], k, {"size", "weight"});
      w.sizes.push_back(bytes(size[i], k, "size"));
      w.size_weights.push_back(size[i]["weight"] ? r.number(size[i], k, "weight", 1e-9, 1e9) : 1.0);
    }
  } else {
    w.sizes.push_back(bytes(parent, prefix, "size"));
    w.size_weights.push_back(1.0);
  }
}

void read_arrival(const Reader& r, const YAML::Node& a, const std::string& k, Workload& w) {
  r.check_map(a, k, {"process", "kind", "rate", "on", "off", "outstanding", "file"});
  if (a["kind"]) {
    const std::string kind = r.scalar(a["kind"], k + ".kind");
    if (kind == "wqe") w.inject_cqes = false;
    else if (kind == "cqe") w.inject_cqes = true;
    else r.fail(a["kind"], k + ".kind", "'" + kind + "' is not one of wqe (post a work request), cqe (inject a completion)");
  }
  // Without a process the inherited one stays (the top level inherits poisson).
  const std::string p = a["process"] ? r.scalar(a["process"], k + ".process") : arrival_name(w.arrival);
  if (p == "poisson") w.arrival = Arrival::poisson;
  else if (p == "constant") w.arrival = Arrival::constant;
  else if (p == "onoff") w.arrival = Arrival::onoff;
  else if (p == "pingpong") w.arrival = Arrival::pingpong;
  else if (p == "trace") w.arrival = Arrival::trace;
  else r.fail(a["process"], k + ".process", "'" + p + "' is not one of poisson, constant, onoff, pingpong, trace");
  const bool pingpong = w.arrival == Arrival::pingpong, trace = w.arrival == Arrival::trace;
  auto only = [&](const char* name, bool allowed, const char* why) {
    if (a[name] && !allowed) r.fail(a[name], k + "." + name, why);
  };
  only("rate", !pingpong && !trace, "a ping-pong or a trace sets its own pace: no rate");
  only("outstanding", pingpong, "only a ping-pong has pings outstanding");
  only("on", w.arrival == Arrival::onoff, "only an onoff process has bursts");
  only("off", w.arrival == Arrival::onoff, "only an onoff process has gaps");
  only("file", trace, "only a trace is read from a file");
  if (a["rate"])
    w.rate_kmsg = r.value(a, k, "rate", [](const std::string& v) {
      const double rate = parse_rate_per_s(v);
      if (rate < 1 || rate > 1e9) throw std::invalid_argument("'" + v + "' is outside 1/s .. 1000M/s");
      return rate / 1e3;
    });
  if (a["on"]) w.on_us = r.duration_us(a, k, "on", 0.01, 1e7);
  if (a["off"]) w.off_us = r.duration_us(a, k, "off", 0, 1e7);
  if (a["outstanding"]) w.outstanding = r.integer(a, k, "outstanding", 1, 4096);
  if (trace) {
    if (!a["file"] && w.trace_file.empty()) r.fail(a, k + ".file", "a trace needs the file of recorded arrivals");
    if (a["file"]) {  // else the inherited trace
      const std::string file = r.scalar(a["file"], k + ".file");
      w.trace_file = file;
      try {
        w.trace = load_arrival_trace(r.relative(file));
      } catch (const ScenarioError& e) {
        r.fail(a["file"], k + ".file", e.what());
      }
    }
  } else {
    w.trace_file.clear();
    w.trace.clear();
  }
}

// A workload at `key` over `w` (the defaults it inherits).
void read_workload_keys(const Reader& r, const YAML::Node& n, const std::string& key, Workload& w) {
  if (n["mix"]) read_mix(r, n["mix"], key + ".mix", w);
  if (n["size"]) read_sizes(r, n, key, w);
  if (n["arrival"]) read_arrival(r, n["arrival"], key + ".arrival", w);
  if (w.arrival == Arrival::pingpong && w.inject_cqes)
    r.fail(n["arrival"] ? n["arrival"] : n, key + ".arrival.kind", "a ping-pong exchanges SENDs: its arrivals cannot be injected CQEs");
  if (w.arrival == Arrival::pingpong && (w.write_fraction > 0 || w.read_fraction > 0)) {
    if (n["mix"]) r.fail(n["mix"], key + ".mix", "a ping-pong exchanges SENDs only: write and read must be 0");
    r.fail(n["arrival"] ? n["arrival"] : n, key + ".arrival.process",
           "a ping-pong exchanges SENDs only, but the inherited mix has writes or reads: give a mix of {send: 1}");
  }
}

void check_workload(const Reader& r, const YAML::Node& n, const std::string& key, const Workload& w, int qps,
                    int depth) {
  if (w.arrival == Arrival::pingpong && w.outstanding > depth)
    r.fail(n, key + ".arrival.outstanding", "more pings outstanding than the queue depth");
  for (const TracedArrival& a : w.trace)
    if (a.qp >= qps)
      r.fail(n, key + ".arrival.file",
             "the trace names QP " + std::to_string(a.qp) + " but there are " + std::to_string(qps) + " QPs");
}

void read_groups(const Reader& r, const YAML::Node& list, TrafficOptions& o) {
  const std::string key = "workload.groups";
  if (!list.IsSequence() || list.size() == 0) r.fail(list, key, "must be a list of groups");
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node g = list[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    r.check_map(g, k, {"name", "qps", "cqs", "mix", "size", "arrival"});
    QpGroup group;
    group.name = g["name"] ? r.scalar(g["name"], k + ".name") : "g" + std::to_string(i);
    static const std::regex ident(R"(^[A-Za-z][A-Za-z0-9_-]*$)");
    if (!std::regex_match(group.name, ident))
      r.fail(g["name"], k + ".name", "'" + group.name + "' must be letters, digits, '_' or '-', starting with a letter");
    if (!names.insert(group.name).second)
      r.fail(g["name"] ? g["name"] : g, k + ".name", "'" + group.name + "' names two groups");
    if (!g["qps"]) r.fail(g, k + ".qps", "a group needs its number of QPs");
    group.qps = r.integer(g, k, "qps", 1, 1000);
    if (const YAML::Node cqs = g["cqs"]) {
      if (!cqs.IsSequence() || cqs.size() == 0) r.fail(cqs, k + ".cqs", "must be a list of CQ indices");
      for (size_t j = 0; j < cqs.size(); ++j) {
        const std::string idx = r.scalar(cqs[j], k + ".cqs[" + std::to_string(j) + "]");
        char* end = nullptr;
        const long c = std::strtol(idx.c_str(), &end, 10);
        if (end == idx.c_str() || *end || c < 0 || c >= o.cqs)
          r.fail(cqs[j], k + ".cqs[" + std::to_string(j) + "]",
                 "'" + idx + "' is not a CQ index 0 .. " + std::to_string(o.cqs - 1));
        group.cqs.push_back(int(c));
      }
    }
    group.workload = o.workload;
    read_workload_keys(r, g, k, group.workload);
    check_workload(r, g, k, group.workload, group.qps, o.depth);
    o.groups.push_back(group);
  }
}

void read_workload(const Reader& r, const YAML::Node& w, TrafficOptions& o, bool qps_given) {
  r.check_map(w, "workload", {"mix", "size", "arrival", "groups"});
  read_workload_keys(r, w, "workload", o.workload);
  if (!w["groups"]) return check_workload(r, w, "workload", o.workload, o.qps, o.depth);
  read_groups(r, w["groups"], o);
  int total = 0;
  for (const QpGroup& g : o.groups) total += g.qps;
  if (qps_given && total != o.qps)
    r.fail(w["groups"], "workload.groups",
           "the groups have " + std::to_string(total) + " QPs but qps.count is " + std::to_string(o.qps));
  o.qps = total;
}

void read_overrides(const Reader& r, const YAML::Node& list, TrafficOptions& o) {
  const std::string key = "cqs.overrides";
  if (!list.IsSequence()) r.fail(list, key, "must be a list of {cq, host, moderation, vector}");
  std::set<std::pair<int, int>> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node n = list[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    r.check_map(n, k, {"cq", "host", "moderation", "vector"});
    CqOverride c;
    if (!n["cq"]) r.fail(n, k + ".cq", "which CQ (0 .. " + std::to_string(o.cqs - 1) + ")?");
    c.cq = r.integer(n, k, "cq", 0, o.cqs - 1);
    if (n["host"]) c.host = r.integer(n, k, "host", 0, 1);
    if (!n["moderation"] && !n["vector"]) r.fail(n, k, "an override sets a moderation, a vector or both");
    c.moderation = o.moderation;
    if (n["moderation"]) {
      c.has_moderation = true;
      read_moderation(r, n["moderation"], k + ".moderation", c.moderation);
    }
    if (n["vector"]) c.vector = r.integer(n, k, "vector", 0, o.vectors - 1);
    if (!seen.insert({c.host, c.cq}).second)
      r.fail(n, k, "CQ " + std::to_string(c.cq) + " is overridden twice" + (c.host < 0 ? "" : " on this host"));
    o.cq_overrides.push_back(c);
  }
}

void read_pcie(const Reader& r, const YAML::Node& n, PcieLinkConfig& pcie) {
  r.check_map(n, "pcie", {"rate", "latency", "read_access"});
  if (n["rate"])
    pcie.gbytes_per_s = r.value(n, "pcie", "rate", [](const std::string& v) {
      const double g = parse_gbps(v);
      if (g < 1 || g > 4096) throw std::invalid_argument("'" + v + "' is outside 1 Gbps .. 4096 Gbps");
      return g / 8;
    });
  if (n["latency"]) pcie.latency = sc_core::sc_time(r.duration_us(n, "pcie", "latency", 0, 100), sc_core::SC_US);
  if (n["read_access"])
    pcie.read_access = sc_core::sc_time(r.duration_us(n, "pcie", "read_access", 0, 100), sc_core::SC_US);
}

void read_hca(const Reader& r, const YAML::Node& n, TrafficOptions& o) {
  r.check_map(n, "hca", {"profile", "clock", "command_latency", "cq_writer", "arm_event", "doorbell_fifo", "prefetch", "fetch_burst",
                         "rq_prefetch", "ack_coalesce", "ack_delay", "max_inflight", "early_injection",
                         "writes_ahead", "early_completions", "wait_for_credits", "rx_takes_arrivals"});
  if (n["cq_writer"]) {
    const std::string v = r.scalar(n["cq_writer"], "hca.cq_writer");
    // model: the HCA's writer, the pipelined one (pipelined, its former name, is still read); rtl:
    // its RTL (rtl-pipelined, likewise). The mirror RTL is retired.
    if (v == "rtl-mirror") {
      r.fail(n["cq_writer"], "hca.cq_writer",
             "'rtl-mirror' is retired (session 11): the HCA's writer is the pipelined one, 'model', and its RTL 'rtl'");
    } else if (v == "model" || v == "pipelined" || v == "rtl" || v == "rtl-pipelined") {
      o.rtl = v == "rtl" || v == "rtl-pipelined";
    } else {
      r.fail(n["cq_writer"], "hca.cq_writer", "'" + v + "' is not model or rtl");
    }
  }
  if (n["arm_event"]) {
    const std::string v = r.scalar(n["arm_event"], "hca.arm_event");
    if (!parse_arm_event(v, o.arm_event))
      r.fail(n["arm_event"], "hca.arm_event", "'" + v + "' is neither moderated nor at-arm");
  }
  auto on_off = [&](const char* name, bool& field) {
    if (!n[name]) return;
    const std::string key = std::string("hca.") + name, v = r.scalar(n[name], key);
    if (v == "on") field = true;
    else if (v == "off") field = false;
    else r.fail(n[name], key, "'" + v + "' is neither on nor off");
  };
  on_off("rq_prefetch", o.transport.rq_prefetch);
  on_off("early_injection", o.early_injection);
  on_off("writes_ahead", o.writes_ahead);
  on_off("early_completions", o.early_completions);
  on_off("wait_for_credits", o.wait_for_credits);
  on_off("rx_takes_arrivals", o.transport.rx_takes_arrivals);
  if (n["clock"])
    o.hca_clock_mhz = r.value(n, "hca", "clock", [](const std::string& v) {
      const double mhz = with_unit(v, {{"MHz", 1.0}, {"GHz", 1e3}}, "frequency: MHz, GHz");
      if (mhz < 50 || mhz > 4000) throw std::invalid_argument("'" + v + "' is outside 50 MHz .. 4 GHz");
      return mhz;
    });
  if (o.rtl && o.hca_clock_mhz != 500)
    r.fail(n["cq_writer"], "hca.cq_writer",
           "the Verilated RTL is built for 500 cycles per us: with rtl, hca.clock must be 500MHz");
  if (n["command_latency"])
    o.command_latency = sc_core::sc_time(r.duration_us(n, "hca", "command_latency", 0.1, 10000), sc_core::SC_US);
  TransportConfig& t = o.transport;
  auto count = [&](const char* name, uint32_t& field, double lo, double hi) {
    if (n[name]) field = uint32_t(r.integer(n, "hca", name, lo, hi));
  };
  count("doorbell_fifo", t.doorbell_fifo_depth, 1, 4096);
  count("prefetch", t.prefetch_depth, 1, 256);
  count("fetch_burst", t.fetch_burst, 1, 64);
  count("ack_coalesce", t.ack_coalesce, 1, 256);
  count("ack_delay", t.ack_delay_cycles, 1, 1 << 20);
  count("max_inflight", t.max_inflight_psns, 1, 1 << 22);
  if (t.fetch_burst > t.prefetch_depth) {
    if (n["fetch_burst"]) r.fail(n["fetch_burst"], "hca.fetch_burst", "must not exceed hca.prefetch");
    t.fetch_burst = t.prefetch_depth;  // a shallow prefetch alone: bursts shrink with it
  }
}

TrafficOptions read_scenario(const YAML::Node& root, const Reader& r) {
  TrafficOptions o;
  r.check_map(root, "", {"name", "description", "seed", "duration", "warmup", "link", "pcie", "hca", "host", "cqs",
                         "qps", "workload"});
  if (root["name"]) o.name = r.scalar(root["name"], "name");
  // The profile first: every other key overrides what it sets.
  if (root["hca"] && root["hca"].IsMap() && root["hca"]["profile"]) {
    const YAML::Node p = root["hca"]["profile"];
    const std::string v = r.scalar(p, "hca.profile");
    const HcaProfile* profile = find_hca_profile(v);
    if (!profile) r.fail(p, "hca.profile", "'" + v + "' is not one of " + hca_profile_names());
    apply_hca_profile(*profile, o);
  }
  if (root["seed"]) o.seed = uint64_t(r.integer(root, "", "seed", 0, 2147483647));
  if (root["duration"]) o.duration_us = r.duration_us(root, "", "duration", 1, 1e7);
  if (root["warmup"]) o.warmup_us = r.duration_us(root, "", "warmup", 0, 1e7);
  if (o.warmup_us >= o.duration_us) r.fail(root["warmup"], "warmup", "must be shorter than the duration");
  if (const YAML::Node l = root["link"]) {
    r.check_map(l, "link", {"rate", "latency", "loss"});
    if (l["rate"])
      o.link.gbit_per_s = r.value(l, "link", "rate", [](const std::string& v) {
        const double g = parse_gbps(v);
        if (g < 0.1 || g > 1600) throw std::invalid_argument("'" + v + "' is outside 100 Mbps .. 1600 Gbps");
        return g;
      });
    if (l["latency"]) o.link.latency = sc_core::sc_time(r.duration_us(l, "link", "latency", 0, 1e5), sc_core::SC_US);
    if (l["loss"]) o.link.loss_rate = r.number(l, "link", "loss", 0, 0.5);
  }
  if (root["pcie"]) read_pcie(r, root["pcie"], o.pcie);
  if (root["hca"]) read_hca(r, root["hca"], o);
  if (const YAML::Node h = root["host"]) {
    r.check_map(h, "host", {"vectors", "poll", "cpu", "cores", "memory", "run_ahead"});
    if (h["run_ahead"]) {  // simulation speed only (HostCpuConfig::run_ahead)
      const std::string v = r.scalar(h["run_ahead"], "host.run_ahead");
      if (v == "on" || v == "off") o.cpu.run_ahead = v == "on";
      else r.fail(h["run_ahead"], "host.run_ahead", "'" + v + "' is neither on nor off");
    }
    if (h["vectors"]) o.vectors = r.integer(h, "host", "vectors", 1, 31);
    if (h["memory"])
      o.host_memory = r.value(h, "host", "memory", [](const std::string& v) {
        const double b = with_unit(v, {{"MiB", 1048576.0}, {"GiB", 1073741824.0}}, "memory: MiB, GiB");
        if (b < 1048576.0 || b > 1099511627776.0) throw std::invalid_argument("'" + v + "' is outside 1 MiB .. 1024 GiB");
        return uint64_t(b);
      });
    if (h["cores"]) {
      const std::string v = r.scalar(h["cores"], "host.cores");
      if (v == "parallel") o.cores = 0;
      else if (v == "auto") o.cores = -1;
      else if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos)
        o.cores = r.integer(h, "host", "cores", 1, 64);
      else r.fail(h["cores"], "host.cores", "'" + v + "' is not parallel, auto or a number of cores 1 .. 64");
    }
    if (h["poll"]) {
      const std::string p = r.scalar(h["poll"], "host.poll");
      if (p == "softirq") o.context = PollContext::softirq;
      else if (p == "thread") o.context = PollContext::thread;
      else if (p == "workqueue") o.context = PollContext::workqueue;
      else r.fail(h["poll"], "host.poll", "'" + p + "' is not one of softirq, thread, workqueue");
    }
    if (h["cpu"]) read_cpu(r, h["cpu"], "host.cpu", o.cpu);
  }
  if (const YAML::Node c = root["cqs"]) {
    r.check_map(c, "cqs", {"count", "size", "moderation", "overrides"});
    if (c["count"]) o.cqs = r.integer(c, "cqs", "count", 1, 60);
    if (c["size"]) o.cq_size = r.integer(c, "cqs", "size", 1, 1 << 22);
    if (c["moderation"]) read_moderation(r, c["moderation"], "cqs.moderation", o.moderation);
    if (c["overrides"]) read_overrides(r, c["overrides"], o);
  }
  if (const YAML::Node q = root["qps"]) {
    r.check_map(q, "qps", {"count", "depth", "mtu", "inline"});
    if (q["inline"])
      o.max_inline = uint32_t(r.value(q, "qps", "inline", [](const std::string& v) {
        const uint64_t b = parse_size_bytes(v);
        if (b > sqwqe::kMaxInline)
          throw std::invalid_argument("'" + v + "' exceeds the " + std::to_string(sqwqe::kMaxInline) +
                                      " bytes a WQE holds");
        return b;
      }));
    if (q["count"]) o.qps = r.integer(q, "qps", "count", 1, 1000);
    if (q["depth"]) o.depth = r.integer(q, "qps", "depth", 1, 4096);
    if (q["mtu"]) {
      const uint64_t mtu = r.value(q, "qps", "mtu", [](const std::string& v) { return parse_size_bytes(v); });
      uint8_t code = 0;
      for (uint8_t c = 1; c <= 5; ++c)
        if ((128u << c) == mtu) code = c;
      if (!code) r.fail(q["mtu"], "qps.mtu", "must be 256B, 512B, 1KiB, 2KiB or 4KiB");
      o.path_mtu = code;
    }
  }
  if (root["workload"]) read_workload(r, root["workload"], o, root["qps"] && root["qps"]["count"]);
  return o;
}

TrafficOptions parse_tree_checked(YAML::Node root, const std::string& source, const std::vector<std::string>& sets) {
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())
    throw ScenarioError(source + ":1: a scenario is a map of keys, not " +
                        (root.IsSequence() ? std::string("a list") : "a single value"));
  std::set<std::string> from_set;
  for (const std::string& s : sets) apply_set(root, s, from_set);
  return read_scenario(root, Reader(source, from_set));
}

// Whatever yaml-cpp or a conversion throws becomes a ScenarioError naming the file (and line),
// so a caller never sees a raw exception (a YAML complex key, an unexpected node type).
TrafficOptions parse_tree(YAML::Node root, const std::string& source, const std::vector<std::string>& sets) {
  try {
    return parse_tree_checked(root, source, sets);
  } catch (const ScenarioError&) {
    throw;
  } catch (const YAML::BadConversion& e) {
    throw ScenarioError(source + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) + ": " + e.msg +
                        " (keys are plain words; values are numbers with units, words, or the maps and lists of the "
                        "format)");
  } catch (const YAML::Exception& e) {
    throw ScenarioError(source + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) + ": " + e.msg);
  } catch (const std::exception& e) {
    throw ScenarioError(source + ": " + e.what());
  }
}

}  // namespace

TrafficOptions parse_scenario(const std::string& text, const std::string& source, const std::vector<std::string>& sets) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ScenarioError(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return parse_tree(root, source, sets);
}

TrafficOptions load_scenario(const std::string& path, const std::vector<std::string>& sets) {
  YAML::Node root;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ScenarioError(path + ": cannot be read: it is a folder");
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ScenarioError(path + ": cannot be read");
  } catch (const YAML::ParserException& e) {
    throw ScenarioError(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  } catch (const std::exception& e) {  // an unreadable file the stream reports some other way
    throw ScenarioError(path + ": cannot be read: " + e.what());
  }
  return parse_tree(root, path, sets);
}

}  // namespace vhca
