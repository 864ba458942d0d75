// The model zoo: named models from the device-placement literature (ColocRL, HDP, Placeto, GDP) with their
// real architectures, shapes, parameter counts and FLOPs, as training graphs. See docs/datasets.md for the
// configuration of each model and the published figures the tests check.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace devplace {

// gnmt2, gnmt4, gnmt8, rnnlm2, rnnlm4, transformer_xl2, transformer_xl4, transformer_xl8, wavenet2x18,
// wavenet4x36, inception_v3, resnet50, resnet152, vgg16, amoebanet, u_transformer, gpt1.3b, gpt2.6b, gpt_moe8.
std::vector<std::string> ZooModelNames();

// The batch size the literature uses for that model (0 for an unknown name).
int64_t ZooDefaultBatch(std::string_view name);

// The model's training graph at `batch` (0 = the default batch), named "<name>-b<batch>".
// Errors on an unknown name or a negative batch.
Expected<Graph> BuildZooModel(std::string_view name, int64_t batch = 0);

// The forward graph only (same ops and ids as the forward part of BuildZooModel's graph).
Expected<Graph> BuildZooForwardModel(std::string_view name, int64_t batch = 0);

}  // namespace devplace
