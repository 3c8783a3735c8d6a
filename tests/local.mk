# tests/: multi-process system tests (Python drivers of real processes).
# Each script starts its own omniNames and blobstored on 127.0.0.1 with
# ephemeral ports, drives the blob CLI and the examples, and stops every
# process it started. See tests/README.md.

system_tests = \
	tests/test_layers.py \
	tests/test_symbol_layout.py \
	tests/test_push_pull.py \
	tests/test_series.py \
	tests/test_locate.py \
	tests/test_placement.py \
	tests/test_glib_loop.py \
	tests/test_store_in_use.py \
	tests/test_sighup.py \
	tests/test_dead_store.py \
	tests/test_push_many.py \
	tests/test_doc_snippets.py \
	tests/test_errors.py \
	tests/test_kill_mid_push.py \
	tests/test_listen_addresses.py \
	tests/test_data_port_abuse.py \
	tests/test_idl_abuse.py \
	tests/test_load.py \
	tests/test_naming_restart.py \
	tests/test_client_killed.py \
	tests/test_crash_consistency.py \
	tests/test_store_full.py \
	tests/test_evict.py \
	tests/test_tiers.py \
	tests/test_activation.py \
	tests/test_activation_failures.py \
	tests/test_activation_tls.py \
	tests/test_cli_ux.py \
	tests/test_cli_manners.py \
	tests/test_metrics.py \
	tests/test_advertise.py \
	tests/test_install.py \
	tests/test_run_demo.py \
	tests/test_events.py \
	tests/test_event_fairness.py \
	tests/test_tls.py \
	tests/test_tls_access.py \
	tests/test_copy_authority.py \
	tests/test_ownership.py \
	tests/test_resume_after_restart.py \
	tests/test_resume_verify.py \
	tests/test_replace_race.py \
	tests/test_streams.py \
	tests/test_compression.py \
	tests/test_descriptor_flood.py \
	tests/test_control_flood.py \
	tests/test_cli_io.py \
	tests/test_push_stream.py \
	tests/test_checksum_cli.py \
	tests/test_checksum_compat.py \
	tests/test_reservation_flood.py \
	tests/test_store_dir_removed.py \
	tests/test_full_disk.py \
	tests/test_stop_cont.py \
	tests/test_data_port_flood.py \
	tests/test_notices.py \
	tests/test_cli_notices.py \
	tests/test_transporter_reclaim.py \
	tests/test_cli_common.py \
	tests/test_library_logging.py \
	tests/test_ceph_cluster.py \
	tests/test_rados_store.py \
	tests/test_rados_daemon.py \
	tests/test_rados_resume_after_restart.py \
	tests/test_dicom_gateway.py \
	tests/test_dicom_logfile.py \
	tests/test_dicom_lockout.py \
	tests/test_dicom_security.py \
	tests/test_dicom_tls.py \
	tests/test_study_stable.py \
	tests/test_dicom_find.py \
	tests/test_dicom_retrieve.py \
	tests/test_dicom_move.py \
	tests/test_dicom_index.py \
	tests/test_dicom_conflicts.py \
	tests/test_dicom_rescan.py \
	tests/test_dicom_acknowledged.py \
	tests/test_dicom_ingest.py \
	tests/test_round_trips.py \
	tests/test_named_requests.py \
	tests/test_dicom_charsets.py \
	tests/test_dicom_query_keys.py \
	tests/test_dicom_get_syntax.py \
	tests/test_dicom_text.py \
	tests/test_dicom_postgresql.py \
	tests/test_dicomweb.py \
	tests/test_dicomweb_in_place.py \
	tests/test_dicomweb_batch.py \
	tests/test_dicomweb_mapped.py
