// What StyleGAN's per-image op families share (blur, minibatch_stddev, noise_injection, style_modulation): the
// check that an input is an (N, H, W, C) map, and the four size attributes of the nodes that carry a whole map's
// extent ("batch", "height", "width", "channels").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/shape_text.h"

namespace sb {

// x's shape, refused with "<op>: input must be (N, H, W, C)" unless it has four dimensions.
inline const std::vector<int64_t>& nhwc_shape(const Graph& graph, TensorId x, const char* op) {
  const std::vector<int64_t>& xs = graph.tensor(x).shape;
  if (xs.size() != 4) throw UsageError(std::string(op) + ": input must be (N, H, W, C), got " + shape_text(xs));
  return xs;
}

struct ImageParams {
  int64_t batch = 0, height = 0, width = 0, channels = 0;
};
inline ImageParams image_params(const std::vector<int64_t>& nhwc) { return {nhwc[0], nhwc[1], nhwc[2], nhwc[3]}; }
inline NodeAttributes encode(const ImageParams& p) {
  return {{"batch", double(p.batch)}, {"height", double(p.height)}, {"width", double(p.width)},
          {"channels", double(p.channels)}};
}
inline ImageParams image_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "batch")), static_cast<int64_t>(ops::attribute(node, "height")),
          static_cast<int64_t>(ops::attribute(node, "width")), static_cast<int64_t>(ops::attribute(node, "channels"))};
}

}  // namespace sb
