# clients/dicom/: radiology at the door (docs/DICOM.md). libblobdicom (not
# installed): the study index (SQLite or PostgreSQL) and DICOM matching,
# which `blob find` uses too; blob-dicomd: the DICOM gateway (DCMTK's dcmnet), a Storage SCP
# that pushes each instance through libblobclient and indexes it.
noinst_LTLIBRARIES += clients/dicom/libblobdicom.la
clients_dicom_libblobdicom_la_SOURCES = \
	clients/dicom/Attributes.cpp \
	clients/dicom/Attributes.h \
	clients/dicom/Matching.cpp \
	clients/dicom/Matching.h \
	clients/dicom/StudyIndex.cpp \
	clients/dicom/StudyIndex.h
clients_dicom_libblobdicom_la_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE_CFLAGS) $(LIBPQ_CFLAGS)
clients_dicom_libblobdicom_la_LIBADD = common/libblobcommon.la $(SQLITE_LIBS) $(LIBPQ_LIBS)

bin_PROGRAMS += clients/dicom/blob-dicomd
clients_dicom_blob_dicomd_SOURCES = \
	clients/dicom/gateway/main.cpp \
	clients/dicom/gateway/EventIndexer.cpp \
	clients/dicom/gateway/EventIndexer.h \
	clients/dicom/gateway/GatewayOptions.cpp \
	clients/dicom/gateway/GatewayOptions.h \
	clients/dicom/gateway/InstanceStore.cpp \
	clients/dicom/gateway/InstanceStore.h \
	clients/dicom/gateway/QueryRetrieve.cpp \
	clients/dicom/gateway/QueryRetrieve.h \
	clients/dicom/gateway/StorageScp.cpp \
	clients/dicom/gateway/StorageScp.h
clients_dicom_blob_dicomd_CPPFLAGS = $(AM_CPPFLAGS) $(SPDLOG_CFLAGS) $(DCMTK_CFLAGS)
clients_dicom_blob_dicomd_LDADD = clients/dicom/libblobdicom.la clients/libblobclient.la \
	transporter/libblobtransporter.la common/libblobcli.la common/libblobcommon.la \
	$(DCMTK_LIBS) $(SPDLOG_LIBS) $(BOOST_PROGRAM_OPTIONS_LIBS)
