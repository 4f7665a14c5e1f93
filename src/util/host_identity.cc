#include "util/host_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "util/settings.h"

namespace weft::util {

std::string host_identity() {
  std::string forced = setting_string("WEFT_HOST_ID");
  if (!forced.empty()) return "forced/" + forced;
  char name[256] = "";
  gethostname(name, sizeof name - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  struct stat netns {};
  std::string namespace_id = stat("/proc/self/ns/net", &netns) == 0
                                 ? std::to_string(static_cast<unsigned long>(netns.st_ino))
                                 : "0";
  return std::string(name) + "/" + boot_id + "/" + namespace_id;
}

}  // namespace weft::util
