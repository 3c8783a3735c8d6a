# common/: the vocabulary every layer speaks (libblobcommon): error codes and
# their category (Error.h), Blob names, a Blob's committed version (BlobInfo),
# checksums (CRC32C, SHA-256; HashPipeline hashes on a helper thread), file
# descriptors, the TLS files and the policy every TLS context gets (TlsPolicy). It depends on nothing of ours; every other folder may use it.
lib_LTLIBRARIES += common/libblobcommon.la
common_libblobcommon_la_SOURCES = \
	common/src/BlobInfo.cpp \
	common/src/BlobName.cpp \
	common/src/Checksum.cpp \
	common/src/DescriptorReserve.cpp \
	common/src/Error.cpp \
	common/src/FileIdentity.cpp \
	common/src/HashPipeline.cpp \
	common/src/Host.cpp \
	common/src/MappedRegion.cpp \
	common/src/Sha256.cpp \
	common/src/Text.cpp \
	common/src/TlsFiles.cpp \
	common/src/TlsPolicy.cpp \
	common/src/UniqueFd.cpp
common_libblobcommon_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS) $(ISAL_CFLAGS)
common_libblobcommon_la_LIBADD = $(OPENSSL_LIBS) $(ISAL_LIBS)
common_libblobcommon_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0

commonhdrdir = $(includedir)/blobstreaming/common
commonhdr_HEADERS = \
	common/include/blobstreaming/common/BlobInfo.h \
	common/include/blobstreaming/common/BlobName.h \
	common/include/blobstreaming/common/Checksum.h \
	common/include/blobstreaming/common/Error.h \
	common/include/blobstreaming/common/HashPipeline.h \
	common/include/blobstreaming/common/Host.h \
	common/include/blobstreaming/common/LittleEndian.h \
	common/include/blobstreaming/common/MappedRegion.h \
	common/include/blobstreaming/common/Sha256.h \
	common/include/blobstreaming/common/Text.h \
	common/include/blobstreaming/common/TlsFiles.h \
	common/include/blobstreaming/common/UniqueFd.h
# The TLS policy of our contexts (transporter, sdc) and the descriptor
# reserve of our listening ports: ours, not an API.
EXTRA_DIST += common/include/blobstreaming/common/TlsPolicy.h common/include/blobstreaming/common/DescriptorReserve.h \
	common/include/blobstreaming/common/FileIdentity.h

# libblobcli (not installed): what every program's command line shares —
# sizes, durations, the logging flags, --version, no abbreviated options
# (docs/CLI.md). Programs link it with $(BOOST_PROGRAM_OPTIONS_LIBS) and
# $(SPDLOG_LIBS).
noinst_LTLIBRARIES += common/libblobcli.la
common_libblobcli_la_SOURCES = \
	common/include/blobstreaming/cli/CommandLine.h \
	common/include/blobstreaming/cli/Values.h \
	common/src/cli/CommandLine.cpp \
	common/src/cli/Values.cpp
common_libblobcli_la_CPPFLAGS = $(AM_CPPFLAGS) $(SPDLOG_CFLAGS)
common_libblobcli_la_LIBADD = common/libblobcommon.la $(BOOST_PROGRAM_OPTIONS_LIBS) $(SPDLOG_LIBS)

common_test_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/common/tests $(OPENSSL_CFLAGS) -DBOOST_TEST_DYN_LINK
common_test_ldadd = common/libblobcommon.la $(OPENSSL_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
common_tests = common/tests/BlobNameTest common/tests/ChecksumTest common/tests/CliTest common/tests/DescriptorReserveTest common/tests/HashPipelineTest \
	common/tests/Sha256Test common/tests/TextTest
check_PROGRAMS += $(common_tests)
TESTS += $(common_tests)
common_tests_BlobNameTest_SOURCES = common/tests/BlobNameTest.cpp
common_tests_BlobNameTest_CPPFLAGS = $(common_test_cppflags)
common_tests_BlobNameTest_LDADD = $(common_test_ldadd)
common_tests_DescriptorReserveTest_SOURCES = common/tests/DescriptorReserveTest.cpp
common_tests_DescriptorReserveTest_CPPFLAGS = $(common_test_cppflags)
common_tests_DescriptorReserveTest_LDADD = $(common_test_ldadd)
common_tests_TextTest_SOURCES = common/tests/TextTest.cpp
common_tests_TextTest_CPPFLAGS = $(common_test_cppflags)
common_tests_TextTest_LDADD = $(common_test_ldadd)
common_tests_ChecksumTest_SOURCES = common/tests/ChecksumTest.cpp
common_tests_ChecksumTest_CPPFLAGS = $(common_test_cppflags)
common_tests_ChecksumTest_LDADD = $(common_test_ldadd)
common_tests_CliTest_SOURCES = common/tests/CliTest.cpp
common_tests_CliTest_CPPFLAGS = $(common_test_cppflags) $(SPDLOG_CFLAGS)
common_tests_CliTest_LDADD = common/libblobcli.la $(common_test_ldadd) $(BOOST_PROGRAM_OPTIONS_LIBS) $(SPDLOG_LIBS)
common_tests_HashPipelineTest_SOURCES = common/tests/HashPipelineTest.cpp
common_tests_HashPipelineTest_CPPFLAGS = $(common_test_cppflags)
common_tests_HashPipelineTest_LDADD = $(common_test_ldadd)
common_tests_Sha256Test_SOURCES = common/tests/Sha256Test.cpp
common_tests_Sha256Test_CPPFLAGS = $(common_test_cppflags)
common_tests_Sha256Test_LDADD = $(common_test_ldadd)
EXTRA_DIST += common/tests/TestSupport.h
