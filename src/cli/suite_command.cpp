// `scalebench suite`: for every workload asked for, maxbatch, then training at the reference batch and at the
// max batch, in one job; a progress line on rank 0 (stderr) with the time left; one JSON per workload as it
// finishes and suite.json at the end (src/cli/suite_folder.h); the guide's two tables last. A workload that
// fails is reported in its row and the suite goes on; the exit code is then 3.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "scalebench/allocation_budget.h"
#include "scalebench/error.h"
#include "scalebench/report.h"
#include "src/cli/commands.h"
#include "src/cli/max_batch_options.h"
#include "src/cli/gpus_sweep_plan.h"
#include "src/cli/run_context.h"
#include "src/cli/session.h"
#include "src/cli/suite_folder.h"

namespace sb {
namespace {

// "[suite 4/12, 2:10 elapsed, about 4:20 left] bert_base: training at the reference batch" on rank 0's stderr,
// rewritten in place on a terminal, one line each otherwise. Time left: the mean stage so far times the stages left.
class SuiteProgress {
 public:
  SuiteProgress(bool enabled, int stages)
      : enabled_(enabled), stages_(stages), terminal_(isatty(fileno(stderr)) != 0),
        start_(std::chrono::steady_clock::now()) {}
  void stage(const std::string& text) {
    ++done_;
    if (!enabled_) return;
    const double elapsed = seconds();
    std::string left = done_ > 1 ? ", about " + clock(elapsed / (done_ - 1) * (stages_ - done_ + 1)) + " left" : "";
    std::fprintf(stderr, "%s[suite %d/%d, %s elapsed%s] %s%s", terminal_ ? "\r\033[K" : "", done_, stages_,
                 clock(elapsed).c_str(), left.c_str(), text.c_str(), terminal_ ? "" : "\n");
    std::fflush(stderr);
  }
  void finish() {
    if (enabled_ && terminal_) std::fprintf(stderr, "\n");
  }

