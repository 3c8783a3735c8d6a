#pragma once
/// Retrieval of indexed instances from the nearest copy (`blob pull
/// --study/--series`, the gateway's C-GET): an instance copied to several
/// stores (a study precached to a workstation) is read from the store of
/// the nearest tier that holds it, and from the next copy when that store
/// fails it (not there any more, not answering, bytes that do not match).

#include "StudyIndex.h"

#include <blobstreaming/client/Result.h>
#include <blobstreaming/client/Session.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

/// One instance to retrieve: its copies (StudyIndex::copies_of) and the
/// file its bytes go to, or the caller's buffer of `capacity` bytes
/// (`buffer` not null: `path` unused; the Result's `length` says how many
/// came, a longer Blob fails with Errc::invalid_range). With `place`, a
/// copy in a store of this host is not copied at all: `*place` is set to
/// it in the store's file (PullSink::in_place), the file or buffer
/// untouched.
struct InstanceToPull {
    std::string sop;
    std::vector<IndexedBlob> copies;
    std::string path;
    std::uint8_t* buffer = nullptr;
    std::size_t capacity = 0;
    std::shared_ptr<const client::InPlaceBlob>* place = nullptr;
};

/// What the retrieval of one instance came to: the last attempt's Result
/// (its `store` the store that served it or failed last) and the Blob of
/// that copy; `tried` every store asked, in order.
struct PulledInstance {
    client::Result result;
    std::string blob;
    std::vector<std::string> tried;
};

/// Orders `copies` nearest first: stores that answered before those that
/// did not (`stores`: Session::stores()), then by tier (memory, workstation,
/// cluster, central), then by name. A store `stores` does not list comes
/// after those it lists.
void order_nearest(std::vector<IndexedBlob>& copies, const std::map<std::string, client::StoreStatus>& stores);

/// Every registered store's status by name (Session::stores()), for
/// order_nearest().
std::map<std::string, client::StoreStatus> store_statuses(client::Session& session);

/// An instance's copies nearest first: those the index lists for it
/// (StudyIndex::copies_of), else its entry's own copy `entry` (its `blob`
/// and `store` columns).
std::vector<IndexedBlob> nearest_first(std::vector<IndexedBlob> copies, IndexedBlob entry,
                                       const std::map<std::string, client::StoreStatus>& stores);

/// Pulls every instance from its copies in the order given: all first
/// copies (a series per store, over the Session's pooled connections),
/// then, for the instances that failed, their next copies, and so on. A
/// failure that another copy cannot mend (writing the file, the Session
/// closing) is final. `options.store` is ignored (each copy names its own).
std::vector<PulledInstance> pull_from_copies(client::Session& session, const std::vector<InstanceToPull>& instances,
                                             const client::PullOptions& options);

}  // namespace blobstreaming::dicom
