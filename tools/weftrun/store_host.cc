#include "store_host.h"

#include "util/socket.h"

namespace weft::run {

std::unique_ptr<StoreHost> StoreHost::on_free_local_port(const std::string& job_token) {
  util::Fd listening = util::listen_on(util::resolve("127.0.0.1", 0), /*non_blocking=*/true);
  TcpStoreServer::Options options;
  options.host = "127.0.0.1";
  options.listen_fd = listening.release();  // the server owns it from here
  options.job_token = job_token;
  return std::unique_ptr<StoreHost>(new StoreHost(std::make_unique<TcpStoreServer>(options)));
}

std::unique_ptr<StoreHost> StoreHost::on_port(const std::string& host, int port,
                                              const std::string& job_token) {
  TcpStoreServer::Options options;
  options.host = host;
  options.port = port;
  options.job_token = job_token;
  return std::unique_ptr<StoreHost>(new StoreHost(std::make_unique<TcpStoreServer>(options)));
}

int pick_free_port() {
  // NOTE(weftrun-master-port): the port is released on return and bound again by the program;
  // a stranger could take it in between. torchrun has the same window.
  util::Fd probe = util::listen_on(util::resolve("", 0), /*non_blocking=*/false);
  return util::local_address_of(probe.get()).port();
}

}  // namespace weft::run