 private:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  static std::string clock(double seconds) {
    char text[32];
    const long total = static_cast<long>(seconds + 0.5);
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
    return text;
  }
  bool enabled_;
  int stages_, done_ = 0;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
};

// "20261130T120000Z" from "2026-11-30T12:00:00Z".
std::string compact_stamp(std::string timestamp) {
  std::string stamp;
  for (char c : timestamp) {
    if (c != '-' && c != ':') stamp += c;
  }
  return stamp;
}

TrainOptions suite_train_options(const MaxBatchOptions& m, const MemoryOptions& options, int64_t batch, int nranks) {
  TrainOptions train;
  train.workload = m.workload;
  train.batch = batch;
  train.scale = m.scale;
  train.warmup_steps = options.warmup_steps;
  train.steps = options.steps;
  train.seed = m.seed;
  train.optimizer = m.optimizer;
  train.precision = m.precision;
  train.recompute = m.recompute;
  train.bucket_bytes = m.bucket_bytes;
  train.comm = train.dp = nranks > 1;
  train.strategy = m.strategy;
  return train;
}

// Collective: one training run into `report`; a runtime failure is kept in the report (status "failed").
bool train_into(const TrainOptions& options, const CommandLine& cl, ProcessGroup& group,
                Session& session, TrainingReport& report) {
  report.options = options;
  describe_training_context(cl, group, session, report);
  try {
    run_training(options, group, *session.device, *session.communicator, report, [](const std::string&) {});
  } catch (const RuntimeFailure& failure) {
    report.status = "failed";
    report.error = failure.what();
  }
  return report.status == "ok";
}

nlohmann::json row_summary(const SuiteRow& row, const std::string& file) {
  auto run_summary = [](bool ran, const TrainingReport& report) {
    if (!ran) return nlohmann::json();
    nlohmann::json run = {{"batch", report.batch}, {"status", report.status}};
    if (report.solo.ran) run["solo_units_per_s_per_gpu"] = summarize_phase(report, report.solo, false).units_per_s_per_gpu;
    if (report.dp.ran) {
      run["dp_units_per_s_total"] = summarize_phase(report, report.dp, true).units_per_s_total;
      if (report.solo.ran) run["scaling_efficiency"] = summarize_scaling(report).efficiency;
    }
    if (!report.options.sweep_sizes.empty()) {  // --gpus-sweep: units/s at every k
      nlohmann::json curve = nlohmann::json::array();
      for (const SweepRow& point : summarize_sweep(report)) {
        if (!point.measured) continue;
        curve.push_back({{"gpus", point.gpus}, {"units_per_s_total", point.units_per_s_total},
                         {"efficiency", point.efficiency}, {"link", point.link}});
      }
      run["gpus_sweep"] = curve;
    }
    return run;
  };
  return {{"workload", row.workload},
          {"file", std::filesystem::path(file).filename().string()},
          {"max_batch_predicted", row.max_batch_ran ? nlohmann::json(row.max_batch.predicted) : nlohmann::json()},
          {"max_batch_verified", row.max_batch_ran && row.max_batch.verified_ran ? nlohmann::json(row.max_batch.verified)
                                                                                  : nlohmann::json()},
          {"reference", run_summary(row.reference_ran, row.reference)},
          {"max_batch", run_summary(row.max_ran, row.at_max)},
          {"error", row.error}};
}

}  // namespace

int run_suite_command(const CommandLine& cl, ProcessGroup& group) {
  const std::vector<std::string> workloads = chosen_workloads(cl.memory.workloads);
  const bool leader = group.rank() == 0;
  std::unique_ptr<SuiteFolder> folder;
  std::optional<std::string> error;
  if (leader) {
    try {
      folder = std::make_unique<SuiteFolder>(cl.memory.out_dir, cl.common.force);
    } catch (const UsageError& e) {
      error = e.what();
    }
  }
  agree_or_throw(group, error);
  Session session = open_session(group, cl.common);
  const std::string started_at = utc_timestamp(), stamp = compact_stamp(started_at);
  const std::string device_name = session.device->description().name;
  if (leader) warn_full_scale_on_cpu(*session.device, parse_workload_scale(cl.memory.scale), "suite");
  const bool reference_only = cl.memory.reference_only;
  SuiteProgress progress(leader, (reference_only ? 1 : 3) * static_cast<int>(workloads.size()));
  std::vector<SuiteRow> rows;
  nlohmann::json run_entry = {{"started_at", started_at}, {"argv", cl.argv}, {"device", device_name},
                              {"nranks", group.size()},   {"strategy", cl.memory.strategy},
                              {"workloads", nlohmann::json::array()},
                              {"files", nlohmann::json::array()}};
  uint64_t device_bytes = session.device->description().total_memory;
  // --gpus-sweep: one plan for every workload's reference-batch run (the phases a suite run trains).
  TrainOptions sweep_plan;
  sweep_plan.dp = true;
  const std::string sweep_notice =
      plan_gpus_sweep(cl.memory.gpus_sweep, cl.memory.concurrent_groups, group, *session.device, sweep_plan);
  if (leader && !sweep_notice.empty()) std::fprintf(stderr, "# %s\n", sweep_notice.c_str());
  // As run refuses it (src/train/trainer.cpp), before the first workload: a sharded strategy's sweep sizes must
  // divide the ranks its parameters are split for.
  const std::string sweep_refused =
      sweep_sizes_refusal(parse_strategy(cl.memory.strategy), sweep_plan.sweep_sizes, group.size());
  if (!sweep_refused.empty()) throw UsageError("suite --gpus-sweep with " + sweep_refused);
  for (const std::string& workload : workloads) {
    SuiteRow row;
    row.workload = workload;
    const MaxBatchOptions m = max_batch_options(cl.memory, workload, *session.device);
    if (!reference_only) {
      progress.stage(workload + ": max batch");
      try {
        row.max_batch = find_max_batch(m, group, *session.device, *session.communicator);
        row.max_batch_ran = true;
        device_bytes = row.max_batch.device_total;
        if (row.max_batch.status != "ok") row.error = "maxbatch: " + row.max_batch.error;
      } catch (const RuntimeFailure& failure) {
        row.error = std::string("maxbatch: ") + failure.what();
      }
    }
    // --memory answers for a smaller card: the training runs keep to the same budget.
    const uint64_t budget_before = allocation_budget();
    if (row.max_batch_ran && row.max_batch.budget_enforced) set_allocation_budget(row.max_batch.capacity_bytes);
    const int64_t reference_batch = find_workload(workload).info().default_batch;
    progress.stage(workload + ": training at the reference batch (" + std::to_string(reference_batch) + ")");
    row.reference_ran = true;
    TrainOptions at_reference = suite_train_options(m, cl.memory, reference_batch, group.size());
    at_reference.sweep_sizes = sweep_plan.sweep_sizes;
    at_reference.sweep_groups = sweep_plan.sweep_groups;
    at_reference.sweep_concurrent = sweep_plan.sweep_concurrent;
    row.reference.sweep_notice = sweep_notice;
    if (!train_into(at_reference, cl, group, session, row.reference) &&
        row.error.empty()) {
      row.error = "at the reference batch: " + row.reference.error;
    }
    const int64_t max_batch = suite_max_batch(row);
    if (!reference_only) progress.stage(workload + ": training at the max batch (" + std::to_string(max_batch) + ")");
    if (max_batch > 0) {
      TrainOptions at_max = suite_train_options(m, cl.memory, max_batch, group.size());
      at_max.check_memory = false;  // verified by training; the allocation answers if that no longer holds
      // A sharded strategy's max batch is the data-parallel phases' (one shard's optimizer state); the solo phase
      // updates every parameter and would need the whole state, so the max-batch run trains comm and dp alone.
      if (shards_optimizer(m.strategy) && group.size() > 1) at_max.solo = false;
      row.max_ran = true;
      if (!train_into(at_max, cl, group, session, row.at_max) && row.error.empty()) {
        row.error = "at the max batch: " + row.at_max.error;
      }
    }
    set_allocation_budget(budget_before);
    if (leader) {
      const std::string file = folder->workload_file(workload, stamp);
      write_text_file(file, suite_row_json(row).dump(2) + "\n");
      run_entry["files"].push_back(std::filesystem::path(file).filename().string());
      run_entry["workloads"].push_back(row_summary(row, file));
    }
    rows.push_back(std::move(row));
  }
  progress.finish();
  bool all_ok = true;
  for (const SuiteRow& row : rows) all_ok = all_ok && row.error.empty();
  if (leader) {
    print_suite_tables(stdout, rows, device_name, device_bytes, group.size());
    run_entry["status"] = all_ok ? "ok" : "failed";
    const std::string summary = folder->append_run(run_entry);
    std::printf("\n# results: %s and %zu workload file%s beside it\n", summary.c_str(), rows.size(),
                rows.size() == 1 ? "" : "s");
    std::fflush(stdout);
  }
  return all_ok ? kExitOk : kExitRuntime;
}

}  // namespace sb
