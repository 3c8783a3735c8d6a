#include "InstanceStore.h"

#include "DataSetReceiver.h"
#include "QueryRetrieve.h"
#include "TextDecoder.h"
#include "dicom/InstanceIdentity.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>
#include <blobstreaming/common/UniqueFd.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcistrmb.h>
#include <dcmtk/dcmdata/dcistrmf.h>
#include <dcmtk/dcmdata/dcmetinf.h>
#include <dcmtk/dcmdata/dctag.h>
#include <dcmtk/dcmdata/dcxfer.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

/// Values larger than this stay in the file while it is parsed: the pixel
/// data is checked for its length, never loaded (nor read).
constexpr Uint32 kMaxLoadedValue = 4096;

std::uint16_t status_of(Errc code)
{
    switch (code) {
    case Errc::out_of_space:
    case Errc::store_busy:
    case Errc::limit_reached: return status::out_of_resources;
    default: return status::processing_failure;
    }
}

/// Whether the stored Blob `name` (`stored`: its version) holds the data set
/// of the received file at `path`. First the whole file against the Blob's
/// checksum, in its algorithm (the gateway's own earlier copy: one read of
/// the file, nothing pulled); otherwise both data sets, past their meta
/// headers (which the sender's and the gateway's may differ in), compared
/// a range at a time, so that memory stays bounded whatever the instance's
/// size. Throws Error(blob_changed) when the Blob was replaced meanwhile.
bool same_data_set(client::Session& session, const std::string& store, const std::string& name,
                   const BlobInfo& stored, const std::string& path)
{
    constexpr std::uint64_t kChunk = 4 << 20;
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error(Errc::io_error, "cannot open the received instance " + path + ": " + std::strerror(errno));
    ChecksumState state(stored.checksum.algorithm);
    std::error_code ec;
    const std::uint64_t size = state.update_from(fd.get(), ec);
    if (ec) throw Error(Errc::io_error, "cannot read the received instance " + path + ": " + ec.message());
    if (size == stored.size && state.finish() == stored.checksum) return true;

    auto pull = [&](std::uint64_t offset, std::uint64_t length) {
        client::PullOptions options;
        options.store = store;
        options.offset = offset;
        options.length = length;
        return session.pull_memory(name, options);
    };
    auto read = [&](std::uint64_t offset, std::size_t length) {
        std::vector<std::uint8_t> bytes(length);
        std::size_t got = 0;
        while (got < length) {
            const ssize_t n = ::pread(fd.get(), bytes.data() + got, length - got, static_cast<off_t>(offset + got));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw Error(Errc::io_error, "cannot read the received instance " + path);
            got += static_cast<std::size_t>(n);
        }
        return bytes;
    };
    const auto head_a = pull(0, std::min(stored.size, kChunk));
    const auto head_b = read(0, static_cast<std::size_t>(std::min(size, kChunk)));
    const std::uint64_t a = data_set_offset(head_a.data(), head_a.size());
    const std::uint64_t b = data_set_offset(head_b.data(), head_b.size());
    if (stored.size - a != size - b) return false;
    for (std::uint64_t done = 0; done < size - b;) {
        const std::uint64_t length = std::min(kChunk, size - b - done);
        if (pull(a + done, length) != read(b + done, static_cast<std::size_t>(length))) return false;
        done += length;
    }
    if (!same_version(session.stat(name, store), stored))
        throw Error(Errc::blob_changed, "Blob " + name + " was replaced while the resend was compared with it");
    return true;
}

/// The bytes read for the File Meta Information (as the indexer's first range).
constexpr std::size_t kMetaRead = 64 * 1024;

/// The data set checksum (data_set_checksum()) of Blob `info`, whose bytes
/// are those of the file at `path`: its meta header read from the file.
std::string file_data_set_checksum(const std::string& path, const BlobInfo& info)
{
    std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<std::uint64_t>(info.size, kMetaRead)));
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    return data_set_checksum(info.checksum, info.size, head.data(), head.size());
}

/// Whether `value` has the form of `a`'s values (character set only).
bool plausible(const Attribute& a, const std::string& value)
{
    switch (a.kind) {
    case Kind::uid: return value.find_first_not_of("0123456789.") == std::string::npos;
    case Kind::date:
    case Kind::number: return value.find_first_not_of("0123456789 +-") == std::string::npos;
    case Kind::time: return value.find_first_not_of("0123456789.: ") == std::string::npos;
    case Kind::text: break;
    }
    return std::none_of(value.begin(), value.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return (u < 0x20 && u != 0x1B) || u == 0x7F;  // ESC: ISO 2022 character set switches
    });
}

