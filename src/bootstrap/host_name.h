// Short host name (up to the first '.'), as nccl-tests and Slurm print it.
#pragma once

#include <string>

namespace sb {
std::string short_host_name();
}
