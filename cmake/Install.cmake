# cmake --install: headers, both libraries, a CMake package (find_package(coll)
# gives coll::coll) and coll.pc for pkg-config.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/coll DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS coll coll_static EXPORT collTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS collrun colltopo colldiag RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT collTargets NAMESPACE coll:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coll)

set(COLL_PACKAGE_WITH_MPI ${COLL_WITH_MPI_ENABLED})
configure_package_config_file(cmake/collConfig.cmake.in ${PROJECT_BINARY_DIR}/collConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coll)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/collConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/collConfig.cmake ${PROJECT_BINARY_DIR}/collConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coll)

# coll.pc finds the prefix from its own directory (${pcfiledir}), so it stays
# right when `cmake --install --prefix P` or a moved tree changes the prefix.
# An absolute CMAKE_INSTALL_LIBDIR or INCLUDEDIR is used as given.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(COLL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(COLL_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH coll_pc_up "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" coll_pc_up "${coll_pc_up}")
  set(COLL_PC_PREFIX "\${pcfiledir}/${coll_pc_up}")
  set(COLL_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(COLL_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(COLL_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(cmake/coll.pc.in ${PROJECT_BINARY_DIR}/coll.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/coll.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
