# tests/: multi-process system tests (Python drivers of real processes).
# Each script starts its own omniNames and blobstored on 127.0.0.1 with
# ephemeral ports, drives the blob CLI and the examples, and stops every
# process it started. See tests/README.md.

system_tests = \
	tests/test_push_pull.py \
	tests/test_series.py \
	tests/test_locate.py \
	tests/test_errors.py \
	tests/test_kill_mid_push.py \
	tests/test_data_port_abuse.py \
	tests/test_tls.py
TESTS += $(system_tests)
dist_check_SCRIPTS += $(system_tests)
EXTRA_DIST += tests/bslib.py tests/README.md

# Obtains real tickets on the control plane and misuses them on the data port.
check_PROGRAMS += tests/tools/ticket_probe
tests_tools_ticket_probe_SOURCES = tests/tools/ticket_probe.cpp
tests_tools_ticket_probe_CPPFLAGS = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
tests_tools_ticket_probe_LDADD = transporter/libblobtransporter.la blobstore/libblobstore.la \
	$(OMNIORB_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS)
$(tests_tools_ticket_probe_OBJECTS): idl/BlobStreaming.hh

# Obtains a pull ticket over a TLS control plane (tests/test_tls.py presents
# it on a data connection made with another certificate).
check_PROGRAMS += tests/tools/tls_ticket
tests_tools_tls_ticket_SOURCES = tests/tools/tls_ticket.cpp
tests_tools_tls_ticket_CPPFLAGS = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
tests_tools_tls_ticket_LDADD = transporter/libblobtransporter.la blobstore/libblobstore.la \
	$(OMNIORB_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS)
$(tests_tools_tls_ticket_OBJECTS): idl/BlobStreaming.hh
