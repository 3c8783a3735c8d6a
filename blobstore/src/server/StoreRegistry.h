#pragma once
/// The kinds of store a daemon can serve, chosen by the scheme of a store
/// URI: `file:DIR`, `memory:SIZE`, `rados:POOL`. A kind checks the rest of its URI when
/// the command line is read (an error names what is wrong and what is
/// allowed) and opens the store when the daemon starts. Adding a kind adds
/// one entry to the list in StoreRegistry.cpp: no daemon code changes, and
/// nothing asks a Store which class it is (Store::local_file() instead of a
/// dynamic_cast).

#include <blobstreaming/blobstore/ObservedStore.h>
#include <blobstreaming/blobstore/ReadThroughStore.h>
#include <blobstreaming/blobstore/Store.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming::server {

/// What a daemon's options say about any kind of store.
struct StoreSettings {
    std::uint64_t capacity = 0;  ///< --capacity; 0: the kind's own limit
    bool sync = true;            ///< durable commits (kinds that can choose)
    bool evict = false;          ///< --evict: any kind, wrapped in an EvictingStore (needs a capacity)
    std::string ceph_conf;       ///< --ceph-conf: the Ceph configuration ("": librados' default search)
    std::string ceph_user;       ///< --ceph-user: the client id ("": admin)
    /// --ceph-grace: abandoned reservations and replaced versions are
    /// deleted after this (RadosStore::Options::grace)
    std::chrono::milliseconds ceph_grace{std::chrono::minutes(10)};
    /// Not an option: where the store's events go (the daemon's StoreEventHub);
    /// null: the store is not observed.
    std::shared_ptr<StoreListener> listener;
};

/// One kind of store.
struct StoreKind {
    std::string scheme;        ///< "file"
    std::string syntax;        ///< "file:DIR"
    std::string description;   ///< "a FileStore in DIR (created if missing)"
    std::string default_tier;  ///< "memory", "workstation", "cluster" or "central"
    /// The options of StoreSettings that mean something to this kind; the
    /// daemon refuses the others naming the kinds that take them.
    bool takes_capacity = false;
    bool takes_ceph = false;  ///< ceph_conf, ceph_user, ceph_grace
    /// Throws Error(invalid_argument) saying what is wrong with `rest`, the
    /// URI `uri` after "scheme:".
    std::function<void(std::string_view uri, std::string_view rest)> check;
    /// Opens the store of a checked `rest`; Error as the kind's constructor.
    std::function<std::unique_ptr<Store>(std::string_view rest, const StoreSettings&)> open;
};

/// "a", "a or b", "a, b or c": the kinds named in help texts and errors.
std::string listing(const std::vector<std::string>& items);

class StoreRegistry {
public:
    /// Every kind of this build.
    static const StoreRegistry& builtin();

    explicit StoreRegistry(std::vector<StoreKind> kinds);

    /// The kind of `uri`, its rest checked. Error(invalid_argument): no
    /// scheme, an unknown one (naming the known syntaxes), or the kind's own
    /// complaint.
    const StoreKind& check(std::string_view uri) const;
    /// check(), then the kind's open(); wrapped in an ObservedStore when
    /// `settings.listener`, that in an EvictingStore when `settings.evict`
    /// (so that evictions are observed as such), and that in the
    /// ReadThroughStore that knows the fills into the store (its upstream
    /// is set by the daemon: `--read-through`).
    std::unique_ptr<ReadThroughStore> open(std::string_view uri, const StoreSettings& settings) const;

    const std::vector<StoreKind>& kinds() const noexcept { return kinds_; }
    /// The kinds' syntaxes joined by `separator` ("file:DIR|memory:SIZE").
    std::string syntaxes(std::string_view separator) const;
    /// Schemes of the kinds for which `takes` holds, as "file or memory".
    std::string schemes_that(bool StoreKind::*takes) const;

private:
    std::vector<StoreKind> kinds_;
};

/// A plain number of bytes (no unit) below this is refused as a store's
/// capacity (memory:SIZE, --capacity): "memory:512" is a typo for 512M, not
/// a store of 512 bytes.
constexpr std::uint64_t kPlainCapacityMinimum = std::uint64_t{1} << 20;

/// Throws Error(invalid_argument) naming `what`, the bytes and the units
/// when `text` (parsed as `bytes`) has no unit and is below
/// kPlainCapacityMinimum.
void check_plausible_capacity(const std::string& what, std::string_view text, std::uint64_t bytes);

}  // namespace blobstreaming::server
