# Dependency detection. Every dependency is reported on one line. Paths come from variables
# (as environment modules set them: CUDA_HOME, NCCL_HOME, HDF5_DIR/HDF5_ROOT, OPENBLAS_DIR/
# OPENBLAS_ROOT) or compiler wrappers (mpicxx, h5cc) first, pkg-config and system paths last.
# Required: MPI, HDF5, OpenBLAS. Optional: CUDA with cuBLAS (CUDA=auto|0|1), NCCL (NCCL=auto|0|1);
# CUDA=emulate runs the CUDA backend on the CPU through HIP-CPU (HIP_CPU_HOME) and stand-ins.

CUDA ?= auto
NCCL ?= auto
CUDA_ARCHS ?= 80 90
MPICXX ?= mpicxx
PKG_CONFIG ?= pkg-config

pkg_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
pkg_libs = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)
pkg_exists = $(shell $(PKG_CONFIG) --exists $(1) 2>/dev/null && echo yes)
first_dir = $(firstword $(foreach d,$(1),$(if $(wildcard $(d)/$(2)),$(d))))

# A found/absent dependency prints its line at once; a missing required one prints its line
# and stops the build after every line is out.
DETECT_ERRORS :=
report = $(info $(1))
missing = $(info $(1))$(eval DETECT_ERRORS += $(firstword $(1)))

# ---- MPI (required) through the compiler wrapper
MPICXX_PATH := $(shell command -v $(MPICXX) 2>/dev/null)
ifneq ($(MPICXX_PATH),)
  $(call report,MPI:      found $(MPICXX_PATH) ($(firstword $(shell $(MPICXX) -show 2>/dev/null))))
else
  $(call missing,MPI:      not found: no '$(MPICXX)' on PATH (load an MPI module, set MPICXX=/path/to/mpicxx, or run 'make deps'))
endif

# ---- HDF5 (required): HDF5_DIR/HDF5_ROOT, else h5cc -show, else pkg-config
HDF5_PREFIX := $(firstword $(HDF5_DIR) $(HDF5_ROOT) $(HDF5_HOME))
ifneq ($(HDF5_PREFIX),)
  HDF5_CFLAGS := -I$(HDF5_PREFIX)/include
  HDF5_LIBS := -L$(call first_dir,$(HDF5_PREFIX)/lib64 $(HDF5_PREFIX)/lib,libhdf5.so) -lhdf5
  HDF5_FROM := $(HDF5_PREFIX)
else ifneq ($(shell command -v h5cc 2>/dev/null),)
  H5CC_SHOW := $(shell h5cc -show 2>/dev/null)
  HDF5_CFLAGS := $(filter -I%,$(H5CC_SHOW))
  HDF5_LIBS := $(filter -L%,$(H5CC_SHOW)) -lhdf5
  HDF5_FROM := h5cc
else ifeq ($(call pkg_exists,hdf5),yes)
  HDF5_CFLAGS := $(call pkg_cflags,hdf5)
  HDF5_LIBS := $(call pkg_libs,hdf5)
  HDF5_FROM := pkg-config hdf5
endif
HDF5_INCDIR := $(call first_dir,$(patsubst -I%,%,$(HDF5_CFLAGS)) /usr/include,hdf5.h)
ifneq ($(HDF5_INCDIR),)
  $(call report,HDF5:     found hdf5.h in $(HDF5_INCDIR) (via $(or $(HDF5_FROM),system paths)))
else
  $(call missing,HDF5:     not found: no hdf5.h (load an HDF5 module, set HDF5_DIR=<prefix>, or run 'make deps'))
endif

