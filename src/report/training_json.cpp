// JSON and CSV of `scalebench run` (include/scalebench/report.h; keys documented in docs/RESULTS.md).
// Durations carry their unit in the key (_ms), rates theirs (_per_s, _gbps); every sample is kept.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "scalebench/report.h"
#include "scalebench/stats.h"
#include "scalebench/versions.h"
#include "src/report/csv_text.h"

#ifndef SB_VERSION
#define SB_VERSION "unknown"
#endif

namespace sb {
namespace {

// --embedding-grad: null without a tied table (or without a dp phase's reducer).
nlohmann::json embedding_grad_json(const TrainingReport& r) {
  const TrainingReport::EmbeddingGrad& e = r.embedding_grad;
  if (e.tables == 0) return nullptr;
  return {{"mode", e.sparse ? "sparse" : "dense"},
          {"tables", e.tables},
          {"rows_per_reduction", e.rows},
          {"table_rows", e.table_rows},
          {"dense_because", e.dense_because.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.dense_because)}};
}

// --bucket-mb auto's choice (null without it): the size that ran, or why the default did, each candidate's
// predicted tail and the all-reduce costs measured.
nlohmann::json bucket_auto_json(const std::optional<BucketAuto>& choice) {
  if (!choice) return nullptr;
  nlohmann::json candidates = nlohmann::json::array(), measured = nlohmann::json::array();
  for (const BucketAuto::Candidate& c : choice->candidates) {
    candidates.push_back({{"bucket_bytes", c.bytes}, {"buckets", c.buckets}, {"predicted_tail_ms", c.predicted_tail_ms}});
  }
  for (const auto& [bytes, ms] : choice->measured_ms) measured.push_back({{"bytes", bytes}, {"ms", ms}});
  return {{"chosen_bytes", choice->chosen_bytes},
          {"kept_default_because",
           choice->kept_default_because.empty() ? nlohmann::json(nullptr) : nlohmann::json(choice->kept_default_because)},
          {"candidates", candidates},
          {"all_reduce_ms", measured}};
}

using nlohmann::json;

// 3: gpus_sweep added (issue 29); readers take 2 as well (compare.h).
constexpr int kSchemaVersion = 3;

json string_or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

// Settings as the decimals they were given as (0.98, not fp32's 0.9800000190734863).
double decimal(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", value);
  return std::strtod(text, nullptr);
}

json optimizer_json(const OptimizerSettings& s) {
  return {{"kind", optimizer_name(s.kind)}, {"learning_rate", decimal(s.learning_rate)},
          {"beta1", decimal(s.beta1)}, {"beta2", decimal(s.beta2)}, {"epsilon", decimal(s.epsilon)},
          {"weight_decay", decimal(s.weight_decay)}, {"momentum", decimal(s.momentum)},
          {"max_grad_norm", decimal(s.max_grad_norm)}};
}

json context_json(const TrainingReport& r) {
  json environment = json::object();
  for (const auto& [name, value] : r.environment) environment[name] = value;
  json devices = json::array();
  std::vector<std::string> hosts;
  for (size_t rank = 0; rank < r.devices.size(); ++rank) {
    const TrainingReport::Rank& d = r.devices[rank];
    devices.push_back({{"rank", rank}, {"host", d.host}, {"index", d.device_index}, {"name", d.device_name},
                       {"bus_id", string_or_null(d.bus_id)}});
    if (std::find(hosts.begin(), hosts.end(), d.host) == hosts.end()) hosts.push_back(d.host);
  }
  return {{"argv", r.argv},
          {"started_at", r.started_at},
          {"reproducer", reproducer_command(r)},
          {"versions",
           {{"scalebench", SB_VERSION},
            {"git_commit", scalebench_git_commit()},
            {"cuda_runtime", string_or_null(r.cuda_runtime_version)},
            {"cuda_driver", string_or_null(r.cuda_driver_version)},
            {"cublas", string_or_null(r.cublas_version)},
            {"cudnn", nullptr},  // not linked: no workload of this build runs a convolution
            {"nccl", r.backend == "nccl" ? string_or_null(r.communicator_version) : json(nullptr)},
            {"mpi", string_or_null(r.mpi_version)}}},
          {"environment", environment},
          {"devices", devices},
          {"topology",
           {{"hosts", hosts.size()}, {"ranks", r.nranks}, {"device_kind", r.device_kind}, {"backend", r.backend},
            {"transport", string_or_null(r.transport)}, {"emulate", r.emulate}}}};
}

json config_json(const TrainingReport& r) {
  const TrainOptions& o = r.options;
  json phases = json::array();
  if (o.solo) phases.push_back("solo");
  if (o.comm) phases.push_back("comm");
  if (o.dp) phases.push_back("dp");
  return {{"workload", o.workload},
          {"scale", o.scale == WorkloadScale::kTiny ? "tiny" : "full"},
          {"batch_per_rank", r.batch},
          {"unit", r.unit},
          {"precision", precision_name(o.precision)},
          {"recompute", o.recompute},
          {"optimizer", optimizer_json(o.optimizer)},
          {"warmup_steps", o.warmup_steps},
          {"steps", o.steps},
          {"min_time_s", o.min_time_seconds},
          {"seed", o.seed},
          {"phases", phases},
          {"bucket_mb", static_cast<double>(o.bucket_bytes) / (1 << 20)},
          {"overlap", o.overlap},
          {"grad_dtype", o.grad_dtype == DType::kBFloat16 ? "bf16" : "fp32"},
          {"embedding_grad", embedding_grad_mode_name(o.embedding_grad)},
          {"comm_priority", o.comm_high_priority ? "high" : "normal"},
          {"overlap_ctas", o.overlap_ctas},
          {"grad_registration", buffer_registration_name(o.grad_registration)},
          {"strategy", strategy_name(o.strategy)},
          {"cuda_graph", cuda_graph_mode_name(o.cuda_graph)},
          {"check", o.check}};
}

json phase_json(const TrainingReport& r, const PhaseRecord& phase, const std::string& name) {
  json ranks = json::array();
  for (const RankPhase& rank : phase.ranks) {
    json entry = {{"step_ms", rank.step_ms}};
    if (name != "comm") {
      entry["host_ms"] = rank.host_ms;
      entry["loss_first"] = rank.loss_first;
      entry["loss_last"] = rank.loss_last;
    }
    if (!rank.bucket_ms.empty()) entry["bucket_ms"] = rank.bucket_ms;
    if (!rank.all_gather_ms.empty()) entry["all_gather_ms"] = rank.all_gather_ms;
    if (!rank.update_done_ms.empty()) entry["update_done_ms"] = rank.update_done_ms;
    if (!rank.gather_start_ms.empty()) {
      entry["gather_start_ms"] = rank.gather_start_ms;
      entry["gather_end_ms"] = rank.gather_end_ms;
      if (!rank.gather_needed_ms.empty()) entry["gather_needed_ms"] = rank.gather_needed_ms;
    }
    if (!rank.forward_done_ms.empty()) {  // solo and dp: the timelines the decomposition of 1 − E reads
      entry["forward_done_ms"] = rank.forward_done_ms;
      entry["nodes_done_ms"] = rank.nodes_done_ms;
      entry["step_done_ms"] = rank.step_done_ms;
    }
    if (!rank.bucket_end_ms.empty()) {
      entry["nodes_done_ms"] = rank.nodes_done_ms;
      entry["bucket_ready_ms"] = rank.bucket_ready_ms;
      entry["bucket_start_ms"] = rank.bucket_start_ms;
      entry["bucket_end_ms"] = rank.bucket_end_ms;
    }
    ranks.push_back(entry);
  }
  json out = {{"ranks", ranks}};
  if (name == "comm") {
    const CommSummary s = summarize_comm(r, phase);
    out["step_ms_p50"] = s.step_ms_p50;
    out["busbw_gbps"] = s.busbw_gbps;
    return out;
  }
  const PhaseSummary s = summarize_phase(r, phase, name == "dp");
  if (name == "dp") {
    const DpTimeline t = summarize_dp_timeline(r);
    out["timeline"] = {{"nodes_done_ms", t.nodes_done_ms}, {"last_reduce_end_ms", t.last_reduce_end_ms},
                       {"tail_ms", t.tail_ms}, {"bucket_ready_ms", t.ready_ms}, {"bucket_start_ms", t.start_ms},
                       {"bucket_end_ms", t.end_ms}};
  }
  out.update({{"step_ms_p50", s.step_ms_p50}, {"step_ms_p95", s.step_ms_p95}, {"step_ms_max", s.step_ms_max},
              {"units_per_s_per_gpu", s.units_per_s_per_gpu}, {"units_per_s_total", s.units_per_s_total},
              {"tflops_per_gpu", s.tflops_per_gpu}, {"mfu", r.peak_tflops > 0 ? json(s.mfu) : json(nullptr)},
              {"slowest_rank", s.slowest_rank}, {"slowest_rank_step_ms_p50", s.slowest_rank_step_ms},
              {"host_ms_per_step", s.host_ms_p50}, {"host_bound", s.host_bound}, {"cuda_graph", phase.cuda_graph}});
  return out;
}

std::string hex(uint64_t value) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

json null_unless(bool known, double value) { return known ? json(value) : json(nullptr); }

// docs/RESULTS.md, efficiency_decomposition: null without the solo and dp phases.
json decomposition_json(const TrainingReport& r) {
  if (!r.solo.ran || !r.dp.ran) return nullptr;
  const EfficiencyDecomposition d = summarize_decomposition(r);
  if (!d.measured) return {{"measured", false}, {"not_measured", d.not_measured}};
  json ranks = json::array();
  for (size_t rank = 0; rank < d.ranks.size(); ++rank) {
    const EfficiencyDecomposition::Rank& e = d.ranks[rank];
    ranks.push_back({{"rank", rank}, {"solo_step_ms_p50", e.solo_step_ms}, {"dp_step_ms_p50", e.dp_step_ms},
                     {"dilation_ms", e.ms.dilation_ms}, {"tail_ms", e.ms.tail_ms}, {"skew_ms", e.ms.skew_ms}});
  }
  return {{"measured", true},
          {"loss", d.loss},
          {"dilation", d.dilation},
          {"tail", d.tail},
          {"skew", d.skew},
          {"residual", d.residual},
          {"adds_up", d.adds_up},
          {"tolerance", kDecompositionTolerance},
          {"dp_step_ms", d.dp_step_ms},
          {"dilation_ms", d.ms.dilation_ms},
          {"tail_ms", d.ms.tail_ms},
          {"skew_ms", d.ms.skew_ms},
          {"ranks", ranks}};
}

json check_json(const CheckRecord& c) {
  return {{"passed", c.passed},
          {"steps", c.steps},
          {"relative_error", c.relative_error},
          {"max_abs_difference", c.max_abs_difference},
          {"tolerance", c.tolerance},
          {"ranks_identical", c.ranks_identical},
          {"linear_batchnorm_activations", c.linear_batchnorm_activations},
          {"generated_words", c.generated_words},
          {"generation_flips", c.generation_flips},
          {"generation_worst_margin", c.generation_worst_margin}};
}

// docs/RESULTS.md, gpus_sweep: null without --gpus-sweep. One entry per size k with its summary row; the sizes
// between 1 and N also carry every group's comm and dp samples (k = 1 and N are the solo and dp phases').
json gpus_sweep_json(const TrainingReport& r) {
  if (r.options.sweep_sizes.empty() && r.sweep_notice.empty()) return nullptr;
  json points = json::array();
  for (const SweepRow& row : summarize_sweep(r)) {
    const auto trained = std::find_if(r.sweep.begin(), r.sweep.end(), [&](const SweepPoint& p) { return p.gpus == row.gpus; });
    json groups = json::array();
    for (size_t g = 0; g < row.group_list.size(); ++g) {
      const SweepGroup& group = row.group_list[g];
      json entry = {{"ranks", group.ranks}, {"link", string_or_null(group.link)}, {"devices", group.devices}};
      if (trained != r.sweep.end() && g < trained->groups.size()) {
        const TrainingReport view = sweep_group_view(r, *trained, g);
        if (view.comm.ran) entry["comm"] = phase_json(view, view.comm, "comm");
        if (view.dp.ran) entry["dp"] = phase_json(view, view.dp, "dp");
      }
      groups.push_back(entry);
    }
    const bool between = trained != r.sweep.end();
    json point = {{"gpus", row.gpus},
                  {"phase", row.gpus == 1 ? "solo" : between ? "dp@" + std::to_string(row.gpus) : "dp"},
                  {"groups_at_once", row.groups},
                  {"link", string_or_null(row.link)},
                  {"measured", row.measured},
                  {"step_ms_p50", null_unless(row.measured, row.step_ms_p50)},
                  {"units_per_s_total", null_unless(row.measured, row.units_per_s_total)},
                  {"units_per_s_per_gpu", null_unless(row.measured, row.units_per_s_per_gpu)},
                  {"efficiency", null_unless(row.measured, row.efficiency)},
                  {"exposed_comm_ms", null_unless(row.measured && row.gpus > 1, row.exposed_comm_ms)},
                  {"busbw_gbps", null_unless(row.measured && row.gpus > 1, row.in_training_busbw_gbps)},
                  {"comm_busbw_gbps", null_unless(row.measured && row.gpus > 1, row.comm_busbw_gbps)},
                  {"cuda_graph", string_or_null(row.cuda_graph)},
                  {"groups", groups}};
    if (row.gpus > 1 && row.measured) {
      const EfficiencyDecomposition& d = row.decomposition;
      point["efficiency_decomposition"] =
          d.measured ? json{{"measured", true}, {"loss", d.loss}, {"dilation", d.dilation}, {"tail", d.tail},
                            {"skew", d.skew}, {"residual", d.residual}, {"adds_up", d.adds_up}}
                     : json{{"measured", false}, {"not_measured", d.not_measured}};
    }
    if (between) {
      point["weights_identical_after_dp"] = trained->weights_identical_after_dp;
      point["weights_checksum_after_dp"] = hex(trained->weights_checksum_after_dp);
      point["check"] = trained->check.ran ? check_json(trained->check) : json(nullptr);
    }
    points.push_back(point);
  }
  return {{"sizes", r.options.sweep_sizes},
          {"concurrent_groups", r.options.sweep_concurrent},
          {"notice", string_or_null(r.sweep_notice)},
          {"points", points}};
}

}  // namespace

