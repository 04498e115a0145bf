// src/report/guide_throughput.h; the figures are WORKLOADS.md §0's "Lambda thr." column.
#include "src/report/guide_throughput.h"

#include <map>

namespace sb {

std::optional<double> guide_rtx8000_units_per_s(const std::string& workload) {
  static const std::map<std::string, double> kLambdaRtx8000 = {
      {"nasnet_large", 15.6},    {"deeplabv3", 9.12},       {"yolov3", 14.22},   {"pix2pixhd", 0.71},
      {"stylegan", 4.96},        {"maskrcnn", 5.84},        {"transformer_big", 7507}, {"conv_seq2seq", 22450},
      {"unsupmt", 3735},         {"bert_base", 94},         {"bert_finetune", 27},     {"mt_dnn", 28},
  };
  const auto found = kLambdaRtx8000.find(workload);
  if (found == kLambdaRtx8000.end()) return std::nullopt;
  return found->second;
}

}  // namespace sb
