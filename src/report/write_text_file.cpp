// Writes a finished report (JSON, CSV) to a file or stdout. Failures are RuntimeFailure (exit 3) naming
// the path: the measurement is done by then, and the user needs to know which output was lost. A file is
// written beside its final name (path.tmp.<pid>) and then moved onto it, so a reader never sees half a
// result and an interrupted run leaves the previous file whole (src/report/output_file.h).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "scalebench/error.h"
#include "scalebench/report.h"
#include "src/report/output_file.h"

namespace sb {
namespace {

std::mutex g_claimed_mutex;
std::set<std::string>& claimed() {
  static std::set<std::string> paths;
  return paths;
}

// Moves `staging` onto `path` only if nothing is at `path`; false (errno EEXIST) when something is.
bool move_without_replacing(const std::string& staging, const std::string& path) {
  if (renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS) return false;
  // A file system without RENAME_NOREPLACE: link() fails with EEXIST just the same.
  if (link(staging.c_str(), path.c_str()) != 0) return false;
  unlink(staging.c_str());
  return true;
}

std::string split_folder(const std::string& path, std::string& name) {
  const size_t slash = path.rfind('/');
  name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void claim_new_output(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_claimed_mutex);
  claimed().insert(path);
}

std::optional<std::string> not_a_regular_file(const std::string& path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0) return std::nullopt;
  if (S_ISREG(info.st_mode)) return std::nullopt;
  if (S_ISLNK(info.st_mode)) return std::string("a symbolic link");
  if (S_ISDIR(info.st_mode)) return std::string("a directory");
  if (S_ISFIFO(info.st_mode)) return std::string("a FIFO (named pipe)");
  if (S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode)) return std::string("a device");
  if (S_ISSOCK(info.st_mode)) return std::string("a socket");
  return std::string("not a regular file");
}

void remove_stale_temporaries(const std::string& path) {
  std::string name;
  const std::string folder = split_folder(path, name);
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return;
  const std::string prefix = name + ".tmp.";
  while (const dirent* entry = readdir(dir)) {
    const std::string candidate = entry->d_name;
    if (candidate.compare(0, prefix.size(), prefix) != 0 || candidate.size() == prefix.size()) continue;
    const std::string digits = candidate.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    // Only a writer that is gone: a live one (another run on the same path) is left alone.
    if (pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) unlink((folder + "/" + candidate).c_str());
  }
  closedir(dir);
}

void write_text_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    const size_t written = std::fwrite(text.data(), 1, text.size(), stdout);
    if (written != text.size() || std::fflush(stdout) != 0) {
      throw RuntimeFailure("cannot write to stdout: " + std::string(std::strerror(errno)));
    }
    return;
  }
  // Checked again now: the path may have become a symlink or a FIFO since start-up, and rename() would
  // replace a device node or a link with a regular file.
  if (const auto kind = not_a_regular_file(path)) {
    throw RuntimeFailure("cannot write '" + path + "': it is " + *kind + " (scalebench writes only regular files)");
  }
  const std::string staging = path + ".tmp." + std::to_string(getpid());
  const int fd = open(staging.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  std::FILE* file = fd < 0 ? nullptr : fdopen(fd, "wb");
  if (file == nullptr) {
    const int open_errno = errno;
    if (fd >= 0) close(fd);
    throw RuntimeFailure("cannot open '" + path + "' for writing: " + std::strerror(open_errno));
  }
  const size_t written = std::fwrite(text.data(), 1, text.size(), file);
  const int write_errno = written == text.size() ? 0 : errno;
  // fclose flushes, so its result counts as much as fwrite's (a full disk shows up there).
  const bool closed = std::fclose(file) == 0;
  if (written != text.size() || !closed) {
    std::remove(staging.c_str());
    throw RuntimeFailure("cannot write '" + path + "': " + std::strerror(write_errno != 0 ? write_errno : errno));
  }
  std::lock_guard<std::mutex> lock(g_claimed_mutex);
  if (claimed().count(path) != 0) {
    if (!move_without_replacing(staging, path)) {
      const int move_errno = errno;
      if (move_errno == EEXIST) {
        // Someone created the file during the run: it stays, and so does this result, under a name of its
        // own (not a .tmp. one, which the next run would clean away).
        const std::string kept = path + ".kept." + std::to_string(getpid());
        const std::string where = std::rename(staging.c_str(), kept.c_str()) == 0 ? kept : staging;
        throw RuntimeFailure("'" + path + "' was created by someone else during the run; it is not overwritten " +
                             "without --force; this result is in '" + where + "'");
      }
      std::remove(staging.c_str());
      throw RuntimeFailure("cannot write '" + path + "': " + std::strerror(move_errno));
    }
    claimed().erase(path);  // ours now: later writes (a fuller partial result) replace it
    return;
  }
  if (std::rename(staging.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(staging.c_str());
    throw RuntimeFailure("cannot write '" + path + "': " + std::strerror(rename_errno));
  }
}

}  // namespace sb
