# cmake --install: headers, both libraries, a CMake package (find_package(coll)
# gives coll::coll) and coll.pc for pkg-config.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/coll DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS coll coll_static EXPORT collTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS collrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT collTargets NAMESPACE coll:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coll)

set(COLL_PACKAGE_WITH_MPI ${COLL_WITH_MPI_ENABLED})
configure_package_config_file(cmake/collConfig.cmake.in ${PROJECT_BINARY_DIR}/collConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coll)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/collConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/collConfig.cmake ${PROJECT_BINARY_DIR}/collConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coll)

configure_file(cmake/coll.pc.in ${PROJECT_BINARY_DIR}/coll.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/coll.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
