# blobstore/: the stores and the daemon that serves them, in four layers
# (docs/ARCHITECTURE.md):
#   src/store      libblobstore: the Store interface, FileStore, MemoryStore,
#                  RadosStore (installed; needs common/ and librados)
#   src/server     the data plane of a daemon: ticket and reservation tables,
#                  the ACE acceptor and connections, the reactor thread
#   src/service    the store service: what the servants decide (permissions,
#                  reservations, tickets, local files), plain C++
#   src/servants   the CORBA servants (BlobStore, BlobTransporter, BlobLocator):
#                  IDL conversion and exception mapping over the service
#   src/blobstored the daemon: options, wiring, Naming Service registration
# server, service and servants form libblobserver, which only the daemon links.
lib_LTLIBRARIES += blobstore/libblobstore.la
blobstore_libblobstore_la_SOURCES = \
	blobstore/src/store/BlobInFlight.cpp \
	blobstore/src/store/EvictingStore.cpp \
	blobstore/src/store/FileHeader.cpp \
	blobstore/src/store/FileHeader.h \
	blobstore/src/store/FileKept.cpp \
	blobstore/src/store/FileReservation.cpp \
	blobstore/src/store/FileReservation.h \
	blobstore/src/store/FileStore.cpp \
	blobstore/src/store/FileStoreState.cpp \
	blobstore/src/store/FileStoreState.h \
	blobstore/src/store/FileSystem.cpp \
	blobstore/src/store/FileSystem.h \
	blobstore/src/store/FlightReader.cpp \
	blobstore/src/store/FlightReader.h \
	blobstore/src/store/FlightTable.cpp \
	blobstore/src/store/MemoryStore.cpp \
	blobstore/src/store/ObservedStore.cpp \
	blobstore/src/store/OpenFiles.cpp \
	blobstore/src/store/OpenFiles.h \
	blobstore/src/store/Rados.cpp \
	blobstore/src/store/Rados.h \
	blobstore/src/store/RadosIndex.cpp \
	blobstore/src/store/RadosIndex.h \
	blobstore/src/store/RadosJournal.cpp \
	blobstore/src/store/RadosJournal.h \
	blobstore/src/store/RadosKeeper.cpp \
	blobstore/src/store/RadosKept.cpp \
	blobstore/src/store/RadosReader.cpp \
	blobstore/src/store/RadosReader.h \
	blobstore/src/store/RadosReservation.cpp \
	blobstore/src/store/RadosReservation.h \
	blobstore/src/store/RadosStore.cpp \
	blobstore/src/store/RadosStoreState.h \
	blobstore/src/store/ReadThroughStore.cpp \
	blobstore/src/store/Reservation.cpp \
	blobstore/src/store/ResumeJournal.cpp \
	blobstore/src/store/ResumeJournal.h \
	blobstore/src/store/SpareFile.cpp \
	blobstore/src/store/SpareFile.h \
	blobstore/src/store/Store.cpp \
	blobstore/src/store/StoreIndex.h
blobstore_libblobstore_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
blobstore_libblobstore_la_LIBADD = common/libblobcommon.la $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(RADOS_LIBS)
blobstore_libblobstore_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0

blobstorehdrdir = $(includedir)/blobstreaming/blobstore
blobstorehdr_HEADERS = \
	blobstore/include/blobstreaming/blobstore/BlobInFlight.h \
	blobstore/include/blobstreaming/blobstore/BlobRange.h \
	blobstore/include/blobstreaming/blobstore/BlobReader.h \
	blobstore/include/blobstreaming/blobstore/EvictingStore.h \
	blobstore/include/blobstreaming/blobstore/FileStore.h \
	blobstore/include/blobstreaming/blobstore/FlightTable.h \
	blobstore/include/blobstreaming/blobstore/MemoryStore.h \
	blobstore/include/blobstreaming/blobstore/ObservedStore.h \
	blobstore/include/blobstreaming/blobstore/RadosStore.h \
	blobstore/include/blobstreaming/blobstore/ReadThroughStore.h \
	blobstore/include/blobstreaming/blobstore/RecentOutcomes.h \
	blobstore/include/blobstreaming/blobstore/Reservation.h \
	blobstore/include/blobstreaming/blobstore/Store.h

