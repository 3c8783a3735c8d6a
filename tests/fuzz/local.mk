# tests/fuzz/: libFuzzer targets for the parsers we own (scripts/run-fuzz
# builds them with clang and runs them for a bounded time). Here, without
# libFuzzer, a small driver replays each target's seed corpus and the inputs
# that once crashed it (tests/fuzz/regressions/TARGET/), so they stay fixed.

fuzz_replays = \
	tests/fuzz/replay_protocol \
	tests/fuzz/replay_blob_name \
	tests/fuzz/replay_daemon_config \
	tests/fuzz/replay_sdc_request \
	tests/fuzz/replay_sdc_envelope
check_PROGRAMS += $(fuzz_replays)
TESTS += $(fuzz_replays)
EXTRA_DIST += tests/fuzz/corpus tests/fuzz/regressions tests/fuzz/README.md

tests_fuzz_replay_protocol_SOURCES = tests/fuzz/ReplayMain.cpp tests/fuzz/FuzzProtocol.cpp
tests_fuzz_replay_protocol_CPPFLAGS = $(AM_CPPFLAGS) -DBLOBSTREAMING_FUZZ_TARGET='"protocol"'
tests_fuzz_replay_protocol_LDADD = transporter/libblobtransporter.la common/libblobcommon.la

tests_fuzz_replay_blob_name_SOURCES = tests/fuzz/ReplayMain.cpp tests/fuzz/FuzzBlobName.cpp
tests_fuzz_replay_blob_name_CPPFLAGS = $(AM_CPPFLAGS) -DBLOBSTREAMING_FUZZ_TARGET='"blob_name"'
tests_fuzz_replay_blob_name_LDADD = common/libblobcommon.la

tests_fuzz_replay_daemon_config_SOURCES = tests/fuzz/ReplayMain.cpp tests/fuzz/FuzzDaemonConfig.cpp \
	blobstore/src/blobstored/DaemonOptions.cpp blobstore/src/server/AccessList.cpp blobstore/src/server/StoreRegistry.cpp
tests_fuzz_replay_daemon_config_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/blobstore/src \
	-DBLOBSTREAMING_FUZZ_TARGET='"daemon_config"' $(OMNIORB_CFLAGS) $(SPDLOG_CFLAGS)
tests_fuzz_replay_daemon_config_LDADD = blobstore/libblobstore.la transporter/libblobtransporter.la common/libblobcli.la common/libblobcommon.la \
	$(OPENSSL_LIBS) $(OMNIORB_LIBS) $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS)
$(tests_fuzz_replay_daemon_config_OBJECTS): idl/BlobStreaming.hh

# The SDC provider's request handling and the envelope parsing of every SDC
# message we receive (sdc/src, internal headers).
tests_fuzz_replay_sdc_request_SOURCES = tests/fuzz/ReplayMain.cpp tests/fuzz/FuzzSdcRequest.cpp
tests_fuzz_replay_sdc_request_CPPFLAGS = $(sdc_cppflags) -DBLOBSTREAMING_FUZZ_TARGET='"sdc_request"'
tests_fuzz_replay_sdc_request_LDADD = sdc/libblobsdc.la $(LIBXML2_LIBS) $(OPENSSL_LIBS)

tests_fuzz_replay_sdc_envelope_SOURCES = tests/fuzz/ReplayMain.cpp tests/fuzz/FuzzSdcEnvelope.cpp
tests_fuzz_replay_sdc_envelope_CPPFLAGS = $(sdc_cppflags) -DBLOBSTREAMING_FUZZ_TARGET='"sdc_envelope"'
tests_fuzz_replay_sdc_envelope_LDADD = sdc/libblobsdc.la $(LIBXML2_LIBS)
