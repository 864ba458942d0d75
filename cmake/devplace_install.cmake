# `cmake --install` and CPack (docs/packaging.md):
#   component dev:     headers under include/devplace/, the LibTorch-free static libraries (core, datasets, sim, env,
#                      agents), lib/cmake/devplace/devplaceConfig.cmake (find_package(devplace) gives devplace::core,
#                      devplace::datasets, devplace::sim, devplace::env, devplace::agents) and lib/pkgconfig/devplace.pc;
#   component runtime: the devplace program and the machine presets (share/devplace/configs);
#   component python:  the Python package (python/CMakeLists.txt).
# CPack makes one .deb of all three (cpack -G DEB in the build folder).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DEVPLACE_VERSION 0.1.0)
set(DEVPLACE_INSTALLED_LIBS core datasets sim env agents)

set(_targets)
foreach(lib ${DEVPLACE_INSTALLED_LIBS})
  # Headers are included as "sim/simulator.h": the source root in the build tree, include/devplace once installed.
  set_target_properties(devplace_${lib} PROPERTIES
    EXPORT_NAME ${lib}
    INTERFACE_INCLUDE_DIRECTORIES
      "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>;$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/devplace>")
  install(DIRECTORY ${lib}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/devplace/${lib} COMPONENT dev
          FILES_MATCHING PATTERN "*.h" PATTERN "learned" EXCLUDE PATTERN "onnx" EXCLUDE)
  list(APPEND _targets devplace_${lib})
endforeach()
# datasets links the generated Chakra schema library (datasets/import) privately; being static, it ships too. Its
# generated headers are needed only to build devplace itself (its include paths are build-interface only).
if(TARGET chakra_et_proto)
  list(APPEND _targets chakra_et_proto)
endif()
install(TARGETS ${_targets} EXPORT devplaceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(EXPORT devplaceTargets NAMESPACE devplace:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/devplace COMPONENT dev)
configure_package_config_file(cmake/devplaceConfig.cmake.in ${CMAKE_BINARY_DIR}/devplaceConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/devplace)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/devplaceConfigVersion.cmake VERSION ${DEVPLACE_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/devplaceConfig.cmake ${CMAKE_BINARY_DIR}/devplaceConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/devplace COMPONENT dev)
configure_file(cmake/devplace.pc.in ${CMAKE_BINARY_DIR}/devplace.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/devplace.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

install(TARGETS devplace RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(DIRECTORY configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/devplace/configs COMPONENT runtime)

set(CPACK_PACKAGE_NAME devplace)
set(CPACK_PACKAGE_VERSION ${DEVPLACE_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Device placement and parallelisation of deep-learning training graphs")
set(CPACK_PACKAGE_CONTACT "devplace <dev@devplace>")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # the program's shared libraries (LibTorch, yaml-cpp, ...) become Depends
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3-numpy")
# What find_package(devplace) and devplace.pc need besides the package (the static libraries link them).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libyaml-cpp-dev, nlohmann-json3-dev, libonnx-dev, libprotobuf-dev, libscotch-dev, libmetis-dev")
set(CPACK_COMPONENTS_ALL dev runtime python)
set(CPACK_DEB_COMPONENT_INSTALL OFF)  # one package with every component
include(CPack)
