#include "src/train/overlap_communicator.h"

namespace sb {

std::unique_ptr<Communicator> make_overlap_communicator(const TrainOptions& options, const Communicator& main,
                                                        ProcessGroup& group, Device& device, std::string* not_applied) {
  if (options.overlap_ctas <= 0) return nullptr;
  if (main.backend() != Backend::kNccl) {
    if (not_applied != nullptr) {
      *not_applied = std::string("--overlap-ctas ") + std::to_string(options.overlap_ctas) + " does not apply: the " +
                     backend_name(main.backend()) + " backend has no CTA limit, so every all-reduce ran as without it";
    }
    return nullptr;
  }
  CommunicatorOptions limited;
  limited.timeout_seconds = group.timeout();
  limited.max_ctas = options.overlap_ctas;
  return make_communicator(Backend::kNccl, group, device, limited);
}

}  // namespace sb