# ---- OpenBLAS (required): OPENBLAS_DIR/OPENBLAS_ROOT, else Debian's OpenMP build, else
# pkg-config openblas. The CPU kernels thread their loops only beside an OpenMP build, which
# shares its pool with them (kernels/cpu/parallel_loops.h). Debian's is linked by its own path
# with an rpath: libopenblas.so.0 in the library path is whichever build `alternatives` chose.
OPENBLAS_PREFIX := $(firstword $(OPENBLAS_DIR) $(OPENBLAS_ROOT) $(OPENBLAS_HOME))
OPENBLAS_OPENMP_LIBDIR := $(firstword $(wildcard /usr/lib/*/openblas-openmp/libopenblas.so))
ifneq ($(OPENBLAS_PREFIX),)
  OPENBLAS_CFLAGS := -I$(OPENBLAS_PREFIX)/include
  OPENBLAS_LIBS := -L$(call first_dir,$(OPENBLAS_PREFIX)/lib64 $(OPENBLAS_PREFIX)/lib,libopenblas.so) -lopenblas
else ifneq ($(OPENBLAS_OPENMP_LIBDIR),)
  OPENBLAS_OPENMP_LIBDIR := $(patsubst %/,%,$(dir $(OPENBLAS_OPENMP_LIBDIR)))
  OPENBLAS_CFLAGS := -I/usr/include/$(notdir $(patsubst %/,%,$(dir $(OPENBLAS_OPENMP_LIBDIR))))/openblas-openmp
  OPENBLAS_LIBS := -L$(OPENBLAS_OPENMP_LIBDIR) -Wl,-rpath,$(OPENBLAS_OPENMP_LIBDIR) -lopenblas
else ifeq ($(call pkg_exists,openblas),yes)
  OPENBLAS_CFLAGS := $(call pkg_cflags,openblas)
  OPENBLAS_LIBS := $(call pkg_libs,openblas)
endif
OPENBLAS_INCDIR := $(call first_dir,$(patsubst -I%,%,$(OPENBLAS_CFLAGS)) /usr/include,cblas.h)
ifneq ($(OPENBLAS_INCDIR),)
  $(call report,OpenBLAS: found cblas.h in $(OPENBLAS_INCDIR))
else
  $(call missing,OpenBLAS: not found: no cblas.h (load an OpenBLAS module, set OPENBLAS_DIR=<prefix>, or run 'make deps'))
endif

# ---- CUDA + cuBLAS (optional), or the emulated GPU (CUDA=emulate: HIP-CPU + TBB, no nvcc)
ifeq ($(CUDA),0)
  $(call report,CUDA:     forced off (CUDA=0): CPU backend only)
  WITH_CUDA :=
else ifeq ($(CUDA),emulate)
  TBB_INCDIR := $(call first_dir,$(patsubst -I%,%,$(call pkg_cflags,tbb)) /usr/include /usr/local/include,tbb/tbb.h)
  TBB_LIBS ?= $(or $(call pkg_libs,tbb),-ltbb)
  ifeq ($(HIP_CPU_HOME),)
    $(call missing,CUDA:     CUDA=emulate needs HIP_CPU_HOME=<a HIP-CPU checkout> (its include/hip/hip_runtime.h))
  else ifeq ($(wildcard $(HIP_CPU_HOME)/include/hip/hip_runtime.h),)
    $(call missing,CUDA:     CUDA=emulate: no include/hip/hip_runtime.h under HIP_CPU_HOME=$(HIP_CPU_HOME))
  else ifeq ($(TBB_INCDIR),)
    $(call missing,CUDA:     CUDA=emulate: no tbb/tbb.h (HIP-CPU runs blocks on TBB: run 'make deps' or install libtbb-dev))
  else
    WITH_CUDA := 1
    CUDA_EMULATE := 1
    $(call report,CUDA:     emulated on the CPU by HIP-CPU in $(HIP_CPU_HOME); cuBLAS and NCCL by stand-ins over OpenBLAS and MPI)
  endif
else
  NVCC := $(if $(CUDA_HOME),$(wildcard $(CUDA_HOME)/bin/nvcc),$(shell command -v nvcc 2>/dev/null))
  CUDA_HOME := $(if $(CUDA_HOME),$(CUDA_HOME),$(patsubst %/bin/nvcc,%,$(NVCC)))
  CUDA_LIBDIR := $(call first_dir,$(CUDA_HOME)/lib64 $(CUDA_HOME)/lib $(CUDA_HOME)/targets/x86_64-linux/lib $(CUDA_HOME)/targets/sbsa-linux/lib,libcublas.so)
  ifeq ($(NVCC),)
    CUDA_WHY := no nvcc $(if $(CUDA_HOME),in $(CUDA_HOME)/bin,on PATH and CUDA_HOME unset)
  else ifeq ($(wildcard $(CUDA_HOME)/include/cublas_v2.h),)
    CUDA_WHY := nvcc at $(NVCC) but no cublas_v2.h in $(CUDA_HOME)/include
  else ifeq ($(CUDA_LIBDIR),)
    CUDA_WHY := nvcc at $(NVCC) but no libcublas.so under $(CUDA_HOME)
  endif
  ifeq ($(CUDA_WHY),)
    WITH_CUDA := 1
    $(call report,CUDA:     found $(NVCC) with cuBLAS in $(CUDA_LIBDIR); archs $(CUDA_ARCHS))
  else ifeq ($(CUDA),1)
    $(call missing,CUDA:     CUDA=1 asked for but $(CUDA_WHY) (set CUDA_HOME or load a CUDA module))
  else
    $(call report,CUDA:     not found ($(CUDA_WHY)): CPU backend only)
  endif
endif

# ---- NCCL (optional, only with CUDA)
ifneq ($(CUDA_EMULATE),)
  WITH_NCCL := 1
  $(call report,NCCL:     the stand-in over MPI (emulated GPU))
else ifeq ($(NCCL),0)
  $(call report,NCCL:     forced off (NCCL=0))
else ifeq ($(WITH_CUDA),)
  ifeq ($(NCCL),1)
    $(call missing,NCCL:     NCCL=1 asked for but the CUDA backend is off)
  else
    $(call report,NCCL:     not used (no CUDA backend))
  endif
else
  NCCL_INCDIR := $(call first_dir,$(if $(NCCL_HOME),$(NCCL_HOME)/include) $(CUDA_HOME)/include /usr/local/include /usr/include,nccl.h)
  NCCL_LIBDIR := $(call first_dir,$(if $(NCCL_HOME),$(NCCL_HOME)/lib64 $(NCCL_HOME)/lib) $(CUDA_LIBDIR) /usr/local/lib /usr/lib/x86_64-linux-gnu /usr/lib64,libnccl.so)
  ifneq ($(and $(NCCL_INCDIR),$(NCCL_LIBDIR)),)
    WITH_NCCL := 1
    $(call report,NCCL:     found nccl.h in $(NCCL_INCDIR) and libnccl in $(NCCL_LIBDIR))
  else ifeq ($(NCCL),1)
    $(call missing,NCCL:     NCCL=1 asked for but nccl.h/libnccl.so not found (set NCCL_HOME))
  else
    $(call report,NCCL:     not found (set NCCL_HOME): MPI collectives only)
  endif
endif

# ---- Header-only and small libraries: pkg-config where it knows them, else system paths.
# Clusters may override with *_CFLAGS / *_LIBS.
JSON_CFLAGS ?= $(call pkg_cflags,nlohmann_json)
CLI11_CFLAGS ?= $(call pkg_cflags,CLI11)
ZLIB_LIBS ?= $(or $(call pkg_libs,zlib),-lz)
GTEST_LIBS ?= $(or $(call pkg_libs,gtest),-lgtest) -pthread
BENCHMARK_LIBS ?= $(or $(call pkg_libs,benchmark),-lbenchmark) -pthread
