# omniidl stubs are generated into the build tree only (never committed).
# One stamp stands for the three outputs so that parallel make runs omniidl once.
EXTRA_DIST += idl/BlobStreaming.idl

idl_generated = idl/BlobStreaming.hh idl/BlobStreamingSK.cc idl/BlobStreamingDynSK.cc
BUILT_SOURCES += $(idl_generated)
CLEANFILES += $(idl_generated) idl/.stamp

$(idl_generated): idl/.stamp
	@test -f $@ || { rm -f idl/.stamp; $(MAKE) $(AM_MAKEFLAGS) idl/.stamp; }

idl/.stamp: $(top_srcdir)/idl/BlobStreaming.idl
	@$(MKDIR_P) idl
	$(AM_V_GEN)$(OMNIIDL) -bcxx -Wba -Wbh=.hh -Wbs=SK.cc -Wbd=DynSK.cc -C idl \
		$(abs_top_srcdir)/idl/BlobStreaming.idl
	@touch $@

# The stubs as a convenience library. They are not our code: compile them
# without our warning flags.
noinst_LTLIBRARIES += idl/libblobstreaming_idl.la
nodist_idl_libblobstreaming_idl_la_SOURCES = idl/BlobStreamingSK.cc idl/BlobStreamingDynSK.cc
idl_libblobstreaming_idl_la_CXXFLAGS = $(SANITIZER_FLAGS) -w
idl_libblobstreaming_idl_la_CPPFLAGS = -I$(top_builddir)/idl $(OMNIORB_CFLAGS)
idl_libblobstreaming_idl_la_LIBADD = $(OMNIORB_LIBS)
$(idl_libblobstreaming_idl_la_OBJECTS): idl/BlobStreaming.hh

# Compiles the stubs and checks the contract links: exceptions, structs, the
# 64-bit size types.
check_PROGRAMS += idl/tests/IdlContractTest
TESTS += idl/tests/IdlContractTest
idl_tests_IdlContractTest_SOURCES = idl/tests/IdlContractTest.cpp
idl_tests_IdlContractTest_CPPFLAGS = $(AM_CPPFLAGS) $(OMNIORB_CFLAGS) -DBOOST_TEST_DYN_LINK
idl_tests_IdlContractTest_LDADD = idl/libblobstreaming_idl.la $(OMNIORB_LIBS) $(BOOST_UNIT_TEST_FRAMEWORK_LIBS)
$(idl_tests_IdlContractTest_OBJECTS): idl/BlobStreaming.hh
