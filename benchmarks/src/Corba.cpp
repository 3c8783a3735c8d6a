// corba: omniORB only. The transaction model as IDL operations
// (benchmarks/BsBench.idl), data as sequence<octet> of --chunk bytes, one
// synchronous call per chunk; giopMaxMsgSize raised on both sides.
#include "Variant.h"
#include "Workload.h"

#include <blobstreaming/common/Error.h>

#include <BsBench.hh>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

namespace blobstreaming::bench {
namespace {

constexpr const char* kObjectKey = "BsBench";

/// ORB_init from option pairs; the strings outlive the call. giopMaxMsgSize
/// (2 MiB by default) is raised to the client's chunk plus headroom, and on
/// the server to the largest chunk a client may choose (--chunk 1G), so that
/// the server need not be told the client's --chunk.
CORBA::ORB_ptr init_orb(const Config& config, const std::string& endpoint)
{
    const std::uint64_t largest = endpoint.empty() ? config.chunk : (1ULL << 30);
    std::vector<std::string> args = {"bsbench", "-ORBgiopMaxMsgSize",
                                     std::to_string(std::max<std::uint64_t>(2U << 20, largest + (1U << 20)))};
    if (!endpoint.empty()) args.insert(args.end(), {"-ORBendPoint", endpoint});
    if (config.socket_buffer > 0)
        args.insert(args.end(), {"-ORBsocketSendBuffer", std::to_string(config.socket_buffer)});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(args.size());
    return CORBA::ORB_init(argc, argv.data());
}

[[noreturn]] void rethrow_corba(const std::string& what, const CORBA::SystemException& e)
{
    const Errc code = dynamic_cast<const CORBA::TRANSIENT*>(&e) != nullptr ? Errc::unreachable : Errc::transfer_failed;
    throw Error(code, "corba: " + what + ": " + e._name() + " (minor " + std::to_string(e.minor()) + ")");
}

/// A free TCP port on `host` for the ORB's endpoint (omniORB would pick one
/// but does not say which without decoding the IOR).
std::uint16_t free_port(const std::string& host)
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    socklen_t len = sizeof a;
    const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    if (fd >= 0) close(fd);
    if (!ok) throw Error(Errc::transfer_failed, "corba server: cannot find a free port on " + host);
    return ntohs(a.sin_port);
}

class Server_i : public POA_BsBench::Server {
public:
    explicit Server_i(bool corrupt) : corrupt_(corrupt) {}

    void prepare(CORBA::Boolean pull, CORBA::ULongLong size, CORBA::ULong count) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (size == 0 || count == 0 || size > (8ULL << 30) / count)
            throw BsBench::Failed("prepare: size x count out of range");
        blobs_.reset();
        blobs_.emplace(count, size, pull);
        pulling_ = pull;
        received_.assign(count, 0);
    }
    void push_begin(CORBA::ULong index, CORBA::ULongLong size) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        check(index, 0, size);
        received_[index] = 0;
    }
    void push_chunk(CORBA::ULong index, CORBA::ULongLong offset, const BsBench::Octets& data) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        check(index, offset, data.length());
        std::memcpy(blobs_->data(index) + offset, data.get_buffer(), data.length());
        if (corrupt_ && offset == 0 && data.length() > 0) blobs_->data(index)[0] ^= 0x01;
        received_[index] += data.length();
    }
    CORBA::ULongLong push_end(CORBA::ULong index) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        check(index, 0, 0);
        return received_[index];
    }
    BsBench::Octets* pull(CORBA::ULong index, CORBA::ULongLong offset, CORBA::ULong length) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        check(index, offset, length);
        if (corrupt_ && offset == 0 && length > 0) {
            BsBench::Octets* copy = new BsBench::Octets(length);
            copy->length(length);
            std::memcpy(copy->get_buffer(), blobs_->data(index), length);
            (*copy)[0] ^= 0x01;
            return copy;
        }
        // release = false: the reply refers to the blob, no copy here.
        return new BsBench::Octets(length, length, blobs_->data(index) + offset, false);
    }
    BsBench::OctetsList* digests() override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!blobs_) throw BsBench::Failed("digests: nothing prepared");
        const auto all = blobs_->digests();
        BsBench::OctetsList_var out = new BsBench::OctetsList(static_cast<CORBA::ULong>(all.size()));
        out->length(static_cast<CORBA::ULong>(all.size()));
        for (CORBA::ULong i = 0; i < all.size(); ++i) {
            out[i].length(32);
            std::memcpy(out[i].get_buffer(), all[i].data(), 32);
        }
        if (!pulling_) blobs_->clear();  // the next run must deliver its own bytes
        return out._retn();
    }

private:
    void check(CORBA::ULong index, std::uint64_t offset, std::uint64_t length) const
    {
        if (!blobs_) throw BsBench::Failed("no prepare() call yet");
        if (index >= blobs_->count() || offset > blobs_->size() || length > blobs_->size() - offset)
            throw BsBench::Failed("blob index or range outside what was prepared");
    }

    const bool corrupt_;
    std::mutex mutex_;
    std::optional<BlobSet> blobs_;
    bool pulling_ = false;
    std::vector<std::uint64_t> received_;
};

