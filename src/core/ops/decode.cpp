// The decode family (src/core/ops/decode.h): GraphBuilder's greedy-decoding ops (argmax, the step counter and
// the in-place writes of a decode loop), their rules (which refuse) and rows.
#include "src/core/ops/decode.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const WriteAtCounterParams& params) {
  return {{"outer", double(params.outer)},
          {"time", double(params.time)},
          {"inner", double(params.inner)},
          {"element_bytes", double(params.element_bytes)},
          {"offset", double(params.offset)}};
}

WriteAtCounterParams write_at_counter_params(const Node& node) {
  return {ops::size_attribute(node, "outer"), ops::size_attribute(node, "time"), ops::size_attribute(node, "inner"),
          ops::size_attribute(node, "element_bytes"), ops::size_attribute(node, "offset")};
}

NodeAttributes encode(const EndSentencesParams& params) {
  return {{"rows", double(params.rows)}, {"time", double(params.time)}, {"eos", double(params.eos)},
          {"pad", double(params.pad)}};
}

EndSentencesParams end_sentences_params(const Node& node) {
  return {ops::size_attribute(node, "rows"), ops::size_attribute(node, "time"), ops::size_attribute(node, "eos"),
          ops::size_attribute(node, "pad")};
}

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw UsageError(message);
}

bool is_counter(const TensorInfo& info) { return info.dtype == DType::kInt32 && info.elements() == 1; }

}  // namespace

TensorId GraphBuilder::argmax(TensorId logits) {
  const TensorInfo& info = graph_.tensor(logits);
  require(dtype_is_floating(info.dtype) && !info.shape.empty(),
          "argmax: logits must be floating with a last dimension, got '" + info.name + "' " + shape_text(info.shape));
  std::vector<int64_t> rows_shape = info.shape;  // copied: activation() below may move the tensor list
  rows_shape.pop_back();
  if (rows_shape.empty()) rows_shape.push_back(1);
  const int64_t cols = info.shape.back(), rows = info.elements() / cols;
  const TensorId out = activation(next_name("argmax"), rows_shape, DType::kInt32);
  graph_.add_node(Node{"argmax", {logits}, {out}, {{"rows", double(rows)}, {"cols", double(cols)}}, false});
  return out;
}

void GraphBuilder::write_at_counter(TensorId dst, TensorId src, TensorId counter, int64_t offset) {
  const TensorInfo& d = graph_.tensor(dst);
  const TensorInfo& s = graph_.tensor(src);
  require(d.shape.size() >= 2, "write_at_counter: '" + d.name + "' needs a time dimension, got " + shape_text(d.shape));
  require(is_counter(graph_.tensor(counter)), "write_at_counter: the counter must be one int32");
  require(d.dtype == s.dtype, "write_at_counter: '" + s.name + "' and '" + d.name + "' differ in dtype");
  // dst viewed as (outer, time, inner): time is the second-to-last dimension of a (B, H, T, dh) cache and the
  // last of (B, T) ids (inner 1).
  const bool ids = d.shape.size() == 2;
  const int64_t time = ids ? d.shape[1] : d.shape[d.shape.size() - 2];
  const int64_t inner = ids ? 1 : d.shape.back();
  const int64_t outer = d.elements() / (time * inner);
  require(s.elements() == outer * inner, "write_at_counter: '" + s.name + "' " + shape_text(s.shape) +
                                             " is not one time step of '" + d.name + "' " + shape_text(d.shape));
  graph_.add_node(Node{"write_at_counter",
                       {src, counter},
                       {dst},
                       encode(WriteAtCounterParams{outer, time, inner, int64_t(dtype_size(d.dtype)), offset}),
                       false});
}

TensorId GraphBuilder::fill_from_counter(TensorId counter, std::vector<int64_t> dims, int64_t offset) {
  require(is_counter(graph_.tensor(counter)), "fill_from_counter: the counter must be one int32");
  const TensorId out = activation(next_name("from_counter"), std::move(dims), DType::kInt32);
  graph_.add_node(Node{"fill_from_counter",
                       {counter},
                       {out},
                       {{"n", double(graph_.tensor(out).elements())}, {"offset", double(offset)}},
                       false});
  return out;
}

void GraphBuilder::update_counter(TensorId counter, int64_t keep, int64_t add) {
  require(is_counter(graph_.tensor(counter)), "update_counter: the counter must be one int32");
  graph_.add_node(Node{"update_counter", {}, {counter}, {{"keep", double(keep)}, {"add", double(add)}}, false});
}

void GraphBuilder::end_sentences(TensorId ids, TensorId lengths, int64_t eos, int64_t pad) {
  const TensorInfo& i = graph_.tensor(ids);
  const TensorInfo& l = graph_.tensor(lengths);
  require(i.dtype == DType::kInt32 && i.shape.size() == 2 && l.dtype == DType::kInt32 &&
              l.shape == std::vector<int64_t>{i.shape[0]},
          "end_sentences: ids (rows, time) and lengths (rows) must be int32, got " + shape_text(i.shape) + " and " +
              shape_text(l.shape));
  graph_.add_node(
      Node{"end_sentences", {lengths}, {ids}, encode(EndSentencesParams{i.shape[0], i.shape[1], eos, pad}), false});
}

namespace {

// Generation runs without gradients (XLM's generate is under torch.no_grad) and writes int32 ids, counters and
// caches. Autodiff never reaches these nodes from a loss; if it does, the graph differentiates through
// generation by mistake, and the rule says so.
std::vector<detail::Contribution> no_gradient(detail::BackwardContext&, const Node& node,
                                              const std::vector<TensorId>&) {
  throw UsageError("op '" + node.op + "' has no gradient: a loss depends on a no-gradient generation or copy node");
}

}  // namespace

const OpDefs& decode_ops() {
  constexpr OpGradient kStop = OpGradient::kStopsGradient;
  static const OpDefs ops = {
      {"argmax", "decode", kStop, no_gradient},
      {"write_at_counter", "decode", kStop, no_gradient},
      {"fill_from_counter", "decode", kStop, no_gradient},
      {"update_counter", "decode", kStop, no_gradient},
      {"end_sentences", "decode", kStop, no_gradient},
  };
  return ops;
}

}  // namespace sb
