#include "datasets/seq2seq.h"

#include <string>
#include <vector>

#include "core/check.h"

namespace devplace {

namespace {

std::string Step(const char* prefix, int64_t t) { return std::string(prefix) + "_t" + std::to_string(t); }

// Per-step embeddings of the ids [N, T].
std::vector<OpId> EmbedSteps(LayerBuilder& b, OpId ids, int64_t vocab, int64_t dim, const std::string& scope) {
  b.SetScope(scope);
  std::vector<OpId> out;
  const int64_t steps = b.dim(ids, 1);
  out.reserve(steps);
  for (int64_t t = 0; t < steps; ++t) out.push_back(b.Embedding(ids, vocab, dim, Step("lookup", t), scope, t));
  return out;
}

std::vector<OpId> Encoder(LayerBuilder& b, const Seq2SeqConfig& c, OpId ids) {
  std::vector<OpId> x = EmbedSteps(b, ids, c.source_vocab, c.embedding, "encoder/embedding");
  const int64_t steps = c.source_length;
  for (int32_t l = 0; l < c.encoder_layers; ++l) {
    const std::string scope = "encoder/layer" + std::to_string(l);
    b.SetScope(scope);
    std::vector<OpId> out(steps);
    if (l == 0 && c.bidirectional_first) {
      std::vector<OpId> fw(steps), bw(steps);
      LstmState sf, sb;
      for (int64_t t = 0; t < steps; ++t) {
        sf = b.LstmStep({x[t]}, sf, c.hidden, scope + "/fw", Step("fw", t));
        fw[t] = sf.h;
      }
      for (int64_t t = steps - 1; t >= 0; --t) {
        sb = b.LstmStep({x[t]}, sb, c.hidden, scope + "/bw", Step("bw", t));
        bw[t] = sb.h;
      }
      for (int64_t t = 0; t < steps; ++t) out[t] = b.Concat({fw[t], bw[t]}, 1, Step("concat", t));
    } else {
      LstmState s;
      for (int64_t t = 0; t < steps; ++t) {
        s = b.LstmStep({x[t]}, s, c.hidden, scope, Step("lstm", t));
        out[t] = (l >= c.residual_from && b.dim(x[t], 1) == c.hidden) ? b.Add(s.h, x[t], Step("residual", t)) : s.h;
      }
    }
    x = std::move(out);
  }
  return x;
}

// The attention of one decoder step: the context vector [N, memory width].
struct Attention {
  const Seq2SeqConfig& c;
  OpId memory;  // [N, S, M]
  OpId keys;    // [N, S, H] (Luong) or [N, S, A] (Bahdanau)

  OpId Context(LayerBuilder& b, OpId query, int64_t t) const {
    b.SetScope("decoder/attention");
    OpId scores;
    if (c.attention == AttentionKind::kLuong) {
      scores = b.DotScores(query, keys, Step("scores", t));
    } else {
      const OpId q = b.Linear({query}, b.dim(keys, 2), false, Step("query", t), "decoder/attention/query");
      scores = b.AdditiveScores(q, keys, Step("scores", t), "decoder/attention/v");
    }
    const OpId probs = b.Softmax(scores, Step("probs", t));
    return b.AttentionContext(probs, memory, Step("context", t));
  }
};

}  // namespace

void BuildSeq2Seq(LayerBuilder& b, const Seq2SeqConfig& c) {
  DEVPLACE_CHECK(c.encoder_layers >= 1 && c.decoder_layers >= 1 && c.source_length >= 1 && c.target_length >= 1,
                 "seq2seq needs at least one layer and one step");
  b.SetScope("input");
  const OpId source = b.Input("source_ids", {c.batch, c.source_length}, DType::kI32);
  const OpId target = b.Input("target_ids", {c.batch, c.target_length}, DType::kI32);
  const OpId labels = b.Input("target_labels", {c.batch, c.target_length}, DType::kI32);

  const std::vector<OpId> encoded = Encoder(b, c, source);
  b.SetScope("decoder/attention");
  const OpId memory = b.Stack(encoded, "memory");
  // Keys: W_a memory (Luong's "general" score) or W_k memory (Bahdanau), computed once for all steps.
  const Attention attention{c, memory, b.Linear({memory}, c.hidden, false, "keys")};
  const int64_t memory_width = b.dim(memory, 2);

  const std::vector<OpId> emb = EmbedSteps(b, target, c.target_vocab, c.embedding, "decoder/embedding");
  b.SetScope("decoder");
  // The attention fed into step 0 (zeros in TensorFlow's graph).
  const int64_t feed_width = c.attention_to_all_layers ? memory_width : c.hidden;
  OpId feed = b.Input("initial_attention", {c.batch, feed_width});
  std::vector<LstmState> states(c.decoder_layers);
  std::vector<OpId> outputs(c.target_length);
  for (int64_t t = 0; t < c.target_length; ++t) {
    OpId x = emb[t];
    OpId context = -1;
    for (int32_t l = 0; l < c.decoder_layers; ++l) {
      const std::string scope = "decoder/layer" + std::to_string(l);
      b.SetScope(scope);
      std::vector<OpId> in = {x};
      if (l == 0) in.push_back(feed);
      if (l > 0 && c.attention_to_all_layers) in.push_back(context);
      states[l] = b.LstmStep(in, states[l], c.hidden, scope, Step("lstm", t));
      OpId y = states[l].h;
      if (l >= c.residual_from && b.dim(x, 1) == c.hidden) y = b.Add(y, x, Step("residual", t));
      if (l == 0 && c.attention_to_all_layers) {
        context = attention.Context(b, y, t);
        feed = context;
      }
      x = y;
    }
    if (c.attention_to_all_layers) {
      outputs[t] = x;
    } else {
      context = attention.Context(b, x, t);
      b.SetScope("decoder/attention");
      OpId combined = b.Linear({context, x}, c.hidden, false, Step("combine", t), "decoder/attention/combine");
      feed = b.Tanh(combined, Step("output", t));
      outputs[t] = feed;
    }
  }
  b.SetScope("decoder/softmax");
  const OpId stacked = b.Stack(outputs, "outputs");
  const OpId logits = b.Linear({stacked}, c.target_vocab, true, "logits");
  b.SoftmaxCrossEntropy(logits, labels, "loss");
}

}  // namespace devplace
