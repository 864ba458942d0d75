// JSON form of a profiled cost table ("devplace.costs", version 1; schema in docs/simulator.md).
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/json_reader.h"
#include "sim/cost_model.h"

namespace devplace {
namespace {

constexpr const char* kFormat = "devplace.costs";

AnalyticCostOptions ReadAnalytic(JsonObject& obj) {
  AnalyticCostOptions o;
  auto efficiency = [&](JsonObject& at, const std::string& key, double fallback) {
    const double v = at.number_or(key, fallback, 0.0);
    if (v <= 0 || v > 1) at.fail(key, "must be in (0, 1], got " + std::to_string(v));
    return v;
  };
  auto overhead_us = [&](JsonObject& at, const std::string& key, double fallback_s) {
    const double v = at.number_or(key, fallback_s * 1e6, 0.0);
    if (v >= 1e6) at.fail(key, "must be below 1e6 microseconds");
    return v * 1e-6;
  };
  o.compute_efficiency = efficiency(obj, "compute_efficiency", o.compute_efficiency);
  o.memory_efficiency = efficiency(obj, "memory_efficiency", o.memory_efficiency);
  o.launch_overhead = overhead_us(obj, "launch_overhead_us", o.launch_overhead);
  if (const nlohmann::json* rules = obj.optional("rules")) {
    RequireArray(*rules, obj.source(), obj.path_of("rules"));
    for (size_t i = 0; i < rules->size(); ++i) {
      JsonObject r((*rules)[i], obj.source(), obj.path_of("rules") + "[" + std::to_string(i) + "]");
      AnalyticCostOptions::Rule rule;
      rule.op_type = r.string_or("op_type", "");
      rule.device_kind = r.string_or("device_kind", "");
      if (r.has("compute_efficiency")) rule.compute_efficiency = efficiency(r, "compute_efficiency", 1.0);
      if (r.has("memory_efficiency")) rule.memory_efficiency = efficiency(r, "memory_efficiency", 1.0);
      if (r.has("launch_overhead_us")) rule.launch_overhead = overhead_us(r, "launch_overhead_us", 0.0);
      r.finish();
      o.rules.push_back(std::move(rule));
    }
  }
  obj.finish();
  return o;
}

OpTiming ReadEntry(JsonObject& e) {
  OpTiming entry;
  entry.device_kind = e.string("device_kind");
  entry.op_type = e.string("op_type");
  const std::string role = e.string_or("role", "forward");
  if (!ParseOpRole(role, &entry.role)) e.fail("role", "unknown role '" + role + "' (forward, backward, update)");
  const std::string dtype = e.string_or("dtype", "f32");
  if (!ParseDType(dtype, &entry.dtype)) e.fail("dtype", "unknown dtype '" + dtype + "'");
  const nlohmann::json& shape = RequireArray(e.required("shape"), e.source(), e.path_of("shape"));
  for (size_t k = 0; k < shape.size(); ++k)
    entry.shape.push_back(ReadInteger(shape[k], e.source(), e.path_of("shape") + "[" + std::to_string(k) + "]", 1));
  entry.flops = e.number("flops", 0.0);
  entry.seconds = e.number("seconds", 0.0);
  if (entry.seconds <= 0) e.fail("seconds", "must be > 0");
  e.finish();
  return entry;
}

}  // namespace

Expected<CostTable> CostTableFromJson(const std::string& text, const std::string& source) {
  return CatchInputErrors<CostTable>([&] {
    const nlohmann::json doc = ParseJson(text, source);
    JsonObject root(doc, source, "");
    const std::string format = root.string("format");
    if (format != kFormat) root.fail("format", "expected \"" + std::string(kFormat) + "\", got \"" + format + "\"");
    root.integer("version", 1, 1);
    CostTable table;
    if (const nlohmann::json* analytic = root.optional("analytic")) {
      JsonObject a(*analytic, source, "analytic");
      table.analytic = ReadAnalytic(a);
    }
    const nlohmann::json& entries = RequireArray(root.required("entries"), source, "entries");
    for (size_t i = 0; i < entries.size(); ++i) {
      JsonObject e(entries[i], source, "entries[" + std::to_string(i) + "]");
      table.entries.push_back(ReadEntry(e));
    }
    root.finish();
    return table;
  });
}

Expected<CostTable> ReadCostTableFile(const std::string& path) {
  Expected<std::string> text = ReadFile(path);
  if (!text) return text.error();
  return CostTableFromJson(*text, path);
}

std::string CostTableToJson(const CostTable& table) {
  nlohmann::ordered_json doc;
  doc["format"] = kFormat;
  doc["version"] = 1;
  nlohmann::ordered_json analytic;
  analytic["compute_efficiency"] = table.analytic.compute_efficiency;
  analytic["memory_efficiency"] = table.analytic.memory_efficiency;
  analytic["launch_overhead_us"] = table.analytic.launch_overhead * 1e6;
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const AnalyticCostOptions::Rule& r : table.analytic.rules) {
    nlohmann::ordered_json j;
    if (!r.op_type.empty()) j["op_type"] = r.op_type;
    if (!r.device_kind.empty()) j["device_kind"] = r.device_kind;
    if (r.compute_efficiency >= 0) j["compute_efficiency"] = r.compute_efficiency;
    if (r.memory_efficiency >= 0) j["memory_efficiency"] = r.memory_efficiency;
    if (r.launch_overhead >= 0) j["launch_overhead_us"] = r.launch_overhead * 1e6;
    rules.push_back(std::move(j));
  }
  analytic["rules"] = std::move(rules);
  doc["analytic"] = std::move(analytic);
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const OpTiming& e : table.entries) {
    nlohmann::ordered_json j;
    j["device_kind"] = e.device_kind;
    j["op_type"] = e.op_type;
    j["role"] = std::string(ToString(e.role));
    j["dtype"] = std::string(ToString(e.dtype));
    j["shape"] = e.shape;
    j["flops"] = e.flops;
    j["seconds"] = e.seconds;
    entries.push_back(std::move(j));
  }
  doc["entries"] = std::move(entries);
  return doc.dump(2) + "\n";
}

Status WriteCostTableFile(const CostTable& table, const std::string& path) {
  return WriteFileAtomic(path, CostTableToJson(table));
}

}  // namespace devplace
