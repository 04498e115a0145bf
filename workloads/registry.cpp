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
const Workload& nasnet_large();
const Workload& yolov3();
const Workload& conv_seq2seq();
const Workload& deeplabv3();
const Workload& pix2pixhd();
const Workload& stylegan();
const Workload& maskrcnn();
const Workload& unsupmt();
}  // namespace workloads

WorkloadScale parse_workload_scale(const std::string& text) {
  if (text == "full") return WorkloadScale::kFull;
  if (text == "tiny") return WorkloadScale::kTiny;
  throw UsageError("unknown scale '" + text + "' (accepted: full, tiny)");
}

std::mt19937_64 sample_random(uint64_t seed, int64_t sample) {
  auto splitmix64 = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  return std::mt19937_64(splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(sample)));
}

const std::vector<const Workload*>& workload_registry() {
  static const std::vector<const Workload*> kWorkloads = {
      &workloads::transformer_big(),
      &workloads::bert_base(),
      &workloads::bert_finetune(),
      &workloads::mt_dnn(),
      &workloads::nasnet_large(),
      &workloads::yolov3(),
      &workloads::conv_seq2seq(),
      &workloads::deeplabv3(),
      &workloads::pix2pixhd(),
      &workloads::stylegan(),
      &workloads::maskrcnn(),
      &workloads::unsupmt(),
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
