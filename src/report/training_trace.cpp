// The dp phase as a Chrome / Perfetto trace (include/scalebench/report.h): one process per rank, a compute
// track (forward, backward, optimizer) and a communication track (each bucket's all-reduce), every timed step
// placed where its CUDA events put it on that rank's device, so the overlap of the all-reduces with the
// backward pass is visible. Open it in ui.perfetto.dev or chrome://tracing.
#include "scalebench/report.h"

namespace sb {
namespace {

using nlohmann::json;

json metadata(const char* kind, int pid, int tid, const std::string& name) {
  json event = {{"name", kind}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) event["tid"] = tid;
  return event;
}

// A complete event ("X") from..to milliseconds on the trace's microsecond axis.
json slice(const std::string& name, int pid, int tid, double from_ms, double to_ms, json args = json::object()) {
  return {{"name", name}, {"ph", "X"}, {"pid", pid}, {"tid", tid}, {"ts", from_ms * 1e3},
          {"dur", std::max(0.0, to_ms - from_ms) * 1e3}, {"args", std::move(args)}};
}

constexpr int kComputeTrack = 0, kCommTrack = 1;

}  // namespace

nlohmann::json training_trace_json(const TrainingReport& report) {
  json events = json::array();
  for (size_t r = 0; r < report.dp.ranks.size(); ++r) {
    const RankPhase& rank = report.dp.ranks[r];
    const int pid = static_cast<int>(r);
    const std::string device = r < report.devices.size()
                                   ? report.devices[r].host + ", " + report.devices[r].device_name
                                   : report.device_kind;
    events.push_back(metadata("process_name", pid, -1, "rank " + std::to_string(r) + " (" + device + ")"));
    events.push_back(metadata("thread_name", pid, kComputeTrack, "compute stream"));
    events.push_back(metadata("thread_name", pid, kCommTrack, "communication stream"));
    for (size_t s = 0; s < rank.step_start_ms.size(); ++s) {
      const double t0 = rank.step_start_ms[s];
      const json step = {{"step", s}};
      events.push_back(slice("forward", pid, kComputeTrack, t0, t0 + rank.forward_done_ms.at(s), step));
      events.push_back(
          slice("backward", pid, kComputeTrack, t0 + rank.forward_done_ms.at(s), t0 + rank.nodes_done_ms.at(s), step));
      events.push_back(
          slice("optimizer", pid, kComputeTrack, t0 + rank.nodes_done_ms.at(s), t0 + rank.step_done_ms.at(s), step));
      for (size_t b = 0; b < rank.bucket_start_ms.at(s).size(); ++b) {
        json args = {{"step", s}, {"bucket", b}, {"ready_ms", rank.bucket_ready_ms.at(s).at(b)}};
        if (b < report.bucket_bytes.size()) args["bytes"] = report.bucket_bytes[b];
        // A tied table's two extra reductions (--embedding-grad sparse) are named as such, not as buckets.
        const std::string kind = b < report.reduction_kinds.size() && report.reduction_kinds[b] != "bucket"
                                     ? " (" + report.reduction_kinds[b] + ")"
                                     : "";
        events.push_back(slice("all-reduce " + std::to_string(b) + kind, pid, kCommTrack,
                               t0 + rank.bucket_start_ms[s][b], t0 + rank.bucket_end_ms.at(s).at(b), args));
      }
    }
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"workload", report.options.workload},
            {"nranks", report.nranks},
            {"clock", "each rank's device events, from the start of its dp phase; ranks aligned at that start"}}}};
}

}  // namespace sb
