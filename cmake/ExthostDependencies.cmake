# Every dependency comes from a Debian package installed by scripts/install-deps.
find_package(Threads REQUIRED)
find_package(Boost 1.81 CONFIG REQUIRED COMPONENTS json)
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)  # CMake's own module: SQLite::SQLite3
if(EXTHOST_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
