// InstanceIdentity (UIDs checked, what makes two data sets one instance) and
// the study index's conflicts over a real SQLite index in a temporary
// directory: another data set under an indexed SOP Instance UID is kept
// apart and named, never takes the entry over; removing either copy
// resolves the conflict (the entry restored from what remains); a Blob
// replaced by another data set, when it was the entry's only copy, is no
// conflict.
#include "InstanceIdentity.h"

#define BOOST_TEST_MODULE InstanceIdentityTest
#include <boost/test/unit_test.hpp>

#include "StudyIndex.h"

#include <filesystem>
#include <memory>

#include <stdlib.h>

using namespace blobstreaming::dicom;

BOOST_AUTO_TEST_CASE(uids_as_ps3_5_9_1_defines_them)
{
    for (const char* good : {"0", "1.2.840.10008.1.2.1", "1.0.3", "2.25.329800735698586629295641978511506172918",
                             "1.2.826.0.1.3680043.8.498.12345678901234567890123456789012345678"})
        BOOST_TEST(valid_uid(good), good);
    const std::string max(64, '1');
    BOOST_TEST(valid_uid(max));
    for (const std::string& bad : {std::string(), std::string("1.2.840.99999.ABC.1"), std::string("1.02.3"),
                                  std::string("1..2"), std::string(".1.2"), std::string("1.2."),
                                  std::string("../../x"), std::string("1.2 "), std::string("1.2\\1.3"), max + "1",
                                  std::string("1.2\0.3", 6)})
        BOOST_TEST(!valid_uid(bad), bad);
}

BOOST_AUTO_TEST_CASE(values_escaped_for_messages)
{
    BOOST_TEST(escaped("1.2.ABC") == "1.2.ABC");
    BOOST_TEST(escaped(std::string("a\"b\\c\n\x01\xff", 8)) == "a\\\"b\\\\c\\x0A\\x01\\xFF");
    BOOST_TEST(escaped(std::string(100, '1'), 4) == "1111...");
    const std::map<std::string, std::string> v{{"SOPInstanceUID", "1.2.3"}, {"StudyInstanceUID", "1.02"}};
    BOOST_TEST(invalid_uid(v).rfind("StudyInstanceUID \"1.02\" is not a valid UID", 0) == 0, invalid_uid(v));
    BOOST_TEST(invalid_uid({{"SOPInstanceUID", "1.2.3"}, {"SeriesInstanceUID", ""}}).empty());
}

BOOST_AUTO_TEST_CASE(identity_is_patient_study_series_and_class)
{
    const std::map<std::string, std::string> a{{"PatientID", "P1"}, {"StudyInstanceUID", "1.2"},
                                               {"SeriesInstanceUID", "1.2.1"}, {"PatientName", "Doe"}};
    std::map<std::string, std::string> b = a;
    b["PatientName"] = "Roe";  // not identifying
    BOOST_TEST(identity_difference(a, b).empty());
    b["PatientID"] = "P2";
    BOOST_TEST(identity_difference(b, a) == "PatientID \"P2\" (not \"P1\")");
}

namespace {

struct Index {
    std::filesystem::path dir;
    std::unique_ptr<StudyIndex> index;
    Index()
    {
        char pattern[] = "/tmp/identity-test-XXXXXX";
        dir = ::mkdtemp(pattern);
        index = std::make_unique<StudyIndex>("sqlite:" + (dir / "index.sqlite").string(), true);
    }
    ~Index() { std::filesystem::remove_all(dir); }
};

InstanceRecord record(const std::string& blob, const std::string& patient, const std::string& study,
                      const std::string& checksum)
{
    InstanceRecord r;
    r.values = {{"SOPInstanceUID", "1.2.3.4"}, {"PatientID", patient}, {"StudyInstanceUID", study},
                {"SeriesInstanceUID", study + ".1"}, {"SOPClassUID", "1.2.840.10008.5.1.4.1.1.2"}};
    r.blob = blob;
    r.store = "ws1";
    r.size = 100;
    r.checksum = checksum;
    return r;
}

std::map<std::string, std::string> entry(StudyIndex& index)
{
    const auto rows = index.find(Level::instance, parse_matches({"SOPInstanceUID=1.2.3.4"}));
    BOOST_REQUIRE_EQUAL(rows.size(), 1u);
    return {rows[0].begin(), rows[0].end()};
}

}  // namespace

