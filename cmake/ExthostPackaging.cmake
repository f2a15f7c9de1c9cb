# Installing and packaging: the library and its headers, the exported exthost::exthost and
# exthost::sdk targets with a version file, a pkg-config file, the exthost command, the
# SDKs, and a Debian package through CPack (`make package`).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS exthost exthost_sdk EXPORT exthostTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/exthost DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/sdk/cpp/exthost_sdk.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/sdk/python/exthost_sdk.py DESTINATION ${CMAKE_INSTALL_DATADIR}/exthost/sdk/python)
install(TARGETS exthost_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/protocol.md ${PROJECT_SOURCE_DIR}/docs/serve.md
              ${PROJECT_SOURCE_DIR}/docs/embedding.md ${PROJECT_SOURCE_DIR}/docs/sdk-cpp.md
              ${PROJECT_SOURCE_DIR}/docs/sdk-python.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(exthost_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/exthost)
install(EXPORT exthostTargets NAMESPACE exthost:: DESTINATION ${exthost_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/exthostConfig.cmake.in
  ${PROJECT_BINARY_DIR}/exthostConfig.cmake INSTALL_DESTINATION ${exthost_cmake_dir})
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/exthostConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/exthostConfig.cmake ${PROJECT_BINARY_DIR}/exthostConfigVersion.cmake
  DESTINATION ${exthost_cmake_dir})

configure_file(${PROJECT_SOURCE_DIR}/cmake/exthost.pc.in ${PROJECT_BINARY_DIR}/exthost.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/exthost.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME exthost)
set(CPACK_PACKAGE_VENDOR "exthost")
set(CPACK_PACKAGE_CONTACT "exthost maintainers <exthost@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The exthost command's shared libraries, found by dpkg-shlibdeps; the development part
# (static library, headers, CMake package) needs the -dev packages it was built with.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libboost-json1.81-dev, libspdlog-dev, libfmt-dev, libsqlite3-dev")
include(CPack)
