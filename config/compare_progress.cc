#include "config/compare_progress.h"

#include "core/json_reader.h"

namespace devplace {

namespace {

constexpr const char* kFormat = "devplace.compare-cells";
constexpr int64_t kVersion = 1;

}  // namespace

std::string CompareProgressToJson(const CompareProgress& progress) {
  nlohmann::json cells = nlohmann::json::array();
  for (const CompareCell& c : progress.cells)
    cells.push_back({{"model", c.model}, {"topology", c.topology}, {"algorithm", c.algorithm}, {"ok", c.ok},
                     {"error", c.error}, {"step_time", c.step_time}, {"oom", c.oom}, {"evaluations", c.evaluations},
                     {"search_seconds", c.search_seconds}});
  const nlohmann::json j = {{"format", kFormat}, {"version", kVersion}, {"inputs_sha256", progress.inputs_sha256},
                            {"cells", cells}};
  return j.dump(1) + "\n";
}

Expected<CompareProgress> CompareProgressFromJson(const std::string& text, const std::string& source) {
  return CatchInputErrors<CompareProgress>([&]() {
    nlohmann::json doc = ParseJson(text, source);
    JsonObject o(doc, source, "");
    if (const std::string format = o.string("format"); format != kFormat)
      o.fail("format", "expected '" + std::string(kFormat) + "', not '" + format + "'");
    if (const int64_t version = o.integer("version"); version != kVersion)
      o.fail("version", std::to_string(version) + " is not a version this devplace reads (1)");
    CompareProgress progress;
    progress.inputs_sha256 = o.string("inputs_sha256");
    const nlohmann::json& cells = RequireArray(o.required("cells"), source, "cells");
    for (size_t i = 0; i < cells.size(); ++i) {
      JsonObject c(cells[i], source, "cells[" + std::to_string(i) + "]");
      CompareCell cell;
      cell.model = c.string("model");
      cell.topology = c.string("topology");
      cell.algorithm = c.string("algorithm");
      cell.ok = c.boolean_or("ok", false);
      cell.error = c.string_or("error", "");
      cell.step_time = c.number("step_time", 0.0);
      cell.oom = c.boolean_or("oom", false);
      cell.evaluations = c.integer("evaluations", 0);
      cell.search_seconds = c.number("search_seconds", 0.0);
      c.finish();
      progress.cells.push_back(std::move(cell));
    }
    o.finish();
    return progress;
  });
}

}  // namespace devplace
