# Removes every file listed in MANIFEST (written by `cmake --install`), then weft's own
# directories (include/weft, lib/cmake/weft, the Python package's weft/, with the bytecode
# Python left there) once they are empty. Shared directories such as lib/pkgconfig stay, even
# when empty: the install may not have been the one that made them.
# Usage: cmake -DMANIFEST=<build>/install_manifest.txt -P uninstall.cmake
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "nothing to uninstall: ${MANIFEST} not found (run cmake --install first)")
endif()
file(STRINGS "${MANIFEST}" installed)
set(own_dirs "")
foreach(file IN LISTS installed)
  if(EXISTS "${file}" OR IS_SYMLINK "${file}")
    message(STATUS "Removing ${file}")
    file(REMOVE "${file}")
  endif()
  get_filename_component(dir "${file}" DIRECTORY)
  get_filename_component(name "${dir}" NAME)
  if(name STREQUAL "weft")
    list(APPEND own_dirs "${dir}")
  endif()
endforeach()
list(REMOVE_DUPLICATES own_dirs)
foreach(dir IN LISTS own_dirs)
  file(REMOVE_RECURSE "${dir}/__pycache__")
  file(GLOB entries "${dir}/*")
  if(IS_DIRECTORY "${dir}" AND NOT entries)
    message(STATUS "Removing ${dir}/")
    file(REMOVE_RECURSE "${dir}")  # empty: REMOVE takes files only
  endif()
endforeach()
