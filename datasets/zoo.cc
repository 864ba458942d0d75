#include "datasets/zoo.h"

#include <functional>
#include <utility>

#include "datasets/gpt.h"
#include "datasets/layers.h"
#include "datasets/zoo_models.h"

namespace devplace {

namespace {

struct ZooEntry {
  const char* name;
  int64_t default_batch;
  std::function<void(LayerBuilder&, int64_t batch)> build;
};

// Default batches: the per-step batch of the papers that placed these models (ColocRL/HDP: Inception-v3,
// RNNLM, NMT/GNMT; GDP: Transformer-XL, WaveNet, AmoebaNet) or of the models' own training setups; the GPT
// models take 8 sequences of 1024 tokens per step (one micro-batch of Megatron-LM's runs).
const std::vector<ZooEntry>& Entries() {
  static const std::vector<ZooEntry> kEntries = {
      {"gnmt2", 128, [](LayerBuilder& b, int64_t n) { BuildGnmt(b, 2, n); }},
      {"gnmt4", 128, [](LayerBuilder& b, int64_t n) { BuildGnmt(b, 4, n); }},
      {"gnmt8", 128, [](LayerBuilder& b, int64_t n) { BuildGnmt(b, 8, n); }},
      {"rnnlm2", 64, [](LayerBuilder& b, int64_t n) { BuildRnnlm(b, 2, n); }},
      {"rnnlm4", 64, [](LayerBuilder& b, int64_t n) { BuildRnnlm(b, 4, n); }},
      {"transformer_xl2", 22, [](LayerBuilder& b, int64_t n) { BuildTransformerXl(b, 2, n); }},
      {"transformer_xl4", 22, [](LayerBuilder& b, int64_t n) { BuildTransformerXl(b, 4, n); }},
      {"transformer_xl8", 22, [](LayerBuilder& b, int64_t n) { BuildTransformerXl(b, 8, n); }},
      {"wavenet2x18", 4, [](LayerBuilder& b, int64_t n) { BuildWaveNet(b, 2, 18, n); }},
      {"wavenet4x36", 4, [](LayerBuilder& b, int64_t n) { BuildWaveNet(b, 4, 36, n); }},
      {"inception_v3", 32, [](LayerBuilder& b, int64_t n) { BuildInceptionV3(b, n); }},
      {"resnet50", 32, [](LayerBuilder& b, int64_t n) { BuildResNet(b, 50, n); }},
      {"resnet152", 32, [](LayerBuilder& b, int64_t n) { BuildResNet(b, 152, n); }},
      {"vgg16", 32, [](LayerBuilder& b, int64_t n) { BuildVgg16(b, n); }},
      {"amoebanet", 32, [](LayerBuilder& b, int64_t n) { BuildAmoebaNet(b, n); }},
      {"u_transformer", 8, [](LayerBuilder& b, int64_t n) { BuildUTransformer(b, 12, n); }},
      {"gpt1.3b", 8, [](LayerBuilder& b, int64_t n) { BuildGpt(b, Gpt1p3b(n)); }},
      {"gpt2.6b", 8, [](LayerBuilder& b, int64_t n) { BuildGpt(b, Gpt2p6b(n)); }},
      {"gpt_moe8", 8, [](LayerBuilder& b, int64_t n) { BuildGpt(b, GptMoe8(n)); }},
  };
  return kEntries;
}

const ZooEntry* Find(std::string_view name) {
  for (const ZooEntry& e : Entries())
    if (name == e.name) return &e;
  return nullptr;
}

Expected<LayerBuilder> Prepare(std::string_view name, int64_t batch) {
  const ZooEntry* entry = Find(name);
  if (entry == nullptr) {
    std::string known;
    for (const ZooEntry& e : Entries()) known += (known.empty() ? "" : ", ") + std::string(e.name);
    return Error{"unknown zoo model '" + std::string(name) + "' (known: " + known + ")"};
  }
  if (batch < 0) return Error{"batch must be positive (0: the model's default), got " + std::to_string(batch)};
  if (batch == 0) batch = entry->default_batch;
  LayerBuilder b(std::string(name) + "-b" + std::to_string(batch));
  entry->build(b, batch);
  return b;
}

}  // namespace

std::vector<std::string> ZooModelNames() {
  std::vector<std::string> names;
  for (const ZooEntry& e : Entries()) names.emplace_back(e.name);
  return names;
}

int64_t ZooDefaultBatch(std::string_view name) {
  const ZooEntry* entry = Find(name);
  return entry == nullptr ? 0 : entry->default_batch;
}

Expected<Graph> BuildZooModel(std::string_view name, int64_t batch) {
  Expected<LayerBuilder> b = Prepare(name, batch);
  if (!b.ok()) return b.error();
  return std::move(*b).BuildTraining();
}

Expected<Graph> BuildZooForwardModel(std::string_view name, int64_t batch) {
  Expected<LayerBuilder> b = Prepare(name, batch);
  if (!b.ok()) return b.error();
  return std::move(*b).BuildForward();
}

}  // namespace devplace
