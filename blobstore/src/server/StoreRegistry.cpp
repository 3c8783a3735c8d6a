/// The kinds of store (StoreRegistry.h): the list of this build's kinds.
#include "StoreRegistry.h"

#include <blobstreaming/blobstore/EvictingStore.h>
#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/MemoryStore.h>
#include <blobstreaming/blobstore/RadosStore.h>
#include <blobstreaming/blobstore/ReadThroughStore.h>
#include <blobstreaming/cli/Values.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace blobstreaming::server {

void check_plausible_capacity(const std::string& what, std::string_view text, std::uint64_t bytes)
{
    const bool unit = !text.empty() && (text.back() < '0' || text.back() > '9');
    if (unit || bytes >= kPlainCapacityMinimum) return;
    throw Error(Errc::invalid_argument,
                what + ": " + std::to_string(bytes) + " bytes is too small for a store; give a unit (" + std::string(text) +
                    "M: " + std::string(text) + " MiB; K, M, G, T: x1024), or at least " +
                    std::to_string(kPlainCapacityMinimum) + " as a plain number of bytes");
}

namespace {

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

/// A check for kinds whose URI names one thing (`what`) after the scheme:
/// refuses an empty rest.
std::function<void(std::string_view, std::string_view)> names_one(std::string what, std::string syntax)
{
    return [what = std::move(what), syntax = std::move(syntax)](std::string_view uri, std::string_view rest) {
        if (rest.empty()) throw Error(Errc::invalid_argument, in_quotes(uri) + " names no " + what + ": " + syntax);
    };
}

StoreKind file_kind()
{
    StoreKind k;
    k.scheme = "file";
    k.syntax = "file:DIR";
    k.description = "a FileStore in DIR (created if missing)";
    k.default_tier = "workstation";
    k.takes_capacity = true;
    k.check = names_one("directory", k.syntax);
    k.open = [](std::string_view rest, const StoreSettings& settings) -> std::unique_ptr<Store> {
        FileStore::Options o;
        o.capacity = settings.capacity;
        o.sync = settings.sync;
        auto store = std::make_unique<FileStore>(std::string(rest), o);
        if (store->recovered_reservations() > 0)
            spdlog::info("file store {}: removed {} reservation(s) left by an earlier process", rest,
                         store->recovered_reservations());
        return store;
    };
    return k;
}

std::uint64_t memory_size(std::string_view uri, std::string_view rest)
{
    std::uint64_t size = 0;
    try {
        size = cli::parse_size("--store", std::string(rest));
    } catch (const Error&) {
        throw Error(Errc::invalid_argument,
                    in_quotes(uri) + " is not memory:SIZE with a size such as 512M (K, M, G, T: x1024)");
    }
    if (size == 0) throw Error(Errc::invalid_argument, in_quotes(uri) + ": the memory size must be greater than 0");
    check_plausible_capacity(in_quotes(uri), rest, size);
    return size;
}

StoreKind memory_kind()
{
    StoreKind k;
    k.scheme = "memory";
    k.syntax = "memory:SIZE";
    k.description = "a MemoryStore of SIZE bytes, e.g. 512M";
    k.default_tier = "memory";
    k.check = [](std::string_view uri, std::string_view rest) { memory_size(uri, rest); };
    k.open = [](std::string_view rest, const StoreSettings&) -> std::unique_ptr<Store> {
        MemoryStore::Options o;
        o.capacity = memory_size("memory:" + std::string(rest), rest);
        return std::make_unique<MemoryStore>(o);
    };
    return k;
}

StoreKind rados_kind()
{
    StoreKind k;
    k.scheme = "rados";
    k.syntax = "rados:POOL";
    k.description = "a RadosStore in the existing Ceph pool POOL; see --ceph-conf";
    k.default_tier = "central";
    k.takes_capacity = true;
    k.takes_ceph = true;
    k.check = names_one("pool", k.syntax);
    k.open = [](std::string_view rest, const StoreSettings& settings) -> std::unique_ptr<Store> {
        RadosStore::Options o;
        o.conf_file = settings.ceph_conf;
        if (!settings.ceph_user.empty()) o.user = settings.ceph_user;
        o.capacity = settings.capacity;
        o.grace = settings.ceph_grace;
        return std::make_unique<RadosStore>(std::string(rest), o);
    };
    return k;
}

}  // namespace

std::string listing(const std::vector<std::string>& items)
{
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i)
        out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
    return out;
}

const StoreRegistry& StoreRegistry::builtin()
{
    static const StoreRegistry registry({file_kind(), memory_kind(), rados_kind()});
    return registry;
}

StoreRegistry::StoreRegistry(std::vector<StoreKind> kinds) : kinds_(std::move(kinds)) {}

const StoreKind& StoreRegistry::check(std::string_view uri) const
{
    const std::size_t colon = uri.find(':');
    const std::string_view scheme = colon == std::string_view::npos ? std::string_view() : uri.substr(0, colon);
    const auto kind =
        std::find_if(kinds_.begin(), kinds_.end(), [&](const StoreKind& k) { return k.scheme == scheme; });
    if (scheme.empty() || kind == kinds_.end()) {
        std::vector<std::string> all;
        for (const StoreKind& k : kinds_) all.push_back(k.syntax);
        throw Error(Errc::invalid_argument, in_quotes(uri) + " is not " + listing(all));
    }
    kind->check(uri, uri.substr(colon + 1));
    return *kind;
}

std::unique_ptr<ReadThroughStore> StoreRegistry::open(std::string_view uri, const StoreSettings& settings) const
{
    const StoreKind& kind = check(uri);
    auto store = kind.open(uri.substr(kind.scheme.size() + 1), settings);
    if (settings.listener) store = std::make_unique<ObservedStore>(std::move(store), settings.listener);
    if (settings.evict) store = std::make_unique<EvictingStore>(std::move(store));  // caching: a decorator
    // Outermost, over the cache: a fill reserves like any push, so the
    // cache makes room for it and its commit is observed; a Blob the cache
    // evicted is missing again, and the next read fills it anew; a read of
    // a committed Blob goes on to the cache and counts as its use. The
    // flight table here sees every fill, whoever began it.
    return std::make_unique<ReadThroughStore>(std::move(store));
}

std::string StoreRegistry::syntaxes(std::string_view separator) const
{
    std::string out;
    for (const StoreKind& k : kinds_) out += (out.empty() ? "" : std::string(separator)) + k.syntax;
    return out;
}

std::string StoreRegistry::schemes_that(bool StoreKind::*takes) const
{
    std::vector<std::string> names;
    for (const StoreKind& k : kinds_)
        if (k.*takes) names.push_back(k.scheme);
    return listing(names);
}

}  // namespace blobstreaming::server
