// The list of workloads (STYLE.md rule 8): an explicit table, greppable and immune to the linker dropping
// self-registering objects. Adding a workload = one file in workloads/ and one line here.
#include "scalebench/error.h"
#include "scalebench/workload.h"

namespace sb {
namespace workloads {
const Workload& transformer_big();
const Workload& bert_base();
const Workload& bert_finetune();
const Workload& mt_dnn();
}  // namespace workloads

WorkloadScale parse_workload_scale(const std::string& text) {
  if (text == "full") return WorkloadScale::kFull;
  if (text == "tiny") return WorkloadScale::kTiny;
  throw UsageError("unknown scale '" + text + "' (accepted: full, tiny)");
}

const std::vector<const Workload*>& workload_registry() {
  static const std::vector<const Workload*> kWorkloads = {
      &workloads::transformer_big(),
      &workloads::bert_base(),
      &workloads::bert_finetune(),
      &workloads::mt_dnn(),
  };
  return kWorkloads;
}

const Workload& find_workload(const std::string& name) {
  std::string names;
  for (const Workload* workload : workload_registry()) {
    if (workload->info().name == name) return *workload;
    names += (names.empty() ? "" : ", ") + workload->info().name;
  }
  throw UsageError("unknown workload '" + name + "' (available: " + names + ")");
}

}  // namespace sb
