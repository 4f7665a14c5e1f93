# Writes PTH_FILE naming PACKAGE_PARENT (the directory holding the weft package), so that the
# interpreter imports weft from the build tree with no PYTHONPATH. Warns, never fails, when the
# site directory is not writable (the build stays usable with PYTHONPATH).
# Usage: cmake -DPTH_FILE=... -DPACKAGE_PARENT=... -P write_pth.cmake
set(content "${PACKAGE_PARENT}\n")
if(EXISTS ${PTH_FILE})
  file(READ ${PTH_FILE} existing)
  if(existing STREQUAL content)
    return()
  endif()
endif()
get_filename_component(site_dir ${PTH_FILE} DIRECTORY)
execute_process(COMMAND ${CMAKE_COMMAND} -E make_directory ${site_dir} RESULT_VARIABLE made)
execute_process(COMMAND ${CMAKE_COMMAND} -E touch ${PTH_FILE}.tmp RESULT_VARIABLE touched)
if(NOT made EQUAL 0 OR NOT touched EQUAL 0)
  message(WARNING "weft: cannot write ${PTH_FILE}; use PYTHONPATH=${PACKAGE_PARENT} to import weft")
  return()
endif()
file(WRITE ${PTH_FILE}.tmp "${content}")
file(RENAME ${PTH_FILE}.tmp ${PTH_FILE})
