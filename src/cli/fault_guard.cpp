// The partial-result writer and watchdog (src/cli/fault_guard.h).
#include "src/cli/fault_guard.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "scalebench/process_group.h"
#include "scalebench/report.h"

namespace sb {

std::vector<PeerProcess> gather_peers(ProcessGroup& group) {
  std::vector<PeerProcess> peers;
  int rank = 0;
  for (const std::string& entry : group.allgather_strings(std::to_string(getpid()) + " " + group.host())) {
    const size_t space = entry.find(' ');
    peers.push_back({rank++, entry.substr(space + 1), std::stoi(entry.substr(0, space))});
  }
  return peers;
}

std::vector<int> ended_peers(const std::vector<PeerProcess>& peers, const std::string& host) {
  std::vector<int> ended;
  for (const PeerProcess& peer : peers) {
    if (peer.host != host || peer.pid == getpid()) continue;
    // /proc/PID/stat: "PID (name) STATE ..."; a missing file is a process gone, Z a dead one not yet reaped.
    std::ifstream stat("/proc/" + std::to_string(peer.pid) + "/stat");
    std::string line;
    if (!stat || !std::getline(stat, line)) {
      ended.push_back(peer.rank);
      continue;
    }
    const size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && (line[paren + 2] == 'Z' || line[paren + 2] == 'X')) {
      ended.push_back(peer.rank);
    }
  }
  return ended;
}

std::string share_from_rank0(ProcessGroup& group, const std::string& text) {
  uint64_t size = text.size();
  group.broadcast(&size, sizeof size, 0);
  std::string shared = group.rank() == 0 ? text : std::string(size, '\0');
  if (size > 0) group.broadcast(&shared[0], size, 0);
  return shared;
}

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

namespace {

// The error a checkpoint carries; a file that still says it was left by a rank 0 that wrote nothing after it.
constexpr const char* kCheckpointError = "partial result: written after the ";

// Whether `path` holds more than a checkpoint: rank 0's final result or its own fault snapshot (rank 0 exited
// after writing it; rank 1's copy must not replace it).
bool holds_rank0_final(const std::string& path) {
  std::ifstream stream(path);
  if (!stream) return false;
  const nlohmann::json doc = nlohmann::json::parse(stream, nullptr, false);
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_string()) return doc.is_object();
  return doc["error"].get<std::string>().rfind(kCheckpointError, 0) != 0;
}

}  // namespace

void FaultGuard::checkpoint(const std::string& finished) {
  write_snapshot(std::string(kCheckpointError) + finished + "; the run ended before it could write more (a killed process or node)",
                 false);
}

void FaultGuard::hold_backup(OutputFile json) {
  std::lock_guard<std::mutex> lock(mutex_);
  backup_ = std::move(json);
}

void FaultGuard::write_backup(const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (backup_written_ || backup_.path.empty() || backup_.path == "-" || backup_.text.empty()) return;
  backup_written_ = true;
  // Rank 0 gone after writing its own result (it timed out and exited, say): that result is the fuller one.
  if (holds_rank0_final(backup_.path)) return;
  try {
    nlohmann::json doc = nlohmann::json::parse(backup_.text);
    doc["status"] = "failed";
    doc["error"] = error + "; partial result written by rank 1 from its copy of rank 0's last checkpoint";
    write_text_file(backup_.path, doc.dump(2) + "\n");
    std::fprintf(stderr, "%s rank 0 is gone: its result as of the last finished phase is written to %s\n",
                 diagnostic_prefix().c_str(), backup_.path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s the copy of rank 0's result could not be written: %s\n", diagnostic_prefix().c_str(),
                 e.what());
  }
}

void FaultGuard::watch_peers(std::vector<PeerProcess> peers, std::string host) {
  std::lock_guard<std::mutex> lock(mutex_);
  peers_ = std::move(peers);
  host_ = std::move(host);
}

std::string FaultGuard::ended_peers_text(bool* rank0_ended) {
  std::vector<PeerProcess> peers;
  std::string host;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    peers = peers_;
    host = host_;
  }
  const std::vector<int> ended = ended_peers(peers, host);
  *rank0_ended = std::find(ended.begin(), ended.end(), 0) != ended.end();
  if (ended.empty()) return "";
  return "; " + rank_list(ended) + " had already ended (killed or crashed)";
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
      bool rank0_ended = false;
      const std::string reason =
          "stopped by " + signal_name(signal) + " during " + progress_text() + ended_peers_text(&rank0_ended);
      if (rank0_ended) write_backup(reason);
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
