#include "weft/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include "store/key_value_table.h"
#include "util/byte_codec.h"
#include "util/deadline.h"
#include "util/log.h"
#include "util/mutex.h"
#include "util/socket.h"
#include "weft/error.h"

namespace weft {

namespace {

enum class Record : uint8_t { kSet = 1, kDelete = 2 };
const std::string kUsersKey = "__weft_filestore_users";

}  // namespace

// The store file opened and flock()ed for one operation: replayed into a table, and appended to.
class FileStore::LockedFile {
 public:
  // Gives up with kTimeout when another process holds the file's lock past `timeout`.
  LockedFile(const std::string& path, std::chrono::milliseconds timeout) : path_(path) {
    fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd_.valid()) {
      if (errno == ELOOP) {
        throw Error(ErrorCode::kInvalidArgument,
                    "the store file " + path + " is a symbolic link, which FileStore does not " +
                        "follow (another user could point it at a file of theirs): name the " +
                        "file itself");
      }
      util::throw_system_error("open " + path, errno);
    }
    refuse_if_others_can_write();
    lock_before(util::deadline_after(timeout), timeout);
    replay();
  }
  ~LockedFile() { ::flock(fd_.get(), LOCK_UN); }

  store::KeyValueTable& table() { return table_; }

  void append_set(const std::string& key) {
    std::vector<uint8_t> record;
    util::ByteWriter out(record);
    out.put<uint8_t>(static_cast<uint8_t>(Record::kSet));
    out.put_string(key);
    out.put_blob(*table_.find(key));
    append(record);
  }
  void append_delete(const std::string& key) {
    std::vector<uint8_t> record;
    util::ByteWriter out(record);
    out.put<uint8_t>(static_cast<uint8_t>(Record::kDelete));
    out.put_string(key);
    append(record);
  }
  void remove_file() { ::unlink(path_.c_str()); }

 private:
  // A file another user owns, or that others may write, lets them read the job's keys or write
  // records of their own into its rendezvous (a file left in /tmp beforehand).
  void refuse_if_others_can_write() {
    struct stat info {};
    if (::fstat(fd_.get(), &info) != 0) util::throw_system_error("fstat " + path_, errno);
    auto refuse = [&](const std::string& why) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
      throw Error(ErrorCode::kUnauthorized,
                  "the store file " + path_ + " " + why + " (owner uid " +
                      std::to_string(info.st_uid) + ", mode " + mode + "): FileStore uses only " +
                      "a regular file of this user's (uid " + std::to_string(::geteuid()) +
                      ") that no one else may write; remove it, or name another path");
    };
    if (!S_ISREG(info.st_mode)) refuse("is not a regular file");
    if (info.st_uid != ::geteuid()) refuse("belongs to another user");
    if (info.st_mode & (S_IWGRP | S_IWOTH)) refuse("may be written by other users");
  }

  // flock() itself cannot time out: try without blocking, with pauses that grow to 10 ms.
  void lock_before(util::Clock::time_point deadline, std::chrono::milliseconds timeout) {
    auto pause = std::chrono::microseconds(50);
    while (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) util::throw_system_error("flock " + path_, errno);
      if (util::Clock::now() >= deadline) {
        throw Error(ErrorCode::kTimeout, "the store file " + path_ +
                                             " stayed locked by another process for " +
                                             std::to_string(timeout.count()) + " ms");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
    }
  }

  void replay() {
    struct stat info {};
    if (::fstat(fd_.get(), &info) != 0) util::throw_system_error("fstat " + path_, errno);
    std::vector<uint8_t> log(static_cast<std::size_t>(info.st_size));
    std::size_t got = 0;
    while (got < log.size()) {
      ssize_t n = ::pread(fd_.get(), log.data() + got, log.size() - got, got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) util::throw_system_error("read " + path_, n < 0 ? errno : EIO);
      got += static_cast<std::size_t>(n);
    }
    util::ByteReader in(log.data(), log.size());
    try {
      while (in.remaining() > 0) {
        auto kind = static_cast<Record>(in.get<uint8_t>());
        std::string key = in.get_string();
        if (kind == Record::kSet)
          table_.set(key, in.get_blob());
        else
          table_.erase(key);
      }
    } catch (const Error& e) {
      throw Error(ErrorCode::kSystem, "store file " + path_ + " is corrupt: " + e.message());
    }
  }

  void append(const std::vector<uint8_t>& record) {
    off_t end = ::lseek(fd_.get(), 0, SEEK_END);
    std::size_t done = 0;
    while (done < record.size()) {
      ssize_t n = ::pwrite(fd_.get(), record.data() + done, record.size() - done, end + done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) util::throw_system_error("write " + path_, errno);
      done += static_cast<std::size_t>(n);
    }
  }

  std::string path_;
  util::Fd fd_;
  store::KeyValueTable table_;
};

