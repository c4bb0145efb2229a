# mlpscale build. `make` builds every executable into bin/; `make test` and `make bench` first
# run `make deps`, then build and run in a sub-make (so detection sees what deps installed).
SHELL := /bin/bash
.DEFAULT_GOAL := all

# Goals that must work before dependencies exist: they skip detection.
SETUP_GOALS := deps clean help test bench plots
ifneq ($(filter-out $(SETUP_GOALS),$(or $(MAKECMDGOALS),all)),)
include mk/detect.mk
ifneq ($(strip $(DETECT_ERRORS)),)
$(error missing dependencies: $(DETECT_ERRORS) (see the lines above))
endif
endif

# The emulated-GPU build goes to its own folders, so the normal build is untouched.
ifeq ($(CUDA),emulate)
BUILD := build/emulate
BIN := bin/emulate
else
BUILD := build
BIN := bin
endif
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)

OPTFLAGS ?= -O3
# Debug information, for profilers and backtraces. The emulated GPU build is a test vehicle and
# goes without: -g is 35-40% of its compile time (HIP-CPU's headers).
ifeq ($(CUDA),emulate)
DEBUGFLAGS ?=
else
DEBUGFLAGS ?= -g
endif
CXX := $(MPICXX)
CPPFLAGS := -I. $(HDF5_CFLAGS) $(OPENBLAS_CFLAGS) $(JSON_CFLAGS) $(CLI11_CFLAGS)
CXXFLAGS ?= $(OPTFLAGS) $(DEBUGFLAGS)
# -fno-math-errno: nothing reads errno, and it lets loops with sqrt vectorise. -fopenmp: the CPU
# kernels split their loops across the rank's threads. -ffp-contract=off: no fused multiply-adds
# the source does not write, so the kernels' AVX-512 and baseline clones agree bit for bit.
CXXFLAGS += -std=c++20 -Wall -Wextra -MMD -MP -fno-math-errno -fopenmp -ffp-contract=off
LDLIBS := $(HDF5_LIBS) $(OPENBLAS_LIBS) $(ZLIB_LIBS) -lpthread -fopenmp

ifneq ($(CUDA_EMULATE),)
  # kernels/cuda/*.cu compiled as C++ against HIP-CPU: kernels/emulate/include maps the CUDA,
  # cuBLAS and NCCL names used onto HIP-CPU and the stand-ins in kernels/emulate/*.cpp.
  CPPFLAGS += -DMLPSCALE_WITH_CUDA -DMLPSCALE_CUDA_EMULATE -DMLPSCALE_WITH_NCCL \
    -Ikernels/emulate/include -isystem $(HIP_CPU_HOME)/include
  LDLIBS += $(TBB_LIBS)
  COMPILE_CU = $(CXX) $(CPPFLAGS) $(CXXFLAGS) -x c++ -c $< -o $@
else ifneq ($(WITH_CUDA),)
  CPPFLAGS += -DMLPSCALE_WITH_CUDA -I$(CUDA_HOME)/include
  LDLIBS += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublas -lcudart
  NVCCFLAGS ?= $(OPTFLAGS)
  CUDA_PTX_ARCH := $(shell printf '%s\n' $(CUDA_ARCHS) | sort -n | tail -n1)
  # -lineinfo: Nsight Compute and compute-sanitizer name the source line of a kernel's code.
  # Machine code for each listed architecture, and PTX for the highest, which the driver
  # compiles at load time for any newer GPU (without it those fail at the first launch).
  NVCCFLAGS += -std=c++20 -I. -DMLPSCALE_WITH_CUDA -MMD -MP -lineinfo \
    -ccbin $(firstword $(shell $(MPICXX) -show)) \
    -Xcompiler -Wall,-Wextra $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
    -gencode arch=compute_$(CUDA_PTX_ARCH),code=compute_$(CUDA_PTX_ARCH)
  COMPILE_CU = $(NVCC) $(NVCCFLAGS) -c $< -o $@
  # The optimizer's kernels without fused multiply-adds: they compute the CPU's expression
  # exactly, so an update offloaded to the host (CPU Adam) equals the GPU's bit for bit.
  $(BUILD)/kernels/cuda/optimizer_cuda.o: NVCCFLAGS += -fmad=false
  ifneq ($(WITH_NCCL),)
    CPPFLAGS += -DMLPSCALE_WITH_NCCL -I$(NCCL_INCDIR)
    LDLIBS += -L$(NCCL_LIBDIR) -Wl,-rpath,$(NCCL_LIBDIR) -lnccl
  endif
endif

