#include "explorer/sweep.h"

#include "explorer/resources.h"

#include <filesystem>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include "explorer/scenario.h"

namespace vhca {
namespace {

struct Point {
  std::vector<std::string> sets;  // this point's --set overrides (fixed ones first)
  std::string label;              // the grid values, for the plot
  std::string csv;                // where the point writes its row
  size_t group = 0;               // its grid point (with --seeds, each grid point runs once per seed)
  int seed = 0;                   // 0: the scenario's own
};

std::string expand_key(const std::string& k) {
  static const std::map<std::string, std::string> alias = {{"count", "cqs.moderation.count"},
                                                           {"period", "cqs.moderation.period"},
                                                           {"mode", "cqs.moderation.mode"},
                                                           {"policy", "cqs.moderation.policy"}};
  auto it = alias.find(k);
  return it == alias.end() ? k : it->second;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, sep);) out.push_back(p);
  return out;
}

// The cartesian product of the grids, first grid slowest. A point with policy=dim drops the
// count and period of the grid (DIM chooses them, from the scenario's as a start), and repeated
// points are dropped.
std::vector<Point> make_points(const SweepOptions& o) {
  struct Axis {
    std::string key, name;
    std::vector<std::string> values;
  };
  std::vector<Axis> axes;
  for (const std::string& g : o.grids) {
    const size_t eq = g.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == g.size())
      throw ScenarioError("--grid " + g + ": expected key=value,value,...");
    axes.push_back({expand_key(g.substr(0, eq)), g.substr(0, eq), split(g.substr(eq + 1), ',')});
  }
  std::vector<Point> points;
  std::vector<size_t> ix(axes.size(), 0);
  std::vector<std::string> seen;
  for (;;) {
    Point p;
    p.sets = o.sets;
    bool dim = false;
    for (size_t a = 0; a < axes.size(); ++a)
      dim = dim || (axes[a].key == "cqs.moderation.policy" && axes[a].values[ix[a]] == "dim");
    for (size_t a = 0; a < axes.size(); ++a) {
      const std::string& v = axes[a].values[ix[a]];
      if (dim && (axes[a].key == "cqs.moderation.count" || axes[a].key == "cqs.moderation.period")) continue;
      p.sets.push_back(axes[a].key + "=" + v);
      p.label += (p.label.empty() ? "" : " ") + axes[a].name + "=" + v;
    }
    std::string id;
    for (const auto& s : p.sets) id += s + ";";
    if (std::find(seen.begin(), seen.end(), id) == seen.end()) {
      seen.push_back(id);
      points.push_back(p);
    }
    size_t a = axes.size();
    while (a > 0 && ++ix[a - 1] == axes[a - 1].values.size()) ix[--a] = 0;
    if (a == 0) break;
  }
  for (size_t i = 0; i < points.size(); ++i) {
    points[i].group = i;
    char name[32];
    std::snprintf(name, sizeof name, "/point-%03zu.csv", i);
    points[i].csv = o.out + name;
  }
  if (o.seeds <= 1) return points;
  std::vector<Point> runs;  // each grid point once per seed, seeds 1..N
  for (const Point& p : points)
    for (int k = 1; k <= o.seeds; ++k) {
      Point r = p;
      r.seed = k;
      r.sets.push_back("seed=" + std::to_string(k));
      char name[40];
      std::snprintf(name, sizeof name, "/point-%03zu-seed%d.csv", p.group, k);
      r.csv = o.out + name;
      runs.push_back(r);
    }
  return runs;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> point_argv(const SweepOptions& o, const Point& p) {
  std::vector<std::string> a = {o.self, "run", o.scenario};
  for (const auto& s : p.sets) a.insert(a.end(), {"--set", s});
  a.insert(a.end(), {"--csv", p.csv});
  return a;
}

// A point's log, beside its CSV.
std::string log_of(const Point& p) { return p.csv.substr(0, p.csv.size() - 4) + ".log"; }

