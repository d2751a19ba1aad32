# GPU support (INFERPROF_WITH_CUDA = AUTO | ON | OFF): on when libtorch was
# built with CUDA and the CUDA runtime, CUPTI and NVTX (v3, header-only) are
# found, in a CUDA toolkit (/usr/local/cuda, CUDAToolkit_ROOT) or in the
# nvidia-* wheels next to a pip-installed torch. Sets INFERPROF_HAS_CUDA (0/1),
# INFERPROF_CUDA_INCLUDE_DIRS, INFERPROF_CUDA_LIBRARIES and
# INFERPROF_CUDA_SUMMARY. Call after find_package(Torch).
set(INFERPROF_HAS_CUDA 0)
set(INFERPROF_CUDA_INCLUDE_DIRS "")
set(INFERPROF_CUDA_LIBRARIES "")
string(TOUPPER "${INFERPROF_WITH_CUDA}" _want)
if(NOT _want MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "INFERPROF_WITH_CUDA must be AUTO, ON or OFF (got '${INFERPROF_WITH_CUDA}')")
endif()

if(_want STREQUAL "OFF")
  set(INFERPROF_CUDA_SUMMARY "off (INFERPROF_WITH_CUDA=OFF)")
  return()
endif()

set(_missing "")
# libtorch with CUDA: its config names the CUDA libraries, or c10_cuda sits beside c10.
set(_torch_cuda FALSE)
if(TORCH_CUDA_LIBRARIES OR TARGET c10_cuda OR TARGET torch_cuda)
  set(_torch_cuda TRUE)
else()
  foreach(_lib ${TORCH_LIBRARIES})
    if(_lib MATCHES "^/" AND EXISTS "${_lib}")
      get_filename_component(_dir "${_lib}" DIRECTORY)
      if(EXISTS "${_dir}/libc10_cuda.so")
        set(_torch_cuda TRUE)
      endif()
    endif()
  endforeach()
endif()
if(NOT _torch_cuda)
  list(APPEND _missing "libtorch with CUDA (this one is CPU-only: ${Torch_DIR})")
endif()

# Where to look: the toolkit, and the nvidia wheels of a pip torch
# (site-packages/torch/share/cmake/Torch -> site-packages/nvidia/*).
set(_hints "")
if(CUDAToolkit_ROOT)
  list(APPEND _hints "${CUDAToolkit_ROOT}" "${CUDAToolkit_ROOT}/extras/CUPTI")
endif()
if(DEFINED ENV{CUDA_HOME})
  list(APPEND _hints "$ENV{CUDA_HOME}" "$ENV{CUDA_HOME}/extras/CUPTI")
endif()
list(APPEND _hints /usr/local/cuda /usr/local/cuda/extras/CUPTI)
if(Torch_DIR)
  get_filename_component(_site "${Torch_DIR}/../../../.." ABSOLUTE)
  file(GLOB _wheel_dirs LIST_DIRECTORIES true "${_site}/nvidia/*" "${_site}/nvidia/cu*/*")
  list(APPEND _hints ${_wheel_dirs} "${_site}/nvidia/cu13" "${_site}/nvidia/cu12")
endif()

set(_inc include targets/x86_64-linux/include)
set(_lib lib64 lib targets/x86_64-linux/lib)
find_path(INFERPROF_CUPTI_INCLUDE_DIR cupti.h HINTS ${_hints} PATH_SUFFIXES ${_inc})
find_path(INFERPROF_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${_hints} PATH_SUFFIXES ${_inc})
find_path(INFERPROF_CUDART_INCLUDE_DIR cuda_runtime_api.h HINTS ${_hints} PATH_SUFFIXES ${_inc})
find_library(INFERPROF_CUPTI_LIBRARY NAMES cupti libcupti.so.13 libcupti.so.12 HINTS ${_hints} PATH_SUFFIXES ${_lib})
find_library(INFERPROF_CUDART_LIBRARY NAMES cudart libcudart.so.13 libcudart.so.12 HINTS ${_hints} PATH_SUFFIXES ${_lib})
foreach(_v INFERPROF_CUPTI_INCLUDE_DIR INFERPROF_NVTX_INCLUDE_DIR INFERPROF_CUDART_INCLUDE_DIR
           INFERPROF_CUPTI_LIBRARY INFERPROF_CUDART_LIBRARY)
  if(NOT ${_v})
    list(APPEND _missing "${_v}")
  endif()
endforeach()

if(_missing)
  list(JOIN _missing ", " _m)
  if(_want STREQUAL "ON")
    message(FATAL_ERROR "INFERPROF_WITH_CUDA=ON but GPU support is not possible: missing ${_m}. "
      "Use a CUDA libtorch (e.g. -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')) "
      "and a CUDA toolkit with CUPTI and NVTX (-DCUDAToolkit_ROOT=/usr/local/cuda), or -DINFERPROF_WITH_CUDA=OFF.")
  endif()
  set(INFERPROF_CUDA_SUMMARY "off (AUTO: missing ${_m})")
  return()
endif()

set(INFERPROF_HAS_CUDA 1)
set(INFERPROF_CUDA_INCLUDE_DIRS ${INFERPROF_CUPTI_INCLUDE_DIR} ${INFERPROF_NVTX_INCLUDE_DIR} ${INFERPROF_CUDART_INCLUDE_DIR})
list(REMOVE_DUPLICATES INFERPROF_CUDA_INCLUDE_DIRS)
set(INFERPROF_CUDA_LIBRARIES ${INFERPROF_CUPTI_LIBRARY} ${INFERPROF_CUDART_LIBRARY} ${CMAKE_DL_LIBS})
set(INFERPROF_CUDA_SUMMARY "on (CUPTI ${INFERPROF_CUPTI_LIBRARY}, NVTX ${INFERPROF_NVTX_INCLUDE_DIR})")
