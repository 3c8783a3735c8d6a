# docs/man/: the manual pages of every installed program, made by help2man
# from the program's own --help and --version, so that the page and --help
# cannot drift; NAME.h2m adds what --help does not say (description, exit
# status, files, examples). tests/test_install.py checks that each page
# renders and names every option its --help lists.
man_MANS = docs/man/blob.1 docs/man/blobstored.8 docs/man/blob-activatord.8 docs/man/blob-dicomd.8 docs/man/sdc-provider.1 docs/man/sdc-get.1
CLEANFILES += $(man_MANS)
man_help2man = $(HELP2MAN) --no-info --no-discard-stderr --source="Blob Streaming $(PACKAGE_VERSION)"
man_page = $(MKDIR_P) docs/man && $(man_help2man)

docs/man/blob.1: clients/blob$(EXEEXT) $(top_srcdir)/docs/man/blob.h2m
	$(AM_V_GEN)$(man_page) -s 1 --help-option=--help-all -i $(top_srcdir)/docs/man/blob.h2m -o $@ ./clients/blob$(EXEEXT)
docs/man/blobstored.8: blobstore/blobstored$(EXEEXT) $(top_srcdir)/docs/man/blobstored.h2m
	$(AM_V_GEN)$(man_page) -s 8 -i $(top_srcdir)/docs/man/blobstored.h2m -o $@ ./blobstore/blobstored$(EXEEXT)
docs/man/blob-dicomd.8: gateway/blob-dicomd$(EXEEXT) $(top_srcdir)/docs/man/blob-dicomd.h2m
	$(AM_V_GEN)$(man_page) -s 8 -i $(top_srcdir)/docs/man/blob-dicomd.h2m -o $@ ./gateway/blob-dicomd$(EXEEXT)
docs/man/sdc-provider.1: sdc/sdc-provider$(EXEEXT) $(top_srcdir)/docs/man/sdc-provider.h2m
	$(AM_V_GEN)$(man_page) -s 1 -i $(top_srcdir)/docs/man/sdc-provider.h2m -o $@ ./sdc/sdc-provider$(EXEEXT)
docs/man/sdc-get.1: sdc/sdc-get$(EXEEXT) $(top_srcdir)/docs/man/sdc-get.h2m
	$(AM_V_GEN)$(man_page) -s 1 -i $(top_srcdir)/docs/man/sdc-get.h2m -o $@ ./sdc/sdc-get$(EXEEXT)
docs/man/blob-activatord.8: blobstore/blob-activatord$(EXEEXT) $(top_srcdir)/docs/man/blob-activatord.h2m
	$(AM_V_GEN)$(man_page) -s 8 -i $(top_srcdir)/docs/man/blob-activatord.h2m -o $@ ./blobstore/blob-activatord$(EXEEXT)
