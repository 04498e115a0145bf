// JSON of `scalebench maxbatch` (include/scalebench/report.h, docs/RESULTS.md).
#include "scalebench/report.h"

namespace sb {

nlohmann::json max_batch_json(const MaxBatchResult& r) {
  using nlohmann::json;
  json attempts = json::array();
  for (const MaxBatchAttempt& a : r.attempts) {
    attempts.push_back({{"batch", a.batch},
                        {"needed_bytes", a.needed_bytes},
                        {"trained", a.trained},
                        {"out_of_memory", a.out_of_memory},
                        {"error", a.error}});
  }
  const PlanCategories& c = r.categories;
  return {{"workload", r.workload},
          {"unit", r.unit},
          {"batch_unit", r.batch_unit},
          {"units_per_sample", r.units_per_sample},
          {"precision", r.precision},
          {"strategy", r.strategy},
          {"nranks", r.nranks},
          {"reference_batch", r.reference_batch},
          {"memory",
           {{"device_total_bytes", r.device_total},
            {"budget_enforced", r.budget_enforced},
            {"context_bytes", r.context_bytes},
            {"communication_bytes", r.communication_bytes},
            {"outside_plan_bytes", r.outside_plan_bytes},
            {"capacity_bytes", r.capacity_bytes}}},
          {"predicted", r.predicted},
          {"predicted_bytes", r.predicted_bytes},
          {"predicted_categories",
           {{"parameters", c.parameters + r.parameter_shard_bytes},
            {"gradients", c.gradients + r.gradient_shard_bytes},
            {"optimizer_state", c.optimizer_state + r.optimizer_state_bytes},
            {"running_state", c.running_state},
            {"inputs", c.inputs},
            {"activations", c.activations},
            {"workspace", c.workspace},
            {"executor_workspace", r.executor_bytes},
            {"padding", c.padding}}},
          // Issue 31: which of predicted_categories hold one rank's shard (1/nranks) rather than a replica; of the
          // gradients, zero2's and zero3's shard (the rest: whole buckets alive at the peak); of the parameters,
          // zero3's shard (the rest: units gathered at the peak).
          {"sharded_categories", sharded_categories(r)},
          {"gradient_shard_bytes", r.gradient_shard_bytes},
          {"parameter_shard_bytes", r.parameter_shard_bytes},
          {"verified_ran", r.verified_ran},
          {"verified", r.verified},
          {"prediction_error", max_batch_prediction_error(r)},
          {"next_failed_cleanly", r.next_failed_cleanly},
          {"attempts", attempts},
          {"status", r.status},
          {"error", r.error}};
}

}  // namespace sb
