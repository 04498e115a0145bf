// Progress, stop signals and fault messages shared by every layer (include/scalebench/fault.h).
#include "scalebench/fault.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace sb {
namespace {

std::atomic<bool> g_abandoned{false};
std::atomic<int> g_stop_signal{0};
// steady_clock's count when the stop signal arrived; written in the handler (a lock-free atomic store is
// async-signal-safe).
std::atomic<long long> g_stop_ticks{0};

struct Progress {
  std::mutex mutex;
  std::string phase;
  long long step = 0;
  std::chrono::steady_clock::time_point since;
  std::function<void(const std::string&, long long)> listener;
};
Progress& progress() {
  static Progress value;
  return value;
}

long long now_ticks() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

extern "C" void on_stop_signal(int signal) {
  int expected = 0;
  // The first signal counts; a second SIGTERM (mpirun repeats it) must not move the grace period on.
  if (g_stop_signal.compare_exchange_strong(expected, signal)) g_stop_ticks.store(now_ticks());
}

}  // namespace

[[noreturn]] void throw_communication_fault(const std::string& message) {
  g_abandoned.store(true);
  throw CommunicationFault(message);
}

bool communication_abandoned() { return g_abandoned.load(); }

void set_progress(const std::string& phase, long long step) {
  Progress& p = progress();
  std::function<void(const std::string&, long long)> listener;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.phase = phase;
    p.step = step;
    p.since = std::chrono::steady_clock::now();
    listener = p.listener;
  }
  if (listener) listener(phase, step);
}

void set_progress_listener(std::function<void(const std::string& phase, long long step)> listener) {
  Progress& p = progress();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.listener = std::move(listener);
}

double seconds_in_step() {
  Progress& p = progress();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.step == 0) return 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - p.since).count();
}

std::string progress_text() {
  Progress& p = progress();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.phase.empty()) return "set-up";
  std::string text = p.phase;
  const std::string kind = p.phase.substr(0, p.phase.find('@'));  // "dp@2": a --gpus-sweep point's dp phase
  if (kind == "solo" || kind == "comm" || kind == "dp" || kind == "check") text += " phase";
  if (p.step > 0) text += ", step " + std::to_string(p.step);
  return text;
}

void install_stop_handlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a sleeping or blocked call returns EINTR, so loops around it see the flag sooner.
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int stop_signal() { return g_stop_signal.load(); }

double seconds_since_stop_signal() {
  if (g_stop_signal.load() == 0) return 0;
  const auto elapsed = std::chrono::steady_clock::duration(now_ticks() - g_stop_ticks.load());
  return std::chrono::duration<double>(elapsed).count();
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(signal);
  }
}

void note_stop_signal(int signal) { on_stop_signal(signal); }

double roll_call_seconds(double timeout_seconds) { return std::min(timeout_seconds, 10.0); }

double stop_grace_seconds(double timeout_seconds) { return std::min(timeout_seconds, 10.0); }

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::string timeout_message(const std::string& what, double timeout_seconds, const std::vector<int>& silent_ranks) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout_seconds);
  std::string text = "[" + progress_text() + "] " + what + " did not finish within " + seconds + " s (--timeout); ";
  if (silent_ranks.empty()) {
    text += "every rank answered the roll call, so no rank is suspect: the interconnect or the library hangs";
  } else {
    text += "suspect: " + rank_list(silent_ranks) + " (no answer to the roll call: stalled or dead)";
  }
  return text;
}

}  // namespace sb
