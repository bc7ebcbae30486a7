#include "explorer/arrival_trace.h"

#include <filesystem>

#include <cinttypes>
#include <fstream>
#include <sstream>

#include "model/regs/tables.h"
#include "explorer/scenario.h"

namespace vhca {
namespace {

constexpr const char* kHeader = "time_us,qp,opcode,size";

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "12.345678" microseconds -> picoseconds, exactly (no floating point on the way).
bool parse_time_ps(const std::string& v, uint64_t& ps) {
  const size_t dot = v.find('.');
  const std::string whole = v.substr(0, dot), frac = dot == std::string::npos ? "" : v.substr(dot + 1);
  if (!all_digits(whole) || whole.size() > 9 || frac.size() > 6 || (!frac.empty() && !all_digits(frac))) return false;
  ps = std::stoull(whole) * 1000000ull + (frac.empty() ? 0 : std::stoull(frac + std::string(6 - frac.size(), '0')));
  return true;
}

}  // namespace

std::vector<TracedArrival> parse_arrival_trace(const std::string& text, const std::string& source) {
  std::vector<TracedArrival> out;
  std::istringstream in(text);
  bool header = false;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto fail = [&](const std::string& column, const std::string& why) {
      throw ScenarioError(source + ":" + std::to_string(line_no) + ": " +
                          (column.empty() ? "" : "column '" + column + "': ") + why);
    };
    if (!header) {
      if (line != kHeader) fail("", "the first line must be the header '" + std::string(kHeader) + "'");
      header = true;
      continue;
    }
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cols.push_back(c);
    if (cols.size() != 4) fail("", "expected 4 columns (" + std::string(kHeader) + "), found " + std::to_string(cols.size()));
    TracedArrival a;
    if (!parse_time_ps(cols[0], a.at_ps)) fail("time_us", "'" + cols[0] + "' is not microseconds with at most 6 decimals");
    if (!out.empty() && a.at_ps < out.back().at_ps) fail("time_us", "'" + cols[0] + "' is earlier than the line before");
    if (!all_digits(cols[1]) || cols[1].size() > 6) fail("qp", "'" + cols[1] + "' is not a QP index");
    a.qp = std::stoi(cols[1]);
    if (cols[2] == "send") a.opcode = sqwqe::kSend;
    else if (cols[2] == "write") a.opcode = sqwqe::kRdmaWrite;
    else if (cols[2] == "read") a.opcode = sqwqe::kRdmaRead;
    else fail("opcode", "'" + cols[2] + "' is not send, write or read");
    if (!all_digits(cols[3]) || cols[3].size() > 7 || std::stoul(cols[3]) < 1 || std::stoul(cols[3]) > (1u << 20))
      fail("size", "'" + cols[3] + "' is not a size in bytes, 1 .. 1048576");
    a.size = uint32_t(std::stoul(cols[3]));
    out.push_back(a);
  }
  if (!header) throw ScenarioError(source + ": empty (expected the header '" + std::string(kHeader) + "')");
  return out;
}

std::vector<TracedArrival> load_arrival_trace(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ScenarioError(path + ": cannot be read: it is a folder");
  std::ifstream f(path);
  if (!f) throw ScenarioError(path + ": cannot be read");
  std::stringstream s;
  s << f.rdbuf();
  return parse_arrival_trace(s.str(), path);
}

std::string arrival_trace_text(const std::vector<TracedArrival>& arrivals) {
  std::string out = std::string(kHeader) + "\n";
  char line[96];
  for (const TracedArrival& a : arrivals) {
    const char* op = a.opcode == sqwqe::kRdmaWrite ? "write" : a.opcode == sqwqe::kRdmaRead ? "read" : "send";
    std::snprintf(line, sizeof line, "%" PRIu64 ".%06" PRIu64 ",%d,%s,%u\n", a.at_ps / 1000000, a.at_ps % 1000000, a.qp,
                  op, a.size);
    out += line;
  }
  return out;
}

}  // namespace vhca
