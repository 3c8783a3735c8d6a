# benchmarks/: the push/pull benchmark suite (make bench, make bench-quick).
# See docs/BENCHMARKS.md. bsbench and its IDL stubs are built only by the
# bench targets (EXTRA_*), so that `make` and `make check` do not pay for them.

EXTRA_PROGRAMS = benchmarks/bsbench benchmarks/plain_pair
EXTRA_LTLIBRARIES = benchmarks/libbsbench_idl.la

# omniidl stubs of the corba variant, into the build tree only.
bsbench_idl_generated = benchmarks/idl/BsBench.hh benchmarks/idl/BsBenchSK.cc
CLEANFILES += $(bsbench_idl_generated) benchmarks/idl/.stamp benchmarks/bsbench$(EXEEXT) \
	benchmarks/libbsbench_idl.la benchmarks/plain_pair$(EXEEXT)
EXTRA_DIST += benchmarks/BsBench.idl benchmarks/run_bench.py benchmarks/plot.py benchmarks/dcmtk_peer.py \
	benchmarks/bench_link.py benchmarks/tun_delay.py benchmarks/bench_plan.py benchmarks/bench_runner.py \
	benchmarks/bench_summary.py benchmarks/bench_schema.py benchmarks/local_pull.py benchmarks/tests/test_plot.py \
	benchmarks/bench_cli.py benchmarks/bench_targets.py benchmarks/tests/test_targets.py benchmarks/bench_rados.py benchmarks/bench_events.py \
	benchmarks/bench_dicom.py benchmarks/bench_dicom_goals.py benchmarks/bench_copy.py \
	benchmarks/bench_readthrough.py benchmarks/bench_streams.py benchmarks/bench_output.py \
	benchmarks/bench_compress.py \
	benchmarks/bench_paced.py benchmarks/ab_daemons.py

# plot.py's colours and legend, on a made-up results.json (no network, no
# bsbench; skips with 77 when no python3 has matplotlib); the goals table
# (bench_targets.py) on made-up summaries.
TESTS += benchmarks/tests/test_plot.py benchmarks/tests/test_targets.py

$(bsbench_idl_generated): benchmarks/idl/.stamp
	@test -f $@ || { rm -f benchmarks/idl/.stamp; $(MAKE) $(AM_MAKEFLAGS) benchmarks/idl/.stamp; }

benchmarks/idl/.stamp: $(top_srcdir)/benchmarks/BsBench.idl
	@$(MKDIR_P) benchmarks/idl
	$(AM_V_GEN)$(OMNIIDL) -bcxx -Wbh=.hh -Wbs=SK.cc -C benchmarks/idl $(abs_top_srcdir)/benchmarks/BsBench.idl
	@touch $@

# The stubs are not our code: compiled without our warning flags.
nodist_benchmarks_libbsbench_idl_la_SOURCES = benchmarks/idl/BsBenchSK.cc
benchmarks_libbsbench_idl_la_CXXFLAGS = $(SANITIZER_FLAGS) -w
benchmarks_libbsbench_idl_la_CPPFLAGS = -I$(top_builddir)/benchmarks/idl $(OMNIORB_CFLAGS)
$(benchmarks_libbsbench_idl_la_OBJECTS): benchmarks/idl/BsBench.hh

# One file per variant (a table of operations, Variant.h) and a small main.
benchmarks_bsbench_SOURCES = \
	benchmarks/src/main.cpp \
	benchmarks/src/Config.cpp \
	benchmarks/src/Config.h \
	benchmarks/src/Runner.cpp \
	benchmarks/src/Runner.h \
	benchmarks/src/Report.cpp \
	benchmarks/src/Report.h \
	benchmarks/src/Variant.cpp \
	benchmarks/src/Variant.h \
	benchmarks/src/Workload.cpp \
	benchmarks/src/Workload.h \
	benchmarks/src/WireClient.h \
	benchmarks/src/WireSession.h \
	benchmarks/src/RawC.cpp \
	benchmarks/src/DurableFiles.cpp \
	benchmarks/src/DurableFiles.h \
	benchmarks/src/Ace.cpp \
	benchmarks/src/Corba.cpp \
	benchmarks/src/BlobStreamingVariant.cpp \
	benchmarks/src/Memcpy.cpp
