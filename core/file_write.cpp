// Checked, atomic whole-file writes (core/file_write.h) through POSIX calls, whose errno is the
// reason reported.
#include "core/file_write.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace relpos {

namespace {

// The errno of a failed call, saved before cleanup can change it.
[[noreturn]] void failed(const std::string& component, const std::string& path,
                         const std::string& temp, int error, int fd) {
  if (fd >= 0) ::close(fd);
  ::unlink(temp.c_str());
  fail(component, "cannot write '{}': {}", path, std::strerror(error));
}

const char* kind_of(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory:
      return "a folder";
    case std::filesystem::file_type::character:
      return "a character device";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::fifo:
      return "a FIFO";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "something";
  }
}

}  // namespace

std::string atomic_write_target(const std::string& component, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status entry = fs::symlink_status(path, ec);
  if (ec || !fs::exists(entry)) return path;  // made by the write
  std::string target = path;
  if (fs::is_symlink(entry)) {
    const fs::path resolved = fs::canonical(path, ec);
    if (ec) return path;  // a link to nothing: the write puts a file in its place
    target = resolved.string();
  }
  const fs::file_status status = fs::status(target, ec);
  RELPOS_CHECK(ec || fs::is_regular_file(status), component,
               "cannot write '{}': it is {}, not a regular file", path, kind_of(status.type()));
  return target;
}

int fsync_path(const std::string& path, bool folder) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (folder ? O_DIRECTORY : 0));
  if (fd < 0) return errno;
  const int error = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

void fsync_folder_of(const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  fsync_path(folder.empty() ? "." : folder.string(), true);
}

std::string temporary_of(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".tmp.";
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    // kill(pid, 0) fails with ESRCH only where no process has that id.
    if (::kill(static_cast<pid_t>(std::stol(digits)), 0) != 0 && errno == ESRCH)
      fs::remove(entry.path(), ec);
  }
}

void write_file_atomic(const std::string& component, const std::string& named,
                       std::string_view bytes) {
  const std::string path = atomic_write_target(component, named);
  const std::string temp = temporary_of(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(component, "cannot write '{}': {}", path, std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failed(component, path, temp, errno, fd);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) failed(component, path, temp, errno, fd);
  if (::close(fd) != 0) failed(component, path, temp, errno, -1);
  if (std::rename(temp.c_str(), path.c_str()) != 0) failed(component, path, temp, errno, -1);
  fsync_folder_of(path);
  remove_stale_temporaries(path);
}

void make_directories(const std::string& component, const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  // create_directories reports no error when `path` exists as a file: check it is a folder.
  if (!ec && !std::filesystem::is_directory(path, ec) && !ec)
    ec = std::make_error_code(std::errc::not_a_directory);
  RELPOS_CHECK(!ec, component, "cannot create the folder '{}': {}", path, ec.message());
}

void make_file_folder(const std::string& component, const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty()) make_directories(component, folder.string());
}

void check_directories_can_be_made(const std::string& component, const std::string& path) {
  namespace fs = std::filesystem;
  const auto refuse = [&](const std::string& reason) {
    fail(component, "cannot create the folder '{}': {}", path, reason);
  };
  // From `path` up to the nearest folder that exists: it must be one this process may add to.
  for (fs::path at = path.empty() ? fs::path(".") : fs::path(path);;) {
    std::error_code ec;
    const fs::file_status status = fs::status(at, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      refuse(ec.message());  // a file on the way
    if (!ec && fs::exists(status)) {
      if (!fs::is_directory(status)) refuse(std::strerror(ENOTDIR));
      if (at != fs::path(path) && ::access(at.c_str(), W_OK | X_OK) != 0)
        refuse(std::strerror(errno));
      return;
    }
    fs::path up = at.parent_path();
    if (up.empty()) up = ".";
    if (up == at) refuse(std::strerror(ENOENT));  // not even the working folder exists
    at = up;
  }
}

void check_write(const std::string& component, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path folder =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  check_directories_can_be_made(component, folder.string());
  std::error_code ec;
  if (fs::is_directory(folder, ec) && ::access(folder.c_str(), W_OK | X_OK) != 0)
    fail(component, "cannot write '{}': {}", path, std::strerror(errno));
  (void)atomic_write_target(component, path);
}

}  // namespace relpos
