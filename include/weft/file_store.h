// FileStore — a Store kept in one file that every rank can reach (a shared file system).
//
// The file is an append-only log of set/add/delete records, read and extended under flock(2),
// so ranks on several hosts sharing an NFS mount (with working locks) can rendezvous through it.
// Each FileStore object registers as a user of the file; the last user to be destroyed removes
// the file, so a finished job leaves nothing behind. Blocking calls poll with back-off.
// The file is created with mode 0600; an existing one is used only when it is a regular file of
// this user's that group and others may not write, and a symbolic link is never followed
// (kUnauthorized, or kInvalidArgument for a link): another user's file in a shared /tmp would
// let that user read the job's keys and write into its rendezvous.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "weft/export.h"
#include "weft/store.h"

namespace weft {

class WEFT_API FileStore final : public Store {
 public:
  explicit FileStore(std::string path);
  ~FileStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t num_keys() override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  using Store::wait;

  const std::string& path() const { return path_; }

 private:
  class LockedFile;
  // One operation of this object's at a time on the file (defined in the library, where the
  // thread-safety analysis checks that the file is only opened under its lock).
  class OneAtATime;
  template <typename Fn>
  auto locked(Fn&& fn);
  void wait_for(const std::vector<std::string>& keys, Duration timeout, const char* op);

  std::string path_;
  std::unique_ptr<OneAtATime> one_at_a_time_;
};

}  // namespace weft