// Runs the points as child processes, at most `jobs` at once; their output goes to a log each.
bool run_points(const SweepOptions& o, const std::vector<Point>& points, int jobs) {
  std::map<pid_t, size_t> running;
  size_t next = 0;
  bool ok = true;
  while (next < points.size() || !running.empty()) {
    while (next < points.size() && int(running.size()) < jobs) {
      const std::vector<std::string> args = point_argv(o, points[next]);
      const std::string log = log_of(points[next]);
      std::fflush(stdout);  // else the child's copy of the buffer would be written again
      std::fflush(stderr);
      const pid_t pid = fork();
      if (pid == 0) {
        std::freopen(log.c_str(), "w", stdout);
        std::freopen(log.c_str(), "a", stderr);
        std::vector<char*> argv;
        for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
      }
      if (pid < 0) return false;
      running[pid] = next++;
    }
    int status = 0;
    const pid_t done = wait(&status);
    if (done < 0) break;
    const size_t i = running[done];
    running.erase(done);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::printf("  run %3zu/%zu %-40s%s %s\n", i + 1, points.size(), points[i].label.c_str(),
                points[i].seed ? (" seed=" + std::to_string(points[i].seed)).c_str() : "",
                code == 0 ? "ok" : code == 1 ? "ran, checks failed (see its log)" : "FAILED (see its log)");
    if (code != 0 && code != 1) ok = false;
  }
  return ok;
}

// Column value of `name` in a CSV row.
double field(const std::vector<std::string>& header, const std::vector<std::string>& row, const std::string& name) {
  for (size_t i = 0; i < header.size() && i < row.size(); ++i)
    if (header[i] == name) return std::atof(row[i].c_str());
  return 0;
}

struct PlotPoint {
  double x, y;
  std::string label;
  bool ok;  // the run passed its checks (a stalled or lossy point is plotted, not on the frontier)
  size_t index = 0;  // the point's number in sweep.csv
  std::string why;   // a failed point: which check failed
  double x_ci = 0, y_ci = 0;  // with --seeds: 95 % confidence half-widths of the means
};

// Which of a run's checks failed, from its result row ("" if it passed).
std::string failure_of(const std::vector<std::string>& header, const std::vector<std::string>& row) {
  if (field(header, row, "ok") != 0) return "";
  std::vector<std::string> why;
  if (field(header, row, "completed") < field(header, row, "posted")) why.push_back("not drained");
  if (field(header, row, "data_errors") > 0) why.push_back("data damaged");
  if (field(header, row, "misordered") > 0) why.push_back("out of order");
  if (field(header, row, "errors") > 0) why.push_back("completion errors");
  if (field(header, row, "host0_overflows") + field(header, row, "host1_overflows") > 0) why.push_back("CQ overflow");
  if (why.empty()) why.push_back("not drained");  // receives outstanding
  std::string text;
  for (const std::string& w : why) text += (text.empty() ? "" : ", ") + w;
  return text;
}

// The smallest and the largest positive value along one axis (0 and 0 when there is none): what a
// log axis shows.
std::pair<double, double> positive_range(const std::vector<PlotPoint>& pts, double PlotPoint::*axis) {
  double lo = 0, hi = 0;
  for (const PlotPoint& p : pts) {
    const double v = p.*axis;
    if (!(v > 0)) continue;
    lo = lo == 0 ? v : std::min(lo, v);
    hi = std::max(hi, v);
  }
  return {lo, hi};
}

// Whether values span more than a decade (a log axis shows them better).
bool spans_decades(const std::vector<PlotPoint>& pts, double PlotPoint::*axis) {
  const auto [lo, hi] = positive_range(pts, axis);
  return lo > 0 && hi / lo > 10;
}

// Where a point lands along one axis, as a fraction of the axis (log scale or linear), so that
// points drawn on top of each other can be told.
struct AxisScale {
  bool log = false;
  double lo = 0, hi = 0;
  double at(double v) const {
    if (log) return v > 0 && hi > lo ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : 0;
    return hi > lo ? (v - lo) / (hi - lo) : 0;
  }
};

AxisScale axis_scale(const std::vector<PlotPoint>& pts, double PlotPoint::*axis, bool log) {
  if (log) {
    const auto [lo, hi] = positive_range(pts, axis);
    return AxisScale{true, lo, hi};
  }
  AxisScale a{false, 0, 0};  // linear axes start at 0
  for (size_t i = 0; i < pts.size(); ++i) {
    const double v = pts[i].*axis;
    a.lo = std::min(a.lo, v);
    a.hi = i == 0 ? v : std::max(a.hi, v);
  }
  return a;
}

