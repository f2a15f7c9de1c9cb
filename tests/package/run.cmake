# The package test: install the build tree to a temporary prefix, build the consumer
# project against it with find_package, run it; build it again with pkg-config flags; and
# make the Debian package and look inside. Arguments: -DBUILD_DIR= -DSOURCE_DIR= -DWORK_DIR=
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f lib/libexthost.a include/exthost/host.hpp include/exthost_sdk.hpp bin/exthost
          lib/cmake/exthost/exthostConfig.cmake lib/cmake/exthost/exthostConfigVersion.cmake
          lib/pkgconfig/exthost.pc share/exthost/sdk/python/exthost_sdk.py)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

# find_package(exthost) from a project of its own.
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/package" -B "${WORK_DIR}/consumer" -G Ninja
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/consumer")

# A plugin built against the installed SDK, loaded by the consumer built against the library.
file(MAKE_DIRECTORY "${WORK_DIR}/plugin/.synaps-plugin")
file(WRITE "${WORK_DIR}/plugin/.synaps-plugin/plugin.json"
  "{\"extension\":{\"runtime\":\"process\",\"command\":\"${WORK_DIR}/consumer/sdk_consumer\",\"permissions\":[\"tools.register\"]}}")
run("${WORK_DIR}/consumer/consumer" "${WORK_DIR}/plugin" "${WORK_DIR}/home")
if(NOT last_output MATCHES "exthost [0-9.]+: {\"content\":\"sdk: from an installed exthost\"}")
  message(FATAL_ERROR "unexpected consumer output: ${last_output}")
endif()

# The same program built with the pkg-config file's flags.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
run(${PKG_CONFIG} --cflags --libs exthost)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(c++ "${SOURCE_DIR}/tests/package/consumer.cpp" -o "${WORK_DIR}/consumer-pc" ${flags})
run("${WORK_DIR}/consumer-pc" "${WORK_DIR}/plugin" "${WORK_DIR}/home")

# The Debian package holds the command, the library and the CMake package.
run(cpack --config "${BUILD_DIR}/CPackConfig.cmake" -B "${WORK_DIR}/deb")
file(GLOB debs "${WORK_DIR}/deb/*.deb")
list(LENGTH debs n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one .deb, found: ${debs}")
endif()
run(dpkg-deb --contents ${debs})
foreach(f ./usr/bin/exthost ./usr/lib/libexthost.a ./usr/include/exthost/host.hpp ./usr/lib/cmake/exthost/exthostConfig.cmake)
  string(FIND "${last_output}" "${f}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${f} missing from the package:\n${last_output}")
  endif()
endforeach()
run(dpkg-deb --field ${debs} Depends)
message(STATUS "package depends: ${last_output}")
file(REMOVE_RECURSE "${WORK_DIR}")
