# transporter/: what both ends of a transfer share, and all that clients
# link of it (libblobtransporter): the data-plane wire protocol (Protocol),
# socket tuning (SocketOptions), TLS streams over ACE (Tls), the data-plane
# I/O layer both connections are written on (DataIo), the data plane's
# client (client/: event loop, pooled data connections, sources and sinks)
# that the client library and the daemon's store-to-store copies both use,
# and the ORB helpers of the control plane (corba/: ORB start-up and
# naming, IDL exceptions <-> Errc, TLS identities). It knows nothing of
# stores: the servants and the daemon's data plane are in blobstore/. Its headers are
# internal: none is installed.
lib_LTLIBRARIES += transporter/libblobtransporter.la
transporter_libblobtransporter_la_SOURCES = \
	transporter/src/DataIo.cpp \
	transporter/src/LibraryVersions.cpp \
	transporter/src/Log.cpp \
	transporter/src/Protocol.cpp \
	transporter/src/SocketOptions.cpp \
	transporter/src/Tls.cpp \
	transporter/src/WireCompression.cpp \
	transporter/src/client/ConnectionPool.cpp \
	transporter/src/client/DataConnection.cpp \
	transporter/src/client/DataConnectionFrames.cpp \
	transporter/src/client/EventLoop.cpp \
	transporter/src/client/Streams.cpp \
	transporter/src/corba/Exceptions.cpp \
	transporter/src/corba/InstallInterceptor.h \
	transporter/src/corba/Orb.cpp \
	transporter/src/corba/References.cpp \
	transporter/src/corba/Security.cpp
transporter_libblobtransporter_la_CPPFLAGS = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(ACE_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS) \
	$(ZSTD_CFLAGS)
