# clients/: libblobclient (public API), client data plane, the blob CLI, examples.
lib_LTLIBRARIES += clients/libblobclient.la
clients_libblobclient_la_SOURCES = \
	clients/src/CallExecutor.cpp \
	clients/src/CallExecutor.h \
	clients/src/CopyOperation.cpp \
	clients/src/CopyOperation.h \
	clients/src/DataPlane.h \
	clients/src/ControlPlane.cpp \
	clients/src/ControlPlane.h \
	clients/src/IdlConversion.cpp \
	clients/src/IdlConversion.h \
	clients/src/LocalRead.cpp \
	clients/src/LocalRead.h \
	clients/src/Logging.cpp \
	clients/src/NoticeBoard.cpp \
	clients/src/NoticeBoard.h \
	clients/src/OrbHandle.cpp \
	clients/src/OrbHandle.h \
	clients/src/ParallelPull.cpp \
	clients/src/AutoStreams.cpp \
	clients/src/AutoStreams.h \
	clients/src/ParallelPull.h \
	clients/src/ParallelPush.cpp \
	clients/src/ParallelPush.h \
	clients/src/PullOperation.cpp \
	clients/src/PullOperation.h \
	clients/src/PushOperation.cpp \
	clients/src/NamedRoutes.cpp \
	clients/src/NamedRoutes.h \
	clients/src/PushOperation.h \
	clients/src/SeriesOperation.cpp \
	clients/src/SeriesOperation.h \
	clients/src/InPlaceSeries.cpp \
	clients/src/InPlaceSeries.h \
	clients/src/InPlaceMappings.cpp \
	clients/src/InPlaceMappings.h \
	clients/src/Session.cpp \
	clients/src/SessionImpl.h \
	clients/src/StoreChoice.cpp \
	clients/src/StoreChoice.h \
	clients/src/Sinks.cpp \
	clients/src/Sources.cpp \
	clients/src/Streams.h \
	clients/src/Transfer.cpp \
	clients/src/TransferResult.cpp \
	clients/src/TransferResult.h \
	clients/src/UserCallback.cpp \
	clients/src/UserCallback.h \
	clients/src/Watch.cpp
# The release a refusal of an older store names (ControlPlane.cpp).
clients_libblobclient_la_CPPFLAGS = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(ACE_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS) \
	-DBLOBSTREAMING_RELEASE='"$(PACKAGE_VERSION)"'
if SANITIZERS
# GCC 12 with -fsanitize reports a false -Warray-bounds in the omniidl
# skeleton's constructor (POA_BlobStreaming::EventSubscriber, the Watch's
# callback object) inlined into Watch.cpp (and TransferObserver's into
# NoticeBoard.cpp); not our code (as in benchmarks/).
clients_libblobclient_la_CXXFLAGS = $(AM_CXXFLAGS) -Wno-array-bounds
endif
clients_libblobclient_la_LIBADD = transporter/libblobtransporter.la blobstore/libblobstore.la common/libblobcommon.la \
	$(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS)
clients_libblobclient_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0
$(clients_libblobclient_la_OBJECTS): idl/BlobStreaming.hh

clienthdrdir = $(includedir)/blobstreaming/client
clienthdr_HEADERS = \
	clients/include/blobstreaming/client/InPlace.h \
	clients/include/blobstreaming/client/Logging.h \
	clients/include/blobstreaming/client/Notice.h \
	clients/include/blobstreaming/client/Options.h \
	clients/include/blobstreaming/client/Result.h \
	clients/include/blobstreaming/client/Series.h \
	clients/include/blobstreaming/client/Session.h \
	clients/include/blobstreaming/client/Transfer.h \
	clients/include/blobstreaming/client/Watch.h

# The blob command-line tool: a thin main over the commands.
bin_PROGRAMS += clients/blob
clients_blob_SOURCES = \
	clients/src/blob/main.cpp \
	clients/src/blob/Commands.cpp \
	clients/src/blob/Commands.h \
	clients/src/blob/Watch.cpp \
	clients/src/blob/Dicom.cpp \
	clients/src/blob/Io.cpp \
	clients/src/blob/Io.h \
	clients/src/blob/Output.cpp \
	clients/src/blob/Output.h
clients_blob_CPPFLAGS = $(AM_CPPFLAGS) $(SPDLOG_CFLAGS)
clients_blob_LDADD = clients/dicom/libblobdicom.la clients/libblobclient.la transporter/libblobtransporter.la common/libblobcli.la common/libblobcommon.la $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS)