/// The tags of attributes() (but the derived ones), looked up once:
/// DCMTK's search by keyword walks its whole dictionary under its lock
/// (~0.3 ms a name, 4 ms an instance).
const std::vector<std::pair<const Attribute*, DcmTagKey>>& attribute_tags()
{
    static const std::vector<std::pair<const Attribute*, DcmTagKey>> tags = [] {
        std::vector<std::pair<const Attribute*, DcmTagKey>> out;
        for (const Attribute& a : attributes()) {
            if (a.derived) continue;
            DcmTag tag;
            if (std::string(a.keyword) != "TransferSyntaxUID" && DcmTag::findTagFromName(a.keyword, tag).bad())
                continue;  // not in DCMTK's dictionary: never read
            out.emplace_back(&a, DcmTagKey(tag.getGroup(), tag.getElement()));
        }
        return out;
    }();
    return tags;
}

/// Why a file that does not parse ends inside its pixel data: its header is
/// read up to (7FE0,0010), whose declared length is checked against what
/// the file holds after it. "" when that is not the reason (or cannot be
/// told: a deflated data set, pixel data of undefined length).
std::string pixel_data_truncation(const std::string& path)
{
    DcmFileFormat file;
    DcmInputFileStream stream(path.c_str());
    if (stream.status().bad()) return {};
    file.transferInit();
    const OFCondition read = file.readUntilTag(stream, EXS_Unknown, EGL_noChange, kMaxLoadedValue, DCM_PixelData);
    file.transferEnd();
    OFString syntax;
    file.getMetaInfo()->findAndGetOFString(DCM_TransferSyntaxUID, syntax);
    if (read.bad() || DcmXfer(syntax.c_str()).getStreamCompression() != ESC_none) return {};
    // DCMTK stops at the pixel data's tag or just after its length: the
    // element's header is found where its tag is.
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    const auto size = static_cast<std::uint64_t>(in.tellg());
    const auto stop = static_cast<std::uint64_t>(stream.tell());
    for (const std::uint64_t back : {12u, 8u, 0u}) {
        if (stop < back || stop - back + 12 > size) continue;
        std::uint8_t h[12];
        in.seekg(static_cast<std::streamoff>(stop - back));
        if (!in.read(reinterpret_cast<char*>(h), sizeof h)) continue;
        const bool little = h[0] == 0xE0 && h[1] == 0x7F && h[2] == 0x10 && h[3] == 0x00;
        const bool big = h[0] == 0x7F && h[1] == 0xE0 && h[2] == 0x00 && h[3] == 0x10;
        if (!little && !big) continue;
        const bool explicit_vr = std::isupper(h[4]) && std::isupper(h[5]);  // OB, OW, UN: 2 reserved bytes
        const std::uint8_t* l = h + (explicit_vr ? 8 : 4);
        const std::uint64_t declared = little ? l[0] | l[1] << 8 | l[2] << 16 | static_cast<std::uint64_t>(l[3]) << 24
                                              : l[3] | l[2] << 8 | l[1] << 16 | static_cast<std::uint64_t>(l[0]) << 24;
        const std::uint64_t value = stop - back + (explicit_vr ? 12 : 8);
        if (declared == 0xFFFFFFFF || value + declared <= size) return {};
        return "the data set ends inside its pixel data (7FE0,0010): " + std::to_string(declared) +
               " bytes declared, " + std::to_string(size - value) + " received";
    }
    return {};
}

