#include "workflows/validate_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/atomic_file.h"

namespace devplace {

namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Percent(double v) {
  std::string s = v >= 0 ? "+" : "";
  s.append(Fixed(100 * v, 1)).append("%");
  return s;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

double KendallTauB(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = std::min(a.size(), b.size());
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) ++ties_a;
      else if (db == 0) ++ties_b;
      else if ((da > 0) == (db > 0)) ++concordant;
      else ++discordant;
    }
  }
  const double denom = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return denom > 0 ? (concordant - discordant) / denom : 0.0;
}

ValidateStats ComputeValidateStats(const std::vector<ValidateRow>& rows, const std::string& model,
                                   const std::string& kind) {
  ValidateStats stats;
  std::vector<double> measured, simulated;
  for (const ValidateRow& r : rows) {
    if (!r.ok || (!model.empty() && r.model != model) || (!kind.empty() && r.kind != kind)) continue;
    const double error = (r.simulated - r.measured) / r.measured;
    stats.mape += std::abs(error);
    stats.mean_error += error;
    stats.max_error = std::max(stats.max_error, std::abs(error));
    measured.push_back(r.measured);
    simulated.push_back(r.simulated);
    ++stats.rows;
  }
  if (stats.rows > 0) {
    stats.mape /= stats.rows;
    stats.mean_error /= stats.rows;
  }
  stats.kendall_tau = KendallTauB(measured, simulated);
  return stats;
}

Status WriteValidateCsv(const std::vector<ValidateRow>& rows, const std::string& path) {
  std::ostringstream out;
  out << "model,strategy,ok,measured_ms,measured_min_ms,measured_max_ms,simulated_ms,error_pct,copies,"
         "bytes_copied,stand_in_ops,ops_per_device,error\n";
  for (const ValidateRow& r : rows) {
    out << CsvField(r.model) << "," << CsvField(r.strategy) << "," << (r.ok ? 1 : 0) << ",";
    if (r.ok)
      out << Fixed(r.measured * 1e3, 4) << "," << Fixed(r.measured_min * 1e3, 4) << ","
          << Fixed(r.measured_max * 1e3, 4) << "," << Fixed(r.simulated * 1e3, 4) << ","
          << Fixed(100 * (r.simulated - r.measured) / r.measured, 2);
    else
      out << ",,,,";
    out << "," << r.copies << "," << r.bytes_copied << "," << r.stand_in_ops << "," << r.device_ops << ","
        << CsvField(r.error) << "\n";
  }
  return WriteFileAtomic(path, out.str());
}

Status WriteValidateSummary(const std::vector<ValidateRow>& rows, const std::vector<std::string>& models,
                            const std::string& suite_name, const std::string& command, const std::string& machine,
                            const std::string& path) {
  const ValidateStats all = ComputeValidateStats(rows);
  int32_t failed = 0;
  for (const ValidateRow& r : rows) failed += !r.ok;
  std::ostringstream md;
  md << "# Simulator validation: " << suite_name << "\n\n"
     << "Produced by `" << command << "`.\n\n" << machine << "\n"
     << "## Overall\n\n"
     << "| strategies | MAPE | max error | mean error (bias) | Kendall tau-b |\n|---|---|---|---|---|\n"
     << "| " << all.rows;
  if (failed) md << " (+" << failed << " failed)";
  md << " | "
     << Fixed(100 * all.mape, 1) << "% | " << Fixed(100 * all.max_error, 1) << "% | " << Percent(all.mean_error)
     << " | " << Fixed(all.kendall_tau, 3) << " |\n\n"
     << "## Per model\n\n"
     << "| model | strategies | MAPE | max error | mean error | Kendall tau-b |\n|---|---|---|---|---|---|\n";
  for (const std::string& m : models) {
    const ValidateStats s = ComputeValidateStats(rows, m);
    md << "| " << m << " | " << s.rows << " | " << Fixed(100 * s.mape, 1) << "% | " << Fixed(100 * s.max_error, 1)
       << "% | " << Percent(s.mean_error) << " | " << Fixed(s.kendall_tau, 3) << " |\n";
  }
  std::vector<std::string> kinds;
  for (const ValidateRow& r : rows)
    if (std::find(kinds.begin(), kinds.end(), r.kind) == kinds.end()) kinds.push_back(r.kind);
  md << "\n## Per kind of strategy\n\n"
     << "(placement: one device per op; split: some op split or copied over devices; xNp: run as N processes)\n\n"
     << "| kind | strategies | MAPE | max error | mean error | Kendall tau-b |\n|---|---|---|---|---|---|\n";
  for (const std::string& k : kinds) {
    const ValidateStats s = ComputeValidateStats(rows, "", k);
    md << "| " << k << " | " << s.rows << " | " << Fixed(100 * s.mape, 1) << "% | " << Fixed(100 * s.max_error, 1)
       << "% | " << Percent(s.mean_error) << " | " << Fixed(s.kendall_tau, 3) << " |\n";
  }
  md << "\n## Every strategy\n\n"
     << "| model | strategy | measured (median, min-max) | simulated | error | copies/step | ops per device |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (const ValidateRow& r : rows) {
    md << "| " << r.model << " | " << r.strategy << " | ";
    if (r.ok)
      md << Fixed(r.measured * 1e3, 2) << " ms (" << Fixed(r.measured_min * 1e3, 2) << "-"
         << Fixed(r.measured_max * 1e3, 2) << ") | " << Fixed(r.simulated * 1e3, 2) << " ms | "
         << Percent((r.simulated - r.measured) / r.measured) << " | " << r.copies << " | " << r.device_ops << " |\n";
    else
      md << "failed: " << r.error << " | | | | |\n";
  }
  return WriteFileAtomic(path, md.str());
}