BOOST_AUTO_TEST_CASE(another_data_set_is_kept_apart_and_resolved_by_a_removal)
{
    Index t;
    StudyIndex& index = *t.index;
    BOOST_TEST(index.put(record("a.dcm", "PAT-A", "1.1", "crc32c:1")).empty());
    // The same instance as the modality wrote it (another checksum): a copy.
    BOOST_TEST(index.put(record("a-file.dcm", "PAT-A", "1.1", "crc32c:2")).empty());
    const std::string why = index.put(record("b.dcm", "PAT-B", "1.9", "crc32c:3"));
    BOOST_TEST(why.find("Blob \"b.dcm\" in store \"ws1\" holds another data set than its entry's") !=
                   std::string::npos,
               why);
    BOOST_TEST(why.find("PatientID \"PAT-B\" (not \"PAT-A\"), StudyInstanceUID \"1.9\" (not \"1.1\")") !=
                   std::string::npos,
               why);
    auto e = entry(index);
    BOOST_TEST(e["PatientID"] == "PAT-A");
    BOOST_TEST(e["conflict"] == "\"b.dcm\" in store \"ws1\": PatientID \"PAT-B\", StudyInstanceUID \"1.9\"");
    // Found by the study of either data set.
    for (const char* study : {"StudyInstanceUID=1.1", "StudyInstanceUID=1.9"}) {
        const auto c = index.conflicts(parse_matches({study}));
        BOOST_REQUIRE_EQUAL(c.size(), 1u);
        BOOST_TEST(c[0].copies.size() == 3u);
        BOOST_TEST(c[0].text().find("Blob \"b.dcm\" in store \"ws1\" (PatientID \"PAT-B\"") != std::string::npos,
                   c[0].text());
    }
    BOOST_TEST(index.has("b.dcm", "ws1", "crc32c:3"));
    // A copy of the Blob in conflict to another store is in conflict too.
    bool conflicting = false;
    BOOST_TEST(index.add_copy("b.dcm", "ws2", 100, "crc32c:3", &conflicting) == "1.2.3.4");
    BOOST_TEST(conflicting);
    BOOST_TEST(index.remove("b.dcm", "ws2").conflicting);
    // Removing the Blob in conflict: the entry as it was.
    const Removal gone = index.remove("b.dcm", "ws1");
    BOOST_TEST((gone.conflicting && gone.conflicts_left == 0u));
    BOOST_TEST(entry(index)["conflict"] == "");
    BOOST_TEST(index.conflicts({}).empty());
    // Again, then the entry's copies removed: the entry is b.dcm's.
    BOOST_TEST(!index.put(record("b.dcm", "PAT-B", "1.9", "crc32c:3")).empty());
    BOOST_TEST(index.remove("a.dcm", "ws1").instances == 0u);
    const Removal restored = index.remove("a-file.dcm", "ws1");
    BOOST_TEST(restored.restored);
    BOOST_TEST(restored.restored_blob == "b.dcm");
    e = entry(index);
    BOOST_TEST((e["PatientID"] == "PAT-B" && e["StudyInstanceUID"] == "1.9" && e["blob"] == "b.dcm"));
    BOOST_TEST(e["conflict"] == "");
    BOOST_TEST(index.remove("b.dcm", "ws1").instances == 1u);
}

BOOST_AUTO_TEST_CASE(a_blob_replaced_by_another_data_set_is_no_conflict)
{
    Index t;
    StudyIndex& index = *t.index;
    BOOST_TEST(index.put(record("a.dcm", "PAT-A", "1.1", "crc32c:1")).empty());
    BOOST_TEST(index.put(record("a.dcm", "PAT-B", "1.9", "crc32c:2")).empty());
    auto e = entry(index);
    BOOST_TEST((e["PatientID"] == "PAT-B" && e["conflict"] == ""));
}