/// Why native pixel data is shorter than its image attributes require
/// (Rows x Columns x Samples per Pixel x Bits Allocated x Number of Frames),
/// or "". Encapsulated (compressed) pixel data is not measured.
std::string pixel_data_shortfall(DcmDataset& data)
{
    DcmElement* pixels = nullptr;
    if (data.findAndGetElement(DCM_PixelData, pixels).bad() || pixels->getLength() == DCM_UndefinedLength ||
        DcmXfer(data.getOriginalXfer()).isEncapsulated())
        return {};
    Uint16 rows = 0, columns = 0, bits = 0, samples = 1;
    Sint32 frames = 1;
    if (data.findAndGetUint16(DCM_Rows, rows).bad() || data.findAndGetUint16(DCM_Columns, columns).bad() ||
        data.findAndGetUint16(DCM_BitsAllocated, bits).bad())
        return {};
    data.findAndGetUint16(DCM_SamplesPerPixel, samples);
    if (data.findAndGetSint32(DCM_NumberOfFrames, frames).bad() || frames < 1) frames = 1;
    const std::uint64_t bits_needed =
        std::uint64_t{rows} * columns * samples * bits * static_cast<std::uint64_t>(frames);
    const std::uint64_t needed = (bits_needed + 7) / 8;
    const std::uint64_t length = pixels->getLength();
    if (length >= needed) return {};
    return "the pixel data (7FE0,0010) holds " + std::to_string(length) + " bytes, its image needs " +
           std::to_string(needed) + " (" + std::to_string(rows) + "x" + std::to_string(columns) + ", " +
           std::to_string(samples) + " sample(s) of " + std::to_string(bits) + " bits, " + std::to_string(frames) +
           " frame(s))";
}

/// The values of every other attribute of `data`'s top level that a query
/// may match or ask for (the index's header column, StudyIndex.h): each
/// element of the DICOM dictionary with a keyword, of a text or numeric VR,
/// of at most kMaxHeaderValue bytes, decoded to UTF-8 (undecodable bytes
/// escaped, as the columns' values). Not: the File Meta Information,
/// private and unknown elements, sequences, binary values (pixel data,
/// LUTs, ...), the element a failed parse stopped in; after a failed parse
/// a text value holding control characters.
void header_values(DcmDataset& data, DcmElement* cut, bool parsed, TextDecoder& decoder,
                   std::map<std::string, std::string>& values)
{
    constexpr Uint32 kMaxHeaderValue = 1024;
    for (unsigned long i = 0; i < data.card(); ++i) {
        DcmElement* element = data.getElement(i);
        if (!element || element == cut) continue;
        DcmTag tag = element->getTag();
        if (tag.getGroup() <= 0x0002 || tag.isPrivate() || element->getLength() > kMaxHeaderValue) continue;
        const std::string keyword = tag.getTagName();
        if (!header_vr(element->ident()) || !is_keyword(keyword) || find_attribute(keyword))
            continue;  // binary, unknown, or a column of its own (read above)
        std::string value;
        decoder.decode(*element, value);  // undecodable: escaped, as a column's value
        if (!parsed && std::any_of(value.begin(), value.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }))
            continue;
        if (!value.empty()) values[keyword] = value;
    }
}

}  // namespace

