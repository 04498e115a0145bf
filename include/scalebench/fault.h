// Faults that end a job part-way: a peer rank that died or stalls past --timeout, and SIGINT/SIGTERM (a
// Slurm time limit, scancel, mpirun tearing the job down). What every layer shares:
// - where the job is (phase and step), so that any message can name it;
// - the stop signal, recorded by a handler and acted on at step boundaries and in polling waits;
// - CommunicationFault: after it, collectives may still be in flight with a dead or stalled peer, so the
//   process must not shut MPI down in order (MPI_Finalize would wait for them); it exits with code 3.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "scalebench/error.h"

namespace sb {

class CommunicationFault : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// Marks communication as abandoned (finalize and communicator destructors then skip MPI) and throws.
[[noreturn]] void throw_communication_fault(const std::string& message);
bool communication_abandoned();

// Where the job is: "dp" and 3 read "dp phase, step 3". Steps count from 1; 0 means no step (set-up).
void set_progress(const std::string& phase, long long step = 0);
// Called on every set_progress (outside its lock) once installed: rank 0's progress line on a terminal
// (src/cli/progress_line.h). An empty function removes it.
void set_progress_listener(std::function<void(const std::string& phase, long long step)> listener);
std::string progress_text();  // "dp phase, step 3", or "set-up" before any phase
double seconds_in_step();     // since the current step began; 0 outside steps

// SIGINT and SIGTERM set a flag instead of killing the process (installed once, by the commands that
// measure). stop_signal() is 0 until one arrives.
void install_stop_handlers();
int stop_signal();
double seconds_since_stop_signal();  // 0 when none arrived
std::string signal_name(int signal);  // "SIGTERM"
// Test hook: behaves as if `signal` had arrived now.
void note_stop_signal(int signal);

// How long a rank waits for its healthy peers after a timeout (they entered the stalled collective at
// slightly different times) before it names the ranks that did not answer: --timeout, capped at 10 s.
double roll_call_seconds(double timeout_seconds);
// How long an operation in flight may still take once a stop signal arrived: the collective completes when
// every rank is alive (Slurm signals them all), and this bounds the wait when one is not. Slurm's default
// KillWait is 30 s, mpirun's SIGKILL follows its SIGTERM after 1 s; within those, 10 s or --timeout.
double stop_grace_seconds(double timeout_seconds);

// "[dp phase, step 3] all_reduce (MPI) did not finish within 2 s; no answer from rank 1 (stalled or dead)".
std::string timeout_message(const std::string& what, double timeout_seconds, const std::vector<int>& silent_ranks);
// "ranks 1, 3" / "rank 1"
std::string rank_list(const std::vector<int>& ranks);

}  // namespace sb
