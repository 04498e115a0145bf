// Writes a finished report (JSON, CSV) to a file or stdout. Failures are RuntimeFailure (exit 3) naming
// the path: the measurement is done by then, and the user needs to know which output was lost.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "scalebench/error.h"
#include "scalebench/report.h"

namespace sb {

void write_text_file(const std::string& path, const std::string& text) {
  const bool to_stdout = path == "-";
  // A file is written beside its final name and renamed over it, so a reader never sees half a result and
  // an interrupted run leaves the previous file whole.
  const std::string staging = to_stdout ? path : path + ".tmp." + std::to_string(getpid());
  std::FILE* file = to_stdout ? stdout : std::fopen(staging.c_str(), "wb");
  if (file == nullptr) {
    throw RuntimeFailure("cannot open '" + path + "' for writing: " + std::strerror(errno));
  }
  const size_t written = std::fwrite(text.data(), 1, text.size(), file);
  const int write_errno = written == text.size() ? 0 : errno;
  // fclose flushes, so its result counts as much as fwrite's (a full disk shows up there).
  const bool closed = to_stdout ? std::fflush(file) == 0 : std::fclose(file) == 0;
  if (written != text.size() || !closed) {
    if (!to_stdout) std::remove(staging.c_str());
    throw RuntimeFailure("cannot write '" + path + "': " + std::strerror(write_errno != 0 ? write_errno : errno));
  }
  if (!to_stdout && std::rename(staging.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(staging.c_str());
    throw RuntimeFailure("cannot write '" + path + "': " + std::strerror(rename_errno));
  }
}

}  // namespace sb
