#pragma once
// The provider's message layer, free of any network type: one SOAP request
// in, one HTTP reply out. Records the provider-side timestamps t2..t4 per
// request MessageID. Thread-safe.

#include "HttpServer.h"
#include "Xml.h"
#include "blobstreaming/sdc/Mdib.h"
#include "blobstreaming/sdc/Provider.h"

#include <nlohmann/json_fwd.hpp>

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace blobstreaming::sdc {

class EventSource;

class ServiceHandler : public RequestHandler {
public:
    /// `events` (may be null) serves the event services and subscriptions.
    ServiceHandler(Mdib& mdib, const ProviderOptions& options, std::string epr, EventSource* events = nullptr);

    /// http://HOST:PORT, set once the port is known.
    void set_base_url(std::string url) { base_url_ = std::move(url); }
    const std::string& base_url() const { return base_url_; }
    /// "/<epr without urn:uuid: and dashes>".
    const std::string& device_path() const { return device_path_; }
    const std::string& epr() const { return epr_; }

    /// A SOAP POST to `target`. `t2` is when its HTTP header had been received.
    HttpReply post(std::string_view target, std::string_view body, long long t2) override;
    /// An HTTP GET: `/timestamps?id=<MessageID>` answers the provider-side
    /// timestamps as JSON {"id","t2","t3","t4"} (CLOCK_MONOTONIC ns);
    /// `/timestamps?last=N` the N most recent ones (at most the history
    /// kept) as {"timestamps":[{"id","t2","t3","t4"}, ...]}, oldest first.
    HttpReply get(std::string_view target) override;
    /// A reply for a request rejected at the HTTP layer (e.g. body too large).
    HttpReply reject(unsigned status, const std::string& reason) override;
    /// t4: the reply to `request_id` is being handed to the socket.
    void record_sent(const std::string& request_id, long long t4) override;

private:
    struct Stamps {
        long long t2 = 0;
        long long t3 = 0;
        long long t4 = 0;
    };
    HttpReply dispatch(const struct SoapMessage& request, std::string_view target, long long& t3);
    std::string metadata_body(bool full) const;
    void record(const std::string& id, const Stamps& stamps);
    /// {"id","t2","t3","t4"}: one request's timestamps, as GET answers them.
    static nlohmann::json stamps_json(const std::string& id, const Stamps& s);

    Mdib& mdib_;
    EventSource* events_;
    const ProviderOptions& options_;
    std::string epr_;
    std::string device_path_;
    std::string base_url_;
    std::mutex stamps_mutex_;
    std::unordered_map<std::string, Stamps> stamps_;
    std::deque<std::string> stamp_order_;
    std::unique_ptr<xml::BicepsSchema> schema_;  ///< null: no XSD validation
};

}  // namespace blobstreaming::sdc
