# gateway/: blob-dicomd, the DICOM gateway (docs/DICOM.md): DCMTK's dcmnet, a
# Storage SCP that pushes each instance through libblobclient and indexes it
# in the study index (clients/dicom/, libblobdicom), answers C-FIND, C-MOVE and
# C-GET from it and tells watchers when a study is stable. A server as
# blobstored is, so a folder of its own above clients/: what it shares with
# blobstored is libblobdaemon (transporter/src/daemon), and no client links
# anything of it.
bin_PROGRAMS += gateway/blob-dicomd
gateway_blob_dicomd_SOURCES = \
	gateway/src/main.cpp \
	gateway/src/AssociationGate.cpp \
	gateway/src/AssociationGate.h \
	gateway/src/DicomSecurity.cpp \
	gateway/src/DicomSecurity.h \
	gateway/src/EventIndexer.cpp \
	gateway/src/EventIndexer.h \
	gateway/src/GatewayOptions.cpp \
	gateway/src/GatewayOptions.h \
	gateway/src/InstanceStore.cpp \
	gateway/src/InstanceStore.h \
	gateway/src/IndexQueue.cpp \
	gateway/src/IndexQueue.h \
	gateway/src/ListenPort.cpp \
	gateway/src/ListenPort.h \
	gateway/src/QueryRetrieve.cpp \
	gateway/src/QueryRetrieve.h \
	gateway/src/Spool.cpp \
	gateway/src/Spool.h \
	gateway/src/StorageScp.cpp \
	gateway/src/StableTracker.cpp \
	gateway/src/StableTracker.h \
	gateway/src/StorageScp.h \
	gateway/src/StudyEvents.cpp \
	gateway/src/StudyEvents.h \
	gateway/src/StudyStability.h \
	gateway/src/TextDecoder.cpp \
	gateway/src/TextDecoder.h \
	gateway/src/web/DicomWeb.cpp \
	gateway/src/web/DicomWeb.h \
	gateway/src/web/HttpServer.cpp \
	gateway/src/web/HttpServer.h \
	gateway/src/web/Multipart.cpp \
	gateway/src/web/Multipart.h \
	gateway/src/web/PixelData.cpp \
	gateway/src/web/PixelData.h \
	gateway/src/web/Wado.cpp \
	gateway/src/web/WebSpool.h
# C-STORE: each data set received into memory before its push.
gateway_blob_dicomd_SOURCES += \
	gateway/src/DataSetReceiver.cpp \
	gateway/src/DataSetReceiver.h
# C-MOVE, Storage Commitment, and the retrieval C-GET shares with C-MOVE.
gateway_blob_dicomd_SOURCES += \
	gateway/src/Destinations.cpp \
	gateway/src/Destinations.h \
	gateway/src/MoveScp.cpp \
	gateway/src/MoveScp.h \
	gateway/src/OutgoingAssociation.cpp \
	gateway/src/OutgoingAssociation.h \
	gateway/src/Retrieval.cpp \
	gateway/src/Retrieval.h \
	gateway/src/StorageCommitment.cpp \
	gateway/src/StorageCommitment.h \
	gateway/src/SubOperation.cpp \
	gateway/src/SubOperation.h
# StudyEvents and the --log-file sink: what blobstored does too (libblobdaemon).
gateway_blob_dicomd_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/clients -I$(top_srcdir)/gateway/src $(OMNIORB_CFLAGS) $(SPDLOG_CFLAGS) $(DCMTK_CFLAGS)
gateway_blob_dicomd_LDADD = clients/dicom/libblobdicom.la clients/libblobclient.la transporter/libblobdaemon.la \
	transporter/libblobtransporter.la blobstore/libblobstore.la common/libblobcli.la common/libblobcommon.la \
	$(OMNIORB_LIBS) $(ACE_LIBS) $(OPENSSL_LIBS) $(DCMTK_LIBS) $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS)
# DCMTK's JPEG and JPEG-LS decoders: a retrieval converts to uncompressed
# for a receiver that does not accept the stored transfer syntax.
gateway_blob_dicomd_LDADD += -ldcmjpls -ldcmjpeg -ldcmimgle
$(gateway_blob_dicomd_OBJECTS): idl/BlobStreaming.hh

