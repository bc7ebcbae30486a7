#include "explorer/vcd.h"

#include <algorithm>
#include <cstdio>

namespace vhca {

bool glob_match(const std::string& pattern, const std::string& name) {
  size_t p = 0, n = 0, star = std::string::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, resume = n;
    } else if (star != std::string::npos) {
      p = star + 1, n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

int VcdWriter::declare(const std::string& name, int width) {
  if (!on_) return -1;
  bool chosen = patterns_.empty();
  for (const std::string& p : patterns_) chosen = chosen || glob_match(p, name);
  if (!chosen) return -1;
  signals_.push_back(Signal{name, std::clamp(width, 1, 64)});
  return int(signals_.size()) - 1;
}

void VcdWriter::set(int id, uint64_t value, const sc_core::sc_time& at) {
  if (id < 0) return;
  const int w = signals_[size_t(id)].width;
  if (w < 64) value &= (uint64_t(1) << w) - 1;
  changes_.push_back(Change{at.value(), uint32_t(id), value});
}

namespace {

// Short printable identifiers: "!", "\"", ... then two characters, as VCD writers do.
std::string vcd_code(size_t i) {
  std::string s;
  do {
    s += char('!' + i % 94);
    i /= 94;
  } while (i);
  return s;
}

std::string bits(uint64_t v, int width) {
  std::string s = "b";
  bool seen = false;
  for (int b = width - 1; b >= 0; --b) {
    const bool one = (v >> b) & 1;
    seen = seen || one;
    if (seen) s += one ? '1' : '0';
  }
  if (!seen) s += '0';
  return s;
}

void write_value(FILE* f, const std::string& code, uint64_t v, int width) {
  if (width == 1)
    std::fprintf(f, "%c%s\n", v ? '1' : '0', code.c_str());
  else
    std::fprintf(f, "%s %s\n", bits(v, width).c_str(), code.c_str());
}

// Opens and closes scopes so that `path` (the dotted name without its last part) is current.
void enter_scope(FILE* f, std::vector<std::string>& open, const std::vector<std::string>& path) {
  size_t common = 0;
  while (common < open.size() && common < path.size() && open[common] == path[common]) ++common;
  for (size_t i = open.size(); i > common; --i) std::fprintf(f, "$upscope $end\n");
  open.resize(common);
  for (size_t i = common; i < path.size(); ++i) {
    std::fprintf(f, "$scope module %s $end\n", path[i].c_str());
    open.push_back(path[i]);
  }
}

std::vector<std::string> split(const std::string& name) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t dot; (dot = name.find('.', from)) != std::string::npos; from = dot + 1)
    parts.push_back(name.substr(from, dot - from));
  parts.push_back(name.substr(from));
  return parts;
}

}  // namespace

// The changes to write, in time order: per signal, repeats of its value dropped, and a value
// reported at the same time as an earlier different one moved one resolution unit later, so
// that a pulse that begins and ends (or ends and begins again) on one instant still shows.
std::vector<VcdWriter::Change> VcdWriter::settle(std::vector<Change> c) const {
  std::stable_sort(c.begin(), c.end(), [](const Change& a, const Change& b) { return a.id != b.id ? a.id < b.id : a.at < b.at; });
  std::vector<Change> out;
  for (const Change& ch : c) {
    const bool same_signal = !out.empty() && out.back().id == ch.id;
    if (ch.value == (same_signal ? out.back().value : 0)) continue;  // 0 before the first change, as $dumpvars says
    Change k = ch;
    if (same_signal && k.at <= out.back().at) k.at = out.back().at + 1;
    out.push_back(k);
  }
  std::stable_sort(out.begin(), out.end(), [](const Change& a, const Change& b) { return a.at < b.at; });
  return out;
}

bool VcdWriter::write(const std::string& path) const {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  const sc_core::sc_time res = sc_core::sc_get_time_resolution();
  std::fprintf(f, "$comment vhca-sim: chosen signals of the model, value changes only $end\n");
  std::fprintf(f, "$timescale %s $end\n", res.to_string().c_str());
  // Declarations grouped by scope: sort by name so that each scope opens once.
  std::vector<size_t> order(signals_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return split(signals_[a].name) < split(signals_[b].name); });
  std::vector<std::string> open;
  for (size_t i : order) {
    std::vector<std::string> parts = split(signals_[i].name);
    const std::string leaf = parts.back();
    parts.pop_back();
    enter_scope(f, open, parts);
    std::fprintf(f, "$var wire %d %s %s $end\n", signals_[i].width, vcd_code(i).c_str(), leaf.c_str());
  }
  enter_scope(f, open, {});
  std::fprintf(f, "$enddefinitions $end\n#0\n$dumpvars\n");
  uint64_t stamp = 0;
  for (size_t i = 0; i < signals_.size(); ++i) write_value(f, vcd_code(i), 0, signals_[i].width);
  std::fprintf(f, "$end\n");
  for (const Change& c : settle(changes_)) {
    if (c.at != stamp) std::fprintf(f, "#%llu\n", static_cast<unsigned long long>(c.at));
    stamp = c.at;
    write_value(f, vcd_code(c.id), c.value, signals_[c.id].width);
  }
  return std::fclose(f) == 0;
}

}  // namespace vhca