TESTS += $(system_tests)
# bsbench and sdc-bench are built by the bench targets only; this test runs them too.
tests/test_cli_common.log: benchmarks/bsbench$(EXEEXT) sdc/sdc-bench$(EXEEXT)
# RadosStoreTest is a check program that only this script runs (on its cluster).
tests/test_rados_store.log: blobstore/tests/RadosStoreTest$(EXEEXT)
# The programs of the documentation are built against the library as
# installed: its headers and blobstreaming.pc by `install-data` into
# tests/snippet-root, the shared libraries copied beside them. Not `make
# install`: libtool relinks the libraries of the build tree in place while
# other tests run them.
tests/test_doc_snippets.log: snippet-stage
snippet-stage: $(lib_LTLIBRARIES) blobstreaming.pc
	$(AM_V_GEN)rm -rf $(abs_builddir)/tests/snippet-root && \
	$(MAKE) $(AM_MAKEFLAGS) install-data DESTDIR=$(abs_builddir)/tests/snippet-root >/dev/null && \
	$(MKDIR_P) $(abs_builddir)/tests/snippet-root$(libdir) && \
	for la in $(lib_LTLIBRARIES); do \
	  for so in $$(dirname $$la)/.libs/$$(basename $$la .la).so*; do \
	    case $$so in *T) ;; *) cp -P $$so $(abs_builddir)/tests/snippet-root$(libdir)/ || exit 1 ;; esac; \
	  done; \
	done
.PHONY: snippet-stage
clean-local: clean-snippet-root
clean-snippet-root:
	rm -rf $(abs_builddir)/tests/snippet-root
.PHONY: clean-snippet-root
dist_check_SCRIPTS += $(system_tests)
EXTRA_DIST += tests/tools/dicom_objects.py tests/tools/pynetdicom_peer.py tests/tools/dicomweb_peer.py tests/tools/dicom_move_peer.py tests/harness/dicom.py
EXTRA_DIST += tests/harness/orthanc.py
EXTRA_DIST += tests/harness/__init__.py tests/harness/ceph.py tests/harness/checks.py tests/harness/cli.py \
	tests/harness/cluster.py tests/harness/daemons.py tests/harness/files.py tests/harness/naming.py \
	tests/harness/ports.py tests/harness/processes.py tests/harness/script.py tests/harness/workspace.py \
	tests/README.md tests/tsan.supp tests/lsan.supp

# The test tools that speak CORBA (ticket_probe, idl_probe, corba_call,
# transporter_probe) build alike: automake wants per-program flags, these name them.
corba_tool_cppflags = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
corba_tool_ldadd = transporter/libblobtransporter.la common/libblobcommon.la \
	$(OMNIORB_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS)

# Obtains real tickets on the control plane and misuses them on the data port.
check_PROGRAMS += tests/tools/ticket_probe
tests_tools_ticket_probe_SOURCES = tests/tools/ticket_probe.cpp tests/tools/ProbeTickets.h transporter/tests/ProtocolPeer.h
tests_tools_ticket_probe_CPPFLAGS = $(corba_tool_cppflags) -I$(top_srcdir)/transporter/tests
tests_tools_ticket_probe_LDADD = $(corba_tool_ldadd)
$(tests_tools_ticket_probe_OBJECTS): idl/BlobStreaming.hh

include $(srcdir)/tests/fuzz/local.mk

# Calls the CORBA interface directly with malformed arguments.
check_PROGRAMS += tests/tools/idl_probe
tests_tools_idl_probe_SOURCES = tests/tools/idl_probe.cpp
tests_tools_idl_probe_CPPFLAGS = $(corba_tool_cppflags)
tests_tools_idl_probe_LDADD = $(corba_tool_ldadd)
$(tests_tools_idl_probe_OBJECTS): idl/BlobStreaming.hh

# libblobclient Sessions under test control: the load test and a long-lived
# client that outlives a Naming Service restart.
check_PROGRAMS += tests/tools/client_driver
tests_tools_client_driver_SOURCES = tests/tools/client_driver.cpp
tests_tools_client_driver_CPPFLAGS = $(AM_CPPFLAGS) $(SPDLOG_CFLAGS)
tests_tools_client_driver_LDADD = clients/libblobclient.la common/libblobcommon.la $(SPDLOG_LIBS)

# What libblobclient writes where: nothing on the application's stdout.
check_PROGRAMS += tests/tools/library_logging
tests_tools_library_logging_SOURCES = tests/tools/library_logging.cpp
tests_tools_library_logging_CPPFLAGS = $(AM_CPPFLAGS) $(SPDLOG_CFLAGS)
tests_tools_library_logging_LDADD = clients/libblobclient.la common/libblobcommon.la $(SPDLOG_LIBS)

