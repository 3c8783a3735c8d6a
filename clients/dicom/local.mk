# clients/dicom/: radiology at the door (docs/DICOM.md). libblobdicom (not
# installed): the study index (SQLite or PostgreSQL) and DICOM matching,
# which `blob find` uses too, and the retrieval of instances from their
# nearest copy (blob pull --study, C-GET); blob-dicomd: the DICOM gateway (DCMTK's dcmnet), a Storage SCP
# that pushes each instance through libblobclient and indexes it. InstanceIdentity
# reads a retrieved object's header with DCMTK's dcmdata.
noinst_LTLIBRARIES += clients/dicom/libblobdicom.la
clients_dicom_libblobdicom_la_SOURCES = \
	clients/dicom/Attributes.cpp \
	clients/dicom/Attributes.h \
	clients/dicom/InstanceIdentity.cpp \
	clients/dicom/InstanceIdentity.h \
	clients/dicom/Matching.cpp \
	clients/dicom/Matching.h \
	clients/dicom/NearestCopy.cpp \
	clients/dicom/NearestCopy.h \
	clients/dicom/StudyIndex.cpp \
	clients/dicom/StudyIndex.h
clients_dicom_libblobdicom_la_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE_CFLAGS) $(LIBPQ_CFLAGS) $(DCMTK_CFLAGS)
clients_dicom_libblobdicom_la_LIBADD = clients/libblobclient.la common/libblobcommon.la $(SQLITE_LIBS) $(LIBPQ_LIBS) $(DCMTK_LIBS)

bin_PROGRAMS += clients/dicom/blob-dicomd
clients_dicom_blob_dicomd_SOURCES = \
	clients/dicom/gateway/main.cpp \
	clients/dicom/gateway/AssociationGate.cpp \
	clients/dicom/gateway/AssociationGate.h \
	clients/dicom/gateway/EventIndexer.cpp \
	clients/dicom/gateway/EventIndexer.h \
	clients/dicom/gateway/GatewayOptions.cpp \
	clients/dicom/gateway/GatewayOptions.h \
	clients/dicom/gateway/InstanceStore.cpp \
	clients/dicom/gateway/InstanceStore.h \
	clients/dicom/gateway/ListenPort.cpp \
	clients/dicom/gateway/ListenPort.h \
	clients/dicom/gateway/QueryRetrieve.cpp \
	clients/dicom/gateway/QueryRetrieve.h \
	clients/dicom/gateway/Spool.cpp \
	clients/dicom/gateway/Spool.h \
	clients/dicom/gateway/StorageScp.cpp \
	clients/dicom/gateway/StableTracker.cpp \
	clients/dicom/gateway/StableTracker.h \
	clients/dicom/gateway/StorageScp.h \
	clients/dicom/gateway/StudyEvents.cpp \
	clients/dicom/gateway/StudyEvents.h \
	clients/dicom/gateway/StudyStability.h \
	clients/dicom/gateway/TextDecoder.cpp \
	clients/dicom/gateway/TextDecoder.h
# StudyEvents and the --log-file sink: what blobstored does too (libblobdaemon).
clients_dicom_blob_dicomd_CPPFLAGS = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) $(SPDLOG_CFLAGS) $(DCMTK_CFLAGS)
clients_dicom_blob_dicomd_LDADD = clients/dicom/libblobdicom.la clients/libblobclient.la transporter/libblobdaemon.la \
	transporter/libblobtransporter.la blobstore/libblobstore.la common/libblobcli.la common/libblobcommon.la \
	$(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(DCMTK_LIBS) $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS)
$(clients_dicom_blob_dicomd_OBJECTS): idl/BlobStreaming.hh

# blob-dicomd under systemd (docs/DICOM.md): the template unit beside
# blobstored's, with this install's paths.
systemdsystemunit_DATA += clients/dicom/systemd/blob-dicomd@.service
EXTRA_DIST += clients/dicom/systemd/blob-dicomd@.service.in
CLEANFILES += clients/dicom/systemd/blob-dicomd@.service
clients/dicom/systemd/blob-dicomd@.service: $(top_srcdir)/clients/dicom/systemd/blob-dicomd@.service.in Makefile
	@$(MKDIR_P) clients/dicom/systemd
	$(AM_V_GEN)sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' $< >$@.tmp && mv $@.tmp $@

# The study-stable tracker with a fixed clock (no processes).
check_PROGRAMS += clients/dicom/tests/StudyStabilityTest
TESTS += clients/dicom/tests/StudyStabilityTest
clients_dicom_tests_StudyStabilityTest_SOURCES = clients/dicom/tests/StudyStabilityTest.cpp clients/dicom/gateway/StudyStability.h
clients_dicom_tests_StudyStabilityTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/clients/dicom/gateway -DBOOST_TEST_DYN_LINK
clients_dicom_tests_StudyStabilityTest_LDADD = $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# The spool's stale files in a temporary directory (no gateway).
check_PROGRAMS += clients/dicom/tests/SpoolTest
TESTS += clients/dicom/tests/SpoolTest
clients_dicom_tests_SpoolTest_SOURCES = clients/dicom/tests/SpoolTest.cpp clients/dicom/gateway/Spool.cpp \
	clients/dicom/gateway/Spool.h
clients_dicom_tests_SpoolTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/clients/dicom/gateway $(SPDLOG_CFLAGS) \
	-DBOOST_TEST_DYN_LINK
clients_dicom_tests_SpoolTest_LDADD = $(SPDLOG_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# StableTracker over a SQLite index in a temporary directory (no processes).
check_PROGRAMS += clients/dicom/tests/StableTrackerTest
TESTS += clients/dicom/tests/StableTrackerTest
clients_dicom_tests_StableTrackerTest_SOURCES = clients/dicom/tests/StableTrackerTest.cpp \
	clients/dicom/gateway/StableTracker.cpp clients/dicom/gateway/StableTracker.h clients/dicom/gateway/StudyStability.h
clients_dicom_tests_StableTrackerTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/clients/dicom/gateway $(SPDLOG_CFLAGS) \
	-DBOOST_TEST_DYN_LINK
clients_dicom_tests_StableTrackerTest_LDADD = clients/dicom/libblobdicom.la common/libblobcommon.la $(SPDLOG_LIBS) \
	$(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# InstanceIdentity (the data set checksum derived from DCMTK-written files) and the index's conflicts over a
# SQLite index in a temporary directory (no processes).
check_PROGRAMS += clients/dicom/tests/InstanceIdentityTest
TESTS += clients/dicom/tests/InstanceIdentityTest
clients_dicom_tests_InstanceIdentityTest_SOURCES = clients/dicom/tests/InstanceIdentityTest.cpp
clients_dicom_tests_InstanceIdentityTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/clients/dicom $(DCMTK_CFLAGS) \
	$(SQLITE_CFLAGS) -DBOOST_TEST_DYN_LINK
clients_dicom_tests_InstanceIdentityTest_LDADD = clients/dicom/libblobdicom.la common/libblobcommon.la \
	$(DCMTK_LIBS) $(SQLITE_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# The index URL's redaction and the query terms refused for their text (no processes).
check_PROGRAMS += clients/dicom/tests/QueryTextTest
TESTS += clients/dicom/tests/QueryTextTest
clients_dicom_tests_QueryTextTest_SOURCES = clients/dicom/tests/QueryTextTest.cpp
clients_dicom_tests_QueryTextTest_CPPFLAGS = $(AM_CPPFLAGS) -DBOOST_TEST_DYN_LINK
clients_dicom_tests_QueryTextTest_LDADD = clients/dicom/libblobdicom.la common/libblobcommon.la \
	$(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
