# Build-wide settings: language level, warnings, compiler cache and sanitizers.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

option(EXTHOST_BUILD_TESTS "Build the unit and integration tests" ON)
option(EXTHOST_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(EXTHOST_TSAN "Build with ThreadSanitizer" OFF)

find_program(EXTHOST_CCACHE ccache)
if(EXTHOST_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${EXTHOST_CCACHE}")
endif()

# Applied to every exthost target (not to third-party code).
add_library(exthost_warnings INTERFACE)
target_compile_options(exthost_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  # GCC 12 reports a false positive on Asio's recycled coroutine frames (TOOLCHAIN (a)).
  -Wno-mismatched-new-delete)

if(EXTHOST_TSAN)
  # Asio's fenced blocks use atomic_thread_fence, which ThreadSanitizer cannot model; its
  # scheduler's mutexes and condition variables, which TSan does see, order handlers anyway.
  add_compile_definitions(BOOST_ASIO_DISABLE_FENCED_BLOCK)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan)
  add_link_options(-fsanitize=thread)
endif()
if(EXTHOST_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
