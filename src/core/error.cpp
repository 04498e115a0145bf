// Diagnostics and the single fatal path (include/scalebench/error.h).
#include "scalebench/error.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace sb {
namespace {

struct Identity {
  int rank = -1;
  std::string host;
};

Identity& identity() {
  static Identity value;
  return value;
}

std::function<void(int)>& abort_handler() {
  static std::function<void(int)> handler;
  return handler;
}

}  // namespace

void set_diagnostic_identity(int rank, const std::string& host) {
  identity().rank = rank;
  identity().host = host;
}

std::string diagnostic_prefix() {
  const Identity& id = identity();
  if (id.rank < 0) return "[scalebench]";
  return "[rank " + std::to_string(id.rank) + "@" + id.host + "]";
}

void set_abort_handler(std::function<void(int)> handler) { abort_handler() = std::move(handler); }

void fatal(const char* file, int line, const std::string& message) {
  static std::once_flag once;  // a second failure while aborting must not recurse
  std::call_once(once, [&] {
    std::fprintf(stderr, "%s %s:%d: %s\n", diagnostic_prefix().c_str(), file, line, message.c_str());
    std::fflush(stderr);
    if (abort_handler()) abort_handler()(kExitRuntime);
  });
  std::_Exit(kExitRuntime);
}

}  // namespace sb