# Unit tests of the stores: one program per class; StoreTest and
# ReservationTest run the same suite on both stores.
blobstore_test_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/common/tests $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS) -DBOOST_TEST_DYN_LINK
blobstore_test_ldadd = blobstore/libblobstore.la common/libblobcommon.la $(OPENSSL_LIBS) $(SPDLOG_LIBS) \
	$(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
blobstore_tests = \
	blobstore/tests/StoreTest \
	blobstore/tests/FileStoreTest \
	blobstore/tests/FileStoreOpenFilesTest \
	blobstore/tests/ResumeJournalTest \
	blobstore/tests/MemoryStoreTest \
	blobstore/tests/EvictingStoreTest \
	blobstore/tests/ReadThroughStoreTest \
	blobstore/tests/ReservationTest \
	blobstore/tests/GrowingReservationTest \
	blobstore/tests/BlobInFlightTest
check_PROGRAMS += $(blobstore_tests)
TESTS += $(blobstore_tests)
blobstore_tests_StoreTest_SOURCES = blobstore/tests/StoreTest.cpp
blobstore_tests_StoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_StoreTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_BlobInFlightTest_SOURCES = blobstore/tests/BlobInFlightTest.cpp
blobstore_tests_BlobInFlightTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_BlobInFlightTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_ResumeJournalTest_SOURCES = blobstore/tests/ResumeJournalTest.cpp
blobstore_tests_ResumeJournalTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_ResumeJournalTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_FileStoreTest_SOURCES = blobstore/tests/FileStoreTest.cpp
blobstore_tests_FileStoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_FileStoreTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_FileStoreOpenFilesTest_SOURCES = blobstore/tests/FileStoreOpenFilesTest.cpp
blobstore_tests_FileStoreOpenFilesTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_FileStoreOpenFilesTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_MemoryStoreTest_SOURCES = blobstore/tests/MemoryStoreTest.cpp
blobstore_tests_MemoryStoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_MemoryStoreTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_EvictingStoreTest_SOURCES = blobstore/tests/EvictingStoreTest.cpp
blobstore_tests_EvictingStoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_EvictingStoreTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_ReadThroughStoreTest_SOURCES = blobstore/tests/ReadThroughStoreTest.cpp
blobstore_tests_ReadThroughStoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_ReadThroughStoreTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_ReservationTest_SOURCES = blobstore/tests/ReservationTest.cpp
blobstore_tests_ReservationTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_ReservationTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_GrowingReservationTest_SOURCES = blobstore/tests/GrowingReservationTest.cpp
blobstore_tests_GrowingReservationTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_GrowingReservationTest_LDADD = $(blobstore_test_ldadd)

# RadosStore against a real Ceph cluster: built by make check, run only by
# tests/test_rados_store.py, which starts the cluster and sets CEPH_CONF and
# BS_RADOS_POOL (alone the program exits 77, skipped).
check_PROGRAMS += blobstore/tests/RadosStoreTest
blobstore_tests_RadosStoreTest_SOURCES = blobstore/tests/RadosStoreTest.cpp
blobstore_tests_RadosStoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_RadosStoreTest_LDADD = $(blobstore_test_ldadd) $(RADOS_LIBS)

#
# libblobserver: the data plane (ticket registry, reservations, ACE acceptor
# and connections, reactor thread), the store service and the control-plane
# servants over it.
noinst_LTLIBRARIES += blobstore/libblobserver.la
blobstore_libblobserver_la_SOURCES = \
	blobstore/src/servants/BlobLocator_i.cpp \
	blobstore/src/servants/BlobLocator_i.h \
	blobstore/src/servants/BlobStore_i.cpp \
	blobstore/src/servants/BlobStore_i.h \
	blobstore/src/servants/BlobTransporter_i.cpp \
	blobstore/src/servants/BlobTransporter_i.h \
	blobstore/src/servants/EventSubscription.cpp \
	blobstore/src/servants/EventSubscription.h \
	blobstore/src/servants/Fetcher.cpp \
	blobstore/src/servants/Fetcher.h \
	blobstore/src/servants/Grant.h \
	blobstore/src/servants/ImageShelf.cpp \
	blobstore/src/servants/ImageShelf.h \
	blobstore/src/servants/SameHostSources.cpp \
	blobstore/src/servants/SameHostSources.h \
	blobstore/src/servants/ServantContext.cpp \
	blobstore/src/servants/ServantContext.h \
	blobstore/src/servants/SourceReader.cpp \
	blobstore/src/servants/SourceReader.h \
	blobstore/src/service/StoreService.cpp \
	blobstore/src/service/StoreService.h \
	blobstore/src/service/StoreServiceFiles.cpp \
	blobstore/src/service/StoreServiceTickets.cpp \
	blobstore/src/service/NamedRequests.cpp \
	blobstore/src/service/NamedRequests.h \
	blobstore/src/server/NamedAdmission.h \
	blobstore/src/server/ServerConnectionNamed.cpp \
	blobstore/src/server/AccessList.cpp \
	blobstore/src/server/AccessList.h \
	blobstore/src/server/CommitPool.cpp \
	blobstore/src/server/CommitPool.h \
	blobstore/src/server/ConnectionLimits.h \
	blobstore/src/server/DataAcceptor.cpp \
	blobstore/src/server/DataAcceptor.h \
	blobstore/src/server/DataPath.h \
	blobstore/src/server/ServerConnection.cpp \
	blobstore/src/server/ServerConnection.h \
	blobstore/src/server/ServerConnectionAway.cpp \
	blobstore/src/server/ServerConnectionTimers.cpp \
	blobstore/src/server/Transfer.cpp \
	blobstore/src/server/Transfer.h \
	blobstore/src/server/ReceiveTransfer.cpp \
	blobstore/src/server/ReceiveTransfer.h \
	blobstore/src/server/PushTransfer.cpp \
	blobstore/src/server/PushTransfer.h \
	blobstore/src/server/PartTransfer.cpp \
	blobstore/src/server/PartTransfer.h \
	blobstore/src/server/CompressedBody.cpp \
	blobstore/src/server/PullTransfer.cpp \
	blobstore/src/server/PullTransfer.h \
	blobstore/src/server/DataServer.cpp \
	blobstore/src/server/DataServer.h \
	blobstore/src/server/DataServerImpl.h \
	blobstore/src/server/LogThrottle.h \
	blobstore/src/server/ReservationTable.cpp \
	blobstore/src/server/ReservationTableLimits.cpp \
	blobstore/src/server/ReservationTableParts.cpp \
	blobstore/src/server/ReservationTable.h \
	blobstore/src/server/StoreRegistry.cpp \
	blobstore/src/server/StoreEventHub.cpp \
	blobstore/src/server/StoreEventHub.h \
	blobstore/src/server/StoreRegistry.h \
	blobstore/src/server/TicketRegistry.cpp \
	blobstore/src/server/TransferMetrics.cpp \
	blobstore/src/server/TransferMetrics.h \
	blobstore/src/server/TicketRegistry.h \
	blobstore/src/server/TransferControl.h \
	blobstore/src/server/TransporterRegistry.cpp \
	blobstore/src/server/TransporterRegistry.h
blobstore_libblobserver_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/blobstore/src \
	$(OMNIORB_CFLAGS) $(ACE_CFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
$(blobstore_libblobserver_la_OBJECTS): idl/BlobStreaming.hh

# Unit tests of the server pieces: every program takes the same flags and
# libraries (automake wants them per program; they name these two).
server_test_cppflags = $(blobstore_libblobserver_la_CPPFLAGS) -I$(top_srcdir)/common/tests -I$(top_srcdir)/transporter/tests \
	-DBOOST_TEST_DYN_LINK
server_test_ldadd = blobstore/libblobserver.la transporter/libblobdaemon.la transporter/libblobtransporter.la blobstore/libblobstore.la common/libblobcommon.la \
	$(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
server_tests = \
	blobstore/tests/AccessListTest \
	blobstore/tests/ConnectionLimitsTest \
	blobstore/tests/TicketRegistryTest \
	blobstore/tests/ReservationTableTest \
	blobstore/tests/RecentOutcomesTest \
	blobstore/tests/DataServerTest \
	blobstore/tests/FlightTableTest \
	blobstore/tests/TransporterRegistryTest \
	blobstore/tests/PushTransferTest \
	blobstore/tests/PartTransferTest \
	blobstore/tests/PullTransferTest \
	blobstore/tests/StoreServiceTest \
	blobstore/tests/BlobStoreServantTest \
	blobstore/tests/BlobTransporterServantTest \
	blobstore/tests/ImageShelfTest
check_PROGRAMS += $(server_tests)
TESTS += $(server_tests)
blobstore_tests_AccessListTest_SOURCES = blobstore/tests/AccessListTest.cpp blobstore/tests/ServerTestSupport.h \
	transporter/tests/Eventually.h
blobstore_tests_AccessListTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_AccessListTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_AccessListTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_ConnectionLimitsTest_SOURCES = blobstore/tests/ConnectionLimitsTest.cpp
blobstore_tests_ConnectionLimitsTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_ConnectionLimitsTest_LDADD = $(server_test_ldadd)
blobstore_tests_TicketRegistryTest_SOURCES = blobstore/tests/TicketRegistryTest.cpp blobstore/tests/ServerTestSupport.h \
	transporter/tests/Eventually.h
blobstore_tests_TicketRegistryTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_TicketRegistryTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_TicketRegistryTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_ReservationTableTest_SOURCES = blobstore/tests/ReservationTableTest.cpp blobstore/tests/ServerTestSupport.h \
	transporter/tests/Eventually.h
blobstore_tests_ReservationTableTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_ReservationTableTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_ReservationTableTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_RecentOutcomesTest_SOURCES = blobstore/tests/RecentOutcomesTest.cpp
blobstore_tests_RecentOutcomesTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_RecentOutcomesTest_LDADD = $(server_test_ldadd)
blobstore_tests_DataServerTest_SOURCES = blobstore/tests/DataServerTest.cpp blobstore/tests/ServerTestSupport.h \
	transporter/tests/Eventually.h transporter/tests/ProtocolPeer.h
blobstore_tests_DataServerTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_DataServerTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_DataServerTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_FlightTableTest_SOURCES = blobstore/tests/FlightTableTest.cpp blobstore/tests/ServerTestSupport.h \
	transporter/tests/Eventually.h
blobstore_tests_FlightTableTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_FlightTableTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_FlightTableTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_TransporterRegistryTest_SOURCES = blobstore/tests/TransporterRegistryTest.cpp blobstore/tests/ServerTestSupport.h \
	transporter/tests/Eventually.h
blobstore_tests_TransporterRegistryTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_TransporterRegistryTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_TransporterRegistryTest_OBJECTS): idl/BlobStreaming.hh
# The transfer kinds driven without a reactor, over a socket pair
# (TransferTestSupport.h).
blobstore_tests_PushTransferTest_SOURCES = blobstore/tests/PushTransferTest.cpp blobstore/tests/TransferTestSupport.h \
	blobstore/tests/ServerTestSupport.h
blobstore_tests_PushTransferTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_PushTransferTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_PushTransferTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_PartTransferTest_SOURCES = blobstore/tests/PartTransferTest.cpp blobstore/tests/TransferTestSupport.h \
	blobstore/tests/ServerTestSupport.h
blobstore_tests_PartTransferTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_PartTransferTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_PartTransferTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_PullTransferTest_SOURCES = blobstore/tests/PullTransferTest.cpp blobstore/tests/TransferTestSupport.h \
	blobstore/tests/ServerTestSupport.h
blobstore_tests_PullTransferTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_PullTransferTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_PullTransferTest_OBJECTS): idl/BlobStreaming.hh
# The store service on real stores and tables; the servants over it, called
# in-process with an ORB of the test's own (no endpoint, no POA).
blobstore_tests_StoreServiceTest_SOURCES = blobstore/tests/StoreServiceTest.cpp blobstore/tests/ServerTestSupport.h \
	transporter/tests/Eventually.h
blobstore_tests_StoreServiceTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_StoreServiceTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_StoreServiceTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_BlobStoreServantTest_SOURCES = blobstore/tests/BlobStoreServantTest.cpp blobstore/tests/ServantTestSupport.h
blobstore_tests_BlobStoreServantTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_BlobStoreServantTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_BlobStoreServantTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_BlobTransporterServantTest_SOURCES = blobstore/tests/BlobTransporterServantTest.cpp \
	blobstore/tests/ServantTestSupport.h
blobstore_tests_BlobTransporterServantTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_BlobTransporterServantTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_BlobTransporterServantTest_OBJECTS): idl/BlobStreaming.hh
blobstore_tests_ImageShelfTest_SOURCES = blobstore/tests/ImageShelfTest.cpp blobstore/tests/ServerTestSupport.h \
	transporter/tests/Eventually.h
