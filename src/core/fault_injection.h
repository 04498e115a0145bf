// Test-only fault injection (docs/DESIGN.md, "Faults"): the e2e tests make one rank sleep past --timeout,
// die by SIGKILL, or receive SIGTERM at a chosen step, so that every rank's reaction can be asserted. It is
// armed only by the environment variable SCALEBENCH_FAULT, announced on stderr by every rank it arms, and
// recorded with the result's environment, so a figure measured under it cannot pass for a real one.
//
//   SCALEBENCH_FAULT=ACTION:rank=R:phase=P:step=S[:seconds=X]
//     ACTION  sleep (X seconds, default 3600), kill (SIGKILL to itself), term (SIGTERM to itself), nan (the
//             step's loss reads as NaN on that rank: the non-finite-loss path, without a diverging model)
//     R       a rank, or all;  P  solo, comm, dp, or comm@K / dp@K (a --gpus-sweep point; idle ranks pass
//             its steps too);  S  the step (from 1, warm-up steps included)
#pragma once

#include <optional>
#include <string>

namespace sb {

struct FaultSpec {
  std::string action;  // "sleep", "kill", "term", "nan"
  int rank = -1;       // -1: every rank
  std::string phase;
  long long step = 0;
  double seconds = 3600;
};

constexpr const char* kFaultVariable = "SCALEBENCH_FAULT";

// Throws UsageError naming what is wrong: a typo must not silently run a job without its fault.
FaultSpec parse_fault_spec(const std::string& text);

// Reads SCALEBENCH_FAULT (throws UsageError when malformed); arms it when it targets `rank`.
void arm_fault_injection(const std::optional<std::string>& text, int rank);

// Called at the start of every step of a training phase: does the armed fault when phase and step match.
void inject_fault(const std::string& phase, long long step);

// True once after a `nan` fault fired: the step's loss is then read as NaN.
bool take_injected_nan_loss();

}  // namespace sb
