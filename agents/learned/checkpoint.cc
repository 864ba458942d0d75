#include "agents/learned/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <system_error>
#include <vector>

#include "agents/learned/adam_step.h"
#include "core/atomic_file.h"
#include "core/sha256.h"

namespace devplace {

namespace fs = std::filesystem;

namespace {

// Serialises an archive in memory and writes it with WriteFileAtomic (temporary, fsync, rename); its size and
// SHA-256 go to `bytes_out` and `sha256_out`. LibTorch's own file writer is not used: on a full disk it throws
// again from a destructor and terminates the process.
Status SaveArchiveAtomic(torch::serialize::OutputArchive& archive, const fs::path& path, int64_t* bytes_out,
                         std::string* sha256_out) {
  std::string bytes;
  try {
    archive.save_to([&bytes](const void* data, size_t size) {
      bytes.append(static_cast<const char*>(data), size);
      return size;
    });
  } catch (const c10::Error& e) {
    return Error{path.string() + ": cannot serialise: " + e.what_without_backtrace()};
  }
  *bytes_out = static_cast<int64_t>(bytes.size());
  *sha256_out = Sha256Hex(bytes);
  return WriteFileAtomic(path.string(), bytes);
}

// Adam's state in a deterministic layout: per parameter group its options and, by parameter index, each
// parameter's state. LibTorch's own Adam::save keys the state by the address of each parameter's TensorImpl and
// writes it in hash-map order, so one state gave different optimizer files in different processes (and a
// resumed run's checkpoints differed from an uninterrupted run's although the state was the same).
void SaveAdam(const torch::optim::Adam& adam, torch::serialize::OutputArchive& archive) {
  const auto& groups = adam.param_groups();
  archive.write("groups", torch::tensor(static_cast<int64_t>(groups.size())));
  for (size_t g = 0; g < groups.size(); ++g) {
    torch::serialize::OutputArchive group(archive.compilation_unit()), options(archive.compilation_unit());
    static_cast<const torch::optim::AdamOptions&>(groups[g].options()).serialize(options);
    group.write("options", options);
    const std::vector<torch::Tensor>& params = groups[g].params();
    group.write("params", torch::tensor(static_cast<int64_t>(params.size())));
    for (size_t i = 0; i < params.size(); ++i) {
      const auto it = adam.state().find(AdamStateKey(params[i]));
      if (it == adam.state().end()) continue;  // a parameter not stepped yet has no state
      torch::serialize::OutputArchive state(archive.compilation_unit());
      static_cast<const torch::optim::AdamParamState&>(*it->second).serialize(state);
      group.write("state/" + std::to_string(i), state);
    }
    archive.write("group/" + std::to_string(g), group);
  }
}

// Reads what SaveAdam wrote into `adam` (whose groups must have the same sizes); throws c10::Error.
void LoadAdam(torch::optim::Adam& adam, torch::serialize::InputArchive& archive) {
  torch::Tensor count;
  archive.read("groups", count);
  auto& groups = adam.param_groups();
  TORCH_CHECK(count.item<int64_t>() == static_cast<int64_t>(groups.size()), "parameter groups differ");
  for (size_t g = 0; g < groups.size(); ++g) {
    torch::serialize::InputArchive group, options;
    archive.read("group/" + std::to_string(g), group);
    group.read("options", options);
    static_cast<torch::optim::AdamOptions&>(groups[g].options()).serialize(options);
    const std::vector<torch::Tensor>& params = groups[g].params();
    group.read("params", count);
    TORCH_CHECK(count.item<int64_t>() == static_cast<int64_t>(params.size()), "parameters differ");
    for (size_t i = 0; i < params.size(); ++i) {
      torch::serialize::InputArchive saved;
      if (!group.try_read("state/" + std::to_string(i), saved)) continue;
      auto state = std::make_unique<torch::optim::AdamParamState>();
      state->serialize(saved);
      adam.state()[AdamStateKey(params[i])] = std::move(state);
    }
  }
}

// The bytes of the checkpoint file `name` in `dir`, verified against the size and digest `meta` records.
Expected<std::string> ReadVerified(const std::string& dir, const std::string& name, int64_t bytes,
                                   const std::string& sha256) {
  const std::string path = (fs::path(dir) / name).string();
  Expected<std::string> data = ReadFile(path);
  if (!data) return data.error();
  if (Status s = VerifyCheckpointFile(*data, path, bytes, sha256); !s) return s.error();
  return data;
}

// The model file and, when `with_optimizer`, the optimizer file named by `meta`, verified.
Expected<CheckpointBlobs> ReadBlobs(const std::string& dir, const CheckpointMeta& meta, bool with_optimizer) {
  CheckpointBlobs blobs;
  Expected<std::string> model = ReadVerified(dir, meta.model_file, meta.model_bytes, meta.model_sha256);
  if (!model) return model.error();
  blobs.model = std::move(model).value();
  if (with_optimizer) {
    Expected<std::string> optimizer =
        ReadVerified(dir, meta.optimizer_file, meta.optimizer_bytes, meta.optimizer_sha256);
    if (!optimizer) return optimizer.error();
    blobs.optimizer = std::move(optimizer).value();
  }
  return blobs;
}

}  // namespace

Status SaveCheckpoint(const std::string& dir, PolicyNet& net, torch::optim::Adam* optimizer,
                      CheckpointMeta meta) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{dir + ": cannot create directory: " + ec.message()};
  const std::string suffix = std::to_string(meta.iteration) + ".pt";
  meta.model_file = "model-" + suffix;
  meta.optimizer_file = optimizer != nullptr ? "optim-" + suffix : "";
  // A failed save removes the files it created, so the previous checkpoint (which state.json still names)
  // stays the newest and nothing is orphaned.
  std::vector<fs::path> created;
  auto save = [&](torch::serialize::OutputArchive& archive, const std::string& name, int64_t* bytes,
                  std::string* sha256) -> Status {
    const fs::path path = fs::path(dir) / name;
    if (!fs::exists(path, ec)) created.push_back(path);
    return SaveArchiveAtomic(archive, path, bytes, sha256);
  };
  auto undo = [&](const Status& failed) {
    for (const fs::path& path : created) fs::remove(path, ec);
    return failed;
  };
  {
    torch::serialize::OutputArchive archive;
    net.module().save(archive);
    if (Status s = save(archive, meta.model_file, &meta.model_bytes, &meta.model_sha256); !s) return undo(s);
  }
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive archive;
    SaveAdam(*optimizer, archive);
    if (Status s = save(archive, meta.optimizer_file, &meta.optimizer_bytes, &meta.optimizer_sha256); !s)
      return undo(s);
  }
  if (Status s = WriteFileAtomic((fs::path(dir) / "state.json").string(), CheckpointMetaToJson(meta)); !s)
    return undo(s);
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool ours = (name.rfind("model-", 0) == 0 || name.rfind("optim-", 0) == 0) && name.size() > 3 &&
                      name.compare(name.size() - 3, 3, ".pt") == 0;
    if (ours && name != meta.model_file && name != meta.optimizer_file) fs::remove(entry.path(), ec);
  }
  return Status::Ok();
}

