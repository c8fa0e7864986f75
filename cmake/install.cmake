# `cmake --install`: the libraries, their public headers, the mdcast binary,
# a CMake package (find_package(mdcast)) and mdcast.pc. Included last from
# the top-level CMakeLists: it reads the targets the folders defined, so a
# source file added to a library needs nothing here.
#
# The libraries are static (add_library's default; a BUILD_SHARED_LIBS build
# is not tested): their dependencies (fmt, rdma-core) are therefore part of
# both packages' link interface, not private to them.
include(CMakePackageConfigHelpers)

set(MDCAST_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mdcast)
set(MDCAST_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The library targets this build has, each a dependency of those after it
# (`mdcast bench` lives in apps/bench and is no part of the library).
set(MDCAST_LIBRARIES mdcast_feed mdcast_mem mdcast_stream mdcast_shm mdcast_udp)
if(TARGET mdcast_verbs)
  list(APPEND MDCAST_LIBRARIES mdcast_verbs)
  set(MDCAST_HAVE_VERBS ON)
else()
  set(MDCAST_HAVE_VERBS OFF)
endif()
# The doctor's checks (mdcast::doctor) need only the core (what a medium
# tells them comes from mdcast::settings); recordings (mdcast::record) the
# core and libpcap; the runtime's result files and child processes
# (mdcast::runtime) the core and toml++.
list(APPEND MDCAST_LIBRARIES mdcast_doctor mdcast_record mdcast_runtime)
# Settings by name (mdcast::settings) choose among all of the media above.
list(APPEND MDCAST_LIBRARIES mdcast_settings)

# The public headers are C++20: a consumer that asks for less gets it raised.
target_compile_features(mdcast_feed PUBLIC cxx_std_20)
if(MDCAST_HAVE_VERBS)
  # What a consumer tests to compile its verbs path (apps/ sets its own).
  target_compile_definitions(mdcast_verbs INTERFACE MDCAST_HAVE_VERBS=1)
endif()

# mdcast::feed, mdcast::shm, ... in the package, and the same names in this
# tree for a project that adds mdcast with add_subdirectory.
foreach(lib IN LISTS MDCAST_LIBRARIES)
  string(REGEX REPLACE "^mdcast_" "" short ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})
  add_library(mdcast::${short} ALIAS ${lib})
endforeach()

# mdcast::mdcast: every medium this build has, for applications that choose
# one at run time.
add_library(mdcast_all INTERFACE)
target_link_libraries(mdcast_all INTERFACE ${MDCAST_LIBRARIES})
set_target_properties(mdcast_all PROPERTIES EXPORT_NAME mdcast)
add_library(mdcast::mdcast ALIAS mdcast_all)

install(TARGETS ${MDCAST_LIBRARIES} mdcast_all EXPORT mdcast-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS mdcast RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Headers by folder, so a new header of a library is installed without an
# edit here; the verbs headers include rdma-core's, which only a verbs build
# may assume.
set(header_excludes)
if(NOT MDCAST_HAVE_VERBS)
  list(APPEND header_excludes PATTERN verbs EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mdcast DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp" ${header_excludes})

# ---- CMake package
install(EXPORT mdcast-targets NAMESPACE mdcast:: DESTINATION ${MDCAST_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/mdcastConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mdcastConfig.cmake INSTALL_DESTINATION ${MDCAST_CMAKE_DIR})
# Before 1.0 a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mdcastConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mdcastConfig.cmake ${PROJECT_BINARY_DIR}/mdcastConfigVersion.cmake
  DESTINATION ${MDCAST_CMAKE_DIR})

# ---- pkg-config
# Paths relative to the .pc file, so the tree works wherever --prefix put it.
file(RELATIVE_PATH MDCAST_PC_PREFIX /${MDCAST_PKGCONFIG_DIR} /)
string(REGEX REPLACE "/$" "" MDCAST_PC_PREFIX "${MDCAST_PC_PREFIX}")
# A static library comes before what it needs: the reverse of the list above.
set(MDCAST_PC_LIBS "")
set(reversed ${MDCAST_LIBRARIES})
list(REVERSE reversed)
foreach(lib IN LISTS reversed)
  string(APPEND MDCAST_PC_LIBS " -l$<TARGET_LINKER_FILE_BASE_NAME:${lib}>")
endforeach()
set(MDCAST_PC_REQUIRES "fmt libsodium libpcap liburing tomlplusplus")
set(MDCAST_PC_CFLAGS "")
if(MDCAST_HAVE_VERBS)
  string(APPEND MDCAST_PC_REQUIRES " libibverbs librdmacm")
  set(MDCAST_PC_CFLAGS " -DMDCAST_HAVE_VERBS=1")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/mdcast.pc.in ${PROJECT_BINARY_DIR}/mdcast.pc.in @ONLY)
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/mdcast.pc INPUT ${PROJECT_BINARY_DIR}/mdcast.pc.in)
install(FILES ${PROJECT_BINARY_DIR}/mdcast.pc DESTINATION ${MDCAST_PKGCONFIG_DIR})