benchmarks_bsbench_CPPFLAGS = $(AM_CPPFLAGS) -isystem $(top_builddir)/benchmarks/idl \
	$(OMNIORB_CFLAGS) $(ACE_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
if SANITIZERS
# GCC 12 with -fsanitize reports a false -Warray-bounds in the omniidl
# skeleton's constructor (POA_BsBench::Server) inlined into Corba.cpp; not
# our code.
benchmarks_bsbench_CXXFLAGS = $(AM_CXXFLAGS) -Wno-array-bounds
endif
benchmarks_bsbench_LDADD = benchmarks/libbsbench_idl.la clients/libblobclient.la transporter/libblobtransporter.la common/libblobcli.la \
	common/libblobcommon.la $(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS)
$(benchmarks_bsbench_OBJECTS): benchmarks/idl/BsBench.hh

# The plain C client/server pair that `blob push`/`blob pull` are timed
# against as whole processes (bench_cli.py): sendfile out, a read loop in,
# fdatasync and one Ack byte (WARN_CFLAGS: the C subset of our warnings).
benchmarks_plain_pair_SOURCES = benchmarks/plain_pair.c
benchmarks_plain_pair_CFLAGS = $(WARN_CFLAGS) $(SANITIZER_FLAGS)

# The driver starts omniNames, blobstored, the bsbench servers, iperf3 and
# DCMTK's storescp (on 127.0.0.1 with ephemeral ports, or inside two network
# namespaces for the netns links), runs every variant, stops what it started
# by PID and writes $(BENCH_OUT)/<link>/{results.json,summary.json,summary.md}.
BENCH_OUT = bench-results
BENCH_FLAGS =
bench_programs = benchmarks/bsbench$(EXEEXT) benchmarks/plain_pair$(EXEEXT) blobstore/blobstored$(EXEEXT) \
	clients/blob$(EXEEXT)
bench_driver = $(PYTHON) $(abs_top_srcdir)/benchmarks/run_bench.py \
	--bsbench $(abs_top_builddir)/benchmarks/bsbench$(EXEEXT) \
	--blobstored $(abs_top_builddir)/blobstore/blobstored$(EXEEXT) \
	--blob $(abs_top_builddir)/clients/blob$(EXEEXT) \
	--plain-pair $(abs_top_builddir)/benchmarks/plain_pair$(EXEEXT) \
	--omninames '$(OMNINAMES)'
bench_plot = $(PYTHON) $(abs_top_srcdir)/benchmarks/plot.py
bench_links = "1gbit 0" "155mbit 0" "1gbit 2" "1gbit 20"

# Full suite: loopback (every size, buffers 64K to 4M and auto, 10 runs per point; then
# same-host against TCP pulls of 256 MiB and blob against plain_pair with
# 1 GiB, 10 runs each), then the namespace links (root only; skipped with a
# message otherwise): veth at 1 Gbit/s and 155 Mbit/s, and 1 Gbit/s with
# 2 ms and 20 ms round trips. Plots from each results.json; then
# bench-events; last, the issue's goals from every link's and the events'
# summary.json, printed and written to $(BENCH_OUT)/targets.{md,json}.
bench: $(bench_programs)
	$(bench_driver) --out $(BENCH_OUT)/loopback $(BENCH_FLAGS)
	$(bench_plot) $(BENCH_OUT)/loopback/results.json --out $(BENCH_OUT)/loopback
	@set -e; for link in $(bench_links); do \
	  set -- $$link; dir=$(BENCH_OUT)/netns-$$1-rtt$$2ms; \
	  $(bench_driver) --plan net --link netns --rate $$1 --rtt-ms $$2 --out $$dir $(BENCH_FLAGS); \
	  if test -s $$dir/results.json && grep -q '"start"' $$dir/results.json; then \
	    $(bench_plot) $$dir/results.json --out $$dir; fi; \
	done
	$(MAKE) $(AM_MAKEFLAGS) bench-events
	@set -e; dirs=$(BENCH_OUT)/loopback; for link in $(bench_links); do \
	  set -- $$link; dirs="$$dirs $(BENCH_OUT)/netns-$$1-rtt$$2ms"; done; \
	  $(PYTHON) $(abs_top_srcdir)/benchmarks/bench_targets.py $$dirs $(BENCH_OUT)/events --out $(BENCH_OUT)
	$(MAKE) $(AM_MAKEFLAGS) bench-rados

# RadosStore against `rados put`/`rados get` (`--striper` above 128 MiB) on one
# throwaway single-node Ceph cluster, whole processes, 32 and 256 MiB, 10 runs:
# $(BENCH_OUT)/rados/summary.{json,md}. Skipped with a message when Ceph is not
# installed; fails only on wrong bytes.
RADOS_BENCH_FLAGS =
bench-rados: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT)
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_rados.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/rados $(RADOS_BENCH_FLAGS)