blobstore_tests_ImageShelfTest_CPPFLAGS = $(server_test_cppflags)
blobstore_tests_ImageShelfTest_LDADD = $(server_test_ldadd)
$(blobstore_tests_ImageShelfTest_OBJECTS): idl/BlobStreaming.hh

# The daemon; with --sdc-address it also publishes its status as an SDC
# provider (SdcStatus, on sdc/libblobsdc).
bin_PROGRAMS += blobstore/blobstored
blobstore_blobstored_SOURCES = \
	blobstore/src/blobstored/ConfigReload.cpp \
	blobstore/src/blobstored/ConfigReload.h \
	blobstore/src/blobstored/Daemon.cpp \
	blobstore/src/blobstored/Daemon.h \
	blobstore/src/blobstored/DaemonOptions.cpp \
	blobstore/src/blobstored/DaemonOptions.h \
	blobstore/src/blobstored/MetricsEndpoint.cpp \
	blobstore/src/blobstored/MetricsEndpoint.h \
	blobstore/src/blobstored/Notify.cpp \
	blobstore/src/blobstored/Notify.h \
	blobstore/src/blobstored/SdcStatus.cpp \
	blobstore/src/blobstored/SdcStatus.h \
	blobstore/src/blobstored/StoreEntry.cpp \
	blobstore/src/blobstored/StoreEntry.h \
	blobstore/src/blobstored/main.cpp
