// weft's rendezvous stores with torch.distributed's Python names and methods: Store (base),
// TCPStore, FileStore, HashStore (in memory) and PrefixStore. Values are bytes (str is
// encoded as UTF-8). Every call releases the GIL: blocking ones wait for up to the store's timeout.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "durations.h"
#include "weft/error.h"
#include "weft/file_store.h"
#include "weft/memory_store.h"
#include "weft/prefix_store.h"
#include "weft/tcp_store.h"
#include "weft/tcp_store_server.h"

namespace weft::python {

namespace {

Bytes bytes_of(py::handle value) {
  std::string text;
  if (PyUnicode_Check(value.ptr())) {
    text = value.cast<std::string>();
  } else if (PyBytes_Check(value.ptr()) || PyByteArray_Check(value.ptr())) {
    text = std::string(py::bytes(py::reinterpret_borrow<py::object>(value)));
  } else {
    throw py::type_error("store values are bytes or str");
  }
  return Bytes(text.begin(), text.end());
}

py::bytes to_py(const Bytes& bytes) {
  return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A TcpStore client that may also own the server (torch's TCPStore(is_master=True)).
class ServedTcpStore final : public Store {
 public:
  ServedTcpStore(const std::string& host, int port, bool is_master, Duration timeout) {
    if (is_master) {
      TcpStoreServer::Options options;
      options.port = port;
      server_ = std::make_unique<TcpStoreServer>(options);
      port = server_->port();
    }
    client_ = std::make_unique<TcpStore>(host, port, timeout);
    Store::set_timeout(timeout);
    client_->set_timeout(timeout);
  }

  void set(const std::string& key, const Bytes& value) override { client_->set(key, value); }
  Bytes get(const std::string& key) override { return client_->get(key); }
  int64_t add(const std::string& key, int64_t delta) override { return client_->add(key, delta); }
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    return client_->compare_set(key, expected, desired);
  }
  bool delete_key(const std::string& key) override { return client_->delete_key(key); }
  bool check(const std::vector<std::string>& keys) override { return client_->check(keys); }
  int64_t num_keys() override { return client_->num_keys(); }
  void wait(const std::vector<std::string>& keys, Duration timeout) override {
    client_->wait(keys, timeout);
  }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override {
    return client_->multi_get(keys);
  }
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override {
    client_->multi_set(keys, values);
  }
  void set_timeout(Duration timeout) override {
    Store::set_timeout(timeout);
    client_->set_timeout(timeout);
  }
  using Store::wait;

  const std::string& host() const { return client_->host(); }
  int port() const { return client_->port(); }

 private:
  std::unique_ptr<TcpStoreServer> server_;  // declared first: destroyed after the client
  std::unique_ptr<TcpStore> client_;
};

using StorePtr = std::shared_ptr<Store>;

// weft::Store over a Python object with torch.distributed's Store methods (a torch Store of
// any kind, or a user's class), so that weft's rendezvous runs on the store torch hands a
// backend. Each call takes the GIL; torch's own store methods release it while they block.
// Blocking calls use this adapter's timeout (weft sets it to the group's), passed to the
// object's wait(); a failed wait becomes weft's kTimeout, which the bootstrap turns into an
// error naming the ranks that never arrived.
class PythonObjectStore final : public Store {
 public:
  explicit PythonObjectStore(py::object store) : store_(std::move(store)) {}
  ~PythonObjectStore() override {
    // Taking the GIL while the interpreter shuts down ends this thread inside a destructor
    // (std::terminate); the process is exiting, so the reference is left behind instead.
    if (!Py_IsInitialized() || _Py_IsFinalizing()) {
      store_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    store_ = py::object();
  }

  void set(const std::string& key, const Bytes& value) override {
    py::gil_scoped_acquire gil;
    store_.attr("set")(key, to_py(value));
  }
  Bytes get(const std::string& key) override {
    wait({key}, timeout());
    py::gil_scoped_acquire gil;
    return bytes_of(store_.attr("get")(key));
  }
  int64_t add(const std::string& key, int64_t delta) override {
    py::gil_scoped_acquire gil;
    return store_.attr("add")(key, delta).cast<int64_t>();
  }
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    py::gil_scoped_acquire gil;
    return bytes_of(store_.attr("compare_set")(key, to_py(expected), to_py(desired)));
  }
  bool delete_key(const std::string& key) override {
    py::gil_scoped_acquire gil;
    return store_.attr("delete_key")(key).cast<bool>();
  }
  bool check(const std::vector<std::string>& keys) override {
    py::gil_scoped_acquire gil;
    return store_.attr("check")(keys).cast<bool>();
  }
  int64_t num_keys() override {
    py::gil_scoped_acquire gil;
    return store_.attr("num_keys")().cast<int64_t>();
  }
  void wait(const std::vector<std::string>& keys, Duration timeout) override {
    py::gil_scoped_acquire gil;
    try {
      store_.attr("wait")(keys, to_timedelta(timeout));
    } catch (py::error_already_set& e) {
      throw Error(ErrorCode::kTimeout, std::string("store wait failed: ") + e.what());
    }
  }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override {
    wait(keys, timeout());
    py::gil_scoped_acquire gil;
    std::vector<Bytes> values;
    values.reserve(keys.size());
    for (const auto& key : keys) values.push_back(bytes_of(store_.attr("get")(key)));
    return values;
  }
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override {
    py::gil_scoped_acquire gil;
    for (std::size_t i = 0; i < keys.size(); ++i) store_.attr("set")(keys[i], to_py(values[i]));
  }
  using Store::wait;

 private:
  py::object store_;
};

}  // namespace

void register_stores(py::module_& m) {
  using release = py::call_guard<py::gil_scoped_release>;
  py::class_<Store, StorePtr>(m, "Store", "Rendezvous key-value store (torch's Store methods).")
      .def(
          "set",
          [](Store& s, const std::string& key, py::handle value) {
            Bytes bytes = bytes_of(value);
            py::gil_scoped_release r;
            s.set(key, bytes);
          },
          py::arg("key"), py::arg("value"))
      .def(
          "get",
          [](Store& s, const std::string& key) {
            Bytes value;
            {
              py::gil_scoped_release r;
              value = s.get(key);
            }
            return to_py(value);
          },
          py::arg("key"))
      .def("add", &Store::add, py::arg("key"), py::arg("amount"), release())
      .def(
          "compare_set",
          [](Store& s, const std::string& key, py::handle expected, py::handle desired) {
            Bytes e = bytes_of(expected), d = bytes_of(desired), result;
            {
              py::gil_scoped_release r;
              result = s.compare_set(key, e, d);
            }
            return to_py(result);
          },
          py::arg("key"), py::arg("expected_value"), py::arg("desired_value"))
      .def("delete_key", &Store::delete_key, py::arg("key"), release())
      .def("check", &Store::check, py::arg("keys"), release())
      .def("num_keys", &Store::num_keys, release())
      .def(
          "wait",
          [](Store& s, const std::vector<std::string>& keys, py::object timeout) {
            auto span = optional_milliseconds(timeout, "timeout");
            py::gil_scoped_release r;
            s.wait(keys, span.value_or(s.timeout()));
          },
          py::arg("keys"), py::arg("timeout") = py::none())
      .def(
          "multi_get",
          [](Store& s, const std::vector<std::string>& keys) {
            std::vector<Bytes> values;
            {
              py::gil_scoped_release r;
              values = s.multi_get(keys);
            }
            py::list out;
            for (const auto& v : values) out.append(to_py(v));
            return out;
          },
          py::arg("keys"))
      .def(
          "multi_set",
          [](Store& s, const std::vector<std::string>& keys,
             const std::vector<py::object>& values) {
            std::vector<Bytes> bytes;
            for (const auto& v : values) bytes.push_back(bytes_of(v));
            py::gil_scoped_release r;
            s.multi_set(keys, bytes);
          },
          py::arg("keys"), py::arg("values"))
      .def(
          "set_timeout",
          [](Store& s, py::object timeout) {
            s.set_timeout(milliseconds_or_zero(timeout, "timeout"));
          },
          py::arg("timeout"))
      .def_property_readonly("timeout", [](const Store& s) { return to_timedelta(s.timeout()); });

  py::class_<ServedTcpStore, Store, std::shared_ptr<ServedTcpStore>>(
      m, "TCPStore", "TCP store client; with is_master=True this process also serves it.")
      .def(py::init([](const std::string& host, int port, py::object world_size, bool is_master,
                       py::object timeout, bool wait_for_workers) {
             auto span = optional_milliseconds(timeout, "timeout").value_or(Store::kDefaultTimeout);
             py::gil_scoped_release r;
             return std::make_shared<ServedTcpStore>(host, port, is_master, span);
           }),
           py::arg("host_name"), py::arg("port"), py::arg("world_size") = py::none(),
           py::arg("is_master") = false, py::arg("timeout") = py::none(),
           py::arg("wait_for_workers") = true)
      .def_property_readonly("host", &ServedTcpStore::host)
      .def_property_readonly("port", &ServedTcpStore::port);

  py::class_<FileStore, Store, std::shared_ptr<FileStore>>(m, "FileStore",
                                                           "A store kept in one shared file.")
      .def(py::init([](const std::string& path, int world_size) {
             return std::make_shared<FileStore>(path);
           }),
           py::arg("file_name"), py::arg("world_size") = -1)
      .def_property_readonly("path", &FileStore::path);

  py::class_<MemoryStore, Store, std::shared_ptr<MemoryStore>>(
      m, "HashStore", "A store in this process's memory (ranks that are threads).")
      .def(py::init<>());

  py::class_<PythonObjectStore, Store, std::shared_ptr<PythonObjectStore>>(
      m, "PythonObjectStore",
      "weft's Store over any object with torch's Store methods (set, get, add, compare_set, "
      "delete_key, check, num_keys, wait): weft's rendezvous runs on a torch store.")
      .def(py::init([](py::object store, py::object timeout) {
             auto adapter = std::make_shared<PythonObjectStore>(std::move(store));
             if (auto span = optional_milliseconds(timeout, "timeout")) adapter->set_timeout(*span);
             return adapter;
           }),
           py::arg("store"), py::arg("timeout") = py::none());

  py::class_<PrefixStore, Store, std::shared_ptr<PrefixStore>>(m, "PrefixStore",
                                                               "Keys of store under 'prefix/'.")
      .def(py::init<std::string, StorePtr>(), py::arg("prefix"), py::arg("store"))
      .def_property_readonly("underlying_store", &PrefixStore::underlying);
}

}  // namespace weft::python
