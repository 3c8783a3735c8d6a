# sdc/: the IEEE 11073 SDC get-service path (docs/SDC.md): libblobsdc
# (MDIB, provider, consumer), the sdc-provider and sdc-get programs, unit
# tests and interoperability tests against sdc11073 (a Python SDC stack).
lib_LTLIBRARIES += sdc/libblobsdc.la
sdc_libblobsdc_la_SOURCES = \
	sdc/src/Asio.h \
	sdc/src/Consumer.cpp \
	sdc/src/ConsumerAccess.h \
	sdc/src/Discovery.cpp \
	sdc/src/Discovery.h \
	sdc/src/EventSource.cpp \
	sdc/src/EventSource.h \
	sdc/src/HttpClient.cpp \
	sdc/src/HttpClient.h \
	sdc/src/HttpServer.cpp \
	sdc/src/HttpServer.h \
	sdc/src/Mdib.cpp \
	sdc/src/MdibMirror.cpp \
	sdc/src/Namespaces.h \
	sdc/src/Provider.cpp \
	sdc/src/ServiceHandler.cpp \
	sdc/src/ServiceHandler.h \
	sdc/src/SoapMessage.cpp \
	sdc/src/SoapMessage.h \
	sdc/src/Tls.cpp \
	sdc/src/Tls.h \
	sdc/src/Url.h \
	sdc/src/Uuid.cpp \
	sdc/src/Uuid.h \
	sdc/src/Xml.cpp \
	sdc/src/Xml.h
