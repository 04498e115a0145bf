// conv_seq2seq: fairseq's fconv_wmt_en_de (shared/WORKLOADS.md §8; fairseq/models/fconv.py): learned token and
// position embeddings of 768, encoder and decoder of 15 convolutional blocks [(512, 3)] x 9 + [(1024, 3)] x 4 +
// [(2048, 1)] x 2 with GLU and (x + residual) · sqrt(0.5), the encoder's "same" padding and the decoder's causal
// padding (k - 1 on the left), an attention layer after every decoder block, every Linear and convolution weight-
// normalised, GradMultiply 1 / (2 · 15) on the encoder output, fc2 2048 -> 512 and fc3 512 -> 43,676,
// label-smoothed cross-entropy (0.1) over the target tokens, dropout 0.2 (examples/translation/README.md).
// 216,005,176 parameters. Proxy batch as transformer_big: 500 sentence pairs x 32 tokens a side, right-padded.
//
// Layout: activations are (batch, 1, time, channels) throughout, the NHWC image of a 1-D sequence, so every
// convolution is conv2d with H = 1 and a (2 C_out, 1, k, C_in) weight (fairseq's ConvTBC weight (k, C_in, 2 C_out)
// transposed output-channel first; weight_norm's dim 2 there is the first dimension here), and the attention's
// batched products run over (batch, 1) with no transpose.
// Padding as fairseq: padded source positions are zeroed before every encoder convolution and after fc2
// (masked_fill(encoder_padding_mask)), attention keys past the source length are masked, and the attention
// output's length scaling s · sqrt(1 / s) uses each sentence's own source length s. That scaling is applied
// once to the encoder's values, (z + e) · sqrt(s), instead of to the context of each of the 15 attention
// layers: ctx · sqrt(s) = softmax(...) · ((z + e) · sqrt(s)), the same numbers and gradients.
// Deviation: fairseq pads the source on the left (left_pad_source); here both sides are padded on the right as
// in transformer_big. The masks make the two equivalent: a sentence's words see zeros beyond its ends either way,
// and make_positions numbers the words from kPad + 1 on either side.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "scalebench/workload.h"
#include "src/cpu/positions.h"

