// Training checkpoints: a directory with the policy parameters (model-<iteration>.pt), the optimizer state
// (optim-<iteration>.pt, optional) and state.json (config/checkpoint_meta.h CheckpointMeta) naming them. Files
// are written to temporaries and renamed; state.json is renamed last, so a checkpoint is always whole.
// Internal to devplace_learn.
#pragma once

#include <string>

#include <torch/torch.h>

#include "agents/learned/policy.h"
#include "config/checkpoint_meta.h"
#include "config/experiment_config.h"
#include "core/status.h"

namespace devplace {

// Writes the checkpoint; meta's model_file/optimizer_file (and their sizes and digests) are set here. The
// optimizer file holds Adam's state by parameter index, so equal states give equal files (bit for bit). `optimizer` may be null (no optimizer
// file). Files of older checkpoints in `dir` are removed afterwards.
Status SaveCheckpoint(const std::string& dir, PolicyNet& net, torch::optim::Adam* optimizer, CheckpointMeta meta);
// Reads dir/state.json.
Expected<CheckpointMeta> ReadCheckpointMeta(const std::string& dir);
// Loads the parameters (and, when `optimizer` is non-null, the optimizer state) named by `meta`; each file is
// verified against the size and SHA-256 `meta` records before LibTorch parses it (VerifyCheckpointFile).
Status LoadCheckpointTensors(const std::string& dir, const CheckpointMeta& meta, PolicyNet& net,
                             torch::optim::Adam* optimizer);

// The tensor files of a checkpoint as bytes (what rank 0 of a training group sends the others on resume).
struct CheckpointBlobs {
  std::string model;      // the parameter file
  std::string optimizer;  // the optimizer file (empty when the checkpoint has none)
};
// Reads the files `meta` names and verifies them as LoadCheckpointTensors does. Errors name the file.
Expected<CheckpointBlobs> ReadCheckpointBlobs(const std::string& dir, const CheckpointMeta& meta);
// Loads parameters and, when `optimizer` is non-null, the optimizer state from `blobs`; `dir` names the
// checkpoint in errors.
Status LoadCheckpointBlobs(const CheckpointBlobs& blobs, const std::string& dir, PolicyNet& net,
                           torch::optim::Adam* optimizer);

// A saved policy as the starting point of another run (ppo.init_policy): its state.json and its parameter file,
// verified against the size and SHA-256 state.json records.
struct PolicySnapshot {
  CheckpointMeta meta;
  std::string model;  // the parameter file's bytes
};
// Reads `dir`'s snapshot. Errors name the file.
Expected<PolicySnapshot> ReadPolicySnapshot(const std::string& dir);
// Copies the snapshot's parameters and buffers into `net`: the snapshot's policy (built from the config its
// state.json holds) must have exactly `net`'s parameter and buffer names with the same shapes, else a one-line
// error starting with `where` (e.g. "exp.yaml: ppo.init_policy") that names the first difference. One exception:
// a SOAP snapshot that reads fewer candidate feature columns (policy.candidate_features, e.g. 19 where `net` reads
// 22) is widened, the extra columns' weights set to 0, so `net` then scores every action as the snapshot does (up
// to floating-point rounding). `dir` names the snapshot in messages.
Status InitFromSnapshot(const PolicySnapshot& snapshot, const std::string& dir, PolicyNet& net,
                        const std::string& where);

}  // namespace devplace
