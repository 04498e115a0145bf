// `scalebench bandwidth`: set up, sweep, print rows as they are measured (rank 0), write JSON/CSV, and on a
// failure still write what was measured, marked status "failed" (also after a stop signal or a stuck peer:
// src/cli/fault_guard.h).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

#include "scalebench/bandwidth.h"
#include "scalebench/error.h"
#include "scalebench/launch.h"
#include "scalebench/report.h"
#include "scalebench/versions.h"
#include "src/cli/commands.h"
#include "src/cli/fault_guard.h"
#include "src/cli/number_options.h"
#include "src/cli/run_context.h"
#include "src/cli/session.h"

namespace sb {
namespace {

// Defaults chosen so a bare run finishes in seconds: the CPU device moves bytes far slower than a GPU.
constexpr uint64_t kDefaultMaxBytesCuda = 1ull << 30;
constexpr uint64_t kDefaultMaxBytesCpu = 16ull << 20;
// nccl-tests' -f 2 over 1 B..16 GiB is 35 sizes; a thousand still finishes, 97,000 do not.
constexpr size_t kMaxSweepSizes = 1000;

BandwidthReport describe_run(const CommandLine& cl, ProcessGroup& group, Session& session,
                             const BandwidthOptions& options) {
  BandwidthReport report;
  report.options = options;
  report.nranks = group.size();
  report.backend = backend_name(session.communicator->backend());
  report.emulate = cl.common.emulate;
  report.library_version = session.communicator->library_version();
  report.mpi_version = group.library_version();
  report.cuda_runtime_version = session.device->kind() == DeviceKind::kCuda ? cuda_runtime_version() : "";
  report.cuda_driver_version = session.device->kind() == DeviceKind::kCuda ? cuda_driver_version() : "";
  report.devices = gather_rank_devices(group, *session.device);
  report.argv = cl.argv;
  report.environment = recorded_environment(current_environment());
  report.started_at = utc_timestamp();
  return report;
}

std::vector<OutputFile> outputs(const CommonOptions& common, const BandwidthReport& report) {
  std::vector<OutputFile> files;
  if (!common.json_path.empty()) files.push_back({common.json_path, bandwidth_report_json(report).dump(2) + "\n"});
  if (!common.csv_path.empty()) files.push_back({common.csv_path, bandwidth_report_csv(report)});
  return files;
}

FaultGuard::Render snapshot(const CommonOptions& common, const BandwidthReport& report) {
  return [common, report](const std::string& error) {
    BandwidthReport failed = report;
    failed.status = "failed";
    failed.error = error;
    return outputs(common, failed);
  };
}

// Refused before any buffer is allocated: a sweep that would run for hours in silence (-f 1.0001 over
// 1K..16M is 97,000 sizes), and one that measures nothing (-b 3 -e 3 rounds every size down to 0 elements).
void check_sweep_size(const BandwidthOptions& options, int nranks) {
  size_t total = 0;
  std::string types;
  for (DType dtype : options.dtypes) types += std::string(types.empty() ? "" : "/") + dtype_name(dtype);
  for (CollectiveOp op : options.ops) {
    for (DType dtype : options.dtypes) {
      const size_t count = sweep_sizes(options, op, dtype, nranks).size();
      if (count > kMaxSweepSizes) {
        throw UsageError("-b " + std::to_string(options.min_bytes) + " -e " + std::to_string(options.max_bytes) +
                         " -f " + number_text(options.factor) + " is a sweep of " + std::to_string(count) +
                         " sizes of " + collective_name(op) + "; at most " + std::to_string(kMaxSweepSizes) +
                         " (raise -f or narrow -b/-e)");
      }
      total += count;
    }
  }
  if (total == 0) {
    throw RuntimeFailure("nothing measured: every size from " + std::to_string(options.min_bytes) + " to " +
                         std::to_string(options.max_bytes) + " B rounds down to no whole " + types +
                         " element per rank (raise -b/-e)");
  }
}

}  // namespace

int run_bandwidth_command(const CommandLine& cl, ProcessGroup& group) {
  agree_or_throw(group,
                 group.rank() == 0 ? unwritable_output({cl.common.json_path, cl.common.csv_path}, cl.common.force)
                                   : std::nullopt);
  Session session = open_session(group, cl.common);
  BandwidthOptions options = cl.bandwidth;
  if (options.max_bytes == 0) {
    options.max_bytes = session.device->kind() == DeviceKind::kCuda ? kDefaultMaxBytesCuda : kDefaultMaxBytesCpu;
    options.min_bytes = std::min(options.min_bytes, options.max_bytes);
  }
  check_sweep_size(options, group.size());
  BandwidthReport report = describe_run(cl, group, session, options);

  // One tiny collective connects the ranks, so the header can name the transport NCCL chose.
  StreamHandle stream = session.device->create_stream();
  session.communicator->barrier(stream);
  session.communicator->wait(stream, "connecting the ranks");
  session.device->destroy_stream(stream);
  report.transport = gather_transport(group, *session.communicator);

  const bool leader = group.rank() == 0;
  FaultGuard guard(leader, cl.common.timeout_seconds);
  // Machine-readable output on stdout moves the human-readable table to stderr.
  std::FILE* console = (cl.common.json_path == "-" || cl.common.csv_path == "-") ? stderr : stdout;
  if (leader) print_bandwidth_header(console, report);
  std::vector<CollectiveOp> printed;
  auto print_table = [&](CollectiveOp op) {
    if (leader) {
      guard.update(snapshot(cl.common, report));
      guard.checkpoint(std::string(collective_name(op)) + " sweep");
      print_bandwidth_table(console, report, op);
      std::fflush(console);
    }
    printed.push_back(op);
  };
  SweepCallbacks callbacks;
  callbacks.on_op_done = print_table;
  int exit_code = kExitOk;
  try {
    run_bandwidth_sweep(options, group, *session.device, *session.communicator, report, callbacks);
  } catch (const RuntimeFailure& failure) {
    report.status = "failed";
    report.error = failure.what();
    exit_code = kExitRuntime;
  }
  // After a failure, the sizes already measured of the collective in progress still get their table.
  for (const SizeResult& result : report.results) {
    if (std::find(printed.begin(), printed.end(), result.op) == printed.end()) print_table(result.op);
  }
  if (exit_code == kExitOk) report.transport = gather_transport(group, *session.communicator);
  if (leader) {
    print_bandwidth_footer(console, report);
    guard.write_final(outputs(cl.common, report));
  }
  if (exit_code != kExitOk) throw RuntimeFailure(report.error);
  if (options.check && report.total_wrong() > 0) {
    if (leader) {
      std::fprintf(stderr, "scalebench: error: %lld wrong elements in the collective results\n",
                   static_cast<long long>(report.total_wrong()));
    }
    return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace sb
