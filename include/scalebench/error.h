// Error channels of scalebench (STYLE.md rules 6-7).
// - UsageError: bad flags or configuration; main() turns it into one line and exit 2.
// - RuntimeFailure: a measured condition that stops the run cleanly (out of memory, timeout); exit 3.
// - fatal(): device/library failures in the hot path. Prints "[rank r@host] file:line: message" and
//   aborts every rank (MPI_Abort when MPI is up), because a bare exit() on one rank hangs the others.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace sb {

// Process exit codes, documented in README.md.
constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitRuntime = 3;
constexpr int kExitCheckFailed = 4;

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An allocation the device (or the allocation budget) refused: what `maxbatch` expects one batch past the
// largest that fits, as opposed to any other failure.
class OutOfMemory : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// Identity used to prefix every diagnostic line; set once by the bootstrap.
void set_diagnostic_identity(int rank, const std::string& host);
std::string diagnostic_prefix();  // "[rank r@host]"

// Called by fatal() after printing; the MPI bootstrap installs MPI_Abort here.
void set_abort_handler(std::function<void(int exit_code)> handler);

[[noreturn]] void fatal(const char* file, int line, const std::string& message);

}  // namespace sb

#define SB_FATAL(message) ::sb::fatal(__FILE__, __LINE__, (message))

// The generic check every library-specific macro builds on: `ok` is the success test,
// `describe` turns the failing status into text.
#define SB_CHECK_STATUS(call, ok, describe)                                        \
  do {                                                                             \
    auto sb_status_ = (call);                                                      \
    if (!(ok(sb_status_))) {                                                       \
      ::sb::fatal(__FILE__, __LINE__, std::string(#call) + " -> " + describe(sb_status_)); \
    }                                                                              \
  } while (0)

#define SB_CHECK(condition, message)                        \
  do {                                                      \
    if (!(condition)) ::sb::fatal(__FILE__, __LINE__, (message)); \
  } while (0)