// The latency the plot uses: the round trip for a ping-pong, else the first requester opcode with
// samples, handler p99.
std::string latency_column(const std::vector<std::string>& header, const std::vector<std::string>& row) {
  for (const char* op : {"PINGPONG", "SEND", "RDMA_WRITE", "RDMA_READ", "INJECTED"})
    if (field(header, row, std::string(op) + "_samples") > 0) return std::string(op) + "_hdl_p99_us";
  return "SEND_hdl_p99_us";
}

// Two-sided 95 % Student t quantile for n - 1 degrees of freedom (n runs).
double t95(size_t n) {
  static const double kT[] = {0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                              2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086};
  const size_t df = n - 1;
  return df < sizeof kT / sizeof kT[0] ? kT[df] : 1.96;
}

struct MeanCi {
  double mean = 0, ci = 0;  // ci: half-width of the 95 % confidence interval of the mean
};
MeanCi mean_ci(const std::vector<double>& v) {
  MeanCi m;
  if (v.empty()) return m;
  for (double x : v) m.mean += x;
  m.mean /= double(v.size());
  if (v.size() < 2) return m;
  double ss = 0;
  for (double x : v) ss += (x - m.mean) * (x - m.mean);
  m.ci = t95(v.size()) * std::sqrt(ss / double(v.size() - 1) / double(v.size()));
  return m;
}

// With --seeds: summary.csv, one row per grid point with every numeric column's mean and 95 %
// confidence half-width over its seeds; the plot then shows each grid point at its means, with
// the intervals as error bars, failed if any seed failed.
std::vector<PlotPoint> summarize_seeds(const SweepOptions& o, const std::vector<Point>& points,
                                       const std::vector<std::string>& columns,
                                       const std::vector<std::map<std::string, std::string>>& rows,
                                       const std::vector<PlotPoint>& runs) {
  std::ofstream sum(o.out + "/summary.csv");
  sum << "point,settings,runs,failed_runs";
  for (const std::string& c : columns)
    if (c != "scenario" && c != "seed") sum << "," << c << "_mean," << c << "_ci95";
  sum << "\n";
  std::vector<PlotPoint> plot;
  for (size_t first = 0; first < points.size();) {
    size_t end = first;
    while (end < points.size() && points[end].group == points[first].group) ++end;
    size_t failed = 0;
    std::vector<double> xs, ys;
    for (size_t i = first; i < end; ++i) {
      failed += runs[i].ok ? 0 : 1;
      xs.push_back(runs[i].x);
      ys.push_back(runs[i].y);
    }
    sum << points[first].group << ",\"" << points[first].label << "\"," << end - first << "," << failed;
    for (const std::string& c : columns) {
      if (c == "scenario" || c == "seed") continue;
      std::vector<double> v;
      for (size_t i = first; i < end; ++i) {
        auto it = rows[i].find(c);
        if (it != rows[i].end() && !it->second.empty()) v.push_back(std::atof(it->second.c_str()));
      }
      const MeanCi m = mean_ci(v);
      sum << "," << m.mean << "," << m.ci;
    }
    sum << "\n";
    PlotPoint p = runs[first];
    const MeanCi mx = mean_ci(xs), my = mean_ci(ys);
    p.x = mx.mean, p.y = my.mean, p.x_ci = mx.ci, p.y_ci = my.ci;
    p.index = points[first].group;
    p.ok = failed == 0;
    for (size_t i = first; i < end; ++i)  // the reason of the last seed that failed
      if (!runs[i].ok) p.why = std::to_string(failed) + " of " + std::to_string(end - first) + " seeds: " + runs[i].why;
    plot.push_back(p);
    first = end;
  }
  std::printf("wrote %s/summary.csv (%zu grid points, %d seeds each: mean and 95 %% CI)\n", o.out.c_str(), plot.size(),
              o.seeds);
  return plot;
}

