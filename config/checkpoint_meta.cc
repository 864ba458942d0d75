#include "config/checkpoint_meta.h"

#include "core/json_reader.h"
#include "core/sha256.h"

namespace devplace {

namespace {

constexpr const char* kFormat = "devplace.checkpoint";
constexpr int64_t kVersion = 1;

// A required SHA-256 field: 64 lowercase hex digits.
std::string Digest(JsonObject& o, const std::string& key) {
  std::string digest = o.string(key);
  if (digest.size() != 64 || digest.find_first_not_of("0123456789abcdef") != std::string::npos)
    o.fail(key, "expected a SHA-256 digest (64 lowercase hex digits)");
  return digest;
}

}  // namespace

std::string CheckpointMetaToJson(const CheckpointMeta& meta) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["iteration"] = meta.iteration;
  j["evaluations"] = meta.evaluations;
  j["wall_seconds"] = meta.wall_seconds;
  j["rng_state"] = meta.rng_state;
  j["config_yaml"] = meta.config_yaml;
  j["config_source"] = meta.config_source;
  j["base_dir"] = meta.base_dir;
  j["model_file"] = meta.model_file;
  j["optimizer_file"] = meta.optimizer_file;
  if (!meta.model_file.empty()) {
    j["model_bytes"] = meta.model_bytes;
    j["model_sha256"] = meta.model_sha256;
  }
  if (!meta.optimizer_file.empty()) {
    j["optimizer_bytes"] = meta.optimizer_bytes;
    j["optimizer_sha256"] = meta.optimizer_sha256;
  }
  j["best_relative_times"] = meta.best_relative_times;
  return j.dump(2) + "\n";
}

Expected<CheckpointMeta> CheckpointMetaFromJson(const std::string& text, const std::string& source) {
  return CatchInputErrors<CheckpointMeta>([&]() {
    nlohmann::json doc = ParseJson(text, source);
    JsonObject o(doc, source, "");
    if (const std::string format = o.string("format"); format != kFormat)
      o.fail("format", "expected '" + std::string(kFormat) + "', not '" + format + "'");
    if (const int64_t version = o.integer("version"); version != kVersion)
      o.fail("version", std::to_string(version) + " is not a checkpoint version this devplace reads (" +
                            std::to_string(kVersion) + ")");
    CheckpointMeta m;
    m.iteration = o.integer("iteration", 0);
    m.evaluations = o.integer("evaluations", 0);
    m.wall_seconds = o.number("wall_seconds", 0.0);
    m.rng_state = o.string("rng_state");
    m.config_yaml = o.string("config_yaml");
    m.config_source = o.string_or("config_source", "");
    m.base_dir = o.string_or("base_dir", "");
    m.model_file = o.string("model_file");
    m.optimizer_file = o.string_or("optimizer_file", "");
    if (!m.model_file.empty()) {  // empty only in a fresh run's start-up state, which names no files
      m.model_bytes = o.integer("model_bytes", 0);
      m.model_sha256 = Digest(o, "model_sha256");
    }
    if (!m.optimizer_file.empty()) {
      m.optimizer_bytes = o.integer("optimizer_bytes", 0);
      m.optimizer_sha256 = Digest(o, "optimizer_sha256");
    }
    const nlohmann::json& best = RequireArray(o.required("best_relative_times"), source, "best_relative_times");
    for (const nlohmann::json& b : best) {
      if (!b.is_number()) o.fail("best_relative_times", "expected numbers");
      m.best_relative_times.push_back(b.get<double>());
    }
    o.finish();
    return m;
  });
}

Expected<EnsembleMeta> EnsembleMetaFromJson(const std::string& text, const std::string& source) {
  return CatchInputErrors<EnsembleMeta>([&]() {
    nlohmann::json doc = ParseJson(text, source);
    JsonObject o(doc, source, "");
    if (const std::string format = o.string("format"); format != "devplace.ensemble")
      o.fail("format", "expected 'devplace.ensemble', not '" + format + "'");
    if (const int64_t version = o.integer("version"); version != 1)
      o.fail("version", std::to_string(version) + " is not an ensemble version this devplace reads (1)");
    EnsembleMeta m;
    const nlohmann::json& members = RequireArray(o.required("members"), source, "members");
    for (size_t i = 0; i < members.size(); ++i) {
      const std::string path = "members[" + std::to_string(i) + "]";
      m.members.push_back(ReadString(members[i], source, path));
      if (m.members.back().empty()) FailAt(source, path, "an empty directory name");
    }
    if (m.members.size() < 2) o.fail("members", "an ensemble needs at least two members");
    o.finish();
    return m;
  });
}

Status VerifyCheckpointFile(const std::string& bytes, const std::string& path, int64_t expected_bytes,
                            const std::string& expected_sha256) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size != expected_bytes)
    return Error{path + ": " + (size < expected_bytes ? "truncated" : "corrupted") + ": " + std::to_string(size) +
                 " bytes, its state.json records " + std::to_string(expected_bytes)};
  if (Sha256Hex(bytes) != expected_sha256)
    return Error{path + ": corrupted: its SHA-256 differs from the one its state.json records"};
  if (bytes.compare(0, 4, "PK\x03\x04") != 0) return Error{path + ": not a LibTorch archive (no zip header)"};
  return Status::Ok();
}

}  // namespace devplace