# Commit -> subscriber notified (store events, `blob watch`), 1 and 100
# subscribers on loopback, 100 commits each: $(BENCH_OUT)/events/summary.json
# with the goals' rows. Reported, never asserted (goals with 100: p50 <= 5 ms,
# p99 <= 20 ms).
EVENTS_BENCH_FLAGS =
bench-events: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT)
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_events.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/events $(EVENTS_BENCH_FLAGS)

# Compression on the wire: synthetic CT slices (48 MiB) pushed and pulled with
# --compress none, zstd and auto, 3 rounds alternating, on loopback and on a
# veth link rate-limited to 155 Mbit/s (root only; skipped with a message
# otherwise): $(BENCH_OUT)/compress.json with the speed-ups of the same run.
# Reported, never asserted (goals: zstd >= 1.8x at 155 Mbit/s, auto never
# slower than none on loopback).
COMPRESS_BENCH_FLAGS =
bench-compress: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT)
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_compress.py --build $(abs_top_builddir) \
	  --omninames '$(OMNINAMES)' --out $(BENCH_OUT)/compress.json $(COMPRESS_BENCH_FLAGS)

# Precaching a study with `blob copy`: 200 x 0.5 MiB to one store and to 4
# in the same run, from a source whose file the destinations read and from
# one they chain from through data ports: $(BENCH_OUT)/copy/summary.json.
# Reported, never asserted (target: 4 stores <= 1.5 x the time of one).
COPY_BENCH_FLAGS =
bench-copy: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT)
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_copy.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/copy $(COPY_BENCH_FLAGS)

# The first pull through a read-through cache against a pull straight from
# the central store, same run (READTHROUGH_BENCH_FLAGS: --size, --runs).
bench-readthrough: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT)
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_readthrough.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/readthrough $(READTHROUGH_BENCH_FLAGS)

# Parallel streams on a long fat link: two namespaces, 1 Gbit/s (tbf), 20 ms
# round trip (tun_delay.py), socket buffers capped at 256 KiB; `blob pull
# --streams 1/2/4`, push, and iperf3 -P 1/-P 4 in the same run:
# $(BENCH_OUT)/streams/summary.{json,md}. Needs root (skipped otherwise).
# Reported, never asserted (targets: 4 streams >= 3 x one, >= 0.9 x iperf3 -P 4).
STREAMS_BENCH_FLAGS =
bench-streams: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT)
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_streams.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/streams $(STREAMS_BENCH_FLAGS)

# Smoke run for CI (2-3 minutes on a busy 2-vCPU VM): few sizes and runs, loopback only, the
# whole-program steps small (32 MiB same-host pulls, 64 MiB blob against
# plain_pair, 3 runs); fails when any variant moved wrong bytes (SHA-256, or
# files compared) or the digest check itself misses a corrupted byte, never
# on speed. Prints the goals table (rows of other links: not measured).
# It also checks that contradictory options (--no-verify with raw-c, a
# raw-c-durable pull, an unknown --variants or --steps name) are refused with the exact error.
bench-quick: $(bench_programs)
	@out=`$(abs_top_builddir)/benchmarks/bsbench$(EXEEXT) -c 127.0.0.1 -p 1 --variant raw-c --no-verify 2>&1`; \
	  rc=$$?; if test $$rc != 1 || ! echo "$$out" | grep -q -e '--no-verify: only with --variant blobstreaming'; \
	  then echo "bench-quick: bsbench --variant raw-c --no-verify: exit $$rc: $$out" >&2; exit 1; fi
	@out=`$(abs_top_builddir)/benchmarks/bsbench$(EXEEXT) -c 127.0.0.1 -p 1 --variant raw-c-durable --direction pull 2>&1`; \
	  rc=$$?; if test $$rc != 1 || ! echo "$$out" | grep -q -e '--variant raw-c-durable is push-only'; \
	  then echo "bench-quick: bsbench --variant raw-c-durable --direction pull: exit $$rc: $$out" >&2; exit 1; fi
	@out=`$(bench_driver) --variants raw-c,no-such-variant 2>&1`; \
	  rc=$$?; if test $$rc != 2 || ! echo "$$out" | grep -q -e '--variants: unknown no-such-variant; allowed: raw-c,'; \
	  then echo "bench-quick: run_bench.py --variants raw-c,no-such-variant: exit $$rc: $$out" >&2; exit 1; fi
	@out=`$(bench_driver) --steps points,no-such-step 2>&1`; \
	  rc=$$?; if test $$rc != 2 || ! echo "$$out" | grep -q -e '--steps: unknown no-such-step; allowed: points,same-host,cli'; \
	  then echo "bench-quick: run_bench.py --steps points,no-such-step: exit $$rc: $$out" >&2; exit 1; fi
	$(bench_driver) --quick --out $(BENCH_OUT)/quick $(BENCH_FLAGS)