sdc_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/sdc/include -I$(top_srcdir)/sdc/src $(LIBXML2_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
sdc_libblobsdc_la_CPPFLAGS = $(sdc_cppflags)
sdc_libblobsdc_la_LIBADD = common/libblobcommon.la $(LIBXML2_LIBS) $(OPENSSL_LIBS) -lpthread
sdc_libblobsdc_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0
if SANITIZERS
# GCC 12 with -fsanitize reports a false -Wmaybe-uninitialized inside
# Boost.Beast's basic_parser (a boost::optional it returns); not our code.
sdc_libblobsdc_la_CXXFLAGS = $(AM_CXXFLAGS) -Wno-maybe-uninitialized
endif

sdchdrdir = $(includedir)/blobstreaming/sdc
sdchdr_HEADERS = \
	sdc/include/blobstreaming/sdc/Consumer.h \
	sdc/include/blobstreaming/sdc/Mdib.h \
	sdc/include/blobstreaming/sdc/MdibMirror.h \
	sdc/include/blobstreaming/sdc/Provider.h \
	sdc/include/blobstreaming/sdc/SdcError.h

bin_PROGRAMS += sdc/sdc-provider sdc/sdc-get
sdc_sdc_provider_SOURCES = sdc/src/sdc-provider/main.cpp
sdc_sdc_provider_CPPFLAGS = $(sdc_cppflags)
sdc_sdc_provider_LDADD = sdc/libblobsdc.la common/libblobcli.la $(BOOST_PROGRAM_OPTIONS_LIBS) $(SPDLOG_LIBS)
sdc_sdc_get_SOURCES = sdc/src/sdc-get/main.cpp
sdc_sdc_get_CPPFLAGS = $(sdc_cppflags)
sdc_sdc_get_LDADD = sdc/libblobsdc.la common/libblobcli.la $(BOOST_PROGRAM_OPTIONS_LIBS) $(SPDLOG_LIBS)

# Unit tests (Boost.Test): SOAP/addressing parsing, MDIB loading and lookup.
sdc_test_cppflags = $(sdc_cppflags) -DBOOST_TEST_DYN_LINK -DSDC_TEST_DATA='"$(abs_top_srcdir)/sdc/tests/data"'
sdc_test_ldadd = sdc/libblobsdc.la $(LIBXML2_LIBS) $(OPENSSL_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
sdc_unit_tests = sdc/tests/SoapMessageTest sdc/tests/MdibTest sdc/tests/MdibMirrorTest
check_PROGRAMS += $(sdc_unit_tests)
TESTS += $(sdc_unit_tests)
sdc_tests_SoapMessageTest_SOURCES = sdc/tests/SoapMessageTest.cpp
sdc_tests_SoapMessageTest_CPPFLAGS = $(sdc_test_cppflags)
sdc_tests_SoapMessageTest_LDADD = $(sdc_test_ldadd)
sdc_tests_MdibTest_SOURCES = sdc/tests/MdibTest.cpp
sdc_tests_MdibTest_CPPFLAGS = $(sdc_test_cppflags)
sdc_tests_MdibTest_LDADD = $(sdc_test_ldadd)
sdc_tests_MdibMirrorTest_SOURCES = sdc/tests/MdibMirrorTest.cpp
sdc_tests_MdibMirrorTest_CPPFLAGS = $(sdc_test_cppflags)
sdc_tests_MdibMirrorTest_LDADD = $(sdc_test_ldadd)

# System tests: real processes on 127.0.0.1; the sdc11073 peers run in a venv
# created in the build tree (skipped when PyPI is unreachable).
sdc_system_tests = \
	sdc/tests/test_sdc_bad_input.py \
	sdc/tests/test_sdc_peer_consumer.py \
	sdc/tests/test_sdc_our_consumer.py \
	sdc/tests/test_sdc_blobstored.py \
	sdc/tests/test_sdc_events.py \
	sdc/tests/test_sdc_peer_watch.py \
	sdc/tests/test_sdc_peer_description.py \
	sdc/tests/test_sdc_description.py \
	sdc/tests/test_sdc_watch.py \
	sdc/tests/test_sdc_tls.py \
	sdc/tests/test_sdc_blobstored_tls.py \
	sdc/tests/test_sdc_flood.py
TESTS += $(sdc_system_tests)
dist_check_SCRIPTS += $(sdc_system_tests)
EXTRA_DIST += sdc/tests/sdclib.py sdc/tests/peers/sdc11073_consumer.py sdc/tests/peers/sdc11073_provider.py \
	sdc/tests/peers/sdc11073_watch.py sdc/tests/peers/sdc11073_description.py \
	sdc/tests/data/mdib.xml sdc/tests/data/70041_MDIB_Final.xml

clean-local: clean-local-sdc
clean-local-sdc:
	rm -rf sdc/tests/venv sdc/tests/venv.lock
.PHONY: clean-local-sdc

# Benchmark of GetMdState round trips (docs/SDC.md): `make bench-sdc-quick`
# (a few hundred rounds, CI-sized) and `make bench-sdc` (40,000 rounds with a
# 20 ms pause and back-to-back). sdc-bench is built only by these targets.
EXTRA_PROGRAMS += sdc/sdc-bench
sdc_sdc_bench_SOURCES = sdc/bench/sdc-bench.cpp
sdc_sdc_bench_CPPFLAGS = $(sdc_cppflags)
sdc_sdc_bench_LDADD = sdc/libblobsdc.la common/libblobcli.la $(BOOST_PROGRAM_OPTIONS_LIBS) $(SPDLOG_LIBS)
CLEANFILES += sdc/sdc-bench$(EXEEXT)
EXTRA_DIST += sdc/bench/run_sdc_bench.py
SDC_BENCH_OUT = bench-results/sdc
sdc_bench_driver = BS_BUILDDIR='$(abs_top_builddir)' BS_SRCDIR='$(abs_top_srcdir)' \
	$(PYTHON) $(abs_top_srcdir)/sdc/bench/run_sdc_bench.py --out $(SDC_BENCH_OUT)
bench-sdc-quick: sdc/sdc-bench$(EXEEXT) sdc/sdc-provider$(EXEEXT)
	$(sdc_bench_driver) --quick
bench-sdc: sdc/sdc-bench$(EXEEXT) sdc/sdc-provider$(EXEEXT)
	$(sdc_bench_driver)
.PHONY: bench-sdc bench-sdc-quick
