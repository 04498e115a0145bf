// The partial-result writer and watchdog (src/cli/fault_guard.h).
#include "src/cli/fault_guard.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "scalebench/report.h"

namespace sb {

FaultGuard::FaultGuard(bool writer, double timeout_seconds) : writer_(writer), timeout_seconds_(timeout_seconds) {
  install_stop_handlers();
  watchdog_ = std::thread([this] { watch(); });
}

FaultGuard::~FaultGuard() {
  stopping_.store(true);
  watchdog_.join();
}

void FaultGuard::update(Render render) {
  std::lock_guard<std::mutex> lock(mutex_);
  render_ = std::move(render);
}

void FaultGuard::write_final(const std::vector<OutputFile>& outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  final_written_ = true;
  for (const OutputFile& output : outputs) write_text_file(output.path, output.text);
}

bool FaultGuard::write_snapshot(const std::string& error, bool to_stdout) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!writer_ || final_written_ || !render_) return false;
  bool wrote = false;
  for (const OutputFile& output : render_(error)) {
    if (output.path == "-" && !to_stdout) continue;
    try {
      write_text_file(output.path, output.text);
      wrote = true;
    } catch (const RuntimeFailure& e) {
      std::fprintf(stderr, "%s %s\n", diagnostic_prefix().c_str(), e.what());
    }
  }
  return wrote;
}

void FaultGuard::watch() {
  bool insured = false;
  const double step_limit = 2 * timeout_seconds_ + 10;
  while (!stopping_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int signal = stop_signal();
    if (signal != 0 && !insured) {
      insured = true;
      const std::string reason = "stopped by " + signal_name(signal) + " during " + progress_text();
      if (write_snapshot(reason + "; partial result: the phases finished before it", false)) {
        std::fprintf(stderr, "%s %s: the results finished so far are written; stopping at the next step\n",
                     diagnostic_prefix().c_str(), reason.c_str());
      }
    }
    std::string why;
    if (signal != 0 && seconds_since_stop_signal() > stop_grace_seconds(timeout_seconds_) + 5) {
      why = "stopped by " + signal_name(signal) + " during " + progress_text() + ": no step boundary reached within " +
            std::to_string(static_cast<int>(stop_grace_seconds(timeout_seconds_) + 5)) + " s of it";
    } else if (seconds_in_step() > step_limit) {
      why = progress_text() + " did not finish within " + std::to_string(static_cast<int>(step_limit)) +
            " s (2 x --timeout + 10 s)";
    }
    if (why.empty()) continue;
    write_snapshot(why + "; partial result: the phases finished before it", true);
    std::fflush(stdout);
    std::fprintf(stderr, "scalebench: error: %s %s\n", diagnostic_prefix().c_str(), why.c_str());
    std::fflush(stderr);
    // No orderly shutdown: the main thread is stuck inside a call that will not return.
    std::_Exit(kExitRuntime);
  }
}

}  // namespace sb
