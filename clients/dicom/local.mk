# clients/dicom/: radiology at the door (docs/DICOM.md). libblobdicom (not
# installed): the study index (SQLite or PostgreSQL) and DICOM matching,
# which `blob find` and the gateway (gateway/, blob-dicomd) use, and the
# retrieval of instances from their nearest copy (blob pull --study, C-GET).
# InstanceIdentity reads a retrieved object's header with DCMTK's dcmdata.
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