// Merges and plots; false if a point's CSV is missing or the plot could not be drawn. `passed`:
// the grid points that passed their checks.
bool collect_and_plot(const SweepOptions& o, const std::vector<Point>& points, size_t& passed) {
  // Points may differ in their columns (a grid over cqs.count changes the per-CQ ones): the CSV
  // has every column any point has, in order of first appearance, and a point leaves the ones it
  // lacks empty.
  std::vector<std::string> columns;
  std::vector<std::map<std::string, std::string>> rows(points.size());
  std::vector<PlotPoint> plot;
  std::string ycol = o.latency_column;
  bool ok = true;
  for (size_t i = 0; i < points.size(); ++i) {
    std::ifstream in(points[i].csv);
    std::string h, r;
    if (!std::getline(in, h) || !std::getline(in, r)) {
      std::fprintf(stderr, "vhca-sim sweep: %s is missing or empty\n", points[i].csv.c_str());
      ok = false;
      continue;
    }
    const std::vector<std::string> header = split(h, ','), row = split(r, ',');
    for (size_t c = 0; c < header.size() && c < row.size(); ++c) {
      if (std::find(columns.begin(), columns.end(), header[c]) == columns.end()) columns.push_back(header[c]);
      rows[i][header[c]] = row[c];
    }
    if (ycol.empty()) ycol = latency_column(header, row);
    const double x = o.x_column.empty()
                         ? (field(header, row, "host0_interrupts_per_s") + field(header, row, "host1_interrupts_per_s")) / 1e3
                         : field(header, row, o.x_column);
    plot.push_back({x,
                    field(header, row, ycol), points[i].label, field(header, row, "ok") != 0, i,
                    failure_of(header, row)});
  }
  std::ofstream csv(o.out + "/sweep.csv");
  csv << "point,settings";
  for (const std::string& c : columns) csv << "," << c;
  csv << "\n";
  for (size_t i = 0; i < points.size(); ++i) {
    csv << i << ",\"" << points[i].label << "\"";
    for (const std::string& c : columns) {
      auto it = rows[i].find(c);
      csv << "," << (it == rows[i].end() ? "" : it->second);
    }
    csv << "\n";
  }
  csv.close();
  if (!ok) return false;
  if (o.seeds > 1) plot = summarize_seeds(o, points, columns, rows, plot);
  passed = size_t(std::count_if(plot.begin(), plot.end(), [](const PlotPoint& p) { return p.ok; }));
  // The Pareto frontier: no other point has both fewer interrupts and lower latency.
  std::vector<PlotPoint> front;
  for (const auto& p : plot) {
    bool dominated = !p.ok;
    for (const auto& q : plot)
      dominated = dominated || (q.ok && q.x <= p.x && q.y <= p.y && (q.x < p.x || q.y < p.y));
    if (!dominated) front.push_back(p);
  }
  std::sort(front.begin(), front.end(), [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
  // Points are numbered on the plot; a key beside it says what each number ran (every point up to
  // 40, else the frontier and the failed ones), and why a failed point failed.
  const bool logx = spans_decades(plot, &PlotPoint::x), logy = spans_decades(plot, &PlotPoint::y);
  const AxisScale xs = axis_scale(plot, &PlotPoint::x, logx), ys = axis_scale(plot, &PlotPoint::y, logy);
  // Two points whose marks would overlap: within 3 % of the axes of each other.
  auto overlap = [&](const PlotPoint& a, const PlotPoint& b) {
    return std::abs(xs.at(a.x) - xs.at(b.x)) < 0.03 && std::abs(ys.at(a.y) - ys.at(b.y)) < 0.03;
  };
  std::ofstream dat(o.out + "/pareto.dat");
  dat << "# interrupts_k_per_s " << ycol << " point; blocks: passed points, failed points, the frontier\n";
  for (bool ok : {true, false}) {
    // Points drawn on top of each other (identical or nearly identical results) share one label
    // ("0,1,2"), written at the first of them, so that no two labels are printed over each other.
    std::vector<std::pair<const PlotPoint*, std::string>> labelled;
    for (const auto& p : plot) {
      if (p.ok != ok) continue;
      auto same = std::find_if(labelled.begin(), labelled.end(), [&](const auto& l) { return overlap(*l.first, p); });
      if (same == labelled.end()) labelled.push_back({&p, std::to_string(p.index)});
      else same->second += "," + std::to_string(p.index);
    }
    for (const auto& [p, names] : labelled) dat << p->x << " " << p->y << " \"" << names << "\"\n";
    if (labelled.empty()) dat << "NaN NaN \"\"\n";  // keep the block so that the indices stay put
    dat << "\n\n";
  }
  for (const auto& p : front) dat << p.x << " " << p.y << " \"" << p.index << "\"\n";
  dat << "\n\n";
  for (const auto& p : plot) dat << p.x << " " << p.y << " " << p.x_ci << " " << p.y_ci << "\n";  // error bars
  dat.close();
  auto on_front = [&](const PlotPoint& p) {
    return std::any_of(front.begin(), front.end(), [&](const PlotPoint& f) { return f.index == p.index; });
  };
  const bool all_keyed = plot.size() <= 40;
  std::string key;
  for (const auto& p : plot) {
    if (!all_keyed && p.ok && !on_front(p)) continue;
    key += std::to_string(p.index) + (on_front(p) ? " * " : "   ") + p.label;
    if (!p.ok) key += "   FAILED: " + p.why;
    key += "\\n";
  }
  if (!all_keyed) key += "(other points: sweep.csv)\\n";
  for (char& c : key)
    if (c == '"') c = '\'';
  // A log axis spans the data and a little more (gnuplot would round out to whole decades).
  auto log_range = [](const AxisScale& a) {
    return "[" + std::to_string(a.lo / 1.5) + ":" + std::to_string(a.hi * 1.5) + "]";
  };
  const std::string scenario_name = o.scenario.substr(o.scenario.find_last_of('/') + 1);
  std::ofstream gp(o.out + "/pareto.gp");
  gp << "# Latency vs interrupt rate for the sweep of " << o.scenario << "\n"
     << "set encoding utf8\nset datafile separator whitespace\n"
     << "set xlabel '" << (o.x_column.empty() ? std::string("interrupts per second, both hosts (k/s") : o.x_column + " (")
     << (logx ? (o.x_column.empty() ? ", log scale" : "log scale") : "") << ")' noenhanced\n"
     << "set ylabel '" << ycol << " (µs" << (logy ? ", log scale" : "") << ")' noenhanced\n"
     << (logx ? "set logscale x\nset xrange " + log_range(xs) + "\n" : "set xrange [0:*]\n")
     << (logy ? "set logscale y\nset yrange " + log_range(ys) + "\n" : "set yrange [0:*]\n")
     << (logx || logy ? "" : "set offsets 0, graph 0.1, graph 0.1, 0\n")
     << "set title 'vhca-sim sweep of " << scenario_name << ": latency vs "
     << (o.x_column.empty() ? std::string("interrupt rate") : o.x_column) << "' noenhanced\n"
     << "set key top right\nset grid\nset rmargin at screen 0.60\n"
     << "set label 1 \"point   (* on the Pareto frontier)\\n" << key
     << "\" at screen 0.62, screen 0.93 left font ',8' noenhanced\n";
  for (const char* term : {"pngcairo size 1400,750", "svg size 1400,750"}) {
    const bool png = std::string(term).rfind("png", 0) == 0;
    gp << "set terminal " << term << "\nset output '" << o.out << (png ? "/pareto.png" : "/pareto.svg") << "'\n"
       << "plot '" << o.out << "/pareto.dat' index 0 using 1:2 with points pt 7 ps 1.2 title 'grid points', \\\n"
       << "     '' index 0 using 1:2:3 with labels offset 0.8,0.6 font ',8' notitle, \\\n"
       << "     '' index 1 using 1:2 with points pt 2 ps 1.5 title 'failed its checks (why: in the key)', \\\n"
       << "     '' index 1 using 1:2:3 with labels offset 0.8,-0.6 font ',8' notitle, \\\n"
       << "     '' index 2 using 1:2 with linespoints lw 2 pt 6 ps 2 title 'Pareto frontier'"
       << (o.seeds > 1 ? ", \\\n     '' index 3 using 1:2:($1-$3):($1+$3):($2-$4):($2+$4) with xyerrorbars lc 'gray' pt 0 "
                         "title '95 % confidence of the mean over " + std::to_string(o.seeds) + " seeds'"
                       : std::string())
       << "\n";
  }
  gp.close();
  std::printf("wrote %s/sweep.csv (%zu runs; %zu points, %zu on the Pareto frontier)\n", o.out.c_str(), points.size(),
              plot.size(), front.size());
  const std::string cmd = "gnuplot " + shell_quote(o.out + "/pareto.gp") + " 2>" + shell_quote(o.out + "/gnuplot.log");
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "vhca-sim sweep: gnuplot failed or is missing (see %s/gnuplot.log); the data is in pareto.dat\n",
                 o.out.c_str());
    return false;
  }
  std::printf("wrote %s/pareto.png and %s/pareto.svg\n", o.out.c_str(), o.out.c_str());
  return true;
}

}  // namespace

