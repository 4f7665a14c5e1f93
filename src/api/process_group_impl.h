// ProcessGroup::Impl: the communicator behind a public ProcessGroup, kept out of the public
// header so that no internal type is part of weft's API; the library and its tests reach the
// communicator through communicator_of().
#pragma once

#include <memory>
#include <utility>

#include "core/communicator.h"
#include "weft/process_group.h"

namespace weft {

class ProcessGroup::Impl {
 public:
  explicit Impl(std::shared_ptr<core::Communicator> communicator) : comm(std::move(communicator)) {}

  static core::Communicator& of(const ProcessGroup& group) { return *group.impl_->comm; }

  std::shared_ptr<core::Communicator> comm;
};

namespace api {

inline core::Communicator& communicator_of(const ProcessGroup& group) {
  return ProcessGroup::Impl::of(group);
}

inline std::shared_ptr<ProcessGroup> make_group(std::shared_ptr<core::Communicator> comm) {
  return std::make_shared<ProcessGroup>(std::make_unique<ProcessGroup::Impl>(std::move(comm)));
}

}  // namespace api
}  // namespace weft
