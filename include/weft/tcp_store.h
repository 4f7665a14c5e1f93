// TcpStore — client of a TcpStoreServer (the rendezvous store of a job).
//
// One TCP connection per call in flight: a call takes an idle connection, or opens one more
// when every connection is busy (another thread's wait for keys may last), so threads never
// wait behind each other; a single-threaded user keeps one connection.
// Blocking calls carry their timeout to the server, which answers "timeout" itself, and the
// client waits for that answer about as long again (at most 5 s more). A call that gives up
// before the answer comes (a server out of reach) leaves the connection out of step: the next
// call connects anew. A lost server fails every call with kPeerFailure.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/export.h"
#include "weft/store.h"

namespace weft {

class WEFT_API TcpStore final : public Store {
 public:
  // Connects to host:port, retrying refused connections until connect_timeout passes (the
  // server may not be up yet), and has a first request (a ping) answered within the same
  // time: the server closes connections that send none. Throws kTimeout when nothing answers,
  // kSystem when the server refuses the connection (at its WEFT_STORE_MAX_CLIENTS).
  //
  // With a job token (WEFT_JOB_TOKEN), the client and the server first prove to each other
  // that they know it, by a challenge-response in which the token never crosses the wire; a
  // server that cannot (another token, or none) is refused with kUnauthorized.
  TcpStore(const std::string& host, int port, Duration connect_timeout = kDefaultTimeout);
  // The same with the job token given: "" connects without authenticating (an open store).
  TcpStore(const std::string& host, int port, Duration connect_timeout,
           const std::string& job_token);
  ~TcpStore() override;

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

  // The longest a call with this timeout waits for its answer: the timeout, then as long again
  // (at least 100 ms and at most 5 s more) for the server's own timeout answer to arrive.
  static Duration answer_bound(Duration timeout);

  const std::string& host() const { return host_; }
  int port() const { return port_; }
  // Another client of the same server with the same token, on a connection of its own: calls
  // on one never wait behind the other's (torch's Store.clone()).
  std::unique_ptr<TcpStore> clone(Duration connect_timeout) const;

 private:
  class Connection;

  // A connection for one call: an idle one, else a new one.
  std::unique_ptr<Connection> take_connection();
  void give_back(std::unique_ptr<Connection> connection);
  // call(connection) on a connection of its own, given back after.
  template <typename Call>
  auto with_connection(Call&& call);

  // The connections no call is using, under a lock of their own (defined in the library, where
  // the thread-safety analysis checks it).
  class IdleConnections;

  std::string host_;
  int port_;
  std::string job_token_;
  std::unique_ptr<IdleConnections> idle_;
};

}  // namespace weft