Status WriteValidateScatter(const std::vector<ValidateRow>& rows, const std::vector<std::string>& models,
                            const std::string& dir) {
  std::ostringstream data;
  double lo = 1e30, hi = 0;
  for (size_t m = 0; m < models.size(); ++m) {
    data << "# " << models[m] << "\n";
    for (const ValidateRow& r : rows) {
      if (!r.ok || r.model != models[m]) continue;
      data << Fixed(r.measured * 1e3, 6) << "\t" << Fixed(r.simulated * 1e3, 6) << "\n";
      lo = std::min({lo, r.measured * 1e3, r.simulated * 1e3});
      hi = std::max({hi, r.measured * 1e3, r.simulated * 1e3});
    }
    data << "\n\n";  // gnuplot data blocks, one per model (index m)
  }
  if (hi <= 0) return Error{dir + "/scatter.png: no strategy ran, nothing to plot"};
  const std::string data_path = dir + "/scatter.dat", script_path = dir + "/scatter.gp";
  if (Status s = WriteFileAtomic(data_path, data.str()); !s.ok()) return s;
  std::ostringstream gp;
  gp << "set terminal pngcairo size 800,700 font 'sans,10'\n"
     << "set output '" << dir << "/scatter.png.tmp'\n"
     << "set title 'Simulated vs measured step time (one point per strategy)'\n"
     << "set logscale xy\nset grid\nset key top left\nset size square\n"
     << "set xlabel 'measured step time (ms)'\nset ylabel 'simulated step time (ms)'\n"
     << "set xrange [" << lo * 0.8 << ":" << hi * 1.25 << "]\nset yrange [" << lo * 0.8 << ":" << hi * 1.25 << "]\n"
     << "plot x title 'simulated = measured' lc rgb 'gray' dt 2";
  for (size_t m = 0; m < models.size(); ++m)
    gp << ", '" << data_path << "' index " << m << " using 1:2 with points pt " << 5 + 2 * static_cast<int>(m % 4)
       << " ps 1.3 title '" << models[m] << "'";
  gp << "\n";
  if (Status s = WriteFileAtomic(script_path, gp.str()); !s.ok()) return s;
  const std::string command = "gnuplot '" + script_path + "' 2>'" + dir + "/scatter.log'";
  if (std::system(command.c_str()) != 0)
    return Error{dir + "/scatter.png: gnuplot failed (see " + dir + "/scatter.log; is gnuplot installed?)"};
  std::error_code ec;
  std::filesystem::remove(dir + "/scatter.log", ec);
  std::filesystem::rename(dir + "/scatter.png.tmp", dir + "/scatter.png", ec);
  if (ec) return Error{dir + "/scatter.png: cannot replace: " + ec.message()};
  return Status::Ok();
}

}  // namespace devplace
