#include "workflows/compare_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/atomic_file.h"

namespace devplace {

namespace {

std::string Fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

// Cells grouped by (model, topology) in first-seen order.
std::vector<std::pair<std::string, std::string>> Rows(const std::vector<CompareCell>& cells) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const CompareCell& c : cells) {
    std::pair<std::string, std::string> key{c.model, c.topology};
    if (rows.empty() || std::find(rows.begin(), rows.end(), key) == rows.end()) rows.push_back(key);
  }
  return rows;
}

const CompareCell* Find(const std::vector<CompareCell>& cells, const std::string& model, const std::string& topology,
                        const std::string& algorithm) {
  for (const CompareCell& c : cells)
    if (c.model == model && c.topology == topology && c.algorithm == algorithm) return &c;
  return nullptr;
}

// Geometric mean of the positive speed-ups of `algorithm`; the count of cells it covers goes to *count.
double GeometricMeanSpeedup(const std::vector<CompareCell>& cells, const std::string& algorithm,
                            const std::string& baseline, int* count) {
  double log_sum = 0;
  *count = 0;
  for (const CompareCell& c : cells) {
    if (c.algorithm != algorithm) continue;
    double s = SpeedupOverBaseline(cells, c, baseline);
    if (s <= 0) continue;
    log_sum += std::log(s);
    ++*count;
  }
  return *count ? std::exp(log_sum / *count) : 0.0;
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

double SpeedupOverBaseline(const std::vector<CompareCell>& cells, const CompareCell& cell, const std::string& baseline) {
  const CompareCell* base = Find(cells, cell.model, cell.topology, baseline);
  if (!base || !base->ok || base->oom || !cell.ok || cell.oom || cell.step_time <= 0) return 0.0;
  return base->step_time / cell.step_time;
}

Status WriteCompareCsv(const std::vector<CompareCell>& cells, const std::string& baseline, const std::string& path) {
  std::ostringstream out;
  out << "model,topology,algorithm,status,step_time_ms,oom,speedup_over_" << baseline
      << ",evaluations,search_seconds\n";
  for (const CompareCell& c : cells) {
    out << c.model << "," << c.topology << "," << c.algorithm << "," << (c.ok ? "ok" : "error") << ","
        << (c.ok ? Fixed(c.step_time * 1e3, 6) : "") << "," << (c.oom ? 1 : 0) << ","
        << Fixed(SpeedupOverBaseline(cells, c, baseline), 6) << "," << c.evaluations << ","
        << Fixed(c.search_seconds, 3) << "\n";
  }
  return WriteFileAtomic(path, out.str());
}

Status WriteCompareMarkdown(const std::vector<CompareCell>& cells, const std::vector<std::string>& algorithms,
                            const std::string& baseline, const std::string& suite_name, const std::string& command,
                            const std::string& path) {
  std::ostringstream out;
  out << "# devplace compare: " << suite_name << "\n\nProduced by `" << command << "`.\n\n"
      << "Simulated step time in ms per (model, topology) and algorithm; in parentheses the speed-up over `"
      << baseline << "` (its time divided by the cell's; > 1 is faster). OOM marks a placement that exceeds some "
      << "device's memory (no speed-up is computed for it); `error` a search that failed.\n\n";
  out << "| model | topology |";
  for (const std::string& a : algorithms) out << " " << a << " |";
  out << "\n|---|---|";
  for (size_t i = 0; i < algorithms.size(); ++i) out << "---:|";
  out << "\n";
  for (const auto& [model, topology] : Rows(cells)) {
    out << "| " << model << " | " << topology << " |";
    for (const std::string& a : algorithms) {
      const CompareCell* c = Find(cells, model, topology, a);
      if (!c) {
        out << " |";
      } else if (!c->ok) {
        out << " error |";
      } else {
        out << " " << Fixed(c->step_time * 1e3, 2);
        if (c->oom) out << " OOM";
        double s = SpeedupOverBaseline(cells, *c, baseline);
        if (s > 0 && a != baseline) out << " (" << Fixed(s, 2) << "x)";
        out << " |";
      }
    }
    out << "\n";
  }
  out << "| **geometric mean speed-up** | |";
  for (const std::string& a : algorithms) {
    int count = 0;
    double g = GeometricMeanSpeedup(cells, a, baseline, &count);
    out << " " << (count ? "**" + Fixed(g, 3) + "x** (" + std::to_string(count) + ")" : "-") << " |";
  }
  out << "\n\nThe geometric mean covers the cells where both the algorithm and `" << baseline
      << "` fit in memory (their number in parentheses).\n\n## Search cost\n\n| algorithm | evaluations (mean) | "
         "search seconds (mean) | seconds (max) | failed cells |\n|---|---:|---:|---:|---:|\n";
  for (const std::string& a : algorithms) {
    double evals = 0, secs = 0, max_secs = 0;
    int n = 0, failed = 0;
    for (const CompareCell& c : cells) {
      if (c.algorithm != a) continue;
      ++n;
      failed += !c.ok;
      evals += static_cast<double>(c.evaluations);
      secs += c.search_seconds;
      max_secs = std::max(max_secs, c.search_seconds);
    }
    if (n == 0) continue;
    out << "| " << a << " | " << Fixed(evals / n, 0) << " | " << Fixed(secs / n, 3) << " | " << Fixed(max_secs, 3)
        << " | " << failed << " |\n";
  }
  std::vector<std::string> errors;
  for (const CompareCell& c : cells)
    if (!c.ok) errors.push_back(c.model + " / " + c.topology + " / " + c.algorithm + ": " + c.error);
  if (!errors.empty()) {
    out << "\n## Failed cells\n\n";
    for (const std::string& e : errors) out << "- " << e << "\n";
  }
  return WriteFileAtomic(path, out.str());
}

Status WriteCompareChart(const std::vector<CompareCell>& cells, const std::vector<std::string>& algorithms,
                         const std::string& baseline, const std::string& dir) {
  std::ostringstream data;
  data << "cell";
  for (const std::string& a : algorithms) data << "\t" << Quote(a);
  data << "\n";
  auto rows = Rows(cells);
  for (const auto& [model, topology] : rows) {
    data << Quote(model + " on " + topology);
    for (const std::string& a : algorithms) {
      const CompareCell* c = Find(cells, model, topology, a);
      double s = c ? SpeedupOverBaseline(cells, *c, baseline) : 0.0;
      data << "\t" << (s > 0 ? Fixed(s, 6) : "NaN");
    }
    data << "\n";
  }
  std::string data_path = dir + "/chart.dat", script_path = dir + "/chart.gp";
  if (Status s = WriteFileAtomic(data_path, data.str()); !s.ok()) return s;
  std::ostringstream gp;
  int width = std::max(900, 60 + static_cast<int>(rows.size() * (algorithms.size() + 1) * 9));
  gp << "set terminal pngcairo noenhanced size " << width << ",600 font 'sans,9'\n"
     << "set output '" << dir << "/chart.png.tmp'\n"
     << "set title 'Simulated speed-up over " << baseline << " (higher is better; missing bar = OOM or failure)'\n"
     << "set style data histogram\nset style histogram cluster gap 1\nset style fill solid 0.8 border -1\n"
     << "set boxwidth 0.9\nset logscale y 2\nset grid ytics\nset ylabel 'speed-up (x, log scale)'\n"
     << "set xtics rotate by -35 scale 0\nset key outside right top\nset datafile missing 'NaN'\n"
     << "plot for [i=2:" << algorithms.size() + 1 << "] '" << data_path << "' using i:xtic(1) title columnhead(i)\n";
  if (Status s = WriteFileAtomic(script_path, gp.str()); !s.ok()) return s;
  std::string command = "gnuplot '" + script_path + "' 2>" + dir + "/chart.log";
  if (std::system(command.c_str()) != 0)
    return Error{dir + "/chart.png: gnuplot failed (see " + dir + "/chart.log; is gnuplot installed?)"};
  std::filesystem::remove(dir + "/chart.log");
  std::error_code ec;
  std::filesystem::rename(dir + "/chart.png.tmp", dir + "/chart.png", ec);
  if (ec) return Error{dir + "/chart.png: cannot replace: " + ec.message()};
  return Status::Ok();
}

}  // namespace devplace
