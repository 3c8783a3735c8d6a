// InstanceIdentity (UIDs checked, what makes two data sets one instance) and
// the study index's conflicts over a real SQLite index in a temporary
// directory: another data set under an indexed SOP Instance UID is kept
// apart and named, never takes the entry over; removing either copy
// resolves the conflict (the entry restored from what remains); a Blob
// replaced by another data set, when it was the entry's only copy, is no
// conflict. The data set's CRC32C derived from a Blob's CRC32C and its meta
// header equals the CRC32C of the bytes after the meta header (DICOM files
// DCMTK writes); two data sets with the same identifying attributes but
// other bytes conflict, whatever their meta headers; one whose checksum is
// not known is a copy only of the same Blob bytes.
#include "InstanceIdentity.h"

#define BOOST_TEST_MODULE InstanceIdentityTest
#include <boost/test/unit_test.hpp>

#include "StudyIndex.h"

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcmetinf.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include <stdlib.h>

using namespace blobstreaming;
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
                      const std::string& checksum, const std::string& data_set = "crc32c:0000d5e7")
{
    InstanceRecord r;
    r.values = {{"SOPInstanceUID", "1.2.3.4"}, {"PatientID", patient}, {"StudyInstanceUID", study},
                {"SeriesInstanceUID", study + ".1"}, {"SOPClassUID", "1.2.840.10008.5.1.4.1.1.2"}};
    r.blob = blob;
    r.store = "ws1";
    r.size = 100;
    r.checksum = checksum;
    r.data_set_checksum = data_set;
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

namespace {

/// A DICOM file as DCMTK writes it (explicit VR little endian): a CT image
/// of `rows` x 64 16-bit pixels, each byte `pixel`, its meta header naming
/// `source_ae` (so that two files' meta headers differ in length and bytes).
std::vector<std::uint8_t> dicom_file(const std::filesystem::path& dir, const std::string& patient, Uint8 pixel,
                                     const char* source_ae, Uint16 rows = 64)
{
    DcmFileFormat file;
    DcmDataset* ds = file.getDataset();
    ds->putAndInsertString(DCM_SOPClassUID, UID_CTImageStorage);
    ds->putAndInsertString(DCM_SOPInstanceUID, "1.2.3.4");
    ds->putAndInsertString(DCM_StudyInstanceUID, "1.1");
    ds->putAndInsertString(DCM_SeriesInstanceUID, "1.1.1");
    ds->putAndInsertString(DCM_PatientID, patient.c_str());
    ds->putAndInsertUint16(DCM_Rows, rows);
    ds->putAndInsertUint16(DCM_Columns, 64);
    ds->putAndInsertUint16(DCM_BitsAllocated, 16);
    ds->putAndInsertUint16(DCM_BitsStored, 16);
    ds->putAndInsertUint16(DCM_HighBit, 15);
    ds->putAndInsertUint16(DCM_SamplesPerPixel, 1);
    ds->putAndInsertString(DCM_PhotometricInterpretation, "MONOCHROME2");
    const std::vector<Uint8> pixels(std::size_t{rows} * 64 * 2, pixel);
    ds->putAndInsertUint8Array(DCM_PixelData, pixels.data(), static_cast<unsigned long>(pixels.size()));
    file.getMetaInfo()->putAndInsertString(DCM_SourceApplicationEntityTitle, source_ae);
    const std::string path = (dir / (std::string(source_ae) + ".dcm")).string();
    // EWM_updateMeta: the meta header's other elements filled in, (0002,0016) kept.
    BOOST_REQUIRE(file.saveFile(path.c_str(), EXS_LittleEndianExplicit, EET_ExplicitLength, EGL_recalcGL,
                                EPD_noChange, 0, 0, EWM_updateMeta)
                      .good());
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The data set checksum derived as the indexer does: the Blob's CRC32C of
/// all its bytes, and its first 64 KiB only.
std::string derived(const std::vector<std::uint8_t>& file)
{
    const Checksum blob = Checksum::crc32c(crc32c(file.data(), file.size()));
    return data_set_checksum(blob, file.size(), file.data(), std::min<std::size_t>(file.size(), 64 * 1024));
}

/// The CRC32C of the bytes after the meta header, computed over them.
std::string direct(const std::vector<std::uint8_t>& file)
{
    const std::size_t offset = data_set_offset(file.data(), file.size());
    BOOST_REQUIRE(offset > 132u);
    return Checksum::crc32c(crc32c(file.data() + offset, file.size() - offset)).text();
}

}  // namespace

BOOST_AUTO_TEST_CASE(data_set_checksum_from_the_blob_checksum_and_meta_header)
{
    Index t;
    const auto a = dicom_file(t.dir, "PAT-A", 0x11, "MODALITY");
    const std::size_t offset = data_set_offset(a.data(), a.size());
    // The data set starts with its first element, (0008,0016) SOP Class UID.
    BOOST_TEST((a.at(offset) == 0x08 && a.at(offset + 1) == 0x00 && a.at(offset + 2) == 0x16));
    BOOST_TEST(derived(a) == direct(a));
    BOOST_TEST(derived(a).rfind("crc32c:", 0) == 0u);
    // The same data set behind another meta header: another Blob checksum,
    // the same data set checksum.
    const auto b = dicom_file(t.dir, "PAT-A", 0x11, "THE-GATEWAY-AE");
    BOOST_TEST(a.size() != b.size());
    BOOST_TEST(crc32c(a.data(), a.size()) != crc32c(b.data(), b.size()));
    BOOST_TEST(derived(b) == direct(b));
    BOOST_TEST(derived(a) == derived(b));
    // Other pixels, the same attributes: another data set checksum.
    const auto c = dicom_file(t.dir, "PAT-A", 0x12, "VARIANT");
    BOOST_TEST(derived(c) == direct(c));
    BOOST_TEST(derived(c) != derived(a));
    // A 6 MiB data set: derived from its first 64 KiB alone.
    const auto big = dicom_file(t.dir, "PAT-A", 0x13, "BIG", 48 * 1024);
    BOOST_TEST(big.size() > 6u * 1024 * 1024);
    BOOST_TEST(derived(big) == direct(big));
}

BOOST_AUTO_TEST_CASE(data_set_checksum_not_told_without_crc32c_or_meta_header)
{
    Index t;
    const auto a = dicom_file(t.dir, "PAT-A", 0x11, "MODALITY");
    const Checksum crc = Checksum::crc32c(crc32c(a.data(), a.size()));
    BOOST_TEST(data_set_checksum(ChecksumState::of(ChecksumAlgorithm::sha256, a.data(), a.size()), a.size(),
                                 a.data(), a.size()) == "");
    // The head ends inside the meta group.
    const std::size_t offset = data_set_offset(a.data(), a.size());
    BOOST_TEST(data_set_checksum(crc, a.size(), a.data(), offset - 1) == "");
    BOOST_TEST(data_set_checksum(crc, a.size(), a.data(), offset) == direct(a));
    // No DICM at 128; no group length first.
    auto bad = a;
    bad[128] = 'X';
    BOOST_TEST(data_set_checksum(crc, a.size(), bad.data(), bad.size()) == "");
    bad = a;
    bad[136] = 'O';
    BOOST_TEST(data_set_checksum(crc, a.size(), bad.data(), bad.size()) == "");
    // A Blob shorter than its meta header says.
    BOOST_TEST(data_set_checksum(crc, offset - 1, a.data(), a.size()) == "");
}

BOOST_AUTO_TEST_CASE(same_identity_other_data_set_conflicts)
{
    Index t;
    StudyIndex& index = *t.index;
    const std::string d1 = "crc32c:0000d001", d2 = "crc32c:0000d002";
    BOOST_TEST(index.put(record("a.dcm", "PAT-A", "1.1", "crc32c:00000001", d1)).empty());
    // The same data set behind another meta header: a copy.
    BOOST_TEST(index.put(record("a-file.dcm", "PAT-A", "1.1", "crc32c:00000002", d1)).empty());
    // The same identifying attributes, other bytes in the data set.
    std::string why = index.put(record("v.dcm", "PAT-A", "1.1", "crc32c:00000003", d2));
    BOOST_TEST(why.find("Blob \"v.dcm\" in store \"ws1\" holds another data set than its entry's (Blob "
                        "\"a-file.dcm\" in store \"ws1\"): data set crc32c:0000d002 (not crc32c:0000d001); both "
                        "kept") != std::string::npos,
               why);
    BOOST_TEST(entry(index)["conflict"] ==
               "\"v.dcm\" in store \"ws1\": PatientID \"PAT-A\", StudyInstanceUID \"1.1\", data set crc32c:0000d002");
    auto c = index.conflicts({});
    BOOST_REQUIRE_EQUAL(c.size(), 1u);
    BOOST_TEST(c[0].text() ==
               "instance 1.2.3.4 has more than one data set under its SOP Instance UID: Blob \"a-file.dcm\" in store "
               "\"ws1\" (PatientID \"PAT-A\", StudyInstanceUID \"1.1\", data set crc32c:0000d001), Blob \"a.dcm\" in "
               "store \"ws1\" (PatientID \"PAT-A\", StudyInstanceUID \"1.1\", data set crc32c:0000d001), Blob "
               "\"v.dcm\" in store \"ws1\" (PatientID \"PAT-A\", StudyInstanceUID \"1.1\", data set crc32c:0000d002)");
    // A SHA-256 Blob (its data set checksum not known): a conflict, unless
    // its bytes are a copy's (the same Blob checksum).
    const std::string sha = "sha256:" + std::string(64, 'a');
    why = index.put(record("s.dcm", "PAT-A", "1.1", sha, ""));
    BOOST_TEST(why.find("data set not comparable (its Blob's checksum sha256:aaaaaaaaaaaaaaaa… is not a CRC32C") !=
                   std::string::npos,
               why);
    BOOST_TEST(index.put(record("a.dcm", "PAT-A", "1.1", "crc32c:00000001", "")).empty());
    bool conflicting = true;
    BOOST_TEST(index.add_copy("a.dcm", "ws2", 100, "crc32c:00000001", &conflicting) == "1.2.3.4");
    BOOST_TEST(!conflicting);
    // a.dcm put again without its data set checksum kept the one recorded:
    // another copy of d1 in another name is still a copy.
    BOOST_TEST(index.remove("a-file.dcm", "ws1").copies == 1u);
    BOOST_TEST(index.put(record("a-again.dcm", "PAT-A", "1.1", "crc32c:00000009", d1)).empty());
    // Removing the Blobs in conflict resolves it.
    BOOST_TEST(index.remove("s.dcm", "ws1").conflicting);
    const Removal gone = index.remove("v.dcm", "ws1");
    BOOST_TEST((gone.conflicting && gone.conflicts_left == 0u));
    BOOST_TEST(entry(index)["conflict"] == "");
    // The variant twice (two Blobs, one data set), then the entry's copies
    // removed: the entry is the variant's, both its Blobs its copies.
    BOOST_TEST(!index.put(record("v.dcm", "PAT-A", "1.1", "crc32c:00000003", d2)).empty());
    BOOST_TEST(!index.put(record("v-file.dcm", "PAT-A", "1.1", "crc32c:00000004", d2)).empty());
    index.remove("a.dcm", "ws1");
    index.remove("a.dcm", "ws2");
    const Removal restored = index.remove("a-again.dcm", "ws1");
    BOOST_TEST(restored.restored);
    BOOST_TEST(restored.conflicts_left == 0u);
    const auto e = entry(index);
    BOOST_TEST(e.at("blob") == "v-file.dcm");
    BOOST_TEST(e.at("conflict") == "");
    BOOST_TEST(index.copies_of({"1.2.3.4"})["1.2.3.4"].size() == 2u);
}

BOOST_AUTO_TEST_CASE(an_index_made_before_gets_the_column)
{
    Index t;
    const std::string path = (t.dir / "index.sqlite").string();
    BOOST_TEST(t.index->put(record("a.dcm", "PAT-A", "1.1", "crc32c:00000001", "crc32c:0000d001")).empty());
    BOOST_TEST(!t.index->put(record("b.dcm", "PAT-B", "1.9", "crc32c:00000002", "crc32c:0000d002")).empty());
    t.index.reset();
    // As an older gateway left it: no data_set_checksum column.
    sqlite3* db = nullptr;
    BOOST_REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    for (const char* table : {"instances", "copies", "conflicts"})
        BOOST_TEST(sqlite3_exec(db, (std::string("ALTER TABLE ") + table + " DROP COLUMN data_set_checksum").c_str(),
                                nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    {
        // A reader (blob find) of it: the conflict as before.
        StudyIndex reader("sqlite:" + path, false);
        BOOST_TEST(entry(reader)["conflict"] ==
                   "\"b.dcm\" in store \"ws1\": PatientID \"PAT-B\", StudyInstanceUID \"1.9\"");
        BOOST_TEST(reader.conflicts({}).size() == 1u);
    }
    t.index = std::make_unique<StudyIndex>("sqlite:" + path, true);
    // Its rows have no data set checksum: a copy of the same bytes is a
    // copy, another Blob of the same identity is not comparable.
    BOOST_TEST(t.index->add_copy("a.dcm", "ws2", 100, "crc32c:00000001") == "1.2.3.4");
    const std::string why = t.index->put(record("c.dcm", "PAT-A", "1.1", "crc32c:00000003", "crc32c:0000d001"));
    BOOST_TEST(why.find("data set not comparable (the entry's copies have no data set checksum") != std::string::npos,
               why);
    // Opened again: the column is there, nothing added twice.
    t.index = std::make_unique<StudyIndex>("sqlite:" + path, true);
    BOOST_TEST(entry(*t.index)["conflict"].find("\"c.dcm\" in store \"ws1\": PatientID \"PAT-A\", StudyInstanceUID "
                                                "\"1.1\", data set crc32c:0000d001") != std::string::npos);
}
