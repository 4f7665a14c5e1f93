// One process of tests/transport/address_choice_test.cc, usually inside a network namespace.
// Usage:
//   weft_address_rank store PORT SECONDS   serves a weft store on every address at PORT, then
//                                          exits after SECONDS (the test kills it sooner)
//   weft_address_rank allreduce            joins the job its environment describes (env://),
//                                          all-reduces rank + 1 and checks the sum
//   weft_address_rank ring                 joins the job and talks to its ring neighbours only:
//                                          sends rank + 1 to the next, checks the previous one's
// Prints one line saying what it did; exits 0 when it went as expected.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "weft/tcp_store_server.h"
#include "weft/weft.h"

namespace {

int serve_store(int port, int seconds) {
  weft::TcpStoreServer::Options options;
  options.port = port;
  weft::TcpStoreServer server(options);
  std::printf("store ready port=%d\n", server.port());
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  return 0;
}

int all_reduce() {
  auto group = weft::init_process_group();
  std::vector<double> values(1000, group->rank() + 1.0);
  group->all_reduce(weft::BufferView(values));
  const double expected = group->size() * (group->size() + 1) / 2.0;
  for (double value : values) {
    if (value != expected) {
      std::printf("allreduce wrong rank=%d sum=%g expected=%g\n", group->rank(), value, expected);
      return 20;
    }
  }
  std::printf("allreduce ok rank=%d size=%d sum=%g\n", group->rank(), group->size(), expected);
  std::fflush(stdout);
  return 0;
}

int ring() {
  auto group = weft::init_process_group();
  const int next = (group->rank() + 1) % group->size();
  const int previous = (group->rank() + group->size() - 1) % group->size();
  std::vector<double> out(1000, group->rank() + 1.0);
  std::vector<double> in(1000, 0.0);
  auto receive = group->irecv(weft::BufferView(in), previous);
  group->send(weft::ConstBufferView(out), next);
  receive->wait();
  for (double value : in) {
    if (value != previous + 1.0) {
      std::printf("ring wrong rank=%d got=%g expected=%d\n", group->rank(), value, previous + 1);
      return 20;
    }
  }
  std::printf("ring ok rank=%d size=%d\n", group->rank(), group->size());
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "store" && argc == 4) return serve_store(std::stoi(argv[2]), std::stoi(argv[3]));
    if (mode == "allreduce") return all_reduce();
    if (mode == "ring") return ring();
  } catch (const std::exception& e) {
    std::printf("error %s\n", e.what());
    return 10;
  }
  std::fprintf(stderr, "usage: %s store PORT SECONDS | allreduce | ring\n", argv[0]);
  return 2;
}
