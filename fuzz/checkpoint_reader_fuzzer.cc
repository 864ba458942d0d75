// libFuzzer target: a training checkpoint as devplace reads it before LibTorch sees it. The bytes up to the first
// NUL are the sidecar (state.json, CheckpointMetaFromJson); the rest is the model file, verified against the size
// and SHA-256 the sidecar records (VerifyCheckpointFile). LibTorch's own parser is not fuzzed (clang rejects
// LibTorch 1.13's headers); verification is what keeps bytes it was not written with away from it.
#include <cstring>

#include "config/checkpoint_meta.h"
#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace devplace;
  const std::string bytes = fuzz::Text(data, size);
  const size_t nul = bytes.find('\0');
  Expected<CheckpointMeta> meta = CheckpointMetaFromJson(bytes.substr(0, nul), "ckpt/state.json");
  if (!fuzz::Check(meta) || nul == std::string::npos) return 0;
  const std::string model = bytes.substr(nul + 1);
  fuzz::Check(VerifyCheckpointFile(model, "ckpt/" + meta->model_file, meta->model_bytes, meta->model_sha256));
  return 0;
}
