// JSON printer of `scalebench bandwidth` (schema_version 1). One record per size per measured placement,
// every per-iteration sample kept, keys carrying their units; context and config make a run reproducible.
// Not-checked counts and absent versions are null, never 0 or "", so a reader cannot mistake them for
// measurements.
#include "scalebench/report.h"
#include "scalebench/versions.h"
#include "src/report/bandwidth_fields.h"

#ifndef SB_VERSION
#define SB_VERSION "unknown"
#endif

namespace sb {
namespace {

constexpr int kSchemaVersion = 1;

using nlohmann::json;

json string_or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

json context_json(const BandwidthReport& report) {
  json environment = json::object();
  for (const auto& [name, value] : report.environment) environment[name] = value;
  json devices = json::array();
  for (const RankDevice& rank : report.devices) {
    devices.push_back({{"rank", rank.rank},
                       {"host", rank.host},
                       {"pid", rank.pid},
                       {"kind", device_kind_name(rank.device.kind)},
                       {"index", rank.device.index},
                       {"name", rank.device.name},
                       {"bus_id", string_or_null(rank.device.bus_id)},
                       {"total_memory_bytes", rank.device.total_memory}});
  }
  return {{"argv", report.argv},
          {"environment", environment},
          {"versions",
           {{"scalebench", SB_VERSION},
            {"git_commit", scalebench_git_commit()},
            {"mpi", string_or_null(report.mpi_version)},
            {"cuda_runtime", string_or_null(report.cuda_runtime_version)},
            {"cuda_driver", string_or_null(report.cuda_driver_version)},
            {"communicator", string_or_null(report.library_version)}}},
          {"nranks", report.nranks},
          {"backend", report.backend},
          {"transport", string_or_null(report.transport)},
          {"emulate", report.emulate},
          {"devices", devices}};
}

json config_json(const BandwidthOptions& options) {
  json ops = json::array();
  for (CollectiveOp op : options.ops) ops.push_back(collective_name(op));
  json dtypes = json::array();
  for (DType type : options.dtypes) dtypes.push_back(dtype_name(type));
  json redops = json::array();
  for (ReduceOp op : options.reduces) redops.push_back(reduce_op_name(op));
  return {{"ops", ops},
          {"min_bytes", options.min_bytes},
          {"max_bytes", options.max_bytes},
          {"factor", options.factor},
          {"dtype", detail::dtype_list(options)},
          {"redop", detail::redop_list(options)},
          {"dtypes", dtypes},
          {"redops", redops},
          {"root", options.root},
          {"warmup_iters", options.warmup_iters},
          {"iters", options.iters},
          {"in_place", options.run_in_place},
          {"out_of_place", options.run_out_of_place},
          {"graph", options.graph},
          {"register", options.registration != BufferRegistration::kNone},
          {"registration", buffer_registration_name(options.registration)},
          {"aggregate_timing", options.aggregate_timing},
          {"check", options.check}};
}

json record_json(const SizeResult& result, const detail::PlacementView& view) {
  const PlacementResult& placement = view.result;
  return {{"op", collective_name(result.op)},
          {"size_bytes", result.size_bytes},
          {"count", result.count},
          {"dtype", dtype_name(result.dtype)},
          {"redop", detail::redop_label(result.op, result.reduce)},
          {"placement", view.key},
          {"time_us_p50", placement.time_us.p50},
          {"time_us_p99", placement.time_us.p99},
          {"time_us_min", placement.time_us.min},
          {"time_us_max", placement.time_us.max},
          {"time_us_mean", placement.time_us.mean},
          {"time_us_cv", placement.time_us.cv},
          {"samples_us", placement.samples_us},
          {"algbw_gbps", placement.algbw_gbps},
          {"busbw_gbps", placement.busbw_gbps},
          {"wrong", placement.wrong < 0 ? json(nullptr) : json(placement.wrong)}};
}

}  // namespace

json bandwidth_report_json(const BandwidthReport& report) {
  json results = json::array();
  for (const SizeResult& result : report.results) {
    for (const detail::PlacementView& view : detail::placements(result)) {
      if (view.result.measured) results.push_back(record_json(result, view));
    }
  }

  json peaks = json::object();
  for (CollectiveOp op : detail::report_ops(report)) {
    bool measured = false;
    for (const SizeResult& result : report.results) {
      measured = measured || (result.op == op && (result.out_of_place.measured || result.in_place.measured));
    }
    peaks[collective_name(op)] = measured ? json(report.peak_busbw_gbps(op)) : json(nullptr);
  }
  const int64_t wrong = report.total_wrong();

  json document = {{"schema_version", kSchemaVersion},
                   {"tool", "scalebench"},
                   {"command", "bandwidth"},
                   {"status", report.status}};
  if (report.status != "ok") document["error"] = report.error;
  document["started_at"] = string_or_null(report.started_at);
  document["context"] = context_json(report);
  document["config"] = config_json(report.options);
  document["registration"] = {{"granted", buffer_registration_name(report.registration_granted)},
                              {"why_less", report.registration_why_less.empty()
                                               ? json(nullptr)
                                               : json(report.registration_why_less)}};
  document["results"] = results;
  document["summary"] = {{"peak_busbw_gbps", peaks},
                         {"wrong_total", wrong < 0 ? json(nullptr) : json(wrong)}};
  return document;
}

}  // namespace sb