// The file's lock (flock) orders processes; this orders the threads of one FileStore, which
// would otherwise each replay the whole file at once.
class FileStore::OneAtATime {
 public:
  template <typename Fn>
  auto run(const std::string& path, Duration timeout, Fn&& fn) WEFT_EXCLUDES(mutex_) {
    util::MutexLock lock(mutex_);
    LockedFile file(path, timeout);
    return fn(file);
  }

 private:
  util::Mutex mutex_;
};

template <typename Fn>
auto FileStore::locked(Fn&& fn) {
  return one_at_a_time_->run(path_, timeout(), std::forward<Fn>(fn));
}

FileStore::FileStore(std::string path)
    : path_(std::move(path)), one_at_a_time_(std::make_unique<OneAtATime>()) {
  locked([](LockedFile& file) {
    file.table().add(kUsersKey, 1);
    file.append_set(kUsersKey);
    return 0;
  });
}

FileStore::~FileStore() {
  try {
    locked([](LockedFile& file) {
      if (file.table().add(kUsersKey, -1) <= 0)
        file.remove_file();
      else
        file.append_set(kUsersKey);
      return 0;
    });
  } catch (const std::exception& e) {
    util::log_warn(util::Subsys::kStore,
                   [&] { return "FileStore " + path_ + ": could not unregister: " + e.what(); });
  }
}

void FileStore::set(const std::string& key, const Bytes& value) {
  locked([&](LockedFile& file) {
    file.table().set(key, value);
    file.append_set(key);
    return 0;
  });
}

Bytes FileStore::get(const std::string& key) {
  wait_for({key}, timeout(), "store.get");
  return locked([&](LockedFile& file) { return *file.table().find(key); });
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  return locked([&](LockedFile& file) {
    int64_t value = file.table().add(key, delta);
    file.append_set(key);
    return value;
  });
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return locked([&](LockedFile& file) {
    Bytes value = file.table().compare_set(key, expected, desired);
    if (file.table().find(key)) file.append_set(key);
    return value;
  });
}

bool FileStore::delete_key(const std::string& key) {
  return locked([&](LockedFile& file) {
    bool existed = file.table().erase(key);
    if (existed) file.append_delete(key);
    return existed;
  });
}

bool FileStore::check(const std::vector<std::string>& keys) {
  return locked([&](LockedFile& file) { return file.table().contains_all(keys); });
}

int64_t FileStore::num_keys() {
  // The user counter is bookkeeping, not a key of the user's.
  return locked([&](LockedFile& file) { return file.table().size() - 1; });
}

void FileStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  wait_for(keys, timeout, "store.wait");
}

std::vector<Bytes> FileStore::multi_get(const std::vector<std::string>& keys) {
  wait_for(keys, timeout(), "store.multi_get");
  return locked([&](LockedFile& file) {
    std::vector<Bytes> values;
    for (const std::string& key : keys) values.push_back(*file.table().find(key));
    return values;
  });
}

void FileStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw Error(ErrorCode::kInvalidArgument, "store.multi_set: " + std::to_string(keys.size()) +
                                                 " keys but " + std::to_string(values.size()) +
                                                 " values");
  }
  locked([&](LockedFile& file) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      file.table().set(keys[i], values[i]);
      file.append_set(keys[i]);
    }
    return 0;
  });
}

void FileStore::wait_for(const std::vector<std::string>& keys, Duration timeout, const char* op) {
  auto deadline = util::deadline_after(timeout);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    std::string missing = locked([&](LockedFile& file) {
      return file.table().contains_all(keys) ? std::string() : file.table().missing(keys);
    });
    if (missing.empty()) return;
    if (util::Clock::now() >= deadline) {
      throw Error(ErrorCode::kTimeout,
                  std::string(op) + ": keys " + missing + " still missing after " +
                      std::to_string(timeout.count()) + " ms",
                  ErrorContext{.op = op, .peer_address = path_});
    }
    std::this_thread::sleep_for(std::min(pause, util::time_left(deadline)));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace weft