namespace {

/// read_header's reading of `file`, which DCMTK has parsed with outcome
/// `read`; `path`: the file's, for why it does not parse (none: an object
/// in memory, whose caller reads it from a file for that).
std::string header_of(DcmFileFormat& file, const OFCondition& read, const std::string* path,
                      std::map<std::string, std::string>& values, bool header_only, Defect* defect,
                      std::string* undecodable)
{
    DcmDataset* data = file.getDataset();
    // An object that does not parse leaves the element it stopped in (the
    // last one read) half read, the rest of its buffer never written: its
    // value is dropped, and of the others only a value of the attribute's
    // form is kept.
    DcmElement* cut = nullptr;
    if (read.bad() && data->card() > 0) cut = data->getElement(data->card() - 1);
    TextDecoder decoder(*data);
    for (const auto& [a, tag] : attribute_tags()) {
        std::string& value = values[a->keyword];
        value.clear();
        DcmElement* element = nullptr;
        if (std::string(a->keyword) == "TransferSyntaxUID") {
            OFString syntax;
            file.getMetaInfo()->findAndGetOFString(DCM_TransferSyntaxUID, syntax);
            value = utf8_escaped(syntax.c_str());
        } else if ((!cut || cut->getTag() != tag) && data->findAndGetElement(tag, element).good() && element &&
                   !decoder.decode(*element, value) && undecodable) {
            *undecodable += (undecodable->empty() ? "" : "; ") + std::string(a->keyword) + " " +
                            tag.toString().c_str() + ": " + decoder.problem();
        }
        if (read.bad() && !plausible(*a, value)) value.clear();
    }
    header_values(*data, cut, read.good(), decoder, values);
    if (undecodable && !undecodable->empty())
        *undecodable += "; indexed with the undecodable bytes escaped (\\xNN)";
    if (read.bad()) {
        if (header_only) return std::string("the object does not parse: ") + read.text();
        if (defect) *defect = Defect::unreadable;
        const std::string truncated = path ? pixel_data_truncation(*path) : std::string();
        return truncated.empty() ? std::string("the object does not parse: ") + read.text() : truncated;
    }
    if (header_only) return {};
    const std::string short_pixels = pixel_data_shortfall(*data);
    if (!short_pixels.empty() && defect) *defect = Defect::short_pixel_data;
    return short_pixels;
}

/// An object in memory as DCMTK's input. A stream that can be reread
/// (newFactory(): the same memory from the value's offset) has values over
/// kMaxLoadedValue, the pixel data, skipped rather than copied, as from a
/// file; not once a filter is installed (a deflated data set, whose offsets
/// are the inflated bytes'), as DCMTK's file stream. The bytes must outlive
/// what DCMTK read from it.
class MemoryInputStream final : public DcmInputBufferStream {
public:
    MemoryInputStream(const std::uint8_t* data, std::size_t size) : data_(data), size_(size)
    {
        setBuffer(data, static_cast<offile_off_t>(size));
        setEos();
    }
    DcmInputStreamFactory* newFactory() const override
    {
        if (filtered_) return nullptr;
        return new Factory(data_, size_, static_cast<std::size_t>(tell()));
    }
    OFCondition installCompressionFilter(E_StreamCompression type) override
    {
        filtered_ = true;
        return DcmInputBufferStream::installCompressionFilter(type);
    }

private:
    class Factory final : public DcmInputStreamFactory {
    public:
        Factory(const std::uint8_t* data, std::size_t size, std::size_t offset)
            : data_(data), size_(size), offset_(std::min(offset, size))
        {}
        DcmInputStream* create() const override { return new MemoryInputStream(data_ + offset_, size_ - offset_); }
        DcmInputStreamFactory* clone() const override { return new Factory(*this); }
        DcmInputStreamFactoryType ident() const override { return DFT_DcmInputFileStreamFactory; }

    private:
        const std::uint8_t* data_;
        std::size_t size_;
        std::size_t offset_;
    };

    const std::uint8_t* data_;
    std::size_t size_;
    bool filtered_ = false;
};

/// read_header() of a whole object in memory (DataSetReceiver's).
std::string read_header(const std::vector<std::uint8_t>& bytes, std::map<std::string, std::string>& values,
                        Defect* defect, std::string* undecodable)
{
    if (defect) *defect = Defect::none;
    if (undecodable) undecodable->clear();
    DcmFileFormat file;
    MemoryInputStream stream(bytes.data(), bytes.size());
    file.setReadMode(ERM_fileOnly);
    file.transferInit();
    const OFCondition read = file.read(stream, EXS_Unknown, EGL_noChange, kMaxLoadedValue);
    file.transferEnd();
    return header_of(file, read, nullptr, values, false, defect, undecodable);
}

}  // namespace

std::string read_header(const std::string& path, std::map<std::string, std::string>& values, bool header_only,
                        Defect* defect, std::string* undecodable)
{
    if (defect) *defect = Defect::none;
    if (undecodable) undecodable->clear();
    DcmFileFormat file;
    // Whole: every element is parsed, those over kMaxLoadedValue (the pixel
    // data) are skipped, DCMTK checking that each declared length fits in
    // what is left of the file. Header only: parsing stops at the pixel data.
    const OFCondition read =
        header_only ? file.loadFileUntilTag(path.c_str(), EXS_Unknown, EGL_noChange, kMaxLoadedValue, ERM_fileOnly,
                                            DCM_PixelData)
                    : file.loadFile(path.c_str(), EXS_Unknown, EGL_noChange, kMaxLoadedValue, ERM_fileOnly);
    return header_of(file, read, &path, values, header_only, defect, undecodable);
}

InstanceStore::InstanceStore(const GatewayOptions& options, client::Session& session, StudyIndex* index)
    : options_(options), session_(session), queue_(index ? std::make_unique<IndexQueue>(*index) : nullptr)
{}

InstanceStore::~InstanceStore() = default;

InstanceStore::Storing::Storing(InstanceStore& s, std::string n) : self(s), name(std::move(n))
{
    std::lock_guard<std::mutex> lock(self.storing_mutex_);
    self.storing_.insert(name);
}

InstanceStore::Storing::~Storing()
{
    std::lock_guard<std::mutex> lock(self.storing_mutex_);
    self.storing_.erase(self.storing_.find(name));
}

