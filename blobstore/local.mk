# blobstore/: the Store interface, FileStore, MemoryStore, names and digests.
lib_LTLIBRARIES += blobstore/libblobstore.la
blobstore_libblobstore_la_SOURCES = \
	blobstore/src/BlobInfo.cpp \
	blobstore/src/BlobName.cpp \
	blobstore/src/Error.cpp \
	blobstore/src/FileStore.cpp \
	blobstore/src/MemoryStore.cpp \
	blobstore/src/Reservation.cpp \
	blobstore/src/Sha256.cpp \
	blobstore/src/Store.cpp \
	blobstore/src/StoreIndex.h \
	blobstore/src/UniqueFd.cpp
blobstore_libblobstore_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS)
blobstore_libblobstore_la_LIBADD = $(OPENSSL_LIBS) $(SPDLOG_LIBS)
blobstore_libblobstore_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0

blobstorehdrdir = $(includedir)/blobstreaming/blobstore
blobstorehdr_HEADERS = \
	blobstore/include/blobstreaming/blobstore/BlobInfo.h \
	blobstore/include/blobstreaming/blobstore/BlobName.h \
	blobstore/include/blobstreaming/blobstore/BlobRange.h \
	blobstore/include/blobstreaming/blobstore/Error.h \
	blobstore/include/blobstreaming/blobstore/FileStore.h \
	blobstore/include/blobstreaming/blobstore/LittleEndian.h \
	blobstore/include/blobstreaming/blobstore/MemoryStore.h \
	blobstore/include/blobstreaming/blobstore/Reservation.h \
	blobstore/include/blobstreaming/blobstore/Sha256.h \
	blobstore/include/blobstreaming/blobstore/Store.h \
	blobstore/include/blobstreaming/blobstore/UniqueFd.h

# Unit tests: one program per class; StoreTest runs the same suite on both stores.
blobstore_test_cppflags = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS) $(SPDLOG_CFLAGS) -DBOOST_TEST_DYN_LINK
blobstore_test_ldadd = blobstore/libblobstore.la $(OPENSSL_LIBS) $(SPDLOG_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
blobstore_tests = \
	blobstore/tests/BlobNameTest \
	blobstore/tests/Sha256Test \
	blobstore/tests/StoreTest \
	blobstore/tests/FileStoreTest \
	blobstore/tests/MemoryStoreTest
check_PROGRAMS += $(blobstore_tests)
TESTS += $(blobstore_tests)
EXTRA_DIST += blobstore/tests/StoreTestSupport.h

blobstore_tests_BlobNameTest_SOURCES = blobstore/tests/BlobNameTest.cpp
blobstore_tests_BlobNameTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_BlobNameTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_Sha256Test_SOURCES = blobstore/tests/Sha256Test.cpp
blobstore_tests_Sha256Test_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_Sha256Test_LDADD = $(blobstore_test_ldadd)
blobstore_tests_StoreTest_SOURCES = blobstore/tests/StoreTest.cpp
blobstore_tests_StoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_StoreTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_FileStoreTest_SOURCES = blobstore/tests/FileStoreTest.cpp
blobstore_tests_FileStoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_FileStoreTest_LDADD = $(blobstore_test_ldadd)
blobstore_tests_MemoryStoreTest_SOURCES = blobstore/tests/MemoryStoreTest.cpp
blobstore_tests_MemoryStoreTest_CPPFLAGS = $(blobstore_test_cppflags)
blobstore_tests_MemoryStoreTest_LDADD = $(blobstore_test_ldadd)