transporter_libblobtransporter_la_LIBADD = idl/libblobstreaming_idl.la common/libblobcommon.la \
	$(OMNISSL_LIBS) $(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(ZSTD_LIBS)
transporter_libblobtransporter_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0
$(transporter_libblobtransporter_la_OBJECTS): idl/BlobStreaming.hh
EXTRA_DIST += \
	transporter/include/blobstreaming/transporter/DataIo.h \
	transporter/include/blobstreaming/transporter/LibraryVersions.h \
	transporter/include/blobstreaming/transporter/Log.h \
	transporter/include/blobstreaming/transporter/Nearest.h \
	transporter/include/blobstreaming/transporter/Placement.h \
	transporter/include/blobstreaming/transporter/Protocol.h \
	transporter/include/blobstreaming/transporter/SocketOptions.h \
	transporter/include/blobstreaming/transporter/Tls.h \
	transporter/include/blobstreaming/transporter/WireCompression.h \
	transporter/include/blobstreaming/transporter/client/ConnectionPool.h \
	transporter/include/blobstreaming/transporter/client/DataConnection.h \
	transporter/include/blobstreaming/transporter/client/EventLoop.h \
	transporter/include/blobstreaming/transporter/client/Streams.h \
	transporter/include/blobstreaming/transporter/client/Ticket.h \
	transporter/include/blobstreaming/transporter/corba/BlobInfoIdl.h \
	transporter/include/blobstreaming/transporter/corba/ChecksumIdl.h \
	transporter/include/blobstreaming/transporter/corba/Exceptions.h \
	transporter/include/blobstreaming/transporter/corba/NameSeqIdl.h \
	transporter/include/blobstreaming/transporter/corba/Orb.h \
	transporter/include/blobstreaming/transporter/corba/References.h \
	transporter/include/blobstreaming/transporter/corba/Security.h

# The connection gate of the daemons' CORBA endpoints (corba/ConnectionGate.h):
# blobstored's control port and blob-activatord's. Daemons only, so not in
# the library clients link.
noinst_LTLIBRARIES += transporter/libblobgate.la
transporter_libblobgate_la_SOURCES = transporter/src/corba/ConnectionGate.cpp
transporter_libblobgate_la_CPPFLAGS = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(SPDLOG_CFLAGS)
transporter_libblobgate_la_LIBADD = common/libblobcommon.la $(OMNIORB_LIBS) $(SPDLOG_LIBS)
EXTRA_DIST += transporter/include/blobstreaming/transporter/corba/ConnectionGate.h

# What the two servers, blobstored and blob-dicomd, share (daemon/): the
# delivery of notices and events to clients off the data plane
# (NoticeDispatcher, OnewayCall), the hub of an event source's
# subscriptions (EventHub, SubscriptionTable) and the --log-file sink
# (LogFile). Daemons only, as
# libblobgate: no client links it.
noinst_LTLIBRARIES += transporter/libblobdaemon.la
transporter_libblobdaemon_la_SOURCES = \
	transporter/src/daemon/EventHub.cpp \
	transporter/src/daemon/LogFile.cpp \
	transporter/src/daemon/NoticeDispatcher.cpp \
	transporter/src/daemon/SubscriptionTable.cpp
transporter_libblobdaemon_la_CPPFLAGS = $(AM_CPPFLAGS) $(SPDLOG_CFLAGS)
transporter_libblobdaemon_la_LIBADD = transporter/libblobtransporter.la common/libblobcommon.la $(SPDLOG_LIBS)
EXTRA_DIST += \
	transporter/include/blobstreaming/transporter/daemon/EventHub.h \
	transporter/include/blobstreaming/transporter/daemon/LogFile.h \
	transporter/include/blobstreaming/transporter/daemon/NoticeDispatcher.h \
	transporter/include/blobstreaming/transporter/daemon/OnewayCall.h \
	transporter/include/blobstreaming/transporter/daemon/SubscriptionTable.h

transporter_test_cppflags = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(ACE_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS) -DBOOST_TEST_DYN_LINK
transporter_test_ldadd = transporter/libblobtransporter.la common/libblobcommon.la \
	$(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
transporter_tests = transporter/tests/DataIoTest transporter/tests/EventLoopTest transporter/tests/NearestTest \
	transporter/tests/PlacementTest \
	transporter/tests/ProtocolTest \
	transporter/tests/WireCompressionTest \
	transporter/tests/ChunkedSourceTest \
	transporter/tests/TlsTest transporter/tests/NoticeDispatcherTest transporter/tests/EventHubTest
check_PROGRAMS += $(transporter_tests)
TESTS += $(transporter_tests)
transporter_tests_NoticeDispatcherTest_SOURCES = transporter/tests/NoticeDispatcherTest.cpp transporter/tests/Eventually.h
transporter_tests_NoticeDispatcherTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_NoticeDispatcherTest_LDADD = transporter/libblobdaemon.la $(transporter_test_ldadd)
transporter_tests_EventHubTest_SOURCES = transporter/tests/EventHubTest.cpp transporter/tests/Eventually.h
transporter_tests_EventHubTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_EventHubTest_LDADD = transporter/libblobdaemon.la $(transporter_test_ldadd)
transporter_tests_DataIoTest_SOURCES = transporter/tests/DataIoTest.cpp transporter/tests/SocketPair.h
transporter_tests_DataIoTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_DataIoTest_LDADD = $(transporter_test_ldadd)
transporter_tests_NearestTest_SOURCES = transporter/tests/NearestTest.cpp
transporter_tests_NearestTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_NearestTest_LDADD = $(transporter_test_ldadd)
transporter_tests_EventLoopTest_SOURCES = transporter/tests/EventLoopTest.cpp
transporter_tests_EventLoopTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_EventLoopTest_LDADD = $(transporter_test_ldadd)
transporter_tests_PlacementTest_SOURCES = transporter/tests/PlacementTest.cpp
transporter_tests_PlacementTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_PlacementTest_LDADD = $(transporter_test_ldadd)
transporter_tests_ChunkedSourceTest_SOURCES = transporter/tests/ChunkedSourceTest.cpp transporter/tests/SocketPair.h
transporter_tests_ChunkedSourceTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_ChunkedSourceTest_LDADD = $(transporter_test_ldadd)
transporter_tests_ProtocolTest_SOURCES = transporter/tests/ProtocolTest.cpp
transporter_tests_ProtocolTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_ProtocolTest_LDADD = $(transporter_test_ldadd)
transporter_tests_WireCompressionTest_SOURCES = transporter/tests/WireCompressionTest.cpp transporter/tests/SocketPair.h
transporter_tests_WireCompressionTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_WireCompressionTest_LDADD = $(transporter_test_ldadd) $(ZSTD_LIBS)
transporter_tests_TlsTest_SOURCES = transporter/tests/TlsTest.cpp transporter/tests/SocketPair.h
transporter_tests_TlsTest_CPPFLAGS = $(transporter_test_cppflags)
transporter_tests_TlsTest_LDADD = $(transporter_test_ldadd)
