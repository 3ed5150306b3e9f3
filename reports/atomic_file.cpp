// Temp file + fsync + rename(2). POSIX only (the project targets Linux).
#include "reports/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace divcheck::report {

namespace {

std::runtime_error io_error(const std::string& path, const std::string& what, int err) {
  return std::runtime_error(path + ": " + what + ": " + std::strerror(err));
}

void write_bytes_atomically(const std::string& path, const char* data, std::size_t size) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw std::runtime_error(target.parent_path().string() + ": cannot create folder: " + ec.message());
  }
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error(tmp, "cannot create", errno);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw io_error(tmp, "write failed", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw io_error(tmp, "flush failed", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw io_error(path, "rename failed", err);
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  write_bytes_atomically(path, content.data(), content.size());
}

void write_file_atomically(const std::string& path, const std::vector<std::byte>& content) {
  write_bytes_atomically(path, reinterpret_cast<const char*>(content.data()), content.size());
}

}  // namespace divcheck::report
