#pragma once
// Namespace URIs and WS-Addressing actions of the SDC module.

namespace blobstreaming::sdc::ns {

inline constexpr const char* kSoap = "http://www.w3.org/2003/05/soap-envelope";
inline constexpr const char* kWsa = "http://www.w3.org/2005/08/addressing";
inline constexpr const char* kWsx = "http://schemas.xmlsoap.org/ws/2004/09/mex";
inline constexpr const char* kWsd = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01";
inline constexpr const char* kDpws = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01";
inline constexpr const char* kMdpws = "http://standards.ieee.org/downloads/11073/11073-20702-2016";
inline constexpr const char* kSdc = "http://standards.ieee.org/downloads/11073/11073-20701-2018";
inline constexpr const char* kMsg = "http://standards.ieee.org/downloads/11073/11073-10207-2017/message";
inline constexpr const char* kPm = "http://standards.ieee.org/downloads/11073/11073-10207-2017/participant";
inline constexpr const char* kWse = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
inline constexpr const char* kXsi = "http://www.w3.org/2001/XMLSchema-instance";
/// Our subscription manager's reference parameter, bss:Identifier: an
/// element of our own namespace (as other providers do), since
/// wse:Identifier's schema type allows no wsa:IsReferenceParameter
/// attribute, which WS-Addressing puts on every reference parameter header.
inline constexpr const char* kSubscriptionRef = "urn:blobstreaming:sdc:subscription";

inline constexpr const char* kAnonymous = "http://www.w3.org/2005/08/addressing/anonymous";
inline constexpr const char* kFaultAction = "http://www.w3.org/2005/08/addressing/soap/fault";
inline constexpr const char* kTransferGet = "http://schemas.xmlsoap.org/ws/2004/09/transfer/Get";
inline constexpr const char* kTransferGetResponse = "http://schemas.xmlsoap.org/ws/2004/09/transfer/GetResponse";
inline constexpr const char* kGetMetadata = "http://schemas.xmlsoap.org/ws/2004/09/mex/GetMetadata/Request";
inline constexpr const char* kGetMetadataResponse = "http://schemas.xmlsoap.org/ws/2004/09/mex/GetMetadata/Response";
inline constexpr const char* kGetService = "http://standards.ieee.org/downloads/11073/11073-20701-2018/GetService/";
inline constexpr const char* kDiscoveryTo = "urn:docs-oasis-open-org:ws-dd:ns:discovery:2009:01";
inline constexpr const char* kProbe = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01/Probe";
inline constexpr const char* kProbeMatches = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01/ProbeMatches";
inline constexpr const char* kHello = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01/Hello";
inline constexpr const char* kBye = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01/Bye";
inline constexpr const char* kDialectThisModel = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/ThisModel";
inline constexpr const char* kDialectThisDevice = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/ThisDevice";
inline constexpr const char* kDialectRelationship = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/Relationship";
inline constexpr const char* kRelationshipHost = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/host";

// WS-Eventing 2004/08 as DPWS 1.1 profiles it.
inline constexpr const char* kSubscribe = "http://schemas.xmlsoap.org/ws/2004/08/eventing/Subscribe";
inline constexpr const char* kSubscribeResponse = "http://schemas.xmlsoap.org/ws/2004/08/eventing/SubscribeResponse";
inline constexpr const char* kRenew = "http://schemas.xmlsoap.org/ws/2004/08/eventing/Renew";
inline constexpr const char* kRenewResponse = "http://schemas.xmlsoap.org/ws/2004/08/eventing/RenewResponse";
inline constexpr const char* kGetStatus = "http://schemas.xmlsoap.org/ws/2004/08/eventing/GetStatus";
inline constexpr const char* kGetStatusResponse = "http://schemas.xmlsoap.org/ws/2004/08/eventing/GetStatusResponse";
inline constexpr const char* kUnsubscribe = "http://schemas.xmlsoap.org/ws/2004/08/eventing/Unsubscribe";
inline constexpr const char* kUnsubscribeResponse =
    "http://schemas.xmlsoap.org/ws/2004/08/eventing/UnsubscribeResponse";
inline constexpr const char* kSubscriptionEnd = "http://schemas.xmlsoap.org/ws/2004/08/eventing/SubscriptionEnd";
inline constexpr const char* kDeliveryPush = "http://schemas.xmlsoap.org/ws/2004/08/eventing/DeliveryModes/Push";
inline constexpr const char* kActionDialect = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/Action";
inline constexpr const char* kEndDeliveryFailure = "http://schemas.xmlsoap.org/ws/2004/08/eventing/DeliveryFailure";
inline constexpr const char* kEndShuttingDown = "http://schemas.xmlsoap.org/ws/2004/08/eventing/SourceShuttingDown";

// Report actions (IEEE 11073-20701).
inline constexpr const char* kStateEventService =
    "http://standards.ieee.org/downloads/11073/11073-20701-2018/StateEventService/";
inline constexpr const char* kDescriptionEventService =
    "http://standards.ieee.org/downloads/11073/11073-20701-2018/DescriptionEventService/";
inline constexpr const char* kEpisodicMetricReport =
    "http://standards.ieee.org/downloads/11073/11073-20701-2018/StateEventService/EpisodicMetricReport";
inline constexpr const char* kDescriptionModificationReport =
    "http://standards.ieee.org/downloads/11073/11073-20701-2018/DescriptionEventService/DescriptionModificationReport";

}  // namespace blobstreaming::sdc::ns