class CorbaClient : public ClientTransport {
public:
    ~CorbaClient() override
    {
        server_ = BsBench::Server::_nil();
        if (!CORBA::is_nil(orb_)) orb_->destroy();
    }

    void open(const Config& config) override
    {
        chunk_ = config.chunk;
        orb_ = init_orb(config, "");
        const std::string url = "corbaloc::" + config.host + ":" + std::to_string(config.port) + "/" + kObjectKey;
        try {
            CORBA::Object_var obj = orb_->string_to_object(url.c_str());
            server_ = BsBench::Server::_narrow(obj);
            if (CORBA::is_nil(server_)) throw Error(Errc::unreachable, "corba: " + url + " is not a BsBench::Server");
            server_->prepare(config.direction == Direction::pull, config.size, config.count);
        } catch (const CORBA::SystemException& e) {
            rethrow_corba("prepare at " + url, e);
        } catch (const BsBench::Failed& e) {
            throw Error(Errc::refused, std::string("corba: prepare: ") + e.reason.in());
        }
        info_.send_buffer = config.socket_buffer;  // requested only: omniORB does not report it
    }

    void push(std::uint32_t index, const std::uint8_t* data, std::uint64_t size) override
    {
        try {
            server_->push_begin(index, size);
            for (std::uint64_t off = 0; off < size; off += chunk_) {
                const auto n = static_cast<CORBA::ULong>(std::min<std::uint64_t>(chunk_, size - off));
                // release = false: the sequence refers to the caller's bytes.
                const BsBench::Octets seq(n, n, const_cast<CORBA::Octet*>(data + off), false);
                server_->push_chunk(index, off, seq);
            }
            const std::uint64_t acked = server_->push_end(index);
            if (acked != size)
                throw Error(Errc::transfer_failed, "corba: push blob " + std::to_string(index) + ": acknowledged " +
                                                       std::to_string(acked) + " of " + std::to_string(size) +
                                                       " bytes");
        } catch (const CORBA::SystemException& e) {
            rethrow_corba("push blob " + std::to_string(index), e);
        } catch (const BsBench::Failed& e) {
            throw Error(Errc::refused, std::string("corba: push: ") + e.reason.in());
        }
    }

    void pull(std::uint32_t index, std::uint64_t offset, std::uint64_t length, std::uint8_t* out) override
    {
        try {
            for (std::uint64_t done = 0; done < length;) {
                const auto n = static_cast<CORBA::ULong>(std::min<std::uint64_t>(chunk_, length - done));
                BsBench::Octets_var piece = server_->pull(index, offset + done, n);
                if (piece->length() != n)
                    throw Error(Errc::protocol_error, "corba: pull blob " + std::to_string(index) + ": asked " +
                                                          std::to_string(n) + " bytes, got " +
                                                          std::to_string(piece->length()));
                std::memcpy(out + done, piece->get_buffer(), n);
                done += n;
            }
        } catch (const CORBA::SystemException& e) {
            rethrow_corba("pull blob " + std::to_string(index), e);
        } catch (const BsBench::Failed& e) {
            throw Error(Errc::refused, std::string("corba: pull: ") + e.reason.in());
        }
    }

    std::vector<Digest> stored_digests() override
    {
        try {
            BsBench::OctetsList_var list = server_->digests();
            std::vector<Digest> out(list->length());
            for (CORBA::ULong i = 0; i < list->length(); ++i) {
                if (list[i].length() != 32) throw Error(Errc::protocol_error, "corba: digests: not 32 bytes");
                std::memcpy(out[i].data(), list[i].get_buffer(), 32);
            }
            return out;
        } catch (const CORBA::SystemException& e) {
            rethrow_corba("digests", e);
        } catch (const BsBench::Failed& e) {
            throw Error(Errc::refused, std::string("corba: digests: ") + e.reason.in());
        }
    }

    TransportInfo info() const override { return info_; }

private:
    CORBA::ORB_var orb_;
    BsBench::Server_var server_;
    std::uint32_t chunk_ = 1U << 20;
    TransportInfo info_;
};

}  // namespace

std::unique_ptr<ClientTransport> make_corba_client() { return std::make_unique<CorbaClient>(); }

void serve_corba(const Config& config)
{
    const std::uint16_t port = config.port != 0 ? config.port : free_port(config.host);
    CORBA::ORB_var orb = init_orb(config, "giop:tcp:" + config.host + ":" + std::to_string(port));
    try {
        CORBA::Object_var obj = orb->resolve_initial_references("omniINSPOA");
        PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
        PortableServer::Servant_var<Server_i> servant = new Server_i(config.corrupt);
        PortableServer::ObjectId_var id = PortableServer::string_to_ObjectId(kObjectKey);
        poa->activate_object_with_id(id, servant);
        PortableServer::POAManager_var manager = poa->the_POAManager();
        manager->activate();
        announce_ready("corba", config.host, port);
        orb->run();  // until the process is terminated
    } catch (const CORBA::SystemException& e) {
        rethrow_corba("server on " + config.host + ":" + std::to_string(port), e);
    }
    orb->destroy();
}

}  // namespace blobstreaming::bench