Expected<CheckpointMeta> ReadCheckpointMeta(const std::string& dir) {
  const std::string path = (fs::path(dir) / "state.json").string();
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return Error{text.error().message + " (is '" + dir + "' a checkpoint directory?)"};
  return CheckpointMetaFromJson(*text, path);
}

Status LoadCheckpointTensors(const std::string& dir, const CheckpointMeta& meta, PolicyNet& net,
                             torch::optim::Adam* optimizer) {
  if (optimizer != nullptr && meta.optimizer_file.empty())
    return Error{dir + "/state.json: optimizer_file: missing (cannot resume)"};
  Expected<CheckpointBlobs> blobs = ReadBlobs(dir, meta, optimizer != nullptr);
  if (!blobs) return blobs.error();
  return LoadCheckpointBlobs(*blobs, dir, net, optimizer);
}

Expected<CheckpointBlobs> ReadCheckpointBlobs(const std::string& dir, const CheckpointMeta& meta) {
  return ReadBlobs(dir, meta, !meta.optimizer_file.empty());
}

Status LoadCheckpointBlobs(const CheckpointBlobs& blobs, const std::string& dir, PolicyNet& net,
                           torch::optim::Adam* optimizer) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(blobs.model.data(), blobs.model.size());
    net.module().load(archive);
  } catch (const c10::Error& e) {
    return Error{dir + ": cannot load the policy parameters: " + e.what_without_backtrace()};
  }
  if (optimizer != nullptr) {
    if (blobs.optimizer.empty()) return Error{dir + "/state.json: optimizer_file: missing (cannot resume)"};
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(blobs.optimizer.data(), blobs.optimizer.size());
      LoadAdam(*optimizer, archive);
    } catch (const c10::Error& e) {
      return Error{dir + ": cannot load the optimizer state: " + e.what_without_backtrace()};
    }
  }
  return Status::Ok();
}

