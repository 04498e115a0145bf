// The start-up timer thread (src/cli/startup_watchdog.h).
#include "src/cli/startup_watchdog.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "scalebench/error.h"
#include "scalebench/fault.h"

namespace sb {
namespace {

constexpr double kDefaultTimeoutSeconds = 300;  // CommonOptions::timeout_seconds

struct Watchdog {
  std::mutex mutex;
  std::string stage = "process start";
  std::atomic<bool> done{false};
};
// Never destroyed: the detached thread may still look at it while the process exits.
Watchdog& watchdog() {
  static Watchdog* value = new Watchdog;
  return *value;
}

std::string current_stage() {
  std::lock_guard<std::mutex> lock(watchdog().mutex);
  return watchdog().stage;
}

[[noreturn]] void end_process(const std::string& why) {
  std::fprintf(stderr, "scalebench: error: %s %s\n", diagnostic_prefix().c_str(), why.c_str());
  std::fflush(stderr);
  // No orderly shutdown: the main thread is inside a call that does not return.
  std::_Exit(kExitRuntime);
}

void watch(double timeout_seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (!watchdog().done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (watchdog().done.load()) return;
    if (const int signal = stop_signal(); signal != 0) {
      end_process("stopped by " + signal_name(signal) + " during start-up, while waiting for " + current_stage());
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > timeout_seconds) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_seconds);
      end_process(std::string("start-up did not finish within ") + seconds + " s (--timeout): still waiting for " +
                  current_stage() + "; a rank of the job did not start, or stalls");
    }
  }
}

}  // namespace

double startup_timeout_seconds(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const char* text = nullptr;
    if (std::strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) text = argv[i + 1];
    if (std::strncmp(argv[i], "--timeout=", 10) == 0) text = argv[i] + 10;
    if (text == nullptr) continue;
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (end != text && *end == '\0' && std::isfinite(value) && value > 0) return value;
  }
  return kDefaultTimeoutSeconds;
}

void start_startup_watchdog(int argc, char** argv) {
  install_stop_handlers();
  const double timeout_seconds = startup_timeout_seconds(argc, argv);
  // Detached: a start-up that fails with a usage error returns without ending the watchdog, and a joinable
  // thread at exit would abort the process.
  std::thread([timeout_seconds] { watch(timeout_seconds); }).detach();
}

void startup_stage(const std::string& what) {
  std::lock_guard<std::mutex> lock(watchdog().mutex);
  watchdog().stage = what;
}

void end_startup_watchdog() {
  Watchdog& w = watchdog();
  if (w.done.exchange(true)) return;
  if (const int signal = stop_signal(); signal != 0) {
    end_process("stopped by " + signal_name(signal) + " during start-up, while waiting for " + current_stage());
  }
  // Commands that measure install their own handlers; the others keep the default action of the signals.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace sb