int run_sweep(const SweepOptions& given) {
  SweepOptions o = given;
  if (o.emit_jobs) {  // the emitted lines run from wherever the scheduler starts them
    o.out = std::filesystem::absolute(o.out).lexically_normal().string();
    o.scenario = std::filesystem::absolute(o.scenario).lexically_normal().string();
  }
  std::vector<Point> points;
  try {
    points = make_points(o);
    // Check every point before running any: nothing runs half-configured.
    for (const Point& p : points) {
      TrafficOptions t;
      try {
        t = load_scenario(o.scenario, p.sets);
      } catch (const ScenarioError& e) {  // a grid value the scenario refuses: say which point
        throw ScenarioError("point " + p.label + ": " + e.what());
      }
      if (const std::string why = check_resources(t); !why.empty()) throw ScenarioError("point " + p.label + ": " + why);
      const std::vector<std::string> columns = result_columns(t);
      if (!o.latency_column.empty() &&
          std::find(columns.begin(), columns.end(), o.latency_column) == columns.end())
        throw ScenarioError("--latency " + o.latency_column + ": not a result column of point " + p.label +
                            " (latency columns look like SEND_hdl_p99_us, bulk_SEND_cqe_p50_us, host0_cq1_hdl_p99_us)");
      if (!o.x_column.empty() && std::find(columns.begin(), columns.end(), o.x_column) == columns.end())
        throw ScenarioError("--x " + o.x_column + ": not a result column of point " + p.label +
                            " (for example host0_cpu_busy_pct, host0_events_period, host0_cq0_events)");
    }
  } catch (const ScenarioError& e) {
    std::fprintf(stderr, "vhca-sim sweep: %s\n", e.what());
    return 2;
  }
  // The folder the points write into exists before any runs, however they are run.
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec || !std::filesystem::is_directory(o.out)) {
    std::fprintf(stderr, "vhca-sim sweep: --out %s: cannot create the folder (%s)\n", o.out.c_str(),
                 ec ? ec.message().c_str() : "a file is in the way");
    return 2;
  }
  if (o.emit_jobs) {
    // One shell line per point, runnable as emitted from any folder (absolute paths), writing its
    // CSV row and its log beside each other; exit 1 means it ran and failed a check (the row says
    // why), 2 bad input. GNU parallel or a Slurm array runs them; --collect merges.
    for (const Point& p : points) {
      std::string line;
      for (const auto& a : point_argv(o, p)) line += (line.empty() ? "" : " ") + shell_quote(a);
      line += " >" + shell_quote(log_of(p)) + " 2>&1";
      std::printf("%s\n", line.c_str());
    }
    return 0;
  }
  if (!o.collect) {
    const int jobs = o.jobs > 0 ? o.jobs : std::max(1, int(std::thread::hardware_concurrency()));
    std::printf("vhca-sim sweep: %s, %zu points, %d at a time, into %s/\n", o.scenario.c_str(), points.size(), jobs,
                o.out.c_str());
    if (!run_points(o, points, jobs)) return 1;
  }
  size_t passed = 0;
  if (!collect_and_plot(o, points, passed)) return 1;
  const size_t grid_points = points.size() / size_t(std::max(1, o.seeds));
  if (passed < grid_points)
    std::printf("%zu of %zu grid points failed their checks (why: sweep.csv, the plot's key)\n", grid_points - passed,
                grid_points);
  if (passed == 0) {
    std::fprintf(stderr, "vhca-sim sweep: every point failed its checks\n");
    return 1;
  }
  return 0;
}

}  // namespace vhca
