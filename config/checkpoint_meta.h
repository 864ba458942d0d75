// The JSON sidecar of a training checkpoint (RUN/ckpt/state.json): where training stood, the experiment it ran and
// the tensor files that hold the model and optimizer (agents/learned/checkpoint.h reads and writes those), with
// their sizes and SHA-256 digests, so that a file is verified before LibTorch parses it (format
// "devplace.checkpoint", version 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace devplace {

struct CheckpointMeta {
  int64_t iteration = 0;           // iterations completed
  int64_t evaluations = 0;         // simulator evaluations so far
  double wall_seconds = 0.0;       // training wall time so far
  std::string rng_state;           // the trainer's std::mt19937_64, as written by operator<<
  std::string config_yaml;         // the experiment file's text
  std::string config_source;       // its path when training started
  std::string base_dir;            // the directory its relative paths were resolved against
  std::string model_file;          // parameters, relative to the checkpoint directory
  std::string optimizer_file;      // optimizer state, relative to the checkpoint directory (may be empty)
  int64_t model_bytes = 0;         // the model file's size (size and digest are absent where model_file is empty:
                                   // a fresh run's start-up state, which rank 0 sends its group in this form)
  std::string model_sha256;        // and its SHA-256 (64 lowercase hex digits)
  int64_t optimizer_bytes = 0;     // the same for the optimizer file (when there is one)
  std::string optimizer_sha256;
  std::vector<double> best_relative_times;  // per training game: best T / T_ref seen so far
};

// The sidecar's JSON text (pretty-printed, newline-terminated).
std::string CheckpointMetaToJson(const CheckpointMeta& meta);
// Parses a sidecar; errors read "<source>: <field>: <reason>", unknown keys are rejected; another format or a
// version other than 1 is refused.
Expected<CheckpointMeta> CheckpointMetaFromJson(const std::string& text, const std::string& source);

// An ensemble of trained policies (POLICY/ensemble.json, format "devplace.ensemble", version 1): a policy
// directory holding this file instead of state.json places with its members together (agents/learned/learning.h).
struct EnsembleMeta {
  std::vector<std::string> members;  // checkpoint directories, relative to the ensemble's directory (at least two)
};
// Parses an ensemble file; errors read "<source>: <field>: <reason>", unknown keys are rejected.
Expected<EnsembleMeta> EnsembleMetaFromJson(const std::string& text, const std::string& source);

// Checks the bytes of a checkpoint's tensor file (read from `path`) against the size and SHA-256 digest its
// sidecar records, and that they are a LibTorch archive (a zip file), before anything parses them. Errors read
// "<path>: truncated: ..." (or "corrupted: ...", "not a LibTorch archive ...").
Status VerifyCheckpointFile(const std::string& bytes, const std::string& path, int64_t expected_bytes,
                            const std::string& expected_sha256);

}  // namespace devplace
