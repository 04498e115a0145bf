// Console printer of `scalebench maxbatch` (include/scalebench/report.h): what the device holds before any
// replica, the prediction with its bytes by category, every verification attempt, and the answer.
#include <algorithm>
#include <cstdio>
#include <string>

#include "scalebench/byte_text.h"
#include "scalebench/report.h"

namespace sb {

std::string max_batch_in_units(const MaxBatchResult& r, int64_t batch) {
  std::string text = grouped_text(batch) + " " + r.batch_unit;
  if (r.batch_unit != r.unit) {
    text += " (" + grouped_text(static_cast<int64_t>(batch * r.units_per_sample + 0.5)) + " " + r.unit + ")";
  }
  return text;
}

void print_max_batch(std::FILE* out, const MaxBatchResult& r, const std::string& device_name) {
  std::fprintf(out, "# maxbatch %s, %s, %d rank%s, %s%s\n", r.workload.c_str(), r.precision.c_str(), r.nranks,
               r.nranks == 1 ? "" : "s", device_name.c_str(),
               r.strategy == "ddp" ? "" : (", " + r.strategy + ": the optimizer's state of one parameter shard per rank").c_str());
  if (r.budget_enforced) {
    std::fprintf(out,
                 "# PREDICTION for a card with %s: planned against that budget less what this device holds "
                 "outside the plan, and verified by refusing allocations past it on this device, not on such a card\n",
                 byte_text(r.device_total).c_str());
  }
  if (r.context_bytes + r.communication_bytes + r.outside_plan_bytes == 0) {
    std::fprintf(out, "# memory: %s, all of it for the plan (nothing else is held on this device)\n",
                 byte_text(r.capacity_bytes).c_str());
  } else {
    std::fprintf(out,
                 "# memory (measured, rank 0): device %s; CUDA context and libraries %s; NCCL buffers %s; a replica "
                 "outside its plan %s; capacity for the plan %s (smallest over ranks)\n",
                 byte_text(r.device_total).c_str(), byte_text(r.context_bytes).c_str(),
                 byte_text(r.communication_bytes).c_str(), byte_text(r.outside_plan_bytes).c_str(),
                 byte_text(r.capacity_bytes).c_str());
  }
  if (r.predicted == 0) {
    std::fprintf(out, "# predicted: not even a batch of 1 fits\n");
  } else {
    const PlanCategories& c = r.categories;
    std::fprintf(out, "# predicted: %s, needs %s:\n", max_batch_in_units(r, r.predicted).c_str(),
                 byte_text(r.predicted_bytes).c_str());
    std::fprintf(out,
                 "#   parameters %s, gradients %s, optimizer state %s, running state %s, inputs %s, activations %s, "
                 "workspace %s, padding %s%s\n",
                 byte_text(c.parameters + r.parameter_shard_bytes).c_str(),
                 byte_text(c.gradients + r.gradient_shard_bytes).c_str(),
                 byte_text(c.optimizer_state + r.optimizer_state_bytes).c_str(), byte_text(c.running_state).c_str(),
                 byte_text(c.inputs).c_str(),
                 byte_text(c.activations).c_str(), byte_text(c.workspace).c_str(), byte_text(c.padding).c_str(),
                 r.executor_bytes > 0 ? (", GEMM workspace and kernel scratch " + byte_text(r.executor_bytes)).c_str() : "");
    std::string sharded;
    for (std::string category : sharded_categories(r)) {
      std::replace(category.begin(), category.end(), '_', ' ');  // "optimizer state", as the line above names it
      sharded += (sharded.empty() ? "" : ", ") + category;
    }
    if (!sharded.empty()) {
      std::string whole = r.strategy == "zero1" ? "zero1 holds the gradients whole"
                          : r.strategy == "zero3" && r.parameter_shard_bytes > 0
                              ? "the running state, inputs, activations and workspace"
                              : r.strategy + " holds the parameters whole";
      if (r.strategy == "zero3" && r.parameter_shard_bytes == 0) {
        whole = "zero3 here holds the parameters whole: in blocks with a shard they would need more at this batch";
      }
      if (r.strategy != "zero1" && r.gradient_shard_bytes == 0) {
        whole += ", and the gradients: in blocks with a shard they would need more at this batch";
      }
      std::fprintf(out, "#   sharded (%s, one shard of %d per rank): %s; replicated on every rank: the rest (%s)\n",
                   r.strategy.c_str(), r.nranks, sharded.c_str(), whole.c_str());
      if (r.gradient_shard_bytes > 0) {
        std::fprintf(out,
                     "#   gradients: this rank's shard %s, and whole buckets' gradients alive at the peak %s (each "
                     "bucket's live from its first writer until its reduce-scatter)\n",
                     byte_text(r.gradient_shard_bytes).c_str(), byte_text(c.gradients).c_str());
      }
      if (r.parameter_shard_bytes > 0) {
        std::fprintf(out,
                     "#   parameters: this rank's shard %s, and units gathered whole at the peak %s (each unit's in "
                     "blocks from its gather, one unit ahead, to its last reader, again for the backward pass)\n",
                     byte_text(r.parameter_shard_bytes).c_str(), byte_text(c.parameters).c_str());
      }
    }
  }
  if (r.verified_ran) {
    std::fprintf(out, "%10s %12s  %s\n", "batch", "needed", "verification");
    for (const MaxBatchAttempt& a : r.attempts) {
      std::string outcome = "trained";
      if (!a.trained) outcome = a.out_of_memory && a.error.find("out of") != std::string::npos ? a.error
                                : (a.out_of_memory ? "out of memory: " : "failed: ") + a.error;
      std::fprintf(out, "%10lld %12s  %s\n", static_cast<long long>(a.batch), byte_text(a.needed_bytes).c_str(),
                   outcome.c_str());
    }
    char error[32];
    std::snprintf(error, sizeof error, "%+.1f%%", 100 * max_batch_prediction_error(r));
    std::fprintf(out, "# max batch per GPU: predicted %s, verified %s (prediction error %s)%s\n",
                 grouped_text(r.predicted).c_str(), max_batch_in_units(r, r.verified).c_str(), error,
                 r.next_failed_cleanly ? "; one more runs out of memory" : "");
  } else {
    std::fprintf(out, "# max batch per GPU: predicted %s (not verified)\n", max_batch_in_units(r, r.predicted).c_str());
  }
  if (r.status != "ok") std::fprintf(out, "# status: %s: %s\n", r.status.c_str(), r.error.c_str());
  std::fflush(out);
}

}  // namespace sb