namespace sb::workloads {
namespace {

constexpr int32_t kPad = 1, kEos = 2, kFirstWord = 4;  // fairseq's dictionary: bos, pad, eos, unk first
// Real sentence lengths: WORKLOADS.md's proxy table for §8, "src 32, tgt 32 padded; real lengths ~27", credited
// "non-pad target tokens (~13.5k)" at 500 pairs (WMT14's fconv batches, shorter than §7's WMT16 ones).
constexpr double kSourceMeanLength = 27, kTargetMeanLength = 27;
constexpr double kDropout = 0.2;  // examples/translation/README.md, fconv_wmt_en_de: --dropout 0.2
const double kResidualScale = std::sqrt(0.5);  // normalization_constant 0.5

struct Block {
  int64_t channels, kernel;
};

struct Shape {
  int64_t source_vocab, target_vocab, embed, out_embed, positions, time;
  std::vector<Block> blocks;
};

// [(a, 3)] x 9 + [(b, 3)] x 4 + [(c, 1)] x 2 with fconv_wmt_en_de's (512, 1024, 2048); tiny: the same 15 blocks
// and width changes (two projections) with 4, 6 and 8 channels.
std::vector<Block> blocks(int64_t a, int64_t b, int64_t c) {
  std::vector<Block> list(9, Block{a, 3});
  list.insert(list.end(), 4, Block{b, 3});
  list.insert(list.end(), 2, Block{c, 1});
  return list;
}

// Full: the released wmt14.en-de.fconv-py dictionaries (en 42,243, de 43,676 types; fairseq issue #4680),
// max_source/target_positions 1024.
Shape shape_for(WorkloadScale scale) {
  return scale == WorkloadScale::kFull ? Shape{42243, 43676, 768, 512, 1024, 32, blocks(512, 1024, 2048)}
                                       : Shape{40, 48, 8, 8, 16, 6, blocks(4, 6, 8)};
}

// Multiply-adds of the matrix products per source and per target position, added up as the layers are built.
struct MacCount {
  double source = 0, target = 0;
};

// fairseq's Linear: nn.Linear under weight_norm (dim 0): v (out, in), g (out), bias (out). g, fairseq's weight_g,
// is called weight_norm here: it is the norm of each output row of the weight, and the name makes it a gain
// (initialised to 1, as fairseq's g = ||v|| starts near 1) for the initialisation rule that matches "orm"
// (src/train/replica.cpp, the tests).
TensorId weight_normed_linear(GraphBuilder& b, const std::string& name, TensorId x, int64_t in, int64_t out,
                              double& macs) {
  const TensorId v = b.parameter(name + ".weight_v", {out, in});
  const TensorId g = b.parameter(name + ".weight_norm", {out});
  macs += static_cast<double>(in) * static_cast<double>(out);
  return b.linear(x, b.weight_norm(v, g), b.parameter(name + ".bias", {out}));
}

// One convolution of a block and its GLU: x (B, 1, T, in) -> (B, 1, T, out). The encoder pads (k - 1) / 2 left
// and k / 2 right (fairseq: padding k // 2 for odd k, explicit F.pad otherwise); the decoder pads k - 1 on the
// left only, which is LinearizedConvolution's padding k - 1 with the last k - 1 outputs removed.
TensorId convolution_glu(GraphBuilder& b, const std::string& name, TensorId x, int64_t in, const Block& block,
                         bool causal, double& macs) {
  const int64_t k = block.kernel, out = 2 * block.channels;
  const TensorId v = b.parameter(name + ".weight_v", {out, 1, k, in});
  const TensorId g = b.parameter(name + ".weight_norm", {out});
  Conv2dOptions padding;
  padding.pad_left = causal ? k - 1 : (k - 1) / 2;
  padding.pad_right = causal ? 0 : k / 2;
  macs += static_cast<double>(k * in) * static_cast<double>(out);
  return b.glu(b.conv2d(x, b.weight_norm(v, g), b.parameter(name + ".bias", {out}), padding));
}

// (x + residual) · sqrt(0.5).
TensorId residual_sum(GraphBuilder& b, TensorId x, TensorId residual) {
  return b.scale(b.add(x, residual), kResidualScale);
}

struct EncoderOut {
  TensorId keys;    // z (B, 1, S, E): fc2's output, masked, under GradMultiply
  TensorId values;  // (z + e) · sqrt(0.5) · sqrt(s_b) (B, 1, S, E): with the attention's length scaling
};

class ConvSeq2Seq final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo{"conv_seq2seq", "translation (WMT14 en-de)", "tokens", 500, 216005176,
                                    "fairseq fconv_wmt_en_de", "sentence pairs"};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
    // §8 fairseq examples/translation/README.md (fconv_wmt_en_de): --optimizer nag --lr 0.5 --clip-norm 0.1
    // --lr-scheduler fixed; fairseq's NAG defaults: momentum 0.99, weight decay 0. fairseq/optim/nag.py keeps its
    // buffer scaled by -lr; at a fixed lr its update is torch.optim.SGD(nesterov=True)'s, i.e. kNag. Clipping is
    // fairseq's clip_grad_norm_ (max_norm / (norm + 1e-6)) of the all-reduced gradients.
    OptimizerSettings s = default_optimizer(OptimizerKind::kNag);
    s.learning_rate = 0.5f;
    s.momentum = 0.99f;
    s.weight_decay = 0;
    s.max_grad_norm = 0.1f;
    return s;
  }

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Shape s = shape_for(scale);
    const int64_t time = s.time;
    MacCount macs;
    const TensorId src = b.input("source", {batch, time}, DType::kInt32);
    const TensorId src_positions = b.input("source_positions", {batch, time}, DType::kInt32);
    const TensorId src_lengths = b.input("source_lengths", {batch}, DType::kInt32);
    const TensorId src_mask = b.input("source_mask", {batch, 1, time});  // 1 at words, 0 at padding
    const TensorId src_length_scale = b.input("source_length_scale", {batch});  // sqrt(source length)
    const TensorId tgt = b.input("target_input", {batch, time}, DType::kInt32);
    const TensorId tgt_positions = b.input("target_positions", {batch, time}, DType::kInt32);
    const TensorId targets = b.input("targets", {batch * time}, DType::kInt32);

