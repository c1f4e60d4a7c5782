# The Debian package: `cpack -G DEB` in the build folder writes netrun_<version>_<arch>.deb holding everything
# `cmake --install` installs (the netrun tool, libnetrun, the backends, headers, CMake and pkg-config files) in
# Debian's multiarch folders (/usr/lib/x86_64-linux-gnu); the template backend and the test tools are not installed.
# Included from the top-level CMakeLists.txt after every target exists.
set(CPACK_PACKAGE_NAME netrun)
set(CPACK_PACKAGE_VENDOR "netrun")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "DNN inference runtime: ONNX models on CPU and GPU backend plugins")
set(CPACK_PACKAGE_DESCRIPTION "netrun imports ONNX models and runs them on backend plugins (CPU; CUDA when \
built with it). It ships the netrun tool, libnetrun with its C headers, CMake and pkg-config files, and the \
backend plugins in /usr/lib/<multiarch>/netrun/backends.")
set(CPACK_PACKAGE_CONTACT "netrun maintainers <netrun@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# No build folders or VCS data in a source package.
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/\\\\.venv/")

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)               # netrun_0.2.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# libnetrun.so.0.2 gets a shlibs file, so packages built against it depend on it properly.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
find_program(NETRUN_DPKG_SHLIBDEPS dpkg-shlibdeps)
mark_as_advanced(NETRUN_DPKG_SHLIBDEPS)
if(NETRUN_DPKG_SHLIBDEPS)
  # Depends from the ELF files themselves (libc6, libprotobuf-c1, libopenblas0-*, ...). Libraries that belong
  # to no Debian package (a CUDA toolkit from NVIDIA's installer or pip) are skipped by --ignore-missing-info;
  # these folders let dpkg-shlibdeps find them, since installed plugins carry no RUNPATH to them.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  if(TARGET netrun-cuda)
    set(_dirs)
    if(CUDNN_LIBRARY)
      get_filename_component(_d ${CUDNN_LIBRARY} DIRECTORY)
      list(APPEND _dirs ${_d})
    endif()
    if(CMAKE_CUDA_COMPILER)
      get_filename_component(_d ${CMAKE_CUDA_COMPILER} DIRECTORY)
      foreach(_sub lib64 lib targets/x86_64-linux/lib)
        if(IS_DIRECTORY ${_d}/../${_sub})
          get_filename_component(_abs ${_d}/../${_sub} REALPATH)
          list(APPEND _dirs ${_abs})
        endif()
      endforeach()
    endif()
    list(REMOVE_DUPLICATES _dirs)
    set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${_dirs})
  endif()
else()
  # Without dpkg-shlibdeps, the runtime libraries of Debian 12 / Ubuntu 22.04 and newer, by hand.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libprotobuf-c1, libopenblas0 | libopenblas0-pthread")
endif()
# The CUDA backend needs the CUDA toolkit's cuBLAS and cuDNN, which Debian does not package the same way
# everywhere; without them the plugin is listed as unavailable and the CPU backend runs everything.
if(TARGET netrun-cuda)
  set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nvidia-cuda-toolkit, nvidia-cudnn")
endif()
include(CPack)