bool InstanceStore::storing(const std::string& name) const
{
    std::lock_guard<std::mutex> lock(storing_mutex_);
    return storing_.count(name) != 0;
}

StoreOutcome InstanceStore::store(const ReceivedInstance& instance,
                                  const std::function<void(const StoreOutcome&)>& answer)
{
    return store_object(instance, nullptr, answer);
}

StoreOutcome InstanceStore::store(const ReceivedInstance& instance, const std::vector<std::uint8_t>& bytes,
                                  const std::function<void(const StoreOutcome&)>& answer)
{
    return store_object(instance, &bytes, answer);
}

StoreOutcome InstanceStore::store_object(const ReceivedInstance& instance, const std::vector<std::uint8_t>* bytes,
                                         const std::function<void(const StoreOutcome&)>& answer)
{
    const auto started = std::chrono::steady_clock::now();
    InstanceRecord record;
    Defect defect = Defect::none;
    std::string undecodable;
    std::string problem = bytes ? read_header(*bytes, record.values, &defect, &undecodable)
                                : read_header(instance.path, record.values, false, &defect, &undecodable);
    std::string spill_error;
    if (bytes && !problem.empty()) {
        // Why it does not parse is told by the file's reader (how far the
        // pixel data got): the object written where DCMTK would have put it.
        try {
            write_spool_file(instance.path, *bytes);
            bytes = nullptr;
            problem = read_header(instance.path, record.values, false, &defect, &undecodable);
        } catch (const Error& e) {
            spill_error = e.what();
        }
    }
    const std::string& uid = record.values["SOPInstanceUID"];
    const std::string what =
        "instance " + printable(uid.empty() ? instance.sop_instance_uid : uid) + " from " + printable(instance.peer);
    auto refuse = [&](std::uint16_t code, const std::string& why) {
        spdlog::error("{}: refused (status {:04X}): {}", what, code, printable(why));
        const StoreOutcome refused{code, why};
        answer(refused);
        return refused;
    };
    if (!spill_error.empty()) return refuse(status::out_of_resources, spill_error);
    if (!problem.empty())
        return refuse(defect == Defect::short_pixel_data ? status::data_set_mismatch : status::cannot_understand,
                      problem);
    if (uid.empty()) return refuse(status::cannot_understand, "the data set has no SOP Instance UID (0008,0018)");
    // Before the UIDs reach a Blob name, the index or a file name.
    if (const std::string bad = invalid_uid(record.values); !bad.empty())
        return refuse(status::cannot_understand, bad);
    if (uid != instance.sop_instance_uid)
        return refuse(status::cannot_understand, "the data set's SOP Instance UID " + uid +
                                                     " differs from the request's " +
                                                     escaped(instance.sop_instance_uid));
    const std::string name =
        expand_name_pattern(options_.name_pattern, [&record](const std::string& key) { return record.values[key]; });
    if (const auto bad = blob_name_problem(name))
        return refuse(status::cannot_understand, "Blob name \"" + name + "\" (--name-pattern): " + *bad);

    using ms = std::chrono::duration<double, std::milli>;
    const auto parsed = std::chrono::steady_clock::now();
    // From the push until the entry is written (by the index queue).
    auto storing = std::make_shared<Storing>(*this, name);
    StoreOutcome outcome = push(instance, bytes, name, record);
    if (!undecodable.empty() && outcome.status == status::success)
        spdlog::warn("{}: Blob {}: {}", what, quote_name(name), undecodable);
    if (outcome.status != status::success) return refuse(outcome.status, outcome.comment);
    const auto pushed = std::chrono::steady_clock::now();
    const StoreOutcome stored{status::success, {}};
    answer(stored);
    const auto answered = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(pushed - started).count();
    const std::string modality =
        record.values["Modality"].empty() ? "" : ", " + printable(record.values["Modality"]);
    auto line = [what, how = outcome.comment.empty() ? "stored" : outcome.comment, name, store = record.store,
                 size = record.size, seconds, header = ms(parsed - started).count(), push = ms(pushed - parsed).count(),
                 reply = ms(answered - pushed).count(), modality](double index_ms) {
        spdlog::info("{}: {} as {} in store \"{}\" ({} bytes, {:.3f} s: header {:.1f} ms, push {:.1f} ms; then "
                     "answer {:.1f} ms, index {:.1f} ms{})",
                     what, how, name, store, size, seconds, header, push, reply, index_ms, modality);
    };
    if (!queue_) {
        line(0.0);
        return stored;
    }
    // The modality's next instance comes meanwhile.
    queue_->push(std::move(record), [line, what, name, storing](const std::string& conflict, const std::string& error,
                                                                double put_seconds) {
        if (!conflict.empty()) spdlog::warn("index: {}", conflict);
        // The instance is stored: the modality must not send it again.
        if (!error.empty()) spdlog::error("{}: stored as {} but not indexed: {}", what, name, error);
        line(put_seconds * 1000);
    });
    return stored;
}

