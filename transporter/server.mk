# transporter/src/server, transporter/src/corba servants and the blobstored daemon.
#
# libblobserver: the data plane (ticket registry, reservations, ACE acceptor
# and connections, reactor thread) and the control-plane servants.
noinst_LTLIBRARIES += transporter/libblobserver.la
transporter_libblobserver_la_SOURCES = \
	transporter/src/corba/BlobInfoIdl.h \
	transporter/src/corba/BlobLocator_i.cpp \
	transporter/src/corba/BlobLocator_i.h \
	transporter/src/corba/BlobStore_i.cpp \
	transporter/src/corba/BlobStore_i.h \
	transporter/src/corba/BlobTransporter_i.cpp \
	transporter/src/corba/BlobTransporter_i.h \
	transporter/src/corba/ServantContext.h \
	transporter/src/server/AccessList.cpp \
	transporter/src/server/AccessList.h \
	transporter/src/server/ConnectionLimits.h \
	transporter/src/server/DataAcceptor.cpp \
	transporter/src/server/DataAcceptor.h \
	transporter/src/server/DataConnection.cpp \
	transporter/src/server/DataConnection.h \
	transporter/src/server/DataServer.cpp \
	transporter/src/server/DataServer.h \
	transporter/src/server/DataServerImpl.h \
	transporter/src/server/LogThrottle.h \
	transporter/src/server/NoticeDispatcher.cpp \
	transporter/src/server/NoticeDispatcher.h \
	transporter/src/server/ReservationTable.cpp \
	transporter/src/server/ReservationTable.h \
	transporter/src/server/TicketRegistry.cpp \
	transporter/src/server/TicketRegistry.h \
	transporter/src/server/TransferControl.h \
	transporter/src/server/TransporterRegistry.cpp \
	transporter/src/server/TransporterRegistry.h
transporter_libblobserver_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/transporter/src \
	$(OMNIORB_CFLAGS) $(ACE_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
$(transporter_libblobserver_la_OBJECTS): idl/BlobStreaming.hh

# Unit tests of the server pieces.
server_test_ldadd = transporter/libblobserver.la transporter/libblobtransporter.la blobstore/libblobstore.la \
	$(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
server_tests = \
	transporter/tests/AccessListTest \
	transporter/tests/ConnectionLimitsTest \
	transporter/tests/TicketRegistryTest \
	transporter/tests/ReservationTableTest \
	transporter/tests/DataServerTest \
	transporter/tests/NoticeDispatcherTest \
	transporter/tests/TransporterRegistryTest
check_PROGRAMS += $(server_tests)
TESTS += $(server_tests)
transporter_tests_AccessListTest_SOURCES = transporter/tests/AccessListTest.cpp
transporter_tests_AccessListTest_CPPFLAGS = $(transporter_libblobserver_la_CPPFLAGS) -DBOOST_TEST_DYN_LINK
transporter_tests_AccessListTest_LDADD = $(server_test_ldadd)
$(transporter_tests_AccessListTest_OBJECTS): idl/BlobStreaming.hh
transporter_tests_ConnectionLimitsTest_SOURCES = transporter/tests/ConnectionLimitsTest.cpp
transporter_tests_ConnectionLimitsTest_CPPFLAGS = $(transporter_libblobserver_la_CPPFLAGS) -DBOOST_TEST_DYN_LINK
transporter_tests_ConnectionLimitsTest_LDADD = $(server_test_ldadd)
transporter_tests_TicketRegistryTest_SOURCES = transporter/tests/TicketRegistryTest.cpp
transporter_tests_TicketRegistryTest_CPPFLAGS = $(transporter_libblobserver_la_CPPFLAGS) -DBOOST_TEST_DYN_LINK
transporter_tests_TicketRegistryTest_LDADD = $(server_test_ldadd)
$(transporter_tests_TicketRegistryTest_OBJECTS): idl/BlobStreaming.hh
transporter_tests_ReservationTableTest_SOURCES = transporter/tests/ReservationTableTest.cpp
transporter_tests_ReservationTableTest_CPPFLAGS = $(transporter_libblobserver_la_CPPFLAGS) -DBOOST_TEST_DYN_LINK
transporter_tests_ReservationTableTest_LDADD = $(server_test_ldadd)
$(transporter_tests_ReservationTableTest_OBJECTS): idl/BlobStreaming.hh
transporter_tests_DataServerTest_SOURCES = transporter/tests/DataServerTest.cpp
transporter_tests_DataServerTest_CPPFLAGS = $(transporter_libblobserver_la_CPPFLAGS) -DBOOST_TEST_DYN_LINK
transporter_tests_DataServerTest_LDADD = $(server_test_ldadd)
$(transporter_tests_DataServerTest_OBJECTS): idl/BlobStreaming.hh
transporter_tests_NoticeDispatcherTest_SOURCES = transporter/tests/NoticeDispatcherTest.cpp
transporter_tests_NoticeDispatcherTest_CPPFLAGS = $(transporter_libblobserver_la_CPPFLAGS) -DBOOST_TEST_DYN_LINK
transporter_tests_NoticeDispatcherTest_LDADD = $(server_test_ldadd)
$(transporter_tests_NoticeDispatcherTest_OBJECTS): idl/BlobStreaming.hh
transporter_tests_TransporterRegistryTest_SOURCES = transporter/tests/TransporterRegistryTest.cpp
transporter_tests_TransporterRegistryTest_CPPFLAGS = $(transporter_libblobserver_la_CPPFLAGS) -DBOOST_TEST_DYN_LINK
transporter_tests_TransporterRegistryTest_LDADD = $(server_test_ldadd)
$(transporter_tests_TransporterRegistryTest_OBJECTS): idl/BlobStreaming.hh

# The daemon.
bin_PROGRAMS += blobstore/blobstored
blobstore_blobstored_SOURCES = \
	blobstore/src/blobstored/Daemon.cpp \
	blobstore/src/blobstored/Daemon.h \
	blobstore/src/blobstored/DaemonOptions.cpp \
	blobstore/src/blobstored/DaemonOptions.h \
	blobstore/src/blobstored/main.cpp
blobstore_blobstored_CPPFLAGS = $(transporter_libblobserver_la_CPPFLAGS)
blobstore_blobstored_LDADD = transporter/libblobserver.la transporter/libblobtransporter.la blobstore/libblobstore.la \
	$(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS)
$(blobstore_blobstored_OBJECTS): idl/BlobStreaming.hh
