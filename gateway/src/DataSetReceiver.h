#pragma once
/// The data set of one C-STORE request as the association receives it: the
/// PDVs' bytes behind a File Meta Information group (the one DCMTK's
/// receive-to-file writes), kept in memory up to kMemoryLimit and, past it,
/// written on into the instance's spool file. An instance of a few MiB
/// (a CT or MR slice) never touches the file system before its push.
///
/// One per association, reused for each of its C-STOREs (the memory is kept
/// between them). Not thread-safe: the association's thread only.

#include <dcmtk/dcmnet/assoc.h>
#include <dcmtk/dcmnet/dimse.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

class DataSetReceiver {
public:
    /// A data set up to this size stays in memory (as Retrieval keeps an
    /// instance it sends); a larger one goes into its spool file.
    static constexpr std::size_t kMemoryLimit = 8 << 20;

    /// Receives the data set of `request` (command on presentation context
    /// `context`) from `association`, as DcmSCP::receiveSTORERequest does
    /// into a file: what DCMTK's receive returns (a broken or aborted
    /// association, a PDV of another presentation context, the spool file
    /// that cannot be written: the rest of the data set read and dropped).
    /// `spool` is the file a data set over kMemoryLimit is written to; on
    /// failure it is removed. What an earlier receive held is dropped first.
    OFCondition receive(T_ASC_Association* association, const T_DIMSE_C_StoreRQ& request,
                        T_ASC_PresentationContextID context, T_DIMSE_BlockingMode mode, int timeout,
                        const std::string& spool);

    /// Whether the data set went into the spool file (then bytes() is empty).
    bool spilled() const noexcept { return spilled_; }
    /// The received object, meta header first, when not spilled().
    const std::vector<std::uint8_t>& bytes() const noexcept { return memory_; }

private:
    std::vector<std::uint8_t> memory_;
    bool spilled_ = false;
};

/// Writes `bytes` to a new file at `path` (mode 0600, replacing one there).
/// Throws blobstreaming::Error (Errc::io_error, Errc::out_of_space) naming
/// the path.
void write_spool_file(const std::string& path, const std::vector<std::uint8_t>& bytes);

}  // namespace blobstreaming::dicom