# The full load test (64 clients x 20 transfers of 0.5-32 MiB) and event
# fairness with 1,000 bad subscribers; make check runs smaller variants of
# the same scripts.
check-load: $(check_PROGRAMS) $(bin_PROGRAMS)
	$(AM_V_at)$(AM_TESTS_ENVIRONMENT) BS_LOAD_FULL=1; export BS_LOAD_FULL; \
	$(PYTHON) $(srcdir)/tests/test_load.py
	$(AM_V_at)$(AM_TESTS_ENVIRONMENT) BS_EVENT_FAIRNESS_FULL=1; export BS_EVENT_FAIRNESS_FULL; \
	$(PYTHON) $(srcdir)/tests/test_event_fairness.py
.PHONY: check-load

# Interoperability with heavy peers, not in make check (they need the network
# once and take minutes): interop_tests lists them; each runs as make check
# runs a test (skipped, 77, when its peer is missing).
interop_tests = tests/test_ohif.py tests/test_orthanc.py
EXTRA_DIST += $(interop_tests)
check-interop: $(check_PROGRAMS) $(bin_PROGRAMS)
	$(AM_V_at)status=0; for t in $(interop_tests); do \
	  ( $(AM_TESTS_ENVIRONMENT) $(PYTHON) $(srcdir)/$$t ); rc=$$?; \
	  if test $$rc -ne 0 && test $$rc -ne 77; then status=1; fi; \
	done; exit $$status
.PHONY: check-interop

# Makes one control-plane call (any operation of a store, a transporter or a
# locator) as one client, with or without a TLS certificate, and prints the
# outcome (tests/test_tls.py, tests/test_tls_access.py).
check_PROGRAMS += tests/tools/corba_call
tests_tools_corba_call_SOURCES = tests/tools/corba_call.cpp
tests_tools_corba_call_CPPFLAGS = $(corba_tool_cppflags)
tests_tools_corba_call_LDADD = $(corba_tool_ldadd)
$(tests_tools_corba_call_OBJECTS): idl/BlobStreaming.hh

# Subscribes one reference to a store's events many times (a subscriber flood).
check_PROGRAMS += tests/tools/event_flood
tests_tools_event_flood_SOURCES = tests/tools/event_flood.cpp
tests_tools_event_flood_CPPFLAGS = $(corba_tool_cppflags)
tests_tools_event_flood_LDADD = $(corba_tool_ldadd)
$(tests_tools_event_flood_OBJECTS): idl/BlobStreaming.hh

# Drives BlobTransporter objects directly: observers nobody answers,
# transporters opened and never closed, a transporter held while the daemon
# reclaims it.
check_PROGRAMS += tests/tools/transporter_probe
tests_tools_transporter_probe_SOURCES = tests/tools/transporter_probe.cpp tests/tools/ProbeTickets.h transporter/tests/ProtocolPeer.h
tests_tools_transporter_probe_CPPFLAGS = $(corba_tool_cppflags) -I$(top_srcdir)/transporter/tests
tests_tools_transporter_probe_LDADD = $(corba_tool_ldadd)
$(tests_tools_transporter_probe_OBJECTS): idl/BlobStreaming.hh

# test_install.py runs `make install`, whose libtool relinks the build
# tree's libraries in place: it runs after every other test of the run, so
# that none of them loads a library while it is rewritten.
# (GNU make's filter-out, through a variable that automake does not parse.)
tests_before_install = $$(filter-out tests/test_install.log,$$(TEST_LOGS))
.SECONDEXPANSION:
tests/test_install.log: $(tests_before_install)

# The Debian packages (debian/) built from a copy of the tree, checked with
# lintian, installed with `dpkg --root` into a root of their own and used:
# the unit's command line serves, the installed blob pushes and pulls
# (tests/test_packages.py). Not part of `make check`: CI runs it after the
# suite (.ci/run). Needs `scripts/install-deps --packaging`.
check-packages: all
	$(AM_V_GEN)$(AM_TESTS_ENVIRONMENT) $(PYTHON) $(abs_top_srcdir)/tests/test_packages.py
.PHONY: check-packages
EXTRA_DIST += tests/test_packages.py debian
