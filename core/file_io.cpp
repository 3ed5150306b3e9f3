// Whole-file reads and writes (API: core/file_io.hpp).
#include "core/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>

#include "core/errors.hpp"

namespace divcheck {

namespace {
std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

std::vector<std::byte> read_file_bytes(const std::string& path) {
  FileDescriptor f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw FormatError(path, "cannot open for reading: " + errno_text(errno));
  struct stat info {};
  if (::fstat(f.fd, &info) != 0) throw FormatError(path, "cannot stat: " + errno_text(errno));
  if (S_ISDIR(info.st_mode)) throw FormatError(path, "is a directory, not a file");
  const bool regular = S_ISREG(info.st_mode);
  if (regular && static_cast<std::uint64_t>(info.st_size) > kMaxCaseFileBytes)
    throw FormatError(path, "file is " + std::to_string(info.st_size) + " bytes, larger than the limit of " +
                                std::to_string(kMaxCaseFileBytes) + " bytes");
  // read(2) into bytes[filled, bytes.size()); returns 0 at the end of the file.
  std::vector<std::byte> bytes;
  std::size_t filled = 0;
  auto read_some = [&]() -> std::size_t {
    for (;;) {
      const ssize_t got = ::read(f.fd, bytes.data() + filled, bytes.size() - filled);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) throw FormatError(path, "cannot read: " + errno_text(errno));
    }
  };
  if (regular && info.st_size > 0) {
    // Exactly its size (a file that shrinks meanwhile gives what was there).
    bytes.resize(static_cast<std::size_t>(info.st_size));
    while (filled < bytes.size()) {
      const std::size_t got = read_some();
      if (got == 0) break;
      filled += got;
    }
  } else {
    // A pipe, /dev/stdin, or a file whose size is not known in advance (procfs): chunks, up to
    // the same limit.
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    for (;;) {
      if (filled == bytes.size()) bytes.resize(std::min(filled + kChunk, kMaxCaseFileBytes + 1));
      const std::size_t got = read_some();
      if (got == 0) break;
      filled += got;
      if (filled > kMaxCaseFileBytes)
        throw FormatError(path, "file is larger than the limit of " + std::to_string(kMaxCaseFileBytes) + " bytes");
    }
  }
  bytes.resize(filled);
  return bytes;
}

void write_file_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  FileDescriptor f{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (f.fd < 0) throw FormatError(path, "cannot open for writing: " + errno_text(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t put = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (put < 0) {
      if (errno == EINTR) continue;
      throw FormatError(path, "cannot write: " + errno_text(errno));
    }
    done += static_cast<std::size_t>(put);
  }
  int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) throw FormatError(path, "cannot write (close failed): " + errno_text(errno));
}

}  // namespace divcheck
