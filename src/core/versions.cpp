#include "scalebench/versions.h"

namespace sb {
std::string scalebench_version() { return SB_VERSION; }
}  // namespace sb