Expected<PolicySnapshot> ReadPolicySnapshot(const std::string& dir) {
  PolicySnapshot snapshot;
  Expected<CheckpointMeta> meta = ReadCheckpointMeta(dir);
  if (!meta) return meta.error();
  snapshot.meta = std::move(meta).value();
  Expected<CheckpointBlobs> blobs = ReadBlobs(dir, snapshot.meta, false);
  if (!blobs) return blobs.error();
  snapshot.model = std::move(blobs->model);
  return snapshot;
}

namespace {

std::string ShapeText(const torch::Tensor& t) {
  std::string out = "[";
  for (int64_t d = 0; d < t.dim(); ++d) out += (d > 0 ? ", " : "") + std::to_string(t.size(d));
  return out + "]";
}

// Copies the tensors of `from` into `to` (parameters or buffers of two modules) when both have the same names and
// shapes, except that a tensor named in `widened` may have fewer columns (last dimension) in `from`: it fills the
// first columns of `to`'s, the others become 0. `what` ("parameter", "buffer") and `fail` word the first difference.
Status CopySameShaped(const torch::OrderedDict<std::string, torch::Tensor>& from,
                      torch::OrderedDict<std::string, torch::Tensor>& to, const std::vector<std::string>& widened,
                      const std::string& what, const std::function<Error(const std::string&)>& fail) {
  auto narrower = [&](const std::string& name, const torch::Tensor& a, const torch::Tensor& b) {
    return std::find(widened.begin(), widened.end(), name) != widened.end() && a.dim() == b.dim() && a.dim() >= 1 &&
           a.sizes().slice(0, a.dim() - 1).equals(b.sizes().slice(0, b.dim() - 1)) && a.size(-1) < b.size(-1);
  };
  for (const auto& item : to) {
    const torch::Tensor* source = from.find(item.key());
    if (source == nullptr) return fail(what + " '" + item.key() + "' is missing there");
    if (!source->sizes().equals(item.value().sizes()) && !narrower(item.key(), *source, item.value()))
      return fail(what + " '" + item.key() + "' is " + ShapeText(*source) + " there, " + ShapeText(item.value()) +
                  " here");
  }
  for (const auto& item : from)
    if (to.find(item.key()) == nullptr) return fail(what + " '" + item.key() + "' is not in this policy");
  torch::NoGradGuard no_grad;
  for (auto& item : to) {
    const torch::Tensor& source = from[item.key()];
    if (source.sizes().equals(item.value().sizes())) {
      item.value().copy_(source);
    } else {
      item.value().zero_();
      item.value().narrow(-1, 0, source.size(-1)).copy_(source);
    }
  }
  return Status::Ok();
}

}  // namespace

Status InitFromSnapshot(const PolicySnapshot& snapshot, const std::string& dir, PolicyNet& net,
                        const std::string& where) {
  auto fail = [&](const std::string& what) {
    return Error{where + ": " + dir + ": " + what + " (the policies' architectures differ)"};
  };
  Expected<ExperimentConfig> saved =
      ExperimentConfigFromYaml(snapshot.meta.config_yaml, dir + "/state.json:config_yaml", snapshot.meta.base_dir);
  if (!saved) return Error{where + ": " + saved.error().message};
  if (saved->policy.kind != net.config().kind)
    return fail("a " + saved->policy.kind + " policy, this one is " + net.config().kind);
  PolicyNet source(saved->policy, saved->seed);
  if (Status s = LoadCheckpointBlobs({snapshot.model, ""}, dir, source, nullptr); !s)
    return Error{where + ": " + s.error().message};
  // A SOAP policy reading fewer candidate feature columns is widened: the layers that read them get zero weights
  // for the new columns, so the policy scores every action as the saved one did until training moves them.
  std::vector<std::string> widened;
  if (saved->policy.soap && net.config().soap && saved->policy.candidate_features < net.config().candidate_features)
    widened = {"candidate_key.weight", "candidate_linear.weight"};
  torch::OrderedDict<std::string, torch::Tensor> to = net.module().named_parameters();
  if (Status s = CopySameShaped(source.module().named_parameters(), to, widened, "parameter", fail); !s) return s;
  torch::OrderedDict<std::string, torch::Tensor> to_buffers = net.module().named_buffers();
  return CopySameShaped(source.module().named_buffers(), to_buffers, {}, "buffer", fail);
}

}  // namespace devplace
