// Rank 0's insurance that a result measured before a fault is never lost, and every rank's backstop against
// a hang. The command hands the guard a snapshot of its result after each finished phase (or collective);
// a watchdog thread then:
//   - writes the snapshot (status "failed") the moment SIGINT/SIGTERM arrives: under mpirun a dying rank
//     makes mpirun send SIGTERM and then SIGKILL one second later, too soon to wait for a step boundary;
//     the main thread, when it reaches one, overwrites it with the fuller partial result (atomic renames);
//   - ends the process with exit 3 when the stop signal's grace period passes without the main thread
//     finishing, or when one training step runs past 2 x --timeout + 10 s (a stall no deadline inside
//     the step can see, e.g. a device that never finishes).
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sb {

struct OutputFile {
  std::string path;  // a file, or "-" for stdout
  std::string text;
};

class FaultGuard {
 public:
  // `error` is the reason the result is partial; the renderer sets the report's status to "failed".
  using Render = std::function<std::vector<OutputFile>(const std::string& error)>;

  // Installs the SIGINT/SIGTERM handlers and starts the watchdog. Only `writer` (rank 0) writes files.
  FaultGuard(bool writer, double timeout_seconds);
  ~FaultGuard();
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;

  // Main thread: the result so far. `render` must own copies of what it reads (the watchdog calls it).
  void update(Render render);
  // Main thread: writes the final outputs; afterwards the watchdog writes nothing.
  void write_final(const std::vector<OutputFile>& outputs);

 private:
  void watch();
  // Writes the snapshot unless the final outputs are written; `to_stdout` also writes "-" outputs.
  bool write_snapshot(const std::string& error, bool to_stdout);

  bool writer_;
  double timeout_seconds_;
  std::mutex mutex_;  // guards render_, final_written_ and every write
  Render render_;
  bool final_written_ = false;
  std::atomic<bool> stopping_{false};
  std::thread watchdog_;
};

}  // namespace sb
