// --overlap-ctas (issue 26, "less SM theft"): the second communicator that carries the all-reduces issued while the
// backward pass still runs, limited to a few thread blocks each, beside the job's own for the rest.
#pragma once

#include <memory>
#include <string>

#include "scalebench/communicator.h"
#include "scalebench/result.h"

namespace sb {

// A communicator over `group` like `main` but with ncclConfig_t.maxCTAs = options.overlap_ctas; nullptr when the
// option is off, or when main's backend has no CTA limit (then *not_applied says so, for the console and JSON).
// Collective over the group, like make_communicator.
std::unique_ptr<Communicator> make_overlap_communicator(const TrainOptions& options, const Communicator& main,
                                                        ProcessGroup& group, Device& device, std::string* not_applied);

}  // namespace sb
