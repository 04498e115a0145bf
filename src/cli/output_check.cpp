// The output paths checked before any work (src/cli/run_context.h, unwritable_output): a result that took an
// hour must not fail at the last step because its path is a FIFO (opening one blocks forever), a symlink or
// device that --force would replace, a file a second output also writes, or a folder that refuses new files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "src/cli/run_context.h"
#include "src/report/output_file.h"

namespace sb {
namespace {

// Two spellings of one file ("out.json", "./out.json") compare equal; a path that cannot be resolved is
// compared as written.
std::string comparable(const std::string& path) {
  std::error_code error;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
  return error ? path : resolved.string();
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Creates and removes a file of its own in the output's folder: permissions, a read-only mount, a missing
// folder, without ever opening the output path itself.
std::optional<std::string> folder_refuses(const std::string& path) {
  const std::string probe = path + ".tmp." + std::to_string(getpid());
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return "cannot write '" + path + "': " + std::strerror(errno) + " (in folder '" + folder_of(path) + "')";
  close(fd);
  unlink(probe.c_str());
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unwritable_output(const std::vector<std::string>& paths, bool force) {
  std::vector<std::string> seen;
  bool stdout_taken = false;
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    if (path == "-") {
      if (stdout_taken) return std::string("two outputs are '-': only one output may go to stdout");
      stdout_taken = true;
      continue;
    }
    const std::string key = comparable(path);
    for (const std::string& other : seen) {
      if (other == key) return "two outputs name the same file '" + path + "': each output needs a file of its own";
    }
    seen.push_back(key);
    if (const auto kind = not_a_regular_file(path)) {
      return "output '" + path + "' is " + *kind + "; scalebench writes only regular files (or '-' for stdout)";
    }
    struct stat info;
    const bool exists = lstat(path.c_str(), &info) == 0;
    if (exists && !force) return "output file '" + path + "' exists; pass --force to overwrite it";
    remove_stale_temporaries(path);
    if (auto refused = folder_refuses(path)) return refused;
    if (!exists && !force) claim_new_output(path);
  }
  return std::nullopt;
}

}  // namespace sb
