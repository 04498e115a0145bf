// Deadline-bounded MPI waits (src/bootstrap/mpi_wait.h).
#include "src/bootstrap/mpi_wait.h"

#include <chrono>
#include <thread>

#include "scalebench/fault.h"
#include "src/bootstrap/mpi_check.h"

namespace sb::detail {

void wait_for_request(MPI_Request* request, const std::string& what, double timeout_seconds, ProcessGroup& group) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (true) {
    int done = 0;
    const int status = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (status != MPI_SUCCESS) {
      const std::vector<int> silent = group.roll_call(roll_call_seconds(timeout_seconds));
      throw_communication_fault("[" + progress_text() + "] " + what + " failed: " + mpi_error_text(status) +
                                (silent.empty() ? std::string() : "; suspect: " + rank_list(silent) + " (dead?)"));
    }
    if (done) return;
    if (elapsed() > timeout_seconds) {
      throw_communication_fault(
          timeout_message(what, timeout_seconds, group.roll_call(roll_call_seconds(timeout_seconds))));
    }
    if (stop_signal() != 0 && seconds_since_stop_signal() > stop_grace_seconds(timeout_seconds)) {
      const std::vector<int> silent = group.roll_call(1.0);
      throw_communication_fault("[" + progress_text() + "] stopped by " + signal_name(stop_signal()) + ": " + what +
                                " did not finish within " + std::to_string(static_cast<int>(
                                                                stop_grace_seconds(timeout_seconds))) +
                                " s of it" +
                                (silent.empty() ? std::string() : "; suspect: " + rank_list(silent)));
    }
    // Open MPI's own blocking waits spin too; yielding keeps oversubscribed test runs moving.
    std::this_thread::yield();
  }
}

}  // namespace sb::detail