blobstore_blobstored_CPPFLAGS = $(blobstore_libblobserver_la_CPPFLAGS) -I$(top_srcdir)/sdc/include $(SYSTEMD_CFLAGS)
blobstore_blobstored_LDADD = blobstore/libblobserver.la transporter/libblobdaemon.la transporter/libblobgate.la transporter/libblobtransporter.la blobstore/libblobstore.la common/libblobcli.la \
	common/libblobcommon.la sdc/libblobsdc.la $(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS) \
	$(SYSTEMD_LIBS)
$(blobstore_blobstored_OBJECTS): idl/BlobStreaming.hh
if SANITIZERS
# GCC 12 with -fsanitize reports a false -Wmaybe-uninitialized inside
# Boost.Beast's basic_parser (the metrics endpoint; as in sdc/local.mk).
blobstore_blobstored_CXXFLAGS = $(AM_CXXFLAGS) -Wno-maybe-uninitialized
endif


# blobstored under systemd (docs/DEPLOYMENT.md): the template unit with this
# install's paths, the user it runs as (sysusers.d), an annotated example
# configuration under share/doc/blobstreaming/.
systemdsystemunit_DATA = blobstore/systemd/blobstored@.service
sysusers_DATA = blobstore/systemd/blobstreaming.conf
dist_doc_DATA = blobstore/systemd/blobstored.conf.example
EXTRA_DIST += blobstore/systemd/blobstored@.service.in blobstore/systemd/blobstreaming.sysusers
CLEANFILES += $(systemdsystemunit_DATA) $(sysusers_DATA)
blobstore/systemd/blobstored@.service: $(top_srcdir)/blobstore/systemd/blobstored@.service.in Makefile
	@$(MKDIR_P) blobstore/systemd
	$(AM_V_GEN)sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	  -e 's|@docdir[@]|$(docdir)|g' $< >$@.tmp && mv $@.tmp $@
blobstore/systemd/blobstreaming.conf: $(top_srcdir)/blobstore/systemd/blobstreaming.sysusers
	@$(MKDIR_P) blobstore/systemd
	$(AM_V_GEN)cp $< $@

# blob-activatord: starts configured stores on their first request
# (docs/ACTIVATION.md): an implementation repository with LOCATION_FORWARD.
bin_PROGRAMS += blobstore/blob-activatord
blobstore_blob_activatord_SOURCES = \
	blobstore/src/activator/Activator.cpp \
	blobstore/src/activator/Activator.h \
	blobstore/src/activator/main.cpp
blobstore_blob_activatord_CPPFLAGS = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(SPDLOG_CFLAGS)
blobstore_blob_activatord_LDADD = transporter/libblobgate.la transporter/libblobtransporter.la common/libblobcli.la common/libblobcommon.la \
	$(OMNIORB_LIBS) $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS)
$(blobstore_blob_activatord_OBJECTS): idl/BlobStreaming.hh
if SANITIZERS
# The same false -Warray-bounds of GCC 12 in omniidl's servant base (its
# ServantLocator) as in clients/local.mk.
blobstore_blob_activatord_CXXFLAGS = $(AM_CXXFLAGS) -Wno-array-bounds
endif
