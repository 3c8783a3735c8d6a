#include "DataSetReceiver.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcmetinf.h>
#include <dcmtk/dcmdata/dcostrma.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmnet/cond.h>
#include <dcmtk/dcmnet/diutil.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

/// Writes all of `data` to `fd`; 0 or the errno of the failure.
int write_all(int fd, const std::uint8_t* data, std::size_t size)
{
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : ENOSPC;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return 0;
}

/// Where DCMTK's receive writes: `memory` up to the limit, then the spool
/// file (what memory held written first). A failed write makes it bad:
/// DCMTK then reads the rest of the data set and drops it.
class SpillingConsumer final : public DcmConsumer {
public:
    SpillingConsumer(std::vector<std::uint8_t>& memory, const std::string& spool, bool& spilled)
        : memory_(memory), spool_(spool), spilled_(spilled)
    {}

    OFBool good() const override { return status_.good(); }
    OFCondition status() const override { return status_; }
    OFBool isFlushed() const override { return OFTrue; }
    offile_off_t avail() const override { return status_.good() ? offile_off_t{1} << 30 : 0; }
    void flush() override {}

    offile_off_t write(const void* buf, offile_off_t buflen) override
    {
        if (status_.bad() || buflen <= 0) return 0;
        const auto* bytes = static_cast<const std::uint8_t*>(buf);
        const auto size = static_cast<std::size_t>(buflen);
        if (!file_ && memory_.size() + size <= DataSetReceiver::kMemoryLimit) {
            memory_.insert(memory_.end(), bytes, bytes + size);
            return buflen;
        }
        if (!file_) {
            file_ = UniqueFd(::open(spool_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
            if (!file_) return fail("cannot create the spool file " + spool_, errno);
            spilled_ = true;
            const int err = write_all(file_.get(), memory_.data(), memory_.size());
            memory_.clear();
            if (err) return fail("cannot write the spool file " + spool_, err);
        }
        if (const int err = write_all(file_.get(), bytes, size)) return fail("cannot write the spool file " + spool_, err);
        return buflen;
    }

private:
    offile_off_t fail(const std::string& what, int err)
    {
        const std::string text = what + ": " + std::strerror(err);
        status_ = makeDcmnetCondition(DIMSEC_OUTOFRESOURCES, OF_error, text.c_str());
        return 0;
    }

    std::vector<std::uint8_t>& memory_;
    const std::string& spool_;
    bool& spilled_;
    UniqueFd file_;
    OFCondition status_ = EC_Normal;
};

class ConsumerStream final : public DcmOutputStream {
public:
    explicit ConsumerStream(DcmConsumer* consumer) : DcmOutputStream(consumer) {}
};

/// The File Meta Information group DIMSE_createFilestream writes for a
/// received C-STORE (the same elements, so the same bytes as a spool file's).
OFCondition write_meta_header(DcmOutputStream& out, const T_DIMSE_C_StoreRQ& request,
                              T_ASC_Association* association, T_ASC_PresentationContextID context)
{
    T_ASC_PresentationContext accepted;
    OFCondition cond = ASC_findAcceptedPresentationContext(association->params, context, &accepted);
    if (cond.bad()) return cond;
    DcmMetaInfo meta;
    const Uint8 version[2] = {0, 1};
    const char* calling = association->params->DULparams.callingAPTitle;
    for (const OFCondition& put :
         {meta.putAndInsertUint32(DCM_FileMetaInformationGroupLength, 0),
          meta.putAndInsertUint8Array(DCM_FileMetaInformationVersion, version, 2),
          meta.putAndInsertString(DCM_MediaStorageSOPClassUID, request.AffectedSOPClassUID),
          meta.putAndInsertString(DCM_MediaStorageSOPInstanceUID, request.AffectedSOPInstanceUID),
          meta.putAndInsertString(DCM_TransferSyntaxUID, accepted.acceptedTransferSyntax),
          meta.putAndInsertString(DCM_ImplementationClassUID, OFFIS_IMPLEMENTATION_CLASS_UID),
          meta.putAndInsertString(DCM_ImplementationVersionName, OFFIS_DTK_IMPLEMENTATION_VERSION_NAME2),
          meta.putAndInsertString(DCM_SourceApplicationEntityTitle, calling ? calling : "")})
        if (put.bad()) return put;
    cond = meta.computeGroupLengthAndPadding(EGL_withGL, EPD_noChange, META_HEADER_DEFAULT_TRANSFERSYNTAX,
                                             EET_UndefinedLength);
    if (cond.bad()) return cond;
    meta.transferInit();
    cond = meta.write(out, META_HEADER_DEFAULT_TRANSFERSYNTAX, EET_ExplicitLength, nullptr);
    meta.transferEnd();
    return cond;
}

}  // namespace

OFCondition DataSetReceiver::receive(T_ASC_Association* association, const T_DIMSE_C_StoreRQ& request,
                                     T_ASC_PresentationContextID context, T_DIMSE_BlockingMode mode, int timeout,
                                     const std::string& spool)
{
    memory_.clear();
    spilled_ = false;
    if (request.DataSetType == DIMSE_DATASET_NULL) return DIMSE_BADMESSAGE;
    SpillingConsumer consumer(memory_, spool, spilled_);
    OFCondition cond = EC_Normal;
    T_ASC_PresentationContextID data_context = context;
    {
        ConsumerStream stream(&consumer);
        cond = write_meta_header(stream, request, association, context);
        if (cond.bad()) {
            // As DCMTK does when it cannot create the file: the data set is dropped.
            DIC_UL bytes = 0, pdvs = 0;
            const OFCondition ignored = DIMSE_ignoreDataSet(association, mode, timeout, &bytes, &pdvs);
            if (ignored.bad()) cond = ignored;
        } else {
            cond = DIMSE_receiveDataSetInFile(association, mode, timeout, &data_context, &stream, nullptr, nullptr);
        }
    }
    if (cond.bad() && consumer.status().bad()) {
        // DCMTK says only "Cannot write to file": which file, and why.
        const std::string text = std::string(consumer.status().text()) + "; " + cond.text();
        cond = makeDcmnetCondition(DIMSEC_OUTOFRESOURCES, OF_error, text.c_str());
    }
    if (cond.good() && data_context != context)
        cond = makeDcmnetCondition(DIMSEC_INVALIDPRESENTATIONCONTEXTID, OF_error,
                                   "DIMSE: Presentation Contexts of Command and Data Set differ");
    if (cond.bad()) {
        memory_.clear();
        if (spilled_) std::remove(spool.c_str());
        spilled_ = false;
    }
    return cond;
}

void write_spool_file(const std::string& path, const std::vector<std::uint8_t>& bytes)
{
    const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd) throw_io_error("cannot create the spool file " + path, errno);
    if (const int err = write_all(fd.get(), bytes.data(), bytes.size())) {
        ::unlink(path.c_str());
        if (err == ENOSPC || err == EDQUOT)
            throw Error(Errc::out_of_space, "cannot write the spool file " + path + ": " + std::strerror(err));
        throw_io_error("cannot write the spool file " + path, err);
    }
}

}  // namespace blobstreaming::dicom
