// Sequence zoo models: GNMT, the LSTM language model (RNNLM), Transformer-XL and WaveNet.
#include <string>
#include <vector>

#include "datasets/seq2seq.h"
#include "datasets/zoo_models.h"

namespace devplace {

// GNMT (Wu et al. 2016): 1024-wide LSTMs and embeddings, a 32k wordpiece vocabulary, a bidirectional bottom
// encoder layer, residual connections from the third layer on, normalised additive attention computed by the
// bottom decoder layer and fed to every decoder layer; sentences of 50 wordpieces.
void BuildGnmt(LayerBuilder& b, int32_t layers, int64_t batch) {
  Seq2SeqConfig c;
  c.batch = batch;
  c.source_length = 50;
  c.target_length = 50;
  c.source_vocab = 32000;
  c.target_vocab = 32000;
  c.embedding = 1024;
  c.hidden = 1024;
  c.encoder_layers = layers;
  c.decoder_layers = layers;
  c.bidirectional_first = true;
  c.residual_from = 2;
  c.attention = AttentionKind::kBahdanau;
  c.attention_to_all_layers = true;
  BuildSeq2Seq(b, c);
}

// "Exploring the Limits of Language Modeling" (Jozefowicz et al. 2016), LSTM-2048-512 on the One Billion Word
// benchmark: 512-wide embeddings, LSTMs with 2048 cells projected to 512 (LSTMP), a 793,471-word vocabulary
// with sampled softmax (8192 samples), unrolled over 20 steps.
void BuildRnnlm(LayerBuilder& b, int32_t layers, int64_t batch) {
  constexpr int64_t kVocab = 793471, kEmbedding = 512, kCells = 2048, kProjection = 512, kSteps = 20;
  constexpr int64_t kSamples = 8192;
  b.SetScope("input");
  const OpId ids = b.Input("token_ids", {batch, kSteps}, DType::kI32);
  const OpId labels = b.Input("labels", {batch, kSteps}, DType::kI32);
  std::vector<LstmState> states(layers);
  std::vector<OpId> outputs;
  for (int64_t t = 0; t < kSteps; ++t) {
    const std::string step = "_t" + std::to_string(t);
    b.SetScope("embedding");
    OpId x = b.Embedding(ids, kVocab, kEmbedding, "lookup" + step, "embedding", t);
    for (int32_t l = 0; l < layers; ++l) {
      const std::string scope = "layer" + std::to_string(l);
      b.SetScope(scope);
      LstmState s = b.LstmStep({x}, states[l], kCells, scope, "lstm" + step, kProjection);
      s.h = b.Linear({s.h}, kProjection, false, "projection" + step, scope + "/projection");
      states[l] = s;
      x = s.h;
    }
    outputs.push_back(x);
  }
  b.SetScope("softmax");
  b.SampledSoftmaxLoss(b.Stack(outputs, "outputs"), labels, kVocab, kSamples, "loss");
}

// Transformer-XL (Dai et al. 2019), the enwik8 base configuration of the authors' code: d_model 512, 8 heads
// of 64, d_inner 2048, segments of 512 with a memory of 512, 204 byte symbols, post-norm, relative position
// attention (content scores with the keys of [memory, segment], position scores with the projected relative
// encodings, shifted and added).
void BuildTransformerXl(LayerBuilder& b, int32_t layers, int64_t batch) {
  constexpr int64_t kModel = 512, kInner = 2048, kHeads = 8, kSegment = 512, kMemory = 512, kVocab = 204;
  b.SetScope("input");
  const OpId ids = b.Input("token_ids", {batch, kSegment}, DType::kI32);
  const OpId labels = b.Input("labels", {batch, kSegment}, DType::kI32);
  const OpId positions = b.Input("relative_positions", {1, kMemory + kSegment, kModel});
  b.SetScope("embedding");
  OpId h = b.Embedding(ids, kVocab, kModel, "tokens");
  for (int32_t l = 0; l < layers; ++l) {
    b.SetScope("layer" + std::to_string(l));
    const OpId memory = b.Input("memory", {batch, kMemory, kModel});  // the previous segment's states
    const OpId context = b.Concat({memory, h}, 1, "memory_concat");
    const OpId q = b.Linear({h}, kModel, false, "q");
    const OpId kv = b.Linear({context}, 2 * kModel, false, "kv");
    const OpId r = b.Linear({positions}, kModel, false, "r_net");
    const OpId content = b.MultiHeadScores(q, kv, kHeads, kModel, "content_scores");
    const OpId position = b.MultiHeadScores(q, r, kHeads, kModel, "position_scores");
    const OpId probs = b.Softmax(b.Add(content, position, "scores"), "probs");
    const OpId attended = b.MultiHeadContext(probs, kv, kModel, "attention_context");
    const OpId out = b.Linear({attended}, kModel, false, "o_net");
    h = b.LayerNorm(b.Add(h, out, "attention_residual"), "attention_norm");
    OpId f = b.Relu(b.Linear({h}, kInner, true, "ffn1"), "ffn_relu");
    f = b.Linear({f}, kModel, true, "ffn2");
    h = b.LayerNorm(b.Add(h, f, "ffn_residual"), "ffn_norm");
  }
  b.SetScope("softmax");
  b.SoftmaxCrossEntropy(b.Linear({h}, kVocab, true, "logits"), labels, "loss");
}

// WaveNet (van den Oord et al. 2016) as in the widely used TensorFlow implementation (ibab/tensorflow-wavenet):
// 256-way mu-law one-hot input, a causal conv of width 2 to 32 residual channels, layers of gated dilated
// causal convs (filter and gate, width 2, 32 channels, dilations 1, 2, ..., 256 within each stack) with 1x1
// residual (32) and skip (512) convs, then relu / 1x1 (512) / relu / 1x1 (256) and a softmax over the
// 256 classes, on one second of 16 kHz audio.
void BuildWaveNet(LayerBuilder& b, int32_t stacks, int32_t layers, int64_t batch) {
  constexpr int64_t kSamples = 16000, kQuantization = 256, kResidual = 32, kDilation = 32, kSkip = 512;
  const int32_t per_stack = layers / stacks;
  b.SetScope("input");
  const OpId audio = b.Input("audio_one_hot", {batch, kQuantization, kSamples});
  const OpId labels = b.Input("labels", {batch, kSamples}, DType::kI32);
  b.SetScope("causal_layer");
  OpId x = b.CausalConv1d(audio, kResidual, 2, 1, false, "conv");
  std::vector<OpId> skips;
  for (int32_t i = 0; i < layers; ++i) {
    const int64_t dilation = int64_t{1} << (i % per_stack);
    b.SetScope("stack" + std::to_string(i / per_stack) + "/layer" + std::to_string(i % per_stack));
    const OpId filter = b.Tanh(b.CausalConv1d(x, kDilation, 2, dilation, true, "filter"), "filter_tanh");
    const OpId gate = b.Sigmoid(b.CausalConv1d(x, kDilation, 2, dilation, true, "gate"), "gate_sigmoid");
    const OpId out = b.Mul(filter, gate, "gated");
    skips.push_back(b.CausalConv1d(out, kSkip, 1, 1, true, "skip"));
    x = b.Add(x, b.CausalConv1d(out, kResidual, 1, 1, true, "dense"), "residual");
  }
  b.SetScope("postprocessing");
  OpId y = b.Relu(b.AddN(skips, false, "skip_sum"), "relu1");
  y = b.Relu(b.CausalConv1d(y, kSkip, 1, 1, true, "postprocess1"), "relu2");
  y = b.CausalConv1d(y, kQuantization, 1, 1, true, "postprocess2");
  b.SoftmaxCrossEntropy(y, labels, "loss");
}

}  // namespace devplace