# The DICOM gateway against DCMTK's storescp and Orthanc (a 200-slice CT
# study, 0.5 MiB slices, one storescu association and four at once, median of
# 3) and `blob find` by
# PatientID among 100,000 indexed instances (docs/DICOM.md, "Figures"); then,
# in the same run, the C-MOVE against storescu (bench_dicom_move.py,
# DICOM_MOVE_BENCH_FLAGS) and DICOMweb against Orthanc (bench_dicom_orthanc.py,
# DICOM_ORTHANC_BENCH_FLAGS; docs/BENCHMARKS.md, "DICOMweb against Orthanc");
# last, bench_dicom_goals.py prints every figure beside its goal (a step that
# fails does not stop the others; make then fails after the table).
# Reported, never asserted.
DICOM_BENCH_FLAGS =
DICOM_MOVE_BENCH_FLAGS =
DICOM_ORTHANC_BENCH_FLAGS =
bench-dicom: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT) gateway/blob-dicomd$(EXEEXT)
	@rm -f $(BENCH_OUT)/dicom/summary.json $(BENCH_OUT)/dicom-move/summary.json \
	  $(BENCH_OUT)/dicom-orthanc/summary.json; rc=0; \
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_dicom.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/dicom $(DICOM_BENCH_FLAGS) || rc=1; \
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_dicom_move.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/dicom-move $(DICOM_MOVE_BENCH_FLAGS) || rc=1; \
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_dicom_orthanc.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/dicom-orthanc $(DICOM_ORTHANC_BENCH_FLAGS) || rc=1; \
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_dicom_goals.py --results $(BENCH_OUT); \
	if test $$rc != 0; then echo "bench-dicom: a step failed (its goals above say not measured)" >&2; fi; \
	exit $$rc

.PHONY: bench bench-quick bench-rados bench-events bench-copy bench-readthrough bench-dicom bench-streams bench-compress

# C-MOVE of a 200-slice CT study (0.5 MiB slices) from blob-dicomd to DCMTK's
# storescp against storescu sending the same files to it: one untimed run of
# each, then up to 15 interleaved rounds within 60 s, medians, each round's
# ratio, CPU and context switches per run (DICOM_MOVE_BENCH_FLAGS;
# docs/DICOM.md, "C-MOVE against storescu"). Reported, never asserted.
EXTRA_DIST += benchmarks/bench_dicom_move.py
bench-dicom-move: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT) gateway/blob-dicomd$(EXEEXT)
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_dicom_move.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/dicom-move $(DICOM_MOVE_BENCH_FLAGS)
.PHONY: bench-dicom-move

# blob-dicomd's DICOMweb against Orthanc's DICOMweb plugin on the same files:
# WADO-RS retrieve of a 200-slice study (median of 5), one frame of a
# 600-frame and of a 20-frame instance (median of 20); also run by bench-dicom.
# Reported, never asserted; Orthanc missing: reported as skipped.
EXTRA_DIST += benchmarks/bench_dicom_orthanc.py
bench-dicom-orthanc: blobstore/blobstored$(EXEEXT) clients/blob$(EXEEXT) gateway/blob-dicomd$(EXEEXT)
	$(PYTHON) $(abs_top_srcdir)/benchmarks/bench_dicom_orthanc.py --build $(abs_top_builddir) \
	  --out $(BENCH_OUT)/dicom-orthanc $(DICOM_ORTHANC_BENCH_FLAGS)
.PHONY: bench-dicom-orthanc
