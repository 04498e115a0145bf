// SCALEBENCH_FAULT parsing and the injected faults (src/core/fault_injection.h).
#include "src/core/fault_injection.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <vector>

#include "scalebench/error.h"

namespace sb {
namespace {

std::optional<FaultSpec>& armed() {
  static std::optional<FaultSpec> spec;
  return spec;
}

bool& nan_loss_pending() {  // set by a `nan` fault, taken by the step's loss check
  static bool pending = false;
  return pending;
}

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw UsageError(std::string(kFaultVariable) + "='" + text + "': " + why +
                   " (test-only; form ACTION:rank=R:phase=P:step=S[:seconds=X], ACTION sleep, kill, term or nan)");
}

}  // namespace

namespace {
// solo, comm, dp, or a --gpus-sweep point's comm@K and dp@K.
bool is_fault_phase(const std::string& phase) {
  if (phase == "solo" || phase == "comm" || phase == "dp") return true;
  const size_t at = phase.find('@');
  if (at == std::string::npos) return false;
  const std::string kind = phase.substr(0, at), size = phase.substr(at + 1);
  return (kind == "comm" || kind == "dp") && !size.empty() &&
         size.find_first_not_of("0123456789") == std::string::npos;
}
}  // namespace

FaultSpec parse_fault_spec(const std::string& text) {
  std::vector<std::string> fields;
  std::stringstream stream(text);
  for (std::string field; std::getline(stream, field, ':');) fields.push_back(field);
  if (fields.empty()) bad(text, "empty");
  FaultSpec spec;
  spec.action = fields[0];
  if (spec.action != "sleep" && spec.action != "kill" && spec.action != "term" && spec.action != "nan") {
    bad(text, "unknown action");
  }
  bool has_rank = false, has_phase = false, has_step = false;
  for (size_t i = 1; i < fields.size(); ++i) {
    const size_t equals = fields[i].find('=');
    if (equals == std::string::npos) bad(text, "'" + fields[i] + "' is not KEY=VALUE");
    const std::string key = fields[i].substr(0, equals), value = fields[i].substr(equals + 1);
    char* end = nullptr;
    if (key == "rank") {
      spec.rank = value == "all" ? -1 : static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (value != "all" && (value.empty() || *end != '\0' || spec.rank < 0)) bad(text, "bad rank");
      has_rank = true;
    } else if (key == "phase") {
      if (!is_fault_phase(value)) bad(text, "phase must be solo, comm, dp, or comm@K or dp@K (a --gpus-sweep point)");
      spec.phase = value;
      has_phase = true;
    } else if (key == "step") {
      spec.step = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || spec.step < 1) bad(text, "step must be a positive integer");
      has_step = true;
    } else if (key == "seconds") {
      spec.seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(spec.seconds >= 0 && spec.seconds <= 86400)) bad(text, "bad seconds");
    } else {
      bad(text, "unknown key '" + key + "'");
    }
  }
  if (!has_rank || !has_phase || !has_step) bad(text, "rank, phase and step are required");
  return spec;
}

bool take_injected_nan_loss() {
  const bool pending = nan_loss_pending();
  nan_loss_pending() = false;
  return pending;
}

void arm_fault_injection(const std::optional<std::string>& text, int rank) {
  armed().reset();
  if (!text) return;
  const FaultSpec spec = parse_fault_spec(*text);
  if (spec.rank != -1 && spec.rank != rank) return;
  armed() = spec;
  std::fprintf(stderr, "%s warning: %s=%s armed: test-only fault injection, results are not measurements\n",
               diagnostic_prefix().c_str(), kFaultVariable, text->c_str());
  std::fflush(stderr);
}

void inject_fault(const std::string& phase, long long step) {
  const std::optional<FaultSpec>& spec = armed();
  if (!spec || spec->phase != phase || spec->step != step) return;
  std::fprintf(stderr, "%s injecting fault: %s at %s phase, step %lld\n", diagnostic_prefix().c_str(),
               spec->action.c_str(), phase.c_str(), step);
  std::fflush(stderr);
  if (spec->action == "kill") std::raise(SIGKILL);
  if (spec->action == "term") std::raise(SIGTERM);
  if (spec->action == "nan") nan_loss_pending() = true;
  if (spec->action == "sleep") {
    // A plain sleep, deaf to signals and deadlines: the rank behaves like one stuck in a long computation.
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(spec->seconds);
    while (std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace sb