void InstanceStore::wait_indexed()
{
    if (queue_) queue_->wait_written();
}

bool InstanceStore::drain_index(std::chrono::milliseconds bound)
{
    return !queue_ || queue_->drain(bound);
}

StoreOutcome InstanceStore::push(const ReceivedInstance& instance, const std::vector<std::uint8_t>*& bytes,
                                 const std::string& name, InstanceRecord& record)
{
    client::PushOptions push;
    push.store = options_.store;
    // `file`: the Blob holds the received object's bytes (else the stored
    // Blob's meta header is pulled for its data set's checksum).
    auto committed = [&](const BlobInfo& info, const std::string& how, bool file) {
        record.blob = name;
        record.store = options_.store;
        record.size = info.size;
        record.checksum = info.checksum.text();
        if (file && bytes) {
            record.data_set_checksum = data_set_checksum(
                info.checksum, info.size, bytes->data(), std::min<std::size_t>(bytes->size(), kMetaRead));
        } else if (file) {
            record.data_set_checksum = file_data_set_checksum(instance.path, info);
        } else if (info.checksum.algorithm == ChecksumAlgorithm::crc32c) {
            client::PullOptions head;
            head.store = options_.store;
            head.length = std::min<std::uint64_t>(info.size, kMetaRead);
            head.verify = false;  // a range has no checksum
            try {
                const std::vector<std::uint8_t> meta = session_.pull_memory(name, head);
                record.data_set_checksum = data_set_checksum(info.checksum, info.size, meta.data(), meta.size());
            } catch (const Error& e) {
                // Stored all the same; the index compares it by its Blob's checksum.
                spdlog::warn("Blob {} in store \"{}\": its meta header cannot be read for its data set's checksum: {}",
                             quote_name(name), options_.store, e.what());
            }
        }
        return StoreOutcome{status::success, how};
    };
    // One round trip to the store for a new instance: the reservation and
    // its ticket together.
    try {
        return committed(bytes ? session_.push_memory(bytes->data(), bytes->size(), name, push)
                               : session_.push_file(instance.path, name, push),
                         "", true);
    } catch (const Error& e) {
        if (e.code() != Errc::already_exists)
            return {status_of(e.code()), "push to store \"" + options_.store + "\": " + e.what()};
    }
    if (bytes) {
        // A resend compares the file with the stored Blob, a range at a time.
        try {
            write_spool_file(instance.path, *bytes);
            bytes = nullptr;
        } catch (const Error& e) {
            return {status_of(e.code()), e.what()};
        }
    }
    // A resend: the same data set is a success without a second copy.
    try {
        std::optional<BlobInfo> found;
        try {
            found = session_.stat(name, options_.store);
        } catch (const Error& e) {
            if (e.code() != Errc::no_such_blob) throw;
        }
        if (!found) {
            // No Blob, yet the name is taken: a try that timed out while the
            // store stalled may leave a reservation of this name, the
            // gateway's own (a reservation belongs to the client that made
            // it), that the store created after the gateway gave up and that
            // nothing fills: the resend resumes it instead of finding the
            // name "being written" for the store's grace.
            push.resume = true;
            return committed(session_.push_file(instance.path, name, push), "", true);
        }
        const BlobInfo& stored = *found;
        if (same_data_set(session_, options_.store, name, stored, instance.path))
            return committed(stored, "already stored with the same data set, kept", false);
        if (options_.on_conflict == OnConflict::refuse)
            return {status::conflicting_instance,
                    "Blob " + name + " holds another data set for this SOP Instance UID (--on-conflict refuse)"};
        push.replace = true;
        return committed(session_.push_file(instance.path, name, push), "replaced another data set", true);
    } catch (const Error& e) {
        return {status_of(e.code()), "store \"" + options_.store + "\": " + e.what()};
    }
}

}  // namespace blobstreaming::dicom
