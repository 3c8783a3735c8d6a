# sdc/: the IEEE 11073 SDC get-service path (docs/SDC.md): libblobsdc
# (MDIB, provider, consumer), the sdc-provider and sdc-get programs, unit
# tests and interoperability tests against sdc11073 (a Python SDC stack).
lib_LTLIBRARIES += sdc/libblobsdc.la
sdc_libblobsdc_la_SOURCES = \
	sdc/src/Asio.h \
	sdc/src/Consumer.cpp \
	sdc/src/Discovery.cpp \
	sdc/src/Discovery.h \
	sdc/src/Mdib.cpp \
	sdc/src/Namespaces.h \
	sdc/src/Provider.cpp \
	sdc/src/ServiceHandler.cpp \
	sdc/src/ServiceHandler.h \
	sdc/src/SoapMessage.cpp \
	sdc/src/SoapMessage.h \
	sdc/src/Uuid.cpp \
	sdc/src/Uuid.h \
	sdc/src/Xml.cpp \
	sdc/src/Xml.h
sdc_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/sdc/include -I$(top_srcdir)/sdc/src $(LIBXML2_CFLAGS)
sdc_libblobsdc_la_CPPFLAGS = $(sdc_cppflags)
sdc_libblobsdc_la_LIBADD = $(LIBXML2_LIBS) -lpthread
sdc_libblobsdc_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0

sdchdrdir = $(includedir)/blobstreaming/sdc
sdchdr_HEADERS = \
	sdc/include/blobstreaming/sdc/Consumer.h \
	sdc/include/blobstreaming/sdc/Mdib.h \
	sdc/include/blobstreaming/sdc/Provider.h \
	sdc/include/blobstreaming/sdc/SdcError.h

bin_PROGRAMS += sdc/sdc-provider sdc/sdc-get
sdc_sdc_provider_SOURCES = sdc/src/sdc-provider/main.cpp
sdc_sdc_provider_CPPFLAGS = $(sdc_cppflags)
sdc_sdc_provider_LDADD = sdc/libblobsdc.la $(BOOST_PROGRAM_OPTIONS_LIBS)
sdc_sdc_get_SOURCES = sdc/src/sdc-get/main.cpp
sdc_sdc_get_CPPFLAGS = $(sdc_cppflags)
sdc_sdc_get_LDADD = sdc/libblobsdc.la $(BOOST_PROGRAM_OPTIONS_LIBS)
