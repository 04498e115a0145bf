// GraphBuilder's greedy-decoding ops (include/scalebench/graph_builder.h, src/cpu/decode.h): argmax, the step
// counter and the in-place writes of a decode loop, and a device-to-device copy. None has a gradient
// (src/engine/backward_rules_decode.cpp says so); in-place ops list their destination as their output.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/shape_text.h"

namespace sb {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw UsageError(message);
}

bool is_counter(const TensorInfo& info) { return info.dtype == DType::kInt32 && info.elements() == 1; }

}  // namespace

TensorId GraphBuilder::buffer(const std::string& name, std::vector<int64_t> dims, DType dtype) {
  return activation(name, std::move(dims), dtype);
}

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
                       {{"outer", double(outer)},
                        {"time", double(time)},
                        {"inner", double(inner)},
                        {"element_bytes", double(dtype_size(d.dtype))},
                        {"offset", double(offset)}},
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
  graph_.add_node(Node{"end_sentences",
                       {lengths},
                       {ids},
                       {{"rows", double(i.shape[0])}, {"time", double(i.shape[1])}, {"eos", double(eos)},
                        {"pad", double(pad)}},
                       false});
}

void GraphBuilder::copy(TensorId dst, TensorId src) {
  const TensorInfo& d = graph_.tensor(dst);
  const TensorInfo& s = graph_.tensor(src);
  require(d.dtype == s.dtype && d.elements() == s.elements(),
          "copy: '" + s.name + "' " + shape_text(s.shape) + " " + dtype_name(s.dtype) + " does not fit '" + d.name +
              "' " + shape_text(d.shape) + " " + dtype_name(d.dtype));
  graph_.add_node(Node{"copy", {src}, {dst}, {{"bytes", double(d.bytes())}}, false});
}

}  // namespace sb