nlohmann::json training_report_json(const TrainingReport& r) {
  json phases = json::object();
  if (r.solo.ran) phases["solo"] = phase_json(r, r.solo, "solo");
  if (r.comm.ran) phases["comm"] = phase_json(r, r.comm, "comm");
  if (r.dp.ran) phases["dp"] = phase_json(r, r.dp, "dp");
  json breakdown = json::array();
  for (const auto& [category, ms] : r.breakdown_ms) breakdown.push_back({{"category", category}, {"ms", ms}});
  json ops = json::array();
  for (const auto& [op, ms] : r.op_ms) ops.push_back({{"op", op}, {"ms", ms}});
  json host_ops = json::array();
  for (const auto& [op, ms] : r.op_host_ms) host_ops.push_back({{"op", op}, {"ms", ms}});
  json slowest = json::array();
  for (const TrainingReport::SlowNode& n : r.slowest_nodes) {
    slowest.push_back({{"index", n.index}, {"op", n.op}, {"output", n.output}, {"shape", n.shape},
                       {"detail", n.detail}, {"ms", n.ms}});
  }
  const ScalingSummary s = summarize_scaling(r);
  json doc = {{"schema_version", kSchemaVersion},
              {"tool", "scalebench"},
              {"command", "run"},
              {"status", r.status},
              {"error", string_or_null(r.error)},
              {"context", context_json(r)},
              {"config", config_json(r)},
              {"workload",
               {{"name", r.options.workload},
                {"task", r.task},
                {"unit", r.unit},
                {"parameters", r.parameters},
                {"units_per_step_per_rank", r.units_per_step},
                {"sub_steps", r.sub_steps},
                {"train_flops_per_step_per_rank", r.train_flops_per_step},
                {"plan_bytes", r.plan_bytes}}},
              {"nranks", r.nranks},
              {"peak_tflops", null_unless(r.peak_tflops > 0, r.peak_tflops)},
              {"buckets_bytes", r.bucket_bytes},
              {"reduction_kinds", r.reduction_kinds},
              {"bucket_collective", r.buckets_reduce_scattered ? "reduce_scatter" : "all_reduce"},
              {"embedding_grad", embedding_grad_json(r)},
              {"overlap_ctas_not_applied", r.overlap_ctas_not_applied.empty()
                                               ? nlohmann::json(nullptr)
                                               : nlohmann::json(r.overlap_ctas_not_applied)},
              {"grad_registration",
               {{"granted", buffer_registration_name(r.grad_registration.granted)},
                {"why_less", r.grad_registration.why_less.empty() ? nlohmann::json(nullptr)
                                                                  : nlohmann::json(r.grad_registration.why_less)}}},
              {"dp_memory", r.dp_plan_bytes == 0 ? nlohmann::json(nullptr)
                                                 : nlohmann::json{{"plan_bytes", r.dp_plan_bytes},
                                                                  {"gradient_shard_bytes", r.dp_gradient_shard_bytes},
                                                                  {"parameter_shard_bytes", r.dp_parameter_shard_bytes},
                                                                  {"device_used_bytes",
                                                                   r.dp_device_used_bytes
                                                                       ? nlohmann::json(*r.dp_device_used_bytes)
                                                                       : nlohmann::json(nullptr)}}},
              {"optimizer_state_bytes_per_rank", r.optimizer_state_bytes_per_rank > 0
                                                     ? nlohmann::json(r.optimizer_state_bytes_per_rank)
                                                     : nlohmann::json(nullptr)},
              {"parameters_updated_per_rank", r.parameters_updated_per_rank > 0
                                                  ? nlohmann::json(r.parameters_updated_per_rank)
                                                  : nlohmann::json(nullptr)},
              {"bucket_auto", bucket_auto_json(r.bucket_auto)},
              {"phases", phases},
              {"breakdown_ms", breakdown},
              {"op_ms", ops},
              {"profiled_host_ms", r.profiled_host_ms},
              {"op_host_ms", host_ops},
              {"slowest_nodes", slowest},
              {"scaling_efficiency", null_unless(r.dp.ran && r.solo.ran, s.efficiency)},
              {"exposed_comm_ms", null_unless(r.dp.ran && r.solo.ran, s.exposed_comm_ms)},
              {"overlap_pct", null_unless(r.dp.ran && r.solo.ran && r.comm.ran, s.overlap_pct)},
              {"efficiency_bound", null_unless(r.dp.ran && r.solo.ran && r.comm.ran, s.efficiency_bound)},
              {"efficiency_decomposition", decomposition_json(r)},
              {"busbw_gbps", null_unless(r.dp.ran, s.in_training_busbw_gbps)},
              {"comm_busbw_gbps", null_unless(r.comm.ran, summarize_comm(r, r.comm).busbw_gbps)},
              {"weights_identical_at_start", r.weights_identical_at_start},
              {"solo_own_replica", r.solo_own_replica},
              {"dp_only_nodes", r.dp_only_nodes},
              {"weights_identical_after_dp", r.dp.ran ? json(r.weights_identical_after_dp) : json(nullptr)},
              {"weights_checksum_after_dp", r.dp.ran ? json(hex(r.weights_checksum_after_dp)) : json(nullptr)}};
  if (r.loss_scaled) doc["loss_scaling"] = {{"final_scale", r.loss_scale}, {"skipped_steps", r.skipped_steps}};
  doc["all_gather"] = nullptr;
  if (r.dp.ran && r.all_gather_bytes > 0) {
    const AllGatherSummary gather = summarize_all_gather(r);
    doc["all_gather"] = {{"bytes_per_step", r.all_gather_bytes},
                         {"per_step", r.all_gathers_per_step},
                         {"ms_per_step", gather.ms_per_step},
                         {"busbw_gbps", gather.busbw_gbps},
                         {"exposed_ms_per_step", gather.exposed_ms_per_step},
                         {"comm_ms_per_step", null_unless(r.comm.ran, gather.comm_ms_per_step)},
                         {"comm_busbw_gbps", null_unless(r.comm.ran, gather.comm_busbw_gbps)}};
  }
  if (r.check.ran) doc["check"] = check_json(r.check);
  doc["gpus_sweep"] = gpus_sweep_json(r);
  return doc;
}