LIB_SRCS := $(wildcard src/*/*.cpp src/*/*/*.cpp kernels/cpu/*.cpp) \
  $(if $(CUDA_EMULATE),$(wildcard kernels/emulate/*.cpp))
CUDA_SRCS := $(if $(WITH_CUDA),$(wildcard kernels/cuda/*.cu))
LIB_OBJS := $(LIB_SRCS:%.cpp=$(BUILD)/%.o) $(CUDA_SRCS:%.cu=$(BUILD)/%.o)
LIB := $(BUILD)/libmlpscale.a

# Every bench/*.cpp is the main of one executable; bench_* ones use Google Benchmark.
PROGRAMS := $(patsubst bench/%.cpp,$(BIN)/%,$(wildcard bench/*.cpp))
BENCH_PROGRAMS := $(filter $(BIN)/bench_%,$(PROGRAMS))
SCHEME_PROGRAMS := $(filter-out $(BENCH_PROGRAMS),$(PROGRAMS))
BENCH_SUPPORT_SRCS := $(wildcard bench/support/*.cpp)
BENCH_SUPPORT_OBJS := $(BENCH_SUPPORT_SRCS:%.cpp=$(BUILD)/%.o)
TEST_SRCS := $(wildcard tests/*.cpp tests/unit/*/*.cpp tests/unit/*/*/*.cpp)
TEST_OBJS := $(TEST_SRCS:%.cpp=$(BUILD)/%.o)
UNIT_TESTS := $(BIN)/unit_tests
# tests/mpi/*.cpp: the tests that run under mpiexec with several ranks.
MPI_TEST_SRCS := $(wildcard tests/mpi/*.cpp)
MPI_TEST_OBJS := $(MPI_TEST_SRCS:%.cpp=$(BUILD)/%.o)
MPI_TESTS := $(BIN)/mpi_tests

.PHONY: all deps test bench plots calibrate gpu-check run-tests run-bench clean help
all: $(PROGRAMS) $(UNIT_TESTS) $(MPI_TESTS)

help:
	@echo "make            build every executable into bin/ (CUDA=auto|0|1, NCCL=auto|0|1, CUDA_ARCHS='80 90')"
	@echo "make CUDA=emulate   the CUDA backend run on the CPU (HIP_CPU_HOME=<HIP-CPU checkout>) into bin/emulate/"
	@echo "make deps       install missing system and Python packages (Debian/Ubuntu as root), else list them"
	@echo "make test       deps, build, run the unit and command-line tests (and the emulated GPU's, with HIP_CPU_HOME)"
	@echo "make bench      deps, build, run the kernel, floor, collective and data-parallel benchmarks, then plots"
	@echo "make calibrate  measure this machine into inputs/machines/local.json (bin/plan's and every run's prediction)"
	@echo "make gpu-check  on a machine with NVIDIA GPUs: build for it, check and time it (results/gpu-check)"
	@echo "make plots      render the result and --trace files under results/ (or RESULTS=DIR) into plots/ there"
	@echo "make clean      remove build/ and bin/"

deps:
	@bash mk/deps.sh

test: deps
	@$(MAKE) --no-print-directory run-tests

bench: deps
	@$(MAKE) --no-print-directory run-bench

# Every plot of every result and trace file under $(RESULTS), and $(RESULTS)/plots/index.md
# showing them.
RESULTS ?= results
plots: deps
	@.venv/bin/python analysis/make_plots.py "$(RESULTS)"

# When HIP_CPU_HOME names a HIP-CPU checkout, `make test` also builds and runs the emulated GPU.
run-tests: all
ifneq ($(wildcard $(HIP_CPU_HOME)/include/hip/hip_runtime.h),)
	@$(MAKE) --no-print-directory CUDA=emulate all
endif
	@bash tests/run_all.sh

run-bench: all
	@bash bench/run_all.sh

calibrate: all
	@bash bench/calibrate.sh

# The prepared GPU check (tests/gpu_check.sh): builds for this machine's GPU and runs its
# checks and measurements into results/gpu-check, with a one-screen summary.
gpu-check: deps
	@bash tests/gpu_check.sh

$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@  # ar r would keep the members of deleted sources
	ar rcs $@ $^

# Static pattern rules: each executable has exactly one way to be linked.
$(BENCH_PROGRAMS): $(BIN)/%: $(BUILD)/bench/%.o $(BENCH_SUPPORT_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(BENCHMARK_LIBS)

$(SCHEME_PROGRAMS): $(BIN)/%: $(BUILD)/bench/%.o $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(UNIT_TESTS): $(TEST_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(GTEST_LIBS)

$(MPI_TESTS): $(MPI_TEST_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(GTEST_LIBS)

# The commit goes into results; the stamp file changes only when the commit does.
$(BUILD)/git_commit.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
$(BUILD)/src/results/run_info.o: $(BUILD)/git_commit.stamp
$(BUILD)/src/results/run_info.o: CPPFLAGS += -DMLPSCALE_GIT_COMMIT='"$(GIT_COMMIT)"'
.PHONY: FORCE
FORCE:
# Keep object files of executables (make would delete them as intermediates).
.SECONDARY:

# Objects rebuild when the compiler flags change (CUDA=0 after CUDA=1, say), not only sources.
FLAGS_TEXT := $(CXX) $(CPPFLAGS) $(CXXFLAGS) | $(NVCC) $(NVCCFLAGS)
$(BUILD)/flags.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(FLAGS_TEXT)' | cmp -s - $@ || echo '$(FLAGS_TEXT)' > $@

$(BUILD)/%.o: %.cpp $(BUILD)/flags.stamp
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu $(BUILD)/flags.stamp
	@mkdir -p $(@D)
	$(COMPILE_CU)

clean:
	rm -rf $(BUILD) $(BIN)

-include $(LIB_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(MPI_TEST_OBJS:.o=.d) $(BENCH_SUPPORT_OBJS:.o=.d) $(PROGRAMS:$(BIN)/%=$(BUILD)/bench/%.d)