    const EncoderOut encoder = encode(b, s, batch, src, src_positions, src_mask, src_length_scale, macs.source);
    const TensorId logits = decode(b, s, batch, tgt, tgt_positions, src_lengths, encoder, macs.target);
    BuiltWorkload built;
    built.loss = b.softmax_cross_entropy(b.reshape(logits, {batch * time, s.target_vocab}), targets, 0.1, kPad);
    // Credited: the non-padding target tokens of the synthesized batch (fairseq's wps); this is the estimate.
    built.units_per_step = static_cast<double>(batch) *
                           (scale == WorkloadScale::kFull ? kTargetMeanLength : static_cast<double>(time - 1));
    built.credited_inputs = {"targets"};
    built.credited_padding = kPad;
    // Per target position of the padded batch; source and target are both `time` positions long, so one source
    // position comes with each: WORKLOADS.md's per-target-token figure at equal source and target lengths.
    built.forward_flops_per_unit = 2 * (macs.source + macs.target);
    return built;
  }

  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& source = graph.tensor(graph.find_tensor("source"));
    const int64_t batch = source.shape[0], time = source.shape[1];
    const int64_t source_vocab = graph.tensor(graph.find_tensor("encoder.embed_tokens.weight")).shape[0];
    const int64_t target_vocab = graph.tensor(graph.find_tensor("decoder.embed_tokens.weight")).shape[0];
    std::mt19937_64 random;
    const bool full = time == 32;
    auto draw_length = [&](double mean) {
      std::normal_distribution<double> around(full ? mean : time - 1.5, full ? 2.5 : 1.0);
      return static_cast<int32_t>(std::clamp<double>(std::lround(around(random)), 2, static_cast<double>(time)));
    };
    std::uniform_int_distribution<int32_t> source_word(kFirstWord, static_cast<int32_t>(source_vocab - 1));
    std::uniform_int_distribution<int32_t> target_word(kFirstWord, static_cast<int32_t>(target_vocab - 1));
    std::vector<int32_t> src(batch * time, kPad), tgt_in(batch * time, kPad), targets(batch * time, kPad);
    std::vector<int32_t> src_lengths(batch);
    std::vector<float> src_mask(batch * time, 0.0f), src_length_scale(batch);
    for (int64_t s = 0; s < batch; ++s) {
      random = sample_random(seed, first_sample + s);
      src_lengths[s] = draw_length(kSourceMeanLength);
      const int32_t tgt_length = draw_length(kTargetMeanLength);
      for (int32_t t = 0; t < src_lengths[s]; ++t) {
        src[s * time + t] = t + 1 == src_lengths[s] ? kEos : source_word(random);
        src_mask[s * time + t] = 1.0f;
      }
      src_length_scale[s] = static_cast<float>(std::sqrt(static_cast<double>(src_lengths[s])));
      for (int32_t t = 0; t < tgt_length; ++t) targets[s * time + t] = t + 1 == tgt_length ? kEos : target_word(random);
      // Teacher forcing: the decoder reads the targets shifted right behind an end-of-sentence marker.
      tgt_in[s * time] = kEos;
      for (int32_t t = 1; t < tgt_length; ++t) tgt_in[s * time + t] = targets[s * time + t - 1];
    }
    std::vector<int32_t> src_positions(src.size()), tgt_positions(tgt_in.size());
    cpu::make_positions(src.data(), src_positions.data(), batch, time, kPad);
    cpu::make_positions(tgt_in.data(), tgt_positions.data(), batch, time, kPad);
    write_input(write, graph, "source", src);
    write_input(write, graph, "source_positions", src_positions);
    write_input(write, graph, "source_lengths", src_lengths);
    write_input(write, graph, "source_mask", src_mask);
    write_input(write, graph, "source_length_scale", src_length_scale);
    write_input(write, graph, "target_input", tgt_in);
    write_input(write, graph, "target_positions", tgt_positions);
    write_input(write, graph, "targets", targets);
  }

 private:
  // Token + learned position embeddings (fairseq Embedding and LearnedPositionalEmbedding, padding row 1;
  // positions count from kPad + 1) -> dropout, as (B, 1, T, E).
  static TensorId embed(GraphBuilder& b, const std::string& side, int64_t vocab, const Shape& s, int64_t batch,
                        TensorId ids, TensorId positions) {
    const TensorId tokens = b.parameter(side + ".embed_tokens.weight", {vocab, s.embed});
    const TensorId table = b.parameter(side + ".embed_positions.weight", {s.positions, s.embed});
    const TensorId sum = b.add(b.embedding(ids, tokens, kPad), b.embedding(positions, table, kPad));
    return b.dropout(b.reshape(sum, {batch, 1, s.time, s.embed}), kDropout);
  }

  static EncoderOut encode(GraphBuilder& b, const Shape& s, int64_t batch, TensorId src, TensorId src_positions,
                           TensorId mask, TensorId length_scale, double& macs) {
    const TensorId input_embedding = embed(b, "encoder", s.source_vocab, s, batch, src, src_positions);
    int64_t in = s.blocks.front().channels;
    TensorId x = weight_normed_linear(b, "encoder.fc1", input_embedding, s.embed, in, macs);
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      const std::string index = std::to_string(i);
      const Block& block = s.blocks[i];
      const TensorId residual =
          in == block.channels
              ? x
              : weight_normed_linear(b, "encoder.projections." + index, x, in, block.channels, macs);
      const TensorId h = b.dropout(b.scale_rows(x, mask), kDropout);  // padded positions zeroed first
      x = residual_sum(b, convolution_glu(b, "encoder.convolutions." + index, h, in, block, false, macs), residual);
      in = block.channels;
    }
    TensorId z = b.scale_rows(weight_normed_linear(b, "encoder.fc2", x, in, s.embed, macs), mask);
    // Scale the gradients reaching the encoder: the decoder's attention layers each send one back through z.
    z = b.grad_multiply(z, 1.0 / (2.0 * static_cast<double>(s.blocks.size())));
    const TensorId values = b.scale_rows(residual_sum(b, z, input_embedding), length_scale);
    return EncoderOut{z, values};
  }

  static TensorId decode(GraphBuilder& b, const Shape& s, int64_t batch, TensorId tgt, TensorId tgt_positions,
                         TensorId src_lengths, const EncoderOut& encoder, double& macs) {
    const TensorId target_embedding = embed(b, "decoder", s.target_vocab, s, batch, tgt, tgt_positions);
    int64_t in = s.blocks.front().channels;
    TensorId x = weight_normed_linear(b, "decoder.fc1", target_embedding, s.embed, in, macs);
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      const std::string index = std::to_string(i);
      const Block& block = s.blocks[i];
      const TensorId residual =
          in == block.channels
              ? x
              : weight_normed_linear(b, "decoder.projections." + index, x, in, block.channels, macs);
      TensorId h = convolution_glu(b, "decoder.convolutions." + index, b.dropout(x, kDropout), in, block, true, macs);
      h = attention(b, "decoder.attention." + index, h, target_embedding, encoder, src_lengths, s, block.channels,
                    macs);
      x = residual_sum(b, h, residual);
      in = block.channels;
    }
    x = b.dropout(weight_normed_linear(b, "decoder.fc2", x, in, s.out_embed, macs), kDropout);
    return weight_normed_linear(b, "decoder.fc3", x, s.out_embed, s.target_vocab, macs);
  }

  // fairseq's AttentionLayer: q = (in_projection(h) + target embedding) · sqrt(0.5), scores q · zᵀ over the
  // unpadded source positions, context = softmax · values (the length scaling already in the values), then
  // (out_projection(context) + h) · sqrt(0.5). h (B, 1, T, C) -> (B, 1, T, C).
  static TensorId attention(GraphBuilder& b, const std::string& name, TensorId h, TensorId target_embedding,
                            const EncoderOut& encoder, TensorId src_lengths, const Shape& s, int64_t channels,
                            double& macs) {
    const TensorId q =
        residual_sum(b, weight_normed_linear(b, name + ".in_projection", h, channels, s.embed, macs), target_embedding);
    const TensorId scores = b.matmul(q, encoder.keys, false, true);  // (B, 1, T, S)
    const TensorId context = b.matmul(b.masked_softmax(scores, 1.0, src_lengths, false), encoder.values, false, false);
    macs += 2.0 * static_cast<double>(s.embed) * static_cast<double>(s.time);  // scores and context, per target
    return residual_sum(b, weight_normed_linear(b, name + ".out_projection", context, s.embed, channels, macs), h);
  }
};

}  // namespace

const Workload& conv_seq2seq() {
  static const ConvSeq2Seq kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
