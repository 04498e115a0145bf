// Parsing NCCL's connection log lines (collectives/nccl_transport_log.h).
#include "collectives/nccl_transport_log.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace sb {
namespace {

// "0", "1[1]": per-channel or per-device indices that vary between lines of one transport.
bool is_index(const std::string& part) {
  return !part.empty() && std::isdigit(static_cast<unsigned char>(part[0]));
}

std::string normalise(const std::string& token) {
  std::stringstream parts(token);
  std::string part, result;
  while (std::getline(parts, part, '/')) {
    if (is_index(part)) continue;
    result += (result.empty() ? "" : "/") + part;
  }
  return result;
}

}  // namespace

std::vector<std::string> parse_nccl_transports(const std::string& log_text) {
  std::vector<std::string> found;
  std::stringstream lines(log_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("Channel") == std::string::npos) continue;
    const auto via = line.find(" via ");
    if (via == std::string::npos) continue;
    const auto start = via + 5;
    const auto end = line.find_first_of(" \t\r", start);
    std::string transport = normalise(line.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (!transport.empty() && std::find(found.begin(), found.end(), transport) == found.end()) {
      found.push_back(transport);
    }
  }
  return found;
}

std::string join_transports(const std::vector<std::string>& transports) {
  std::vector<std::string> distinct;
  for (const std::string& entry : transports) {
    std::stringstream parts(entry);
    std::string part;
    while (std::getline(parts, part, '+')) {
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      if (!part.empty() && std::find(distinct.begin(), distinct.end(), part) == distinct.end()) {
        distinct.push_back(part);
      }
    }
  }
  std::string label;
  for (const std::string& part : distinct) label += (label.empty() ? "" : " + ") + part;
  return label;
}

std::string capture_nccl_log(const Environment& env, int pid) {
  if (env.count("NCCL_DEBUG") != 0) return "";
  const auto tmp = env.find("TMPDIR");
  const std::string dir = tmp != env.end() && !tmp->second.empty() ? tmp->second : "/tmp";
  const std::string path = dir + "/scalebench-nccl-" + std::to_string(pid) + ".log";
  setenv("NCCL_DEBUG", "INFO", 1);
  // INIT carries the connection lines; the others keep NCCL's transport details. COLL (per-operation
  // lines) stays off, so nothing is written while collectives are timed.
  setenv("NCCL_DEBUG_SUBSYS", "INIT,P2P,SHM,NET", 1);
  setenv("NCCL_DEBUG_FILE", path.c_str(), 1);
  return path;
}

}  // namespace sb
