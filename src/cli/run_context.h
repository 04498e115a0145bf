// Facts about the run that every report carries: ranks' devices, versions, environment, start time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scalebench/bandwidth.h"
#include "scalebench/communicator.h"
#include "scalebench/process_group.h"
#include "scalebench/training.h"
#include "src/cli/command_line.h"
#include "src/cli/session.h"

namespace sb {

// Collective: gathers every rank's host, pid and device description, in rank order.
std::vector<RankDevice> gather_rank_devices(ProcessGroup& group, const Device& device);

// Collective: the union of the transports every rank's communicator reports.
std::string gather_transport(ProcessGroup& group, const Communicator& communicator);

// Collective: the context every training report carries (argv, emulation, ranks, backend and library versions, recorded
// environment, every rank's device) and the workload's task, unit, batch and datasheet peak, for the
// options already in report.options.
void describe_training_context(const CommandLine& cl, ProcessGroup& group, Session& session, TrainingReport& report);

std::string utc_timestamp();  // "2026-11-30T04:05:06Z"

// A full-scale workload on the CPU device takes minutes a step: say so on stderr before it starts, with the way
// out ("add --scale tiny"). `what` names the command ("run --workload bert_base").
void warn_full_scale_on_cpu(const Device& device, WorkloadScale scale, const std::string& what);

// A measurement can take minutes: whether the output paths (--json, --csv, --trace; "" skipped) cannot be
// written, found out before it starts (src/cli/output_check.cpp): a path that is not a regular file (symlink,
// device, FIFO, directory), one that exists without --force (a rerun must not silently replace a result), two
// outputs on one file or both on stdout, a folder that refuses a new file. Paths that do not exist yet are
// claimed, so that a file created there during the run is not overwritten either; stale temporaries of
// earlier, killed runs beside them are removed.
std::optional<std::string> unwritable_output(const std::vector<std::string>& paths, bool force);

}  // namespace sb
