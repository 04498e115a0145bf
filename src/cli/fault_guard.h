// Rank 0's insurance that a result measured before a fault is never lost, and every rank's backstop against
// a hang. The command hands the guard a snapshot of its result after each finished phase (or collective);
// a watchdog thread then:
//   - writes the snapshot (status "failed") the moment SIGINT/SIGTERM arrives: under mpirun a dying rank
//     makes mpirun send SIGTERM and then SIGKILL one second later, too soon to wait for a step boundary;
//     the main thread, when it reaches one, overwrites it with the fuller partial result (atomic renames);
//   - ends the process with exit 3 when the stop signal's grace period passes without the main thread
//     finishing, or when one training step runs past 2 x --timeout + 10 s (a stall no deadline inside
//     the step can see, e.g. a device that never finishes).
// Rank 0 also writes the snapshot to disk after every finished phase (checkpoint), so a SIGKILL of rank 0
// loses at most the phase in flight; rank 1 keeps a copy of rank 0's JSON (hold_backup) and writes it when
// rank 0 is found dead (same host: its process is gone) or silent (the roll call after a timeout) and the file
// holds no more than rank 0's last checkpoint (a rank 0 that exited after writing its own result wins).
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sb {

class ProcessGroup;

struct OutputFile {
  std::string path;  // a file, or "-" for stdout
  std::string text;
};

// A rank's process, so that a guard can tell a peer that ended from one that is slow.
struct PeerProcess {
  int rank = 0;
  std::string host;
  int pid = 0;
};
// Collective: every rank's host and pid.
std::vector<PeerProcess> gather_peers(ProcessGroup& group);
// The ranks among `peers` on this host whose process has ended (gone, or a zombie not yet reaped).
std::vector<int> ended_peers(const std::vector<PeerProcess>& peers, const std::string& host);

// Collective: rank 0's `text` (its JSON as of the last finished phase) arrives on every rank.
std::string share_from_rank0(ProcessGroup& group, const std::string& text);

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
  // Main thread, writer: writes the snapshot to its files now (stdout only at the end), marked partial.
  void checkpoint(const std::string& finished);
  // Main thread, rank 1: rank 0's JSON output as of its last checkpoint, written by write_backup.
  void hold_backup(OutputFile json);
  // Rank 1: writes the held copy with status "failed" and `error`, when rank 0 is dead or silent.
  void write_backup(const std::string& error);
  // Peers to look at when a stop signal arrives (the signal's reason then names a peer that had ended).
  void watch_peers(std::vector<PeerProcess> peers, std::string host);
  // Main thread: writes the final outputs; afterwards the watchdog writes nothing.
  void write_final(const std::vector<OutputFile>& outputs);

 private:
  void watch();
  // Writes the snapshot unless the final outputs are written; `to_stdout` also writes "-" outputs.
  bool write_snapshot(const std::string& error, bool to_stdout);

  // "; rank 1 had already ended (killed or crashed)" when a watched peer on this host is gone, else "".
  std::string ended_peers_text(bool* rank0_ended);

  bool writer_;
  double timeout_seconds_;
  std::mutex mutex_;  // guards render_, backup_, peers_, final_written_ and every write
  Render render_;
  OutputFile backup_;
  bool backup_written_ = false;
  std::vector<PeerProcess> peers_;
  std::string host_;
  bool final_written_ = false;
  std::atomic<bool> stopping_{false};
  std::thread watchdog_;
};

}  // namespace sb