std::string training_report_csv(const TrainingReport& r) {
  const PhaseSummary solo = summarize_phase(r, r.solo, false);
  const PhaseSummary dp = summarize_phase(r, r.dp, true);
  const ScalingSummary s = summarize_scaling(r);
  const CommSummary comm = summarize_comm(r, r.comm);
  auto number = [](bool known, double value) { return csv_number(known ? std::optional<double>(value) : std::nullopt); };
  std::ostringstream out;
  out << "workload,scale,precision,nranks,batch_per_rank,unit,grad_dtype,bucket_mb,overlap,status,"
         "solo_step_ms_p50,solo_units_per_s_per_gpu,comm_step_ms_p50,comm_busbw_gbps,dp_step_ms_p50,"
         "dp_units_per_s_total,scaling_efficiency,exposed_comm_ms,overlap_pct,busbw_gbps,check,transport,emulate,"
         "schema_version\n";
  out << r.options.workload << ',' << (r.options.scale == WorkloadScale::kTiny ? "tiny" : "full") << ','
      << precision_name(r.options.precision) << ',' << r.nranks << ',' << r.batch << ',' << r.unit << ','
      << (r.options.grad_dtype == DType::kBFloat16 ? "bf16" : "fp32") << ','
      << number(true, static_cast<double>(r.options.bucket_bytes) / (1 << 20)) << ','
      << (r.options.overlap ? "true" : "false") << ',' << r.status << ',' << number(r.solo.ran, solo.step_ms_p50)
      << ',' << number(r.solo.ran, solo.units_per_s_per_gpu) << ',' << number(r.comm.ran, comm.step_ms_p50) << ','
      << number(r.comm.ran, comm.busbw_gbps) << ',' << number(r.dp.ran, dp.step_ms_p50) << ','
      << number(r.dp.ran, dp.units_per_s_total) << ',' << number(r.dp.ran && r.solo.ran, s.efficiency) << ','
      << number(r.dp.ran && r.solo.ran, s.exposed_comm_ms) << ','
      << number(r.dp.ran && r.solo.ran && r.comm.ran, s.overlap_pct) << ','
      << number(r.dp.ran, s.in_training_busbw_gbps) << ','
      << (r.check.ran ? (r.check.passed ? "passed" : "failed") : "") << ',' << csv_field(r.transport) << ','
      << r.emulate << ',' << kCsvSchemaVersion << '\n';
  return out.str();
}

}  // namespace sb
