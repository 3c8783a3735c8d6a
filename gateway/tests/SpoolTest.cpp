// blob-dicomd's spool (Spool.h) in a temporary directory, no gateway: the
// names spool_file() makes; remove_stale_spool() removes the files of
// processes that are gone, of a process that is no blob-dicomd and of this
// process (a gateway before a restart of the host), and keeps the files of a
// running blob-dicomd, names of another form, and directories.
#include "Spool.h"

#define BOOST_TEST_MODULE SpoolTest
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace blobstreaming::dicom;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir()
    {
        std::string pattern = (fs::temp_directory_path() / "spool-test-XXXXXX").string();
        BOOST_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path = pattern;
    }
    ~TempDir() { fs::remove_all(path); }
    void file(const std::string& name) const { std::ofstream(path / name) << "DICM"; }
    bool has(const std::string& name) const { return fs::exists(path / name); }
};

/// The id of a process that has ended (and been reaped).
pid_t gone_pid()
{
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
}

}  // namespace

BOOST_AUTO_TEST_CASE(spool_file_names_this_process)
{
    BOOST_TEST(spool_file("/var/spool", 7) == "/var/spool/blob-dicomd-" + std::to_string(::getpid()) + "-7.dcm");
}

BOOST_AUTO_TEST_CASE(removes_the_files_of_processes_gone_only)
{
    TempDir dir;
    const std::string gone = std::to_string(gone_pid());
    const std::string self = std::to_string(::getpid());
    const std::string parent = std::to_string(::getppid());  // a running process that is no blob-dicomd
    const std::vector<std::string> names{"blob-dicomd-" + gone + "-1.dcm",       "blob-dicomd-" + gone + "-22.dcm",
                                         "blob-dicomd-" + self + "-3.dcm",       "blob-dicomd-" + parent + "-4.dcm",
                                         "blob-dicomd-" + gone + "-5.dcm.part", "blob-dicomd-" + gone + ".dcm",
                                         "blob-dicomd-x-1.dcm",                  "blob-dicomd--1.dcm",
                                         "other-" + gone + "-1.dcm",             "notes.txt"};
    for (const std::string& name : names)
        dir.file(name);
    fs::create_directory(dir.path / ("blob-dicomd-" + gone + "-9.dcm"));
    BOOST_TEST(remove_stale_spool(dir.path.string()) == 4u);
    BOOST_TEST(!dir.has("blob-dicomd-" + gone + "-1.dcm"));
    BOOST_TEST(!dir.has("blob-dicomd-" + gone + "-22.dcm"));
    BOOST_TEST(!dir.has("blob-dicomd-" + self + "-3.dcm"));
    BOOST_TEST(!dir.has("blob-dicomd-" + parent + "-4.dcm"));
    const std::vector<std::string> kept{"blob-dicomd-" + gone + "-5.dcm.part", "blob-dicomd-" + gone + ".dcm",
                                        "blob-dicomd-x-1.dcm", "blob-dicomd--1.dcm", "other-" + gone + "-1.dcm",
                                        "notes.txt", "blob-dicomd-" + gone + "-9.dcm"};
    for (const std::string& name : kept)
        BOOST_TEST(dir.has(name), name << " kept");
}

BOOST_AUTO_TEST_CASE(a_missing_directory_removes_nothing)
{
    BOOST_TEST(remove_stale_spool("/nonexistent/spool/dir") == 0u);
}
