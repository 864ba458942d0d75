#include "agents/learned/checkpoint.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "core/atomic_file.h"

namespace devplace {

namespace fs = std::filesystem;

namespace {

// Serialises an archive in memory and writes it with WriteFileAtomic (temporary, fsync, rename). LibTorch's own
// file writer is not used: on a full disk it throws again from a destructor and terminates the process.
Status SaveArchiveAtomic(torch::serialize::OutputArchive& archive, const fs::path& path) {
  std::string bytes;
  try {
    archive.save_to([&bytes](const void* data, size_t size) {
      bytes.append(static_cast<const char*>(data), size);
      return size;
    });
  } catch (const c10::Error& e) {
    return Error{path.string() + ": cannot serialise: " + e.what_without_backtrace()};
  }
  return WriteFileAtomic(path.string(), bytes);
}

}  // namespace

Status SaveCheckpoint(const std::string& dir, PolicyNet& net, torch::optim::Optimizer* optimizer,
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
  auto save = [&](torch::serialize::OutputArchive& archive, const std::string& name) -> Status {
    const fs::path path = fs::path(dir) / name;
    if (!fs::exists(path, ec)) created.push_back(path);
    return SaveArchiveAtomic(archive, path);
  };
  auto undo = [&](const Status& failed) {
    for (const fs::path& path : created) fs::remove(path, ec);
    return failed;
  };
  {
    torch::serialize::OutputArchive archive;
    net.module().save(archive);
    if (Status s = save(archive, meta.model_file); !s) return undo(s);
  }
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive archive;
    optimizer->save(archive);
    if (Status s = save(archive, meta.optimizer_file); !s) return undo(s);
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
                             torch::optim::Optimizer* optimizer) {
  const std::string model = (fs::path(dir) / meta.model_file).string();
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(model);
    net.module().load(archive);
  } catch (const c10::Error& e) {
    return Error{model + ": cannot load the policy parameters: " + e.what_without_backtrace()};
  }
  if (optimizer != nullptr) {
    if (meta.optimizer_file.empty()) return Error{dir + "/state.json: optimizer_file: missing (cannot resume)"};
    const std::string path = (fs::path(dir) / meta.optimizer_file).string();
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(path);
      optimizer->load(archive);
    } catch (const c10::Error& e) {
      return Error{path + ": cannot load the optimizer state: " + e.what_without_backtrace()};
    }
  }
  return Status::Ok();
}

Expected<CheckpointBlobs> ReadCheckpointBlobs(const std::string& dir, const CheckpointMeta& meta) {
  CheckpointBlobs blobs;
  Expected<std::string> model = ReadFile((fs::path(dir) / meta.model_file).string());
  if (!model) return model.error();
  blobs.model = std::move(model).value();
  if (!meta.optimizer_file.empty()) {
    Expected<std::string> optimizer = ReadFile((fs::path(dir) / meta.optimizer_file).string());
    if (!optimizer) return optimizer.error();
    blobs.optimizer = std::move(optimizer).value();
  }
  return blobs;
}

Status LoadCheckpointBlobs(const CheckpointBlobs& blobs, const std::string& dir, PolicyNet& net,
                           torch::optim::Optimizer* optimizer) {
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
      optimizer->load(archive);
    } catch (const c10::Error& e) {
      return Error{dir + ": cannot load the optimizer state: " + e.what_without_backtrace()};
    }
  }
  return Status::Ok();
}

}  // namespace devplace
