#include "config/reader_util.h"

#include <algorithm>
#include <filesystem>

#include "datasets/families.h"
#include "datasets/zoo.h"

namespace devplace {

std::string ResolveConfigPath(const std::string& path, const std::string& config_dir) {
  std::filesystem::path p(path);
  if (p.is_absolute() || config_dir.empty()) return path;
  return (std::filesystem::path(config_dir) / p).lexically_normal().string();
}

std::string ConfigDirOf(const std::string& path) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(std::filesystem::path(path), ec).parent_path();
  return ec ? std::filesystem::path(path).parent_path().string() : dir.lexically_normal().string();
}

namespace {

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void RequireKnown(JsonObject& entry, const std::string& key, const std::string& name,
                  const std::vector<std::string>& known, const std::string& what) {
  if (std::find(known.begin(), known.end(), name) == known.end())
    entry.fail(key, "unknown " + what + " '" + name + "' (known: " + Joined(known) + ")");
}

std::vector<uint64_t> ReadSeeds(JsonObject& entry) {
  std::vector<uint64_t> seeds;
  const bool has_seed = entry.has("seed"), has_seeds = entry.has("seeds");
  if (has_seed && has_seeds) entry.fail("seeds", "give seed or seeds, not both");
  if (has_seed) seeds.push_back(static_cast<uint64_t>(entry.integer("seed", 0)));
  if (!has_seeds) return seeds;
  const nlohmann::json& s = entry.required("seeds");
  if (s.is_array()) {
    for (size_t i = 0; i < s.size(); ++i)
      seeds.push_back(static_cast<uint64_t>(
          ReadInteger(s[i], entry.source(), entry.path_of("seeds") + "[" + std::to_string(i) + "]", 0)));
  } else {
    JsonObject range(s, entry.source(), entry.path_of("seeds"));
    const int64_t from = range.integer("from", 0);
    const int64_t count = range.integer("count", 1, 100'000);
    range.finish();
    for (int64_t i = 0; i < count; ++i) seeds.push_back(static_cast<uint64_t>(from + i));
  }
  if (seeds.empty()) entry.fail("seeds", "must not be empty");
  return seeds;
}

void ReadGraphEntry(const nlohmann::json& value, const std::string& source, const std::string& path,
                    const std::string& config_dir, const GraphEntryExtension& extend, std::vector<GraphSource>* out) {
  JsonObject m(value, source, path);
  GraphSource g;
  g.zoo = m.string_or("zoo", "");
  g.batch = m.integer_or("batch", 0, 0);
  g.family = m.string_or("family", "");
  g.target_ops = static_cast<int32_t>(m.integer_or("target_ops", 0, 0, 10'000'000));
  g.file = m.string_or("file", "");
  if (g.zoo.empty() + g.family.empty() + g.file.empty() != 2) m.fail("zoo", "give exactly one of zoo, family or file");
  if (!g.zoo.empty()) RequireKnown(m, "zoo", g.zoo, ZooModelNames(), "zoo model");
  if (!g.family.empty()) RequireKnown(m, "family", g.family, FamilyNames(), "family");
  if (!g.file.empty()) g.file = ResolveConfigPath(g.file, config_dir);
  if (g.batch > 0 && g.zoo.empty()) m.fail("batch", "only zoo entries take a batch");
  if (g.target_ops > 0 && g.family.empty()) m.fail("target_ops", "only family entries take target_ops");
  std::vector<uint64_t> seeds = ReadSeeds(m);
  if (!seeds.empty() && g.family.empty()) m.fail("seeds", "only family entries take seeds");
  if (extend) extend(m, out->size(), std::max<size_t>(seeds.size(), 1));
  m.finish();
  if (seeds.empty()) seeds.push_back(0);
  for (uint64_t seed : seeds) {
    g.seed = seed;
    out->push_back(g);
  }
}

}  // namespace

std::vector<GraphSource> ReadGraphList(JsonObject& root, const std::string& key, const std::string& config_dir,
                                       bool required, const GraphEntryExtension& extend) {
  std::vector<GraphSource> out;
  const nlohmann::json* list = required ? &root.required(key) : root.optional(key);
  if (list == nullptr) return out;
  RequireArray(*list, root.source(), root.path_of(key));
  for (size_t i = 0; i < list->size(); ++i)
    ReadGraphEntry((*list)[i], root.source(), root.path_of(key) + "[" + std::to_string(i) + "]", config_dir, extend, &out);
  if (required && out.empty()) root.fail(key, "must not be empty");
  return out;
}

void ReadSearchBudget(JsonObject& root, int64_t* evaluations, double* seconds) {
  *evaluations = 0;
  *seconds = 0.0;
  const nlohmann::json* budget = root.optional("budget");
  if (budget == nullptr) return;
  JsonObject b(*budget, root.source(), root.path_of("budget"));
  *evaluations = b.integer_or("evaluations", 0, 0);
  *seconds = b.number_or("seconds", 0.0, 0.0);
  b.finish();
}

std::vector<std::string> ReadStringList(JsonObject& root, const std::string& key) {
  const nlohmann::json& list = RequireArray(root.required(key), root.source(), root.path_of(key));
  if (list.empty()) root.fail(key, "must not be empty");
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(ReadString(list[i], root.source(), root.path_of(key) + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace devplace
