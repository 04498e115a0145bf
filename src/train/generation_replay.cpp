// --check's replay of the N ranks' generated words (src/train/generation_replay.h).
#include "src/train/generation_replay.h"

#include <algorithm>
#include <cmath>

#include "scalebench/error.h"
#include "scalebench/half_precision.h"

namespace sb {
namespace {

std::vector<float> read_floats(Executor& e, TensorId id) {
  const TensorInfo& info = e.graph().tensor(id);
  std::vector<float> out(static_cast<size_t>(info.elements()));
  if (info.dtype == DType::kFloat32) {
    e.read_tensor(id, out.data(), info.bytes());
    return out;
  }
  std::vector<uint16_t> bits(out.size());
  e.read_tensor(id, bits.data(), info.bytes());
  for (size_t i = 0; i < bits.size(); ++i) {
    out[i] = info.dtype == DType::kBFloat16 ? bf16_bits_to_float(bits[i]) : fp16_bits_to_float(bits[i]);
  }
  return out;
}

std::vector<int32_t> read_ints(Executor& e, TensorId id) {
  std::vector<int32_t> out(static_cast<size_t>(e.graph().tensor(id).elements()));
  e.read_tensor(id, out.data(), out.size() * sizeof(int32_t));
  return out;
}

}  // namespace

bool find_generation(const Graph& graph, size_t k, GenerationTensors& out) {
  if (graph.sub_steps().empty()) return false;
  const std::vector<StepPart>& parts = graph.sub_steps().at(k).parts;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (!parts[p].generation || parts[p].repeat < 2) continue;
    GenerationTensors g;
    g.part = p;
    for (size_t n = parts[p].begin; n < parts[p].end; ++n) {
      const Node& node = graph.nodes()[n];
      if (node.op == "argmax") g.logits = node.inputs[0], g.words = node.outputs[0];
    }
    for (size_t n = parts[p].begin; n < parts[p].end; ++n) {
      const Node& node = graph.nodes()[n];
      if (node.inputs.empty() || node.inputs[0] != g.words) continue;
      if (node.op == "write_at_counter") {
        g.ids = node.outputs[0], g.counter = node.inputs[1];
        g.offset = static_cast<int64_t>(node.attributes.at("offset"));
      }
      if (node.op == "copy") g.fed_back = node.outputs[0];
    }
    for (const StepPart& later : parts) {
      for (size_t n = later.begin; n < later.end; ++n) {
        const Node& node = graph.nodes()[n];
        if (node.op == "end_sentences" && node.outputs[0] == g.ids) g.lengths = node.inputs[0];
      }
    }
    if (g.logits == kNoTensor || g.ids == kNoTensor || g.fed_back == kNoTensor) {
      throw UsageError("--check: generation part '" + parts[p].name + "' has no argmax written and fed back");
    }
    out = g;
    return true;
  }
  return false;
}

void replay_generation(Executor& executor, size_t k, const GenerationTensors& g, const std::vector<int32_t>& recorded,
                       ReplayCount& count) {
  const Graph& graph = executor.graph();
  const std::vector<StepPart>& parts = graph.sub_steps().at(k).parts;
  const TensorInfo& ids_info = graph.tensor(g.ids);
  const int64_t rows = ids_info.shape[0], time = ids_info.shape[1];
  if (static_cast<int64_t>(recorded.size()) != rows * time) throw UsageError("--check: recorded words do not fit");
  for (size_t p = 0; p < parts.size(); ++p) {
    const StepPart& part = parts[p];
    if (p != g.part) {
      for (int64_t r = 0; r < part.repeat; ++r) executor.run_nodes(part.begin, part.end);
      continue;
    }
    const std::vector<int32_t> lengths =
        g.lengths != kNoTensor ? read_ints(executor, g.lengths) : std::vector<int32_t>(rows, static_cast<int32_t>(time));
    for (int64_t r = 0; r < part.repeat; ++r) {
      executor.run_nodes(part.begin, part.end);
      const int32_t after = read_ints(executor, g.counter)[0];  // the part ends with the counter's increment
      const int64_t column = after - 1 + g.offset;
      if (column < 0 || column >= time) continue;
      const std::vector<float> logits = read_floats(executor, g.logits);
      std::vector<int32_t> words = read_ints(executor, g.words), ids = read_ints(executor, g.ids);
      const int64_t vocab = static_cast<int64_t>(logits.size()) / rows;
      for (int64_t b = 0; b < rows; ++b) {
        if (column >= std::clamp<int64_t>(lengths[b], 1, time) - 1) continue;  // end_sentences replaces these
        const int32_t want = recorded[b * time + column];
        ++count.words;
        if (words[b] == want) continue;
        const float* row = logits.data() + b * vocab;
        float largest = 0;
        for (int64_t v = 0; v < vocab; ++v) largest = std::max(largest, std::fabs(row[v]));
        const double margin = (static_cast<double>(row[words[b]]) - row[want]) / std::max(largest, 1e-30f);
        ++count.flips;
        count.worst_margin = std::max(count.worst_margin, std::isfinite(margin) ? margin : 1e30);
        words[b] = want;
        ids[b * time + column] = want;
      }
      executor.write_tensor(g.fed_back, words.data(), words.size() * sizeof(int32_t));
      executor.write_tensor(g.ids, ids.data(), ids.size() * sizeof(int32_t));
    }
  }
}

}  // namespace sb