# blob-dicomd under systemd (docs/DICOM.md): the template unit beside
# blobstored's, with this install's paths.
systemdsystemunit_DATA += gateway/systemd/blob-dicomd@.service
EXTRA_DIST += gateway/systemd/blob-dicomd@.service.in
CLEANFILES += gateway/systemd/blob-dicomd@.service
gateway/systemd/blob-dicomd@.service: $(top_srcdir)/gateway/systemd/blob-dicomd@.service.in Makefile
	@$(MKDIR_P) gateway/systemd
	$(AM_V_GEN)sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' $< >$@.tmp && mv $@.tmp $@

# The study-stable tracker with a fixed clock (no processes).
check_PROGRAMS += gateway/tests/StudyStabilityTest
TESTS += gateway/tests/StudyStabilityTest
gateway_tests_StudyStabilityTest_SOURCES = gateway/tests/StudyStabilityTest.cpp gateway/src/StudyStability.h
gateway_tests_StudyStabilityTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gateway/src -DBOOST_TEST_DYN_LINK
gateway_tests_StudyStabilityTest_LDADD = $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# The spool's stale files in a temporary directory (no gateway).
check_PROGRAMS += gateway/tests/SpoolTest
TESTS += gateway/tests/SpoolTest
gateway_tests_SpoolTest_SOURCES = gateway/tests/SpoolTest.cpp gateway/src/Spool.cpp \
	gateway/src/Spool.h
gateway_tests_SpoolTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gateway/src $(SPDLOG_CFLAGS) \
	-DBOOST_TEST_DYN_LINK
gateway_tests_SpoolTest_LDADD = $(SPDLOG_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# StableTracker over a SQLite index in a temporary directory (no processes).
check_PROGRAMS += gateway/tests/StableTrackerTest
TESTS += gateway/tests/StableTrackerTest
gateway_tests_StableTrackerTest_SOURCES = gateway/tests/StableTrackerTest.cpp \
	gateway/src/StableTracker.cpp gateway/src/StableTracker.h gateway/src/StudyStability.h
gateway_tests_StableTrackerTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gateway/src -I$(top_srcdir)/clients $(SPDLOG_CFLAGS) \
	-DBOOST_TEST_DYN_LINK
gateway_tests_StableTrackerTest_LDADD = clients/dicom/libblobdicom.la common/libblobcommon.la $(SPDLOG_LIBS) \
	$(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# The DICOM port's access decisions (DicomSecurity): --peer, --peer-subject,
# rights_of, without a gateway (the one host name resolved is localhost).
check_PROGRAMS += gateway/tests/DicomSecurityTest
TESTS += gateway/tests/DicomSecurityTest
gateway_tests_DicomSecurityTest_SOURCES = gateway/tests/DicomSecurityTest.cpp gateway/src/DicomSecurity.cpp \
	gateway/src/DicomSecurity.h
gateway_tests_DicomSecurityTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gateway/src $(SPDLOG_CFLAGS) \
	-DBOOST_TEST_DYN_LINK
gateway_tests_DicomSecurityTest_LDADD = transporter/libblobtransporter.la common/libblobcommon.la $(OPENSSL_LIBS) \
	$(SPDLOG_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# DICOMweb's byte-level parts (no processes): where Pixel Data lies in a
# Part 10 object's first bytes, and multipart/related bodies.
check_PROGRAMS += gateway/tests/PixelDataTest gateway/tests/MultipartTest
TESTS += gateway/tests/PixelDataTest gateway/tests/MultipartTest
gateway_tests_PixelDataTest_SOURCES = gateway/tests/PixelDataTest.cpp gateway/src/web/PixelData.cpp \
	gateway/src/web/PixelData.h
gateway_tests_PixelDataTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gateway/src -DBOOST_TEST_DYN_LINK
gateway_tests_PixelDataTest_LDADD = $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
gateway_tests_MultipartTest_SOURCES = gateway/tests/MultipartTest.cpp gateway/src/web/Multipart.cpp \
	gateway/src/web/Multipart.h
gateway_tests_MultipartTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gateway/src -DBOOST_TEST_DYN_LINK
gateway_tests_MultipartTest_LDADD = $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)

# The C-MOVE destination table's parsing (no processes).
check_PROGRAMS += gateway/tests/DestinationsTest
TESTS += gateway/tests/DestinationsTest
gateway_tests_DestinationsTest_SOURCES = gateway/tests/DestinationsTest.cpp gateway/src/Destinations.cpp \
	gateway/src/Destinations.h
gateway_tests_DestinationsTest_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gateway/src -DBOOST_TEST_DYN_LINK
gateway_tests_DestinationsTest_LDADD = common/libblobcommon.la $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
