#include "src/bootstrap/host_name.h"

#include <unistd.h>

namespace sb {

std::string short_host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  std::string host(name);
  return host.substr(0, host.find('.'));
}

}  // namespace sb
