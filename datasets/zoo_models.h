// Internal to the zoo: builders that add one whole model (inputs to loss) to a LayerBuilder.
#pragma once

#include <cstdint>

#include "datasets/layers.h"

namespace devplace {

// torchvision's ResNet v1.5 (stride in the 3x3 conv) at 224x224; depth 50, 101 or 152.
void BuildResNet(LayerBuilder& b, int32_t depth, int64_t batch);
// torchvision's VGG-16 (configuration D, no batch norm) at 224x224.
void BuildVgg16(LayerBuilder& b, int64_t batch);
// torchvision's Inception-v3 (Szegedy et al. 2016) at 299x299 with the auxiliary classifier.
void BuildInceptionV3(LayerBuilder& b, int64_t batch);
// AmoebaNet-A (Real et al. 2019) as in TensorFlow's reference implementation.
void BuildAmoebaNet(LayerBuilder& b, int64_t batch);
// GNMT (Wu et al. 2016) with `layers` encoder and `layers` decoder LSTM layers.
void BuildGnmt(LayerBuilder& b, int32_t layers, int64_t batch);
// The LSTM language model of Jozefowicz et al. 2016 (LSTM-2048-512) with `layers` layers.
void BuildRnnlm(LayerBuilder& b, int32_t layers, int64_t batch);
// Transformer-XL (Dai et al. 2019), enwik8 base configuration, with `layers` layers.
void BuildTransformerXl(LayerBuilder& b, int32_t layers, int64_t batch);
// WaveNet (van den Oord et al. 2016) with `stacks` dilation stacks and `layers` layers in all.
void BuildWaveNet(LayerBuilder& b, int32_t stacks, int32_t layers, int64_t batch);
// A U-Transformer (zoo_utransformer.cc): `half_layers` encoder and `half_layers` decoder layers (width 1024, 16
// heads, 1,024 tokens) with U-shaped skip connections from encoder layer L-1-j into decoder layer j (j >= 1).
void BuildUTransformer(LayerBuilder& b, int32_t half_layers, int64_t batch);

}  // namespace devplace
