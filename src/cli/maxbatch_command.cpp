// `scalebench maxbatch --workload NAME|all`: the largest per-GPU batch of each workload, predicted and
// verified (include/scalebench/max_batch.h); rank 0 prints each as it is found and writes --json/--csv at the
// end, also after a failure. Exit 3 when any workload's answer could not be verified.
#include <cstdio>

#include "scalebench/error.h"
#include "scalebench/report.h"
#include "scalebench/versions.h"
#include "src/cli/commands.h"
#include "src/cli/max_batch_options.h"
#include "src/cli/run_context.h"
#include "src/cli/session.h"
#include "src/report/csv_text.h"

namespace sb {
namespace {

std::string max_batch_csv(const std::vector<MaxBatchResult>& results) {
  std::string text =
      "workload,precision,nranks,batch_unit,reference_batch,predicted,verified,prediction_error,capacity_bytes,"
      "budget_enforced,status,schema_version\n";
  for (const MaxBatchResult& r : results) {
    text += r.workload + "," + r.precision + "," + std::to_string(r.nranks) + "," + r.batch_unit + "," +
            std::to_string(r.reference_batch) + "," + std::to_string(r.predicted) + "," +
            (r.verified_ran ? std::to_string(r.verified) : "") + "," +
            csv_number(r.verified_ran ? std::optional<double>(max_batch_prediction_error(r)) : std::nullopt) + "," +
            std::to_string(r.capacity_bytes) + "," + (r.budget_enforced ? "true" : "false") + "," + r.status + "," +
            std::to_string(kCsvSchemaVersion) + "\n";
  }
  return text;
}

}  // namespace

int run_maxbatch_command(const CommandLine& cl, ProcessGroup& group) {
  agree_or_throw(group, group.rank() == 0 ? unwritable_output({cl.common.json_path, cl.common.csv_path}, cl.common.force)
                                          : std::nullopt);
  const std::vector<std::string> workloads = chosen_workloads(cl.memory.workloads);
  Session session = open_session(group, cl.common);
  const bool leader = group.rank() == 0;
  std::FILE* console = (cl.common.json_path == "-" || cl.common.csv_path == "-") ? stderr : stdout;
  const std::string device_name = session.device->description().name;
  std::vector<MaxBatchResult> results;
  int exit_code = kExitOk;
  std::string failure;
  // A batch-1 probe step and the verification train: minutes a workload at full scale on the CPU.
  if (leader) warn_full_scale_on_cpu(*session.device, parse_workload_scale(cl.memory.scale), "maxbatch");
  for (const std::string& workload : workloads) {
    const MaxBatchOptions options = max_batch_options(cl.memory, workload, *session.device);
    try {
      results.push_back(find_max_batch(options, group, *session.device, *session.communicator));
    } catch (const RuntimeFailure& e) {
      failure = workload + ": " + e.what();
      exit_code = kExitRuntime;
      break;  // a failure outside the verification (the probe, the communicator) ends every rank alike
    }
    if (leader) print_max_batch(console, results.back(), device_name);
    if (results.back().status != "ok") exit_code = kExitRuntime;
  }
  if (leader) {
    nlohmann::json doc = {{"schema_version", 1},
                          {"tool", "scalebench"},
                          {"command", "maxbatch"},
                          {"git_commit", scalebench_git_commit()},
                          {"kind", "maxbatch"},
                          {"started_by", cl.argv},
                          {"device", device_name},
                          {"results", nlohmann::json::array()},
                          {"status", exit_code == kExitOk ? "ok" : "failed"},
                          {"error", failure}};
    for (const MaxBatchResult& r : results) doc["results"].push_back(max_batch_json(r));
    if (!cl.common.json_path.empty()) write_text_file(cl.common.json_path, doc.dump(2) + "\n");
    if (!cl.common.csv_path.empty()) write_text_file(cl.common.csv_path, max_batch_csv(results));
  }
  if (!failure.empty()) throw RuntimeFailure(failure);
  return exit_code;
}

}  // namespace sb
