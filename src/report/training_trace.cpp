// The dp phase as a Chrome / Perfetto trace (include/scalebench/report.h): one process per rank, a compute
// track (forward, backward, optimizer; under zero1/zero2 the wait for the all-gathers after the last update) and a
// communication track (each bucket's all-reduce or, zero2, reduce-scatter; the all-gathers), every timed step
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
      // Sharded, the compute stream's last update ends before the step does: the rest is the wait for the gathers.
      const double update_done = s < rank.update_done_ms.size() ? rank.update_done_ms[s] : rank.step_done_ms.at(s);
      events.push_back(slice("optimizer", pid, kComputeTrack, t0 + rank.nodes_done_ms.at(s), t0 + update_done, step));
      if (update_done < rank.step_done_ms.at(s)) {
        events.push_back(slice("waiting for the all-gathers", pid, kComputeTrack, t0 + update_done,
                               t0 + rank.step_done_ms.at(s), step));
      }
      for (size_t g = 0; s < rank.gather_start_ms.size() && g < rank.gather_start_ms[s].size(); ++g) {
        events.push_back(slice("all-gather " + std::to_string(g), pid, kCommTrack, t0 + rank.gather_start_ms[s][g],
                               t0 + rank.gather_end_ms.at(s).at(g), {{"step", s}, {"gather", g}}));
        // zero3: the compute stream waited at the node that needs the unit until its gather ended (nested in the
        // forward or backward slice).
        if (s < rank.gather_needed_ms.size() && g < rank.gather_needed_ms[s].size() &&
            rank.gather_end_ms[s][g] > rank.gather_needed_ms[s][g]) {
          events.push_back(slice("waiting for all-gather " + std::to_string(g), pid, kComputeTrack,
                                 t0 + rank.gather_needed_ms[s][g], t0 + rank.gather_end_ms[s][g],
                                 {{"step", s}, {"gather", g}}));
        }
      }
      for (size_t b = 0; b < rank.bucket_start_ms.at(s).size(); ++b) {
        json args = {{"step", s}, {"bucket", b}, {"ready_ms", rank.bucket_ready_ms.at(s).at(b)}};
        if (b < report.bucket_bytes.size()) args["bytes"] = report.bucket_bytes[b];
        // A tied table's two extra reductions (--embedding-grad sparse) are named as such, not as buckets.
        const std::string kind = b < report.reduction_kinds.size() && report.reduction_kinds[b] != "bucket"
                                     ? " (" + report.reduction_kinds[b] + ")"
                                     : "";
        const char* collective = report.buckets_reduce_scattered && kind.empty() ? "reduce-scatter " : "all-reduce ";
        events.push_back(slice(collective + std::to_string(b) + kind, pid, kCommTrack,
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
