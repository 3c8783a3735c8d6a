#include <blobstreaming/transporter/corba/Orb.h>

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <omniORB4/omniORB.h>

#include <algorithm>
#include <memory>

namespace blobstreaming::corba {

CORBA::ORB_ptr init_orb(const std::vector<std::pair<std::string, std::string>>& options, const char* orb_id)
{
    std::vector<const char*> flat;
    for (const auto& [key, value] : options) {
        flat.push_back(key.c_str());
        flat.push_back(value.c_str());
    }
    auto table = std::make_unique<const char*[][2]>(options.size() + 1);
    for (std::size_t i = 0; i < options.size(); ++i) {
        table[i][0] = flat[2 * i];
        table[i][1] = flat[2 * i + 1];
    }
    table[options.size()][0] = nullptr;
    table[options.size()][1] = nullptr;
    int argc = 1;
    char name[] = "blobstreaming";
    char* argv[] = {name, nullptr};
    // Linked in but unconfigured, omniORB's SSL transport warns "SSL CA
    // certificate location is not set" at trace level 1 during ORB_init on
    // every plaintext run: TLS off is a choice here, not a mistake.
    const CORBA::ULong level = omniORB::traceLevel;
    const bool quiet = !ssl_configured() && level == 1;
    if (quiet) omniORB::traceLevel = 0;
    try {
        CORBA::ORB_ptr orb = CORBA::ORB_init(argc, argv, orb_id, table.get());
        if (quiet && omniORB::traceLevel == 0) omniORB::traceLevel = level;
        install_error_context();  // a store's error text, also with a system exception
        return orb;
    } catch (const CORBA::Exception& e) {
        if (quiet && omniORB::traceLevel == 0) omniORB::traceLevel = level;
        std::string opts;
        for (const auto& [key, value] : options) opts += " -ORB" + key + " " + value;
        throw Error(Errc::invalid_argument,
                    std::string("cannot initialise the ORB (") + e._name() + ") with options" + opts);
    }
}

CosNaming::NamingContext_ptr naming_context(CORBA::ORB_ptr orb, const std::string& url)
{
    const std::string where = "cannot contact the naming service at " + url;
    try {
        CORBA::Object_var obj = orb->string_to_object(url.c_str());
        // _narrow asks the server (_is_a: a URL's reference has no type), so
        // "not running" is reported here, in one round trip.
        CosNaming::NamingContext_var ctx = CosNaming::NamingContext::_narrow(obj);
        if (CORBA::is_nil(ctx)) throw Error(Errc::unreachable, where + ": not a naming context");
        return ctx._retn();
    } catch (const CORBA::BAD_PARAM&) {
        throw Error(Errc::invalid_argument, "invalid naming service address " + url +
                                                " (expected corbaname::HOST:PORT or corbaloc::HOST:PORT/NameService)");
    } catch (const CORBA::SystemException& e) {
        throw Error(Errc::unreachable, where + " (" + e._name() + "; is omniNames running?)");
    }
}

CosNaming::Name store_path(const std::string& store)
{
    CosNaming::Name name;
    name.length(3);
    name[0].id = "BlobStreaming";
    name[1].id = "Stores";
    name[2].id = store.c_str();
    return name;
}

CosNaming::Name locator_path()
{
    CosNaming::Name name;
    name.length(2);
    name[0].id = "BlobStreaming";
    name[1].id = "Locator";
    return name;
}

namespace {

CosNaming::Name path_under(const char* context, const std::string& leaf)
{
    CosNaming::Name name;
    name.length(3);
    name[0].id = "BlobStreaming";
    name[1].id = context;
    name[2].id = leaf.c_str();
    return name;
}

/// Binds (rebinds) the three-part `path`, creating its contexts as needed.
void bind_path(CosNaming::NamingContext_ptr root, const CosNaming::Name& path, CORBA::Object_ptr ref)
{
    CosNaming::NamingContext_var ctx = CosNaming::NamingContext::_duplicate(root);
    for (CORBA::ULong i = 0; i < 2; ++i) {
        CosNaming::Name step;
        step.length(1);
        step[0] = path[i];
        try {
            CosNaming::NamingContext_var next = ctx->bind_new_context(step);
            ctx = next;
        } catch (const CosNaming::NamingContext::AlreadyBound&) {
            CORBA::Object_var obj = ctx->resolve(step);
            CosNaming::NamingContext_var next = CosNaming::NamingContext::_narrow(obj);
            if (CORBA::is_nil(next))
                throw Error(Errc::invalid_argument, std::string("naming service: ") + step[0].id.in() +
                                                        " is bound to an object, not a context");
            ctx = next;
        }
    }
    CosNaming::Name leaf;
    leaf.length(1);
    leaf[0] = path[2];
    ctx->rebind(leaf, ref);
}

void unbind_path(CosNaming::NamingContext_ptr root, const CosNaming::Name& path)
{
    try {
        root->unbind(path);
    } catch (const CosNaming::NamingContext::NotFound&) {}
}

/// The names bound in the context of `path` (its first two parts), sorted.
std::vector<std::string> list_under(CosNaming::NamingContext_ptr root, CosNaming::Name path)
{
    std::vector<std::string> out;
    path.length(2);
    CosNaming::NamingContext_var ctx;
    try {
        CORBA::Object_var obj = root->resolve(path);
        ctx = CosNaming::NamingContext::_narrow(obj);
    } catch (const CosNaming::NamingContext::NotFound&) {
        return out;
    }
    if (CORBA::is_nil(ctx)) return out;
    CosNaming::BindingList_var list;
    CosNaming::BindingIterator_var it;
    ctx->list(1000, list.out(), it.out());
    for (CORBA::ULong i = 0; i < list->length(); ++i) out.emplace_back(list[i].binding_name[0].id.in());
    if (!CORBA::is_nil(it)) {
        CosNaming::Binding_var b;
        while (it->next_one(b.out())) out.emplace_back(b->binding_name[0].id.in());
        it->destroy();
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

void bind_store(CosNaming::NamingContext_ptr root, const std::string& store, CORBA::Object_ptr ref)
{
    bind_path(root, store_path(store), ref);
}

void unbind_store(CosNaming::NamingContext_ptr root, const std::string& store) { unbind_path(root, store_path(store)); }

std::vector<std::string> list_stores(CosNaming::NamingContext_ptr root) { return list_under(root, store_path("")); }

CosNaming::Name gateway_path(const std::string& aetitle) { return path_under("Gateways", aetitle); }

void bind_gateway(CosNaming::NamingContext_ptr root, const std::string& aetitle, CORBA::Object_ptr ref)
{
    bind_path(root, gateway_path(aetitle), ref);
}

void unbind_gateway(CosNaming::NamingContext_ptr root, const std::string& aetitle)
{
    unbind_path(root, gateway_path(aetitle));
}

std::vector<std::string> list_gateways(CosNaming::NamingContext_ptr root) { return list_under(root, gateway_path("")); }

BlobStreaming::BlobStore_ptr resolve_store(CosNaming::NamingContext_ptr root, const std::string& store,
                                           const std::string& url)
{
    try {
        CORBA::Object_var obj = root->resolve(store_path(store));
        BlobStreaming::BlobStore_var ref = BlobStreaming::BlobStore::_unchecked_narrow(obj);
        return ref._retn();
    } catch (const CosNaming::NamingContext::NotFound&) {
        std::string known;
        for (const auto& s : list_stores(root)) known += (known.empty() ? "" : ", ") + s;
        throw Error(Errc::unknown_store, "no store named \"" + store + "\" is registered in the naming service at " +
                                             url + " (registered: " + (known.empty() ? "none" : known) + ")");
    } catch (const CORBA::SystemException& e) {
        throw Error(Errc::unreachable, "cannot contact the naming service at " + url + " (" + e._name() + ")");
    }
}

}  // namespace blobstreaming::corba