# Examples of the API; async_series is also run by the system tests.
noinst_PROGRAMS += clients/examples/async_series clients/examples/single_threaded
clients_examples_async_series_SOURCES = clients/examples/async_series.cpp
clients_examples_async_series_CPPFLAGS = $(AM_CPPFLAGS) $(SPDLOG_CFLAGS)
clients_examples_async_series_LDADD = clients/libblobclient.la common/libblobcommon.la $(SPDLOG_LIBS)
clients_examples_single_threaded_SOURCES = clients/examples/single_threaded.cpp
clients_examples_single_threaded_CPPFLAGS = $(AM_CPPFLAGS) $(SPDLOG_CFLAGS)
clients_examples_single_threaded_LDADD = clients/libblobclient.la common/libblobcommon.la $(SPDLOG_LIBS)
if HAVE_GLIB
noinst_PROGRAMS += clients/examples/glib_loop
clients_examples_glib_loop_SOURCES = clients/examples/glib_loop.cpp
clients_examples_glib_loop_CPPFLAGS = $(AM_CPPFLAGS) $(GLIB_CFLAGS)
clients_examples_glib_loop_LDADD = clients/libblobclient.la common/libblobcommon.la $(GLIB_LIBS)
endif
EXTRA_DIST += clients/examples/glib_loop.cpp

# Tests: the data plane against a fake data port (no CORBA); Session against
# a real omniNames ($OMNINAMES); Session transfers against real blobstored
# daemons ($BS_BUILDDIR/blobstore/blobstored).
clients_tests = clients/tests/CallbackTest clients/tests/ControlCallTest clients/tests/DataPlaneTest \
	clients/tests/NoticesTest clients/tests/SeriesTest clients/tests/SessionTest clients/tests/StreamsTest \
	clients/tests/TransferTest
check_PROGRAMS += $(clients_tests)
TESTS += $(clients_tests)
clients_test_public_ldadd = clients/libblobclient.la common/libblobcommon.la $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

clients_tests_CallbackTest_SOURCES = clients/tests/CallbackTest.cpp clients/tests/TestProcesses.h
clients_tests_CallbackTest_CPPFLAGS = $(AM_CPPFLAGS) -DBOOST_TEST_DYN_LINK
clients_tests_CallbackTest_LDADD = $(clients_test_public_ldadd)

clients_tests_ControlCallTest_SOURCES = clients/tests/ControlCallTest.cpp clients/tests/TestProcesses.h
clients_tests_ControlCallTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/clients/src -DBOOST_TEST_DYN_LINK
clients_tests_ControlCallTest_LDADD = $(clients_test_public_ldadd)

clients_tests_DataPlaneTest_SOURCES = clients/tests/DataPlaneTest.cpp transporter/tests/ProtocolPeer.h
clients_tests_DataPlaneTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/clients/src -I$(top_srcdir)/transporter/tests $(OMNIORB_CFLAGS) $(ACE_CFLAGS) \
	$(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS) -DBOOST_TEST_DYN_LINK
clients_tests_DataPlaneTest_LDADD = clients/libblobclient.la transporter/libblobtransporter.la common/libblobcommon.la \
	$(SPDLOG_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
$(clients_tests_DataPlaneTest_OBJECTS): idl/BlobStreaming.hh

clients_tests_NoticesTest_SOURCES = clients/tests/NoticesTest.cpp clients/tests/TestProcesses.h clients/tests/ErrorOf.h
clients_tests_NoticesTest_CPPFLAGS = $(AM_CPPFLAGS) -DBOOST_TEST_DYN_LINK
clients_tests_NoticesTest_LDADD = $(clients_test_public_ldadd)

clients_tests_SeriesTest_SOURCES = clients/tests/SeriesTest.cpp clients/tests/TestProcesses.h clients/tests/ErrorOf.h
clients_tests_SeriesTest_CPPFLAGS = $(AM_CPPFLAGS) -DBOOST_TEST_DYN_LINK
clients_tests_SeriesTest_LDADD = $(clients_test_public_ldadd)

clients_tests_StreamsTest_SOURCES = clients/tests/StreamsTest.cpp clients/tests/ErrorOf.h
clients_tests_StreamsTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/clients/src $(OPENSSL_CFLAGS) -DBOOST_TEST_DYN_LINK
clients_tests_StreamsTest_LDADD = clients/libblobclient.la transporter/libblobtransporter.la common/libblobcommon.la \
	$(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

clients_tests_SessionTest_SOURCES = clients/tests/SessionTest.cpp clients/tests/TestProcesses.h clients/tests/ErrorOf.h
clients_tests_SessionTest_CPPFLAGS = $(AM_CPPFLAGS) -DBOOST_TEST_DYN_LINK
clients_tests_SessionTest_LDADD = $(clients_test_public_ldadd)

clients_tests_TransferTest_SOURCES = clients/tests/TransferTest.cpp clients/tests/TestProcesses.h clients/tests/ErrorOf.h
clients_tests_TransferTest_CPPFLAGS = $(AM_CPPFLAGS) -DBOOST_TEST_DYN_LINK
clients_tests_TransferTest_LDADD = $(clients_test_public_ldadd)
